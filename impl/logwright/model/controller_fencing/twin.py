"""The Python twin of spec/ControllerFencing.tla: control requests fenced by epochs.

What it upholds: StaleControllerFenced and BrokerFollowsLatestDecision. No control request from a
controller epoch below the highest one a broker has accepted, nor addressed to an earlier
incarnation of the broker (an older broker epoch), changes anything on that broker; and no
write by a deposed controller lands in the metadata store (kafka-compatibility.md "Fencing",
hazards 3 and 4). Stated end to end, on what
each broker holds now: its replica holds the newest leader epoch it has held since it was
created; the change its current incarnation acts on came from the latest
controller that incarnation took a decision from (a ghost the model keeps, not the broker) and
was addressed to that incarnation; its replica's leader epoch is one the store decided, and the
store's latest decision was written by the controller the store named then.

Each TLA+ action operator has a method of the same name that returns the successor state, or None
when the action is disabled; :meth:`ControllerFencingSpec.actions` enumerates their parameters as
``Next`` does. A state is a :class:`CFState` tuple, one field per TLA+ variable in the module's
order; per-broker functions are tuples indexed like ``config.brokers`` (sorted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Self, TypeVar

from mypy_extensions import mypyc_attr

from logwright.model.cfg import parse_cfg
from logwright.model.controller_fencing.bugs import BUG_TABLE
from logwright.model.core import Action, Invariant, InvariantPart, Spec, State

NOT_HOSTED = -1
"""``replicaEpoch`` of a broker that holds no replica of the partition (TLA+ ``NotHosted``)."""

NO_BROKER_EPOCH = -1
"""A request's broker epoch when the sender does not know it; never rejected (KIP-380)."""

LEADER_AND_ISR = "LeaderAndIsr"
STOP_REPLICA = "StopReplica"

T = TypeVar("T")


class Request(NamedTuple):
    """A control request in flight (the TLA+ record of the same fields)."""

    type: str
    controllerEpoch: int
    broker: int
    brokerEpoch: int
    leaderEpoch: int


ApplyRecord = tuple[()] | tuple[int, int, int, int]
"""Ghost ``lastApply[b]``: () or (request controller epoch, request broker epoch, broker's
controller epoch before, broker's own epoch before)."""

StoreWriteRecord = tuple[()] | tuple[int, int]
"""Ghost ``lastStoreWrite``: () or (writer's controller epoch, store's controller epoch then)."""


class CFState(NamedTuple):
    """One state of ControllerFencing: the TLA+ variables, in the module's order."""

    controllerEpoch: int
    leaderEpoch: int
    brokerEpoch: tuple[int, ...]
    brokerControllerEpoch: tuple[int, ...]
    replicaEpoch: tuple[int, ...]
    network: frozenset[Request]
    lastApply: tuple[ApplyRecord, ...]
    lastStoreWrite: StoreWriteRecord
    appliedEpoch: tuple[int, ...]
    replicaPeak: tuple[int, ...]


@dataclass(frozen=True)
class ControllerFencingConfig:
    """The constants of ControllerFencing.tla, as a .cfg file assigns them."""

    brokers: tuple[int, ...] = (1,)
    max_controller_epoch: int = 3
    max_broker_epoch: int = 2
    max_leader_epoch: int = 2
    max_in_flight: int = 2
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "StaleControllerFenced",
                                   "BrokerFollowsLatestDecision")

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if not self.brokers or self.max_controller_epoch < 1 or self.max_broker_epoch < 1:
            raise ValueError("need a broker, and epochs that start at 1")
        if self.max_leader_epoch < 0 or self.max_in_flight < 0:
            raise ValueError("bounds must not be negative")

    @classmethod
    def from_cfg(cls, path: str | Path) -> ControllerFencingConfig:
        """The constants of a ControllerFencing .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        return cls(
            brokers=tuple(sorted(int(b) for b in k["Brokers"])),
            max_controller_epoch=int(k["MaxControllerEpoch"]),
            max_broker_epoch=int(k["MaxBrokerEpoch"]),
            max_leader_epoch=int(k["MaxLeaderEpoch"]),
            max_in_flight=int(k["MaxInFlight"]),
            bug=str(k["Bug"]),
            invariants=tuple(cfg["invariants"]),
        )


# Subclassed by Python classes the compiled build leaves as Python (the packed specs, the
# tests' twins): mypyc (the compiled build) refuses those without this; a no-op in Python.
@mypyc_attr(allow_interpreted_subclasses=True)
class ControllerFencingTwin(Spec):
    """Controllers and broker incarnations exchanging fenced control requests over a lossy net.
    """

    name = "ControllerFencing"

    def __init__(self, config: ControllerFencingConfig | None = None) -> None:
        self.config = config or ControllerFencingConfig()
        self._requests_kept: tuple[Request, ...] | None = None
        self._bit_kept: dict[Request, int] | None = None
        k = self.config
        self._index = {b: i for i, b in enumerate(k.brokers)}

    @property
    def requests(self) -> tuple[Request, ...]:
        """Every request the constants allow, in the order Deliver and Lose enumerate them
        (enumerated on first use: a twin with unbounded epochs, as the refinement check builds,
        never asks)."""
        kept = self._requests_kept
        if kept is None:
            kept = self._requests_kept = self._make_requests()
        return kept

    def _make_requests(self) -> tuple[Request, ...]:
        k = self.config
        return tuple(sorted(
            Request(t, c, b, e, le) for t in (LEADER_AND_ISR, STOP_REPLICA)
            for c in range(1, k.max_controller_epoch + 1) for b in k.brokers
            for e in range(1, k.max_broker_epoch + 1) for le in range(k.max_leader_epoch + 1)))

    @property
    def _bit(self) -> dict[Request, int]:
        kept = self._bit_kept
        if kept is None:
            kept = self._bit_kept = self._make_bit()
        return kept

    def _make_bit(self) -> dict[Request, int]:
        return {m: n for n, m in enumerate(self.requests)}

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a ControllerFencing .cfg file describes."""
        return cls(ControllerFencingConfig.from_cfg(path))

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        n = len(self.config.brokers)
        return [CFState(1, 0, (1,) * n, (0,) * n, (NOT_HOSTED,) * n, frozenset(), ((),) * n, (),
                        (0,) * n, (NOT_HOSTED,) * n)]

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def ElectController(self, s: CFState) -> CFState | None:
        """A failover: a new controller bumps the store's controller epoch; old ones run on."""
        if s.controllerEpoch >= self.config.max_controller_epoch:
            return None
        return s._replace(controllerEpoch=s.controllerEpoch + 1)

    def ElectLeader(self, s: CFState, c: int) -> CFState | None:
        """Controller ``c`` writes the next leader epoch; the write is conditional on ``c``."""
        if s.leaderEpoch >= self.config.max_leader_epoch:
            return None
        if c != s.controllerEpoch and self.config.bug != "UnconditionalStoreWrite":
            return None  # the store refuses a deposed controller's write
        return s._replace(leaderEpoch=s.leaderEpoch + 1, lastStoreWrite=(c, s.controllerEpoch))

    def Register(self, s: CFState, b: int) -> CFState | None:
        """Broker ``b`` restarts: a new incarnation, a larger broker epoch, memory forgotten."""
        i = self._index[b]
        if s.brokerEpoch[i] >= self.config.max_broker_epoch:
            return None
        return s._replace(brokerEpoch=_set(s.brokerEpoch, i, s.brokerEpoch[i] + 1),
                          brokerControllerEpoch=_set(s.brokerControllerEpoch, i, 0),
                          appliedEpoch=_set(s.appliedEpoch, i, 0))

    def Send(self, s: CFState, type: str, c: int, b: int, e: int,
             le: int) -> CFState | None:
        """Controller ``c`` sends broker ``b``'s incarnation ``e`` a request with leader epoch
        ``le``."""
        m = Request(type, c, b, e, le)
        if len(s.network) >= self.config.max_in_flight or m in s.network:
            return None
        return s._replace(network=s.network | {m})

    def SendLeaderAndIsr(self, s: CFState, c: int, b: int, e: int,
                         le: int) -> CFState | None:
        """Send a LeaderAndIsr request."""
        return self.Send(s, LEADER_AND_ISR, c, b, e, le)

    def SendStopReplica(self, s: CFState, c: int, b: int, e: int,
                        le: int) -> CFState | None:
        """Send a StopReplica request."""
        return self.Send(s, STOP_REPLICA, c, b, e, le)

    def StaleBrokerEpoch(self, s: CFState, b: int, m: Request) -> bool:
        """``m`` is addressed to an older incarnation of ``b`` (STALE_BROKER_EPOCH)."""
        return m.brokerEpoch != NO_BROKER_EPOCH and m.brokerEpoch < s.brokerEpoch[self._index[b]]

    def StaleControllerEpoch(self, s: CFState, b: int, m: Request) -> bool:
        """``m`` is from a lower controller epoch than ``b`` accepted (STALE_CONTROLLER_EPOCH)."""
        return m.controllerEpoch < s.brokerControllerEpoch[self._index[b]]

    def Accepts(self, s: CFState, b: int, m: Request) -> bool:
        """Whether broker ``b`` accepts ``m``; a rejected request changes nothing."""
        bug = self.config.bug
        if bug != "NoBrokerEpochCheck" and self.StaleBrokerEpoch(s, b, m):
            return False
        return bug == "NoControllerEpochCheck" or not self.StaleControllerEpoch(s, b, m)

    def ReplicaAfter(self, s: CFState, b: int, m: Request) -> int:
        """The replica's leader epoch after ``b`` applies ``m`` (FENCED_LEADER_EPOCH: unchanged)."""
        current = s.replicaEpoch[self._index[b]]
        if m.type == LEADER_AND_ISR:
            return m.leaderEpoch if m.leaderEpoch > current else current
        if current != NOT_HOSTED and m.leaderEpoch >= current:
            return NOT_HOSTED
        return current

    def RecordedEpoch(self, s: CFState, b: int, m: Request) -> int:
        """The controller epoch ``b`` remembers after accepting ``m``: ``m``'s, or with
        NoControllerEpochRecorded what it had (it checks the epoch but never records it)."""
        if self.config.bug == "NoControllerEpochRecorded":
            return s.brokerControllerEpoch[self._index[b]]
        return m.controllerEpoch

    def Deliver(self, s: CFState, m: Request) -> CFState | None:
        """Broker ``m.broker`` applies ``m``; ``m`` stays in flight and may come again."""
        if m not in s.network or not self.Accepts(s, m.broker, m):
            return None
        i = self._index[m.broker]
        replica = self.ReplicaAfter(s, m.broker, m)
        if s.brokerControllerEpoch[i] == m.controllerEpoch and replica == s.replicaEpoch[i]:
            return None  # nothing would change: a stuttering step
        record = (m.controllerEpoch, m.brokerEpoch, s.brokerControllerEpoch[i], s.brokerEpoch[i])
        recorded = self.RecordedEpoch(s, m.broker, m)
        return s._replace(brokerControllerEpoch=_set(s.brokerControllerEpoch, i, recorded),
                          replicaEpoch=_set(s.replicaEpoch, i, replica),
                          lastApply=_set(s.lastApply, i, record),
                          appliedEpoch=_set(s.appliedEpoch, i,
                                            max(s.appliedEpoch[i], m.controllerEpoch)),
                          replicaPeak=_set(s.replicaPeak, i,
                                           NOT_HOSTED if replica == NOT_HOSTED
                                           else max(s.replicaPeak[i], replica)))

    def Lose(self, s: CFState, m: Request) -> CFState | None:
        """The network drops ``m``."""
        if m not in s.network:
            return None
        return s._replace(network=s.network - {m})

    # -- Next --------------------------------------------------------------------------------

    def actions(self) -> Sequence[Action]:
        return [
            Action("ElectController", self._elect_controller),
            Action("ElectLeader", self._elect_leader),
            Action("Register", self._register),
            Action("SendLeaderAndIsr", lambda s: self._send(s, LEADER_AND_ISR)),
            Action("SendStopReplica", lambda s: self._send(s, STOP_REPLICA)),
            Action("Deliver", self._deliver),
            Action("Lose", self._lose),
        ]

    def _elect_controller(self, s: State) -> Iterator[State]:
        assert isinstance(s, CFState)
        yield from _some(self.ElectController(s))

    def _elect_leader(self, s: State) -> Iterator[State]:
        assert isinstance(s, CFState)
        for c in range(1, s.controllerEpoch + 1):
            yield from _some(self.ElectLeader(s, c))

    def _register(self, s: State) -> Iterator[State]:
        assert isinstance(s, CFState)
        for b in self.config.brokers:
            yield from _some(self.Register(s, b))

    def _send(self, s: State, type: str) -> Iterator[State]:
        assert isinstance(s, CFState)
        if len(s.network) >= self.config.max_in_flight:
            return  # the bound disables every send; skip the enumeration
        for c in range(1, s.controllerEpoch + 1):
            for b in self.config.brokers:
                for le in range(0, s.leaderEpoch + 1):
                    for e in range(1, s.brokerEpoch[self._index[b]] + 1):
                        yield from _some(self.Send(s, type, c, b, e, le))

    def _deliver(self, s: State) -> Iterator[State]:
        assert isinstance(s, CFState)
        for m in sorted(s.network):  # sorted: the fast path enumerates in this order
            yield from _some(self.Deliver(s, m))

    def _lose(self, s: State) -> Iterator[State]:
        assert isinstance(s, CFState)
        for m in sorted(s.network):
            yield from _some(self.Lose(s, m))

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``): each of
        :meth:`invariant_parts`' parts, one per variable."""
        assert isinstance(s, CFState)
        return all(ok(s) for _, ok in self._type_ok_parts)

    def _make_type_ok_parts(self) -> list[InvariantPart]:
        k = self.config
        ce, be = range(1, k.max_controller_epoch + 1), range(1, k.max_broker_epoch + 1)
        per_variable: list[tuple[str, Callable[[CFState], bool]]] = [
            ("controllerEpoch", lambda s: s.controllerEpoch in ce),
            ("leaderEpoch", lambda s: 0 <= s.leaderEpoch <= k.max_leader_epoch),
            ("brokerEpoch", lambda s: all(e in be for e in s.brokerEpoch)),
            ("brokerControllerEpoch",
             lambda s: all(0 <= e <= k.max_controller_epoch for e in s.brokerControllerEpoch)),
            ("replicaEpoch", lambda s: all(e == NOT_HOSTED or 0 <= e <= k.max_leader_epoch
                                           for e in s.replicaEpoch)),
            ("network", lambda s: len(s.network) <= k.max_in_flight and all(
                m.type in (LEADER_AND_ISR, STOP_REPLICA) and m.controllerEpoch in ce
                and m.broker in self._index and m.brokerEpoch in be
                and 0 <= m.leaderEpoch <= k.max_leader_epoch for m in s.network)),
            ("lastApply", lambda s: all(r == () or (len(r) == 4 and r[0] in ce and r[1] in be
                                                    and 0 <= r[2] <= k.max_controller_epoch
                                                    and r[3] in be) for r in s.lastApply)),
            ("lastStoreWrite", lambda s: s.lastStoreWrite == () or (
                len(s.lastStoreWrite) == 2 and all(e in ce for e in s.lastStoreWrite))),
            ("appliedEpoch", lambda s: len(s.appliedEpoch) == len(k.brokers) and all(
                0 <= e <= k.max_controller_epoch for e in s.appliedEpoch)),
            ("replicaPeak", lambda s: len(s.replicaPeak) == len(k.brokers) and all(
                e == NOT_HOSTED or 0 <= e <= k.max_leader_epoch for e in s.replicaPeak)),
        ]
        return [(frozenset({name}), ok) for name, ok in per_variable]

    def StaleControllerFenced(self, s: State) -> bool:
        """No stale request changed a broker; no deposed controller's write landed."""
        assert isinstance(s, CFState)
        for r in s.lastApply:
            if len(r) != 4:
                continue  # () : no change recorded yet
            request_ce, request_be, seen_ce, own_be = r
            if request_ce < seen_ce:
                return False
            if request_be != NO_BROKER_EPOCH and request_be < own_be:
                return False
        w = s.lastStoreWrite
        return len(w) != 2 or w[0] == w[1]

    def BrokerFollowsLatestDecision(self, s: State) -> bool:
        """What each broker holds now follows the latest decision it took, addressed to it; its
        replica's leader epoch is one the store decided, written by the store's controller."""
        assert isinstance(s, CFState)
        for i, r in enumerate(s.lastApply):
            if s.replicaEpoch[i] > s.leaderEpoch:
                return False  # a leader epoch the store never decided
            if s.replicaEpoch[i] != s.replicaPeak[i]:
                return False  # an older leader epoch took the replica back
            if len(r) != 4 or r[3] != s.brokerEpoch[i]:
                continue  # nothing applied by the current incarnation
            if r[0] != s.appliedEpoch[i]:
                return False  # an older decision overrode a newer one it had applied
            if r[1] not in (NO_BROKER_EPOCH, s.brokerEpoch[i]):
                return False  # a request for an earlier incarnation changed this one
        w = s.lastStoreWrite
        return len(w) != 2 or w[0] == w[1]

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "StaleControllerFenced": self.StaleControllerFenced,
                 "BrokerFollowsLatestDecision": self.BrokerFollowsLatestDecision}
        return [(name, table[name]) for name in self.config.invariants]

    def invariant_reads(self) -> Mapping[str, frozenset[str]]:
        """Neither fencing invariant reads ``controllerEpoch`` or ``network``; TypeOK reads
        every variable."""
        return _READS

    def invariant_parts(self) -> Mapping[str, Sequence[InvariantPart]]:
        """TypeOK, one part per variable."""
        return {"TypeOK": self._type_ok_parts}

    def describe(self, s: State) -> str:
        assert isinstance(s, CFState)
        lines = [f"store: controllerEpoch={s.controllerEpoch} leaderEpoch={s.leaderEpoch}"
                 + (f" lastStoreWrite=(by controller {s.lastStoreWrite[0]}, store epoch "
                    f"{s.lastStoreWrite[1]})" if s.lastStoreWrite else "")]
        for b, i in self._index.items():
            e = s.replicaEpoch[i]
            replica = "not hosted" if e == NOT_HOSTED else f"leaderEpoch {e}"
            line = (f"broker {b}: brokerEpoch={s.brokerEpoch[i]} "
                    f"brokerControllerEpoch={s.brokerControllerEpoch[i]} replica={replica} "
                    f"appliedEpoch={s.appliedEpoch[i]} replicaPeak={s.replicaPeak[i]}")
            r = s.lastApply[i]
            if r:
                line += (f"; last change by a request (controllerEpoch {r[0]}, brokerEpoch {r[1]})"
                         f" when the broker had (controllerEpoch {r[2]}, brokerEpoch {r[3]})")
            lines.append(line)
        for m in sorted(s.network):
            lines.append(f"in flight: {m.type}(controllerEpoch={m.controllerEpoch}, "
                         f"broker={m.broker}, brokerEpoch={m.brokerEpoch}, "
                         f"leaderEpoch={m.leaderEpoch})")
        return "\n".join(lines)


_READS = {
    "StaleControllerFenced": frozenset({"lastApply", "lastStoreWrite"}),
    "BrokerFollowsLatestDecision": frozenset({"lastApply", "lastStoreWrite", "leaderEpoch",
                                              "brokerEpoch", "replicaEpoch", "appliedEpoch",
                                              "replicaPeak"}),
}


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    """``[t EXCEPT ![i] = v]`` on a tuple."""
    return (*t[:i], v, *t[i + 1:])


def _some(s: CFState | None) -> Iterator[State]:
    if s is not None:
        yield s
