"""The Python twin of spec/StrayCleanup.tla: stray partitions detected, set aside, deleted late.

What it upholds: NoNewDataDeleted, the stray-cleanup part. No stray deletion removes a log that
the current controller assigns to that broker (same partition name AND same topic id), nor a log
whose newest segment is younger than the retention period (KIP-550 detection from a full
LeaderAndIsr, KIP-370 delayed and age-guarded deletion, the rename to ``-stray`` in between;
kafka-compatibility.md "What shipped, and what never did", hazard 2).

The protocol the broker follows (the module docstring of the TLA+ file says the same):

1. only a full LeaderAndIsr (containsAllReplicas) whose controller epoch is not below the highest
   the broker has seen decides what is stray: each live log whose (partition, topic id) it does
   not list is renamed ``-stray``;
2. a stray listed again by an accepted request is restored, not re-fetched;
3. a stray is deleted only by a broker that applied a full request in its current incarnation,
   ``StrayDeletionDelay`` after it became stray, when its newest segment is at least
   ``RetentionPeriod`` old, and the deletion matches partition and topic id.

Each TLA+ action operator has a method of the same name returning the successor state, or None
when the action is disabled; :meth:`StrayCleanupSpec.actions` enumerates their parameters as
``Next`` does. A state is an :class:`SCState`, one field per TLA+ variable in the module's order;
per-broker and per-partition functions are tuples indexed like the sorted constant sets, and
``disk[b][p][t - 1]`` is the log of topic id ``t``.

Its packed numpy encoding (the checker's batched fast path) is
:mod:`logwright.model.stray_cleanup.packed`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Self, TypeVar

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.stray_cleanup.bugs import BUG_TABLE

if TYPE_CHECKING:
    pass

NONE, LIVE, STRAY = "none", "live", "stray"
"""A log dir's state: absent, the live ``<topic>-<partition>`` dir, or renamed ``-stray``."""

T = TypeVar("T")


class Log(NamedTuple):
    """One log dir of one (partition, topic id) on one broker (the TLA+ record ``Log``)."""

    state: str
    lastWrite: int
    strayAt: int


NO_LOG = Log(NONE, 0, 0)
"""TLA+ ``NoLog``."""


class FullRequest(NamedTuple):
    """A deposed controller's full LeaderAndIsr still in flight."""

    epoch: int
    broker: int
    hosted: frozenset[tuple[int, int]]  # the (partition, topic id) pairs it lists


Deletion = tuple[int, int, int, bool, int]
"""Ghost entry: (broker, partition, topic id, assigned by the controller then, age then)."""

Disk = tuple[tuple[tuple[Log, ...], ...], ...]


class SCState(NamedTuple):
    """One state of StrayCleanup: the TLA+ variables, in the module's order."""

    now: int
    controllerEpoch: int
    topicId: tuple[int, ...]
    replicas: tuple[frozenset[int], ...]  # per partition
    online: tuple[bool, ...]  # per broker
    sawFullRequest: tuple[bool, ...]
    brokerControllerEpoch: tuple[int, ...]
    disk: Disk  # broker -> partition -> topic id - 1 -> Log
    network: frozenset[FullRequest]
    lastStrayDeletion: frozenset[Deletion]


@dataclass(frozen=True)
class StrayCleanupConfig:
    """The constants of StrayCleanup.tla, as a .cfg file assigns them."""

    brokers: tuple[int, ...] = (1,)
    partitions: tuple[int, ...] = (1,)
    max_topic_id: int = 2
    max_controller_epoch: int = 2
    max_time: int = 3
    retention_period: int = 2
    stray_deletion_delay: int = 1
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "NoNewDataDeleted")

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if not self.brokers or not self.partitions:
            raise ValueError("need at least one broker and one partition")
        if self.max_topic_id < 1 or self.max_controller_epoch < 1 or self.max_time < 0:
            raise ValueError("topic ids and controller epochs start at 1, time at 0")
        if self.retention_period < 0 or self.stray_deletion_delay < 0:
            raise ValueError("the retention period and the stray deletion delay are >= 0")

    @classmethod
    def from_cfg(cls, path: str | Path) -> StrayCleanupConfig:
        """The constants of a StrayCleanup .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        return cls(
            brokers=tuple(sorted(int(b) for b in k["Brokers"])),
            partitions=tuple(sorted(int(p) for p in k["Partitions"])),
            max_topic_id=int(k["MaxTopicId"]),
            max_controller_epoch=int(k["MaxControllerEpoch"]),
            max_time=int(k["MaxTime"]),
            retention_period=int(k["RetentionPeriod"]),
            stray_deletion_delay=int(k["StrayDeletionDelay"]),
            bug=str(k["Bug"]),
            invariants=tuple(cfg["invariants"]),
        )


class StrayCleanupTwin(Spec):
    """Controller assignment, brokers' on-disk logs, full requests, stray marking and deletion.
    """

    name = "StrayCleanup"

    def __init__(self, config: StrayCleanupConfig | None = None) -> None:
        self.config = config or StrayCleanupConfig()
        k = self.config
        self._b = {b: i for i, b in enumerate(k.brokers)}
        self._p = {p: i for i, p in enumerate(k.partitions)}
        self._topic_ids = range(1, k.max_topic_id + 1)
        self._subsets = [frozenset(c) for n in range(len(k.brokers) + 1)
                         for c in combinations(k.brokers, n)]
        self._slots = [(i, e) for i in range(len(k.brokers))
                       for e in range(1, k.max_controller_epoch)]
        """Network slots (broker position, controller epoch), in the order Deliver takes them."""

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a StrayCleanup .cfg file describes."""
        return cls(StrayCleanupConfig.from_cfg(path))

    # -- helpers, named as the TLA+ operators ----------------------------------------------

    def log(self, s: SCState, b: int, p: int, t: int) -> Log:
        """``disk[b][p][t]``."""
        return s.disk[self._b[b]][self._p[p]][t - 1]

    def Assigned(self, s: SCState, b: int, p: int, t: int) -> bool:
        """Whether the current controller assigns ``(p, t)`` to broker ``b``."""
        i = self._p[p]
        return b in s.replicas[i] and t == s.topicId[i]

    def View(self, s: SCState, b: int) -> frozenset[tuple[int, int]]:
        """What the current controller lists for ``b`` in a full LeaderAndIsr."""
        return frozenset((p, s.topicId[i]) for p, i in self._p.items() if b in s.replicas[i])

    def NewLog(self, s: SCState) -> Log:
        """A freshly created live log: its (empty) newest segment is written now."""
        return Log(LIVE, s.now, 0)

    def HostedLog(self, s: SCState, log: Log) -> Log:
        """The log once hosted: a stray restored (re-hosting before deletion), a missing one new."""
        return self.NewLog(s) if log.state == NONE else Log(LIVE, log.lastWrite, 0)

    def AfterFull(self, s: SCState, b: int,
                  hosted: frozenset[tuple[int, int]]) -> tuple[tuple[Log, ...], ...]:
        """``b``'s logs after it applies a full request listing ``hosted``."""
        def after(p: int, t: int, log: Log) -> Log:
            if (p, t) in hosted:
                return self.HostedLog(s, log)
            if log.state == LIVE:
                return Log(STRAY, log.lastWrite, s.now)
            return log
        row = s.disk[self._b[b]]
        return tuple(tuple(after(p, t, row[i][t - 1]) for t in self._topic_ids)
                     for p, i in self._p.items())

    def _set_log(self, disk: Disk, b: int, p: int, t: int, log: Log) -> Disk:
        i, j = self._b[b], self._p[p]
        return _set(disk, i, _set(disk[i], j, _set(disk[i][j], t - 1, log)))

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        k = self.config
        nb, np_ = len(k.brokers), len(k.partitions)
        first = Log(LIVE, 0, 0)
        logs = tuple(first if t == 1 else NO_LOG for t in self._topic_ids)
        return [SCState(
            now=0, controllerEpoch=1, topicId=(1,) * np_,
            replicas=(frozenset(k.brokers),) * np_, online=(True,) * nb,
            sawFullRequest=(True,) * nb, brokerControllerEpoch=(1,) * nb,
            disk=((logs,) * np_,) * nb, network=frozenset(), lastStrayDeletion=frozenset(),
        )]

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def Tick(self, s: SCState) -> SCState | None:
        """Time passes."""
        if s.now >= self.config.max_time:
            return None
        return s._replace(now=s.now + 1, lastStrayDeletion=frozenset())

    def Append(self, s: SCState, b: int, p: int) -> SCState | None:
        """A write to ``b``'s live log of ``p``: its newest segment is new again."""
        t = s.topicId[self._p[p]]
        i = self._b[b]
        if not (s.online[i] and s.sawFullRequest[i] and self.Assigned(s, b, p, t)):
            return None
        log = self.log(s, b, p, t)
        if log.state != LIVE:
            return None
        return s._replace(disk=self._set_log(s.disk, b, p, t, log._replace(lastWrite=s.now)),
                          lastStrayDeletion=frozenset())

    def Assign(self, s: SCState, p: int, b: int) -> SCState | None:
        """The controller adds ``b`` to ``p``'s replicas; an online ``b`` hosts it at once."""
        j, i = self._p[p], self._b[b]
        if b in s.replicas[j]:
            return None
        s2 = s._replace(replicas=_set(s.replicas, j, s.replicas[j] | {b}),
                        lastStrayDeletion=frozenset())
        if not s.online[i]:
            return s2
        t = s.topicId[j]
        return s2._replace(
            disk=self._set_log(s.disk, b, p, t, self.HostedLog(s, self.log(s, b, p, t))),
            brokerControllerEpoch=_set(s.brokerControllerEpoch, i, s.controllerEpoch))

    def Unassign(self, s: SCState, p: int, b: int) -> SCState | None:
        """The controller removes ``b``; an online ``b`` applies StopReplica(delete) at once."""
        j, i = self._p[p], self._b[b]
        if b not in s.replicas[j]:
            return None
        s2 = s._replace(replicas=_set(s.replicas, j, s.replicas[j] - {b}),
                        lastStrayDeletion=frozenset())
        if not s.online[i]:
            return s2
        return s2._replace(
            disk=self._set_log(s.disk, b, p, s.topicId[j], NO_LOG),
            brokerControllerEpoch=_set(s.brokerControllerEpoch, i, s.controllerEpoch))

    def RecreateTopic(self, s: SCState, p: int,
                      S: frozenset[int]) -> SCState | None:
        """``p``'s topic deleted and created again with the next topic id, assigned to ``S``."""
        j = self._p[p]
        old = s.topicId[j]
        new = old + 1
        if old >= self.config.max_topic_id:
            return None
        told = {b for b in self.config.brokers
                if s.online[self._b[b]] and (b in s.replicas[j] or b in S)}
        disk = s.disk
        for b in told:
            if b in s.replicas[j]:
                disk = self._set_log(disk, b, p, old, NO_LOG)
            if b in S:
                disk = self._set_log(disk, b, p, new, self.NewLog(s))
        bce = tuple(s.controllerEpoch if b in told else e
                    for b, e in zip(self.config.brokers, s.brokerControllerEpoch, strict=True))
        return s._replace(topicId=_set(s.topicId, j, new), replicas=_set(s.replicas, j, S),
                          disk=disk, brokerControllerEpoch=bce, lastStrayDeletion=frozenset())

    def StopBroker(self, s: SCState, b: int) -> SCState | None:
        """``b`` stops: its disk stays, its memory is lost."""
        i = self._b[b]
        if not s.online[i]:
            return None
        return s._replace(online=_set(s.online, i, False),
                          sawFullRequest=_set(s.sawFullRequest, i, False),
                          lastStrayDeletion=frozenset())

    def StartBroker(self, s: SCState, b: int) -> SCState | None:
        """``b`` starts and registers, learning the current controller epoch."""
        i = self._b[b]
        if s.online[i]:
            return None
        return s._replace(online=_set(s.online, i, True),
                          brokerControllerEpoch=_set(s.brokerControllerEpoch, i,
                                                     s.controllerEpoch),
                          lastStrayDeletion=frozenset())

    def SendFullLeaderAndIsr(self, s: SCState, b: int) -> SCState | None:
        """The current controller's full LeaderAndIsr to ``b``: KIP-550 stray detection."""
        i = self._b[b]
        if not s.online[i]:
            return None
        if s.sawFullRequest[i] and s.brokerControllerEpoch[i] >= s.controllerEpoch:
            return None
        return s._replace(disk=_set(s.disk, i, self.AfterFull(s, b, self.View(s, b))),
                          sawFullRequest=_set(s.sawFullRequest, i, True),
                          brokerControllerEpoch=_set(s.brokerControllerEpoch, i,
                                                     s.controllerEpoch),
                          lastStrayDeletion=frozenset())

    def ControllerFailover(self, s: SCState) -> SCState | None:
        """A new controller; the deposed one's last full requests may still arrive later."""
        if s.controllerEpoch >= self.config.max_controller_epoch:
            return None
        sent = {FullRequest(s.controllerEpoch, b, self.View(s, b)) for b in self.config.brokers}
        return s._replace(controllerEpoch=s.controllerEpoch + 1, network=s.network | sent,
                          lastStrayDeletion=frozenset())

    def DeliverDelayedLeaderAndIsr(self, s: SCState,
                                   m: FullRequest) -> SCState | None:
        """A deposed controller's full request arrives; a stale epoch is rejected."""
        i = self._b[m.broker]
        if m not in s.network or not s.online[i]:
            return None
        s2 = s._replace(network=s.network - {m}, lastStrayDeletion=frozenset())
        seen = s.brokerControllerEpoch[i]
        if m.epoch < seen and self.config.bug != "StaleEpochStrayDeletion":
            return s2  # STALE_CONTROLLER_EPOCH: nothing changes but the network
        return s2._replace(disk=_set(s.disk, i, self.AfterFull(s, m.broker, m.hosted)),
                           sawFullRequest=_set(s.sawFullRequest, i, True),
                           brokerControllerEpoch=_set(s.brokerControllerEpoch, i,
                                                      max(m.epoch, seen)))

    def DeleteStray(self, s: SCState, b: int, p: int, t: int) -> SCState | None:
        """KIP-370's delayed, age-guarded deletion of ``b``'s stray ``(p, t)``."""
        k = self.config
        i = self._b[b]
        if not (s.online[i] and s.sawFullRequest[i]):
            return None
        log = self.log(s, b, p, t)
        if log.state != STRAY or s.now < log.strayAt + k.stray_deletion_delay:
            return None
        if s.now - log.lastWrite < k.retention_period and k.bug != "NoAgeGuard":
            return None
        if k.bug == "TopicNameOnlyMatch":
            gone = [u for u in self._topic_ids if self.log(s, b, p, u).state != NONE]
        else:
            gone = [t]
        disk = s.disk
        for u in gone:
            disk = self._set_log(disk, b, p, u, NO_LOG)
        record = frozenset((b, p, u, self.Assigned(s, b, p, u),
                            s.now - self.log(s, b, p, u).lastWrite) for u in gone)
        return s._replace(disk=disk, lastStrayDeletion=record)

    # -- Next --------------------------------------------------------------------------------

    def actions(self) -> Sequence[Action]:
        k = self.config
        bp = [(b, p) for b in k.brokers for p in k.partitions]
        pb = [(p, b) for p in k.partitions for b in k.brokers]
        bpt = [(b, p, t) for b, p in bp for t in self._topic_ids]
        return [
            Action("Tick", lambda s: _each([self.Tick(_sc(s))])),
            Action("Append", lambda s: _each(self.Append(_sc(s), b, p) for b, p in bp)),
            Action("Assign", lambda s: _each(self.Assign(_sc(s), p, b) for p, b in pb)),
            Action("Unassign", lambda s: _each(self.Unassign(_sc(s), p, b) for p, b in pb)),
            Action("RecreateTopic", lambda s: _each(self.RecreateTopic(_sc(s), p, S)
                                                    for p in k.partitions
                                                    for S in self._subsets)),
            Action("StopBroker", lambda s: _each(self.StopBroker(_sc(s), b) for b in k.brokers)),
            Action("StartBroker",
                   lambda s: _each(self.StartBroker(_sc(s), b) for b in k.brokers)),
            Action("SendFullLeaderAndIsr",
                   lambda s: _each(self.SendFullLeaderAndIsr(_sc(s), b) for b in k.brokers)),
            Action("ControllerFailover", lambda s: _each([self.ControllerFailover(_sc(s))])),
            Action("DeliverDelayedLeaderAndIsr",
                   lambda s: _each(self.DeliverDelayedLeaderAndIsr(_sc(s), m)
                                   for m in sorted(_sc(s).network, key=_request_order))),
            Action("DeleteStray",
                   lambda s: _each(self.DeleteStray(_sc(s), b, p, t) for b, p, t in bpt)),
        ]

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``)."""
        s = _sc(s)
        k = self.config
        times = range(0, k.max_time + 1)
        epochs = range(1, k.max_controller_epoch + 1)
        brokers = set(k.brokers)
        hostable = {(p, t) for p in k.partitions for t in self._topic_ids}
        return (
            s.now in times and s.controllerEpoch in epochs
            and all(t in self._topic_ids for t in s.topicId)
            and all(r <= brokers for r in s.replicas)
            and all(e in epochs for e in s.brokerControllerEpoch)
            and all(log.state in (NONE, LIVE, STRAY) and log.lastWrite in times
                    and log.strayAt in times
                    for row in s.disk for logs in row for log in logs)
            and all(m.epoch in epochs and m.broker in brokers and m.hosted <= hostable
                    for m in s.network)
            and all(d[0] in brokers and d[1] in self._p and d[2] in self._topic_ids
                    and d[4] in times for d in s.lastStrayDeletion)
        )

    def NoNewDataDeleted(self, s: State) -> bool:
        """No stray deletion hit a log the controller assigns, or one with a young segment."""
        return all(not assigned and age >= self.config.retention_period
                   for _b, _p, _t, assigned, age in _sc(s).lastStrayDeletion)

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "NoNewDataDeleted": self.NoNewDataDeleted}
        return [(name, table[name]) for name in self.config.invariants]

    def describe(self, s: State) -> str:
        s = _sc(s)
        lines = [f"now={s.now} controllerEpoch={s.controllerEpoch}"]
        for p, j in self._p.items():
            lines.append(f"partition {p}: topicId={s.topicId[j]} "
                         f"replicas={sorted(s.replicas[j])}")
        for b, i in self._b.items():
            state = "online" if s.online[i] else "offline"
            logs = [f"({p},id {t}) {log.state} lastWrite={log.lastWrite}"
                    + (f" strayAt={log.strayAt}" if log.state == STRAY else "")
                    for p, j in self._p.items() for t in self._topic_ids
                    if (log := s.disk[i][j][t - 1]).state != NONE]
            lines.append(f"broker {b}: {state} sawFullRequest={s.sawFullRequest[i]} "
                         f"brokerControllerEpoch={s.brokerControllerEpoch[i]} "
                         f"logs: {', '.join(logs) or '-'}")
        for m in sorted(s.network, key=lambda m: (m.epoch, m.broker)):
            lines.append(f"in flight: full LeaderAndIsr(controllerEpoch={m.epoch}, "
                         f"broker={m.broker}, hosted={sorted(m.hosted)})")
        for b, p, t, assigned, age in sorted(s.lastStrayDeletion):
            lines.append(f"deleted stray ({p},id {t}) on broker {b}: age {age}"
                         + (", ASSIGNED to it by the controller" if assigned else ""))
        return "\n".join(lines)


_STATES = (NONE, LIVE, STRAY)
"""A log's state as a digit: its position here."""


def _st(i: int, j: int, u: int) -> str:
    return f"state{i}_{j}_{u}"


def _lw(i: int, j: int, u: int) -> str:
    return f"lastWrite{i}_{j}_{u}"


def _sa(i: int, j: int, u: int) -> str:
    return f"strayAt{i}_{j}_{u}"


def _inflight(i: int, e: int) -> str:
    return f"inFlight{i}_{e}"


def _hosted(i: int, e: int, j: int) -> str:
    return f"hosted{i}_{e}_{j}"


def _request_order(m: FullRequest) -> tuple[int, int, list[tuple[int, int]]]:
    """A fixed order of the requests in flight (by broker, then epoch), so that Deliver
    enumerates them alike in both engines, whatever the order a frozenset iterates in."""
    return (m.broker, m.epoch, sorted(m.hosted))


def _sc(s: State) -> SCState:
    assert isinstance(s, SCState)
    return s


def _set(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    """``[t EXCEPT ![i] = v]`` on a tuple."""
    return (*t[:i], v, *t[i + 1:])


def _each(states: Iterable[SCState | None]) -> Iterator[State]:
    for s in states:
        if s is not None:
            yield s
