"""The Python twin of spec/StrayCleanup.tla: topic identity, strays and orphans on brokers.

What it upholds: the module's invariants, state by state the same as TLC's.

* ``NoNewDataDeleted``, end to end: no log was ever deleted (or superseded by an empty one)
  while its data was owed: the data of a (partition, topic id) the controller assigns to that
  broker by a decision the broker had applied, or, for any deletion the controller did not order
  for that very log (a stray deletion, a StopReplica that hits another topic id's log, a log
  superseded by a new empty one), data younger than the retention period. The ghost ``lost``
  is kept by every deleting step.
* ``TopicIdentity``: a broker never has two live logs (two topic ids) of one partition name.

The protocol (the TLA+ module's header says the same, spec/README.md in more words): the
controller stamps every control request with ``(controllerEpoch, seq)`` and the addressee's
broker epoch; requests stay on the network and are delivered in any order, any number of times;
a broker fences stale controller epochs and earlier incarnations, and per partition name ignores
requests older than the newest it applied; INCREMENTAL LeaderAndIsr sets aside another topic
id's live log and hosts the named one; StopReplica deletes the named live log only; a FULL
LeaderAndIsr decides strays for the names whose applied version is older; a stray is deleted
late (KIP-370) and only when old; a broker whose log dir is offline neither sees nor creates logs;
a truncation makes a live log's newest write an earlier one.

Each TLA+ action operator has a method of the same name returning the successor state, or None
when the action is disabled; :meth:`StrayCleanupTwin.actions` enumerates their parameters in
the order TLC does, so that TLC and :func:`logwright.model.check` stop at the same state on a
bug. A state is an :class:`SCState`, one field per TLA+ variable in the module's order;
per-broker and per-partition functions are tuples indexed like the sorted constant sets, and
``disk[b][p][t - 1]`` is the log of topic id ``t``.

The twin has no packed encoding: the network (a set of requests) has no small fixed shape, and
the correct .cfg's state space is explored by the generic engine in seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import NamedTuple, Self, TypeVar

from logwright.model.cfg import parse_cfg
from logwright.model.core import Action, Invariant, Spec, State
from logwright.model.stray_cleanup.bugs import BUG_TABLE

NONE, LIVE, STRAY = "none", "live", "stray"
"""A log dir's state: absent, the live ``<topic>-<partition>`` dir, or renamed ``-stray``."""

LAI, STOP, FULL = "LAI", "STOP", "FULL"
"""A request's kind: INCREMENTAL LeaderAndIsr, StopReplica, FULL LeaderAndIsr."""

T = TypeVar("T")

Version = tuple[int, int]
"""``<<controllerEpoch, seq>>``: the order of a controller's decisions."""

NO_VERSION: Version = (0, 0)


class Log(NamedTuple):
    """One log dir of one (partition, topic id) on one broker (the TLA+ record ``Log``)."""

    state: str
    lastWrite: int
    strayAt: int


NO_LOG = Log(NONE, 0, 0)
"""TLA+ ``NoLog``."""


class Msg(NamedTuple):
    """A control request on the network (the TLA+ record ``Msg``). ``flag`` is isNew for an
    INCREMENTAL LeaderAndIsr and delete for a StopReplica; a FULL request lists ``hosted`` and
    has ``part`` 0 and ``topic`` 0."""

    kind: str
    to: int
    brokerEpoch: int
    epoch: int
    seq: int
    part: int
    topic: int
    flag: bool
    hosted: frozenset[tuple[int, int]]


Lost = tuple[int, int, int, int]
"""Ghost entry: (broker, partition, topic id, lastWrite of the log deleted while owed)."""

Disk = tuple[tuple[tuple[Log, ...], ...], ...]


class SCState(NamedTuple):
    """One state of StrayCleanup: the TLA+ variables, in the module's order."""

    now: int
    controllerEpoch: int
    seq: int
    topicId: tuple[int, ...]  # per partition
    replicas: tuple[frozenset[int], ...]  # per partition
    assignedAt: tuple[tuple[Version, ...], ...]  # partition -> broker -> version
    online: tuple[bool, ...]  # per broker
    brokerEpoch: tuple[int, ...]
    seenEpoch: tuple[int, ...]
    appliedVersion: tuple[tuple[Version, ...], ...]  # broker -> partition -> version
    sawFull: tuple[bool, ...]
    dirOnline: tuple[bool, ...]
    disk: Disk  # broker -> partition -> topic id - 1 -> Log
    network: frozenset[Msg]
    lost: frozenset[Lost]


@dataclass(frozen=True)
class StrayCleanupConfig:
    """The constants of StrayCleanup.tla, as a .cfg file assigns them."""

    brokers: tuple[int, ...] = (1, 2)
    faulty_brokers: tuple[int, ...] = (1,)
    partitions: tuple[int, ...] = (1,)
    max_topic_id: int = 2
    max_controller_epoch: int = 2
    max_seq: int = 2
    max_broker_epoch: int = 2
    max_time: int = 1
    retention_period: int = 1
    stray_deletion_delay: int = 0
    bug: str = "none"
    invariants: tuple[str, ...] = ("TypeOK", "NoNewDataDeleted", "TopicIdentity")

    def __post_init__(self) -> None:
        BUG_TABLE.check(self.bug)
        if not self.brokers or not self.partitions:
            raise ValueError("need at least one broker and one partition")
        if not set(self.faulty_brokers) <= set(self.brokers):
            raise ValueError("the faulty brokers are brokers")
        if min(self.max_topic_id, self.max_controller_epoch, self.max_seq,
               self.max_broker_epoch) < 1 or self.max_time < 0:
            raise ValueError("topic ids, epochs and sequence numbers start at 1, time at 0")
        if self.retention_period < 0 or self.stray_deletion_delay < 0:
            raise ValueError("the retention period and the stray deletion delay are >= 0")

    @classmethod
    def from_cfg(cls, path: str | Path) -> StrayCleanupConfig:
        """The constants of a StrayCleanup .cfg file (the one TLC reads)."""
        cfg = parse_cfg(path)
        k = cfg["constants"]
        return cls(
            brokers=tuple(sorted(int(b) for b in k["Brokers"])),
            faulty_brokers=tuple(sorted(int(b) for b in k["FaultyBrokers"])),
            partitions=tuple(sorted(int(p) for p in k["Partitions"])),
            max_topic_id=int(k["MaxTopicId"]),
            max_controller_epoch=int(k["MaxControllerEpoch"]),
            max_seq=int(k["MaxSeq"]),
            max_broker_epoch=int(k["MaxBrokerEpoch"]),
            max_time=int(k["MaxTime"]),
            retention_period=int(k["RetentionPeriod"]),
            stray_deletion_delay=int(k["StrayDeletionDelay"]),
            bug=str(k["Bug"]),
            invariants=tuple(cfg["invariants"]),
        )


def v_lt(a: Version, b: Version) -> bool:
    """TLA+ ``VLt``: version order, controller epoch first."""
    return a < b


def msg_order(m: Msg) -> tuple[object, ...]:
    """TLC's order of requests in a set, the order ``\\E m \\in network`` takes them in: TLC
    compares records field by field, fields and strings in the order the module first names them
    (``Msg``'s fields as declared; kinds "LAI" < "STOP" < "FULL"), and a set by size first."""
    return (_KIND_ORDER[m.kind], m.to, m.brokerEpoch, m.epoch, m.seq, m.part, m.topic, m.flag,
            (len(m.hosted), sorted(m.hosted)))


_KIND_ORDER = {LAI: 0, STOP: 1, FULL: 2}


class StrayCleanupTwin(Spec):
    """Controller decisions in flight, brokers' logs, fencing, versions, strays and orphans."""

    name = "StrayCleanup"

    def __init__(self, config: StrayCleanupConfig | None = None) -> None:
        self.config = config or StrayCleanupConfig()
        k = self.config
        self._b = {b: i for i, b in enumerate(k.brokers)}
        self._p = {p: i for i, p in enumerate(k.partitions)}
        self._topic_ids = range(1, k.max_topic_id + 1)
        self._subsets = [frozenset(c) for n in range(len(k.brokers) + 1)
                         for c in combinations(k.brokers, n)]

    @classmethod
    def from_cfg(cls, path: str | Path) -> Self:
        """The spec a StrayCleanup .cfg file describes."""
        return cls(StrayCleanupConfig.from_cfg(path))

    # -- helpers, named as the TLA+ operators ----------------------------------------------

    def log(self, s: SCState, b: int, p: int, t: int) -> Log:
        """``disk[b][p][t]``."""
        return s.disk[self._b[b]][self._p[p]][t - 1]

    def Assigned(self, s: SCState, b: int, p: int, t: int) -> bool:
        """The controller assigns ``(p, t)`` to ``b``."""
        j = self._p[p]
        return b in s.replicas[j] and t == s.topicId[j]

    def Current(self, s: SCState, b: int, p: int, t: int) -> bool:
        """Assigned, by a decision ``b`` has applied."""
        j, i = self._p[p], self._b[b]
        return (self.Assigned(s, b, p, t)
                and not v_lt(s.appliedVersion[i][j], s.assignedAt[j][i]))

    def View(self, s: SCState, b: int) -> frozenset[tuple[int, int]]:
        """What the controller lists for ``b`` in a FULL LeaderAndIsr."""
        return frozenset((p, s.topicId[j]) for p, j in self._p.items() if b in s.replicas[j])

    def LostBy(self, s: SCState, b: int, p: int, t: int, log: Log,
               ordered: bool) -> frozenset[Lost]:
        """The lost-data ghost of a step removing ``log`` of ``(p, t)`` from ``b``."""
        if log.state != NONE and (
                self.Current(s, b, p, t)
                or (not ordered and s.now - log.lastWrite < self.config.retention_period)):
            return frozenset({(b, p, t, log.lastWrite)})
        return frozenset()

    def NewLog(self, s: SCState) -> Log:
        """A freshly created live log, written now."""
        return Log(LIVE, s.now, 0)

    def Strayed(self, s: SCState, log: Log) -> Log:
        """The log renamed ``-stray`` now."""
        return Log(STRAY, log.lastWrite, s.now)

    def HostedLog(self, s: SCState, log: Log) -> Log:
        """The log once hosted: a stray revived from its data, a missing one created empty."""
        return self.NewLog(s) if log.state == NONE else Log(LIVE, log.lastWrite, 0)

    def HostRow(self, s: SCState, b: int, p: int, t: int) -> tuple[Log, ...]:
        """``b``'s logs of ``p`` after an INCREMENTAL LeaderAndIsr of ``(p, t)``."""
        def after(u: int, log: Log) -> Log:
            if u == t:
                return self.HostedLog(s, log)
            return self.Strayed(s, log) if log.state == LIVE else log
        row = s.disk[self._b[b]][self._p[p]]
        return tuple(after(u, row[u - 1]) for u in self._topic_ids)

    def FullRow(self, s: SCState, b: int, p: int,
                hosted: frozenset[tuple[int, int]]) -> tuple[Log, ...]:
        """``b``'s logs of ``p`` after a FULL request listing ``hosted``."""
        inverted = self.config.bug == "StraySetInverted"

        def after(u: int, log: Log) -> Log:
            listed = (p, u) in hosted
            if inverted:
                if not listed:
                    return log
                return self.Strayed(s, log) if log.state == LIVE else self.HostedLog(s, log)
            if listed:
                return self.HostedLog(s, log)
            return self.Strayed(s, log) if log.state == LIVE else log
        row = s.disk[self._b[b]][self._p[p]]
        return tuple(after(u, row[u - 1]) for u in self._topic_ids)

    def Req(self, s: SCState, kind: str, b: int, p: int, t: int, flag: bool,
            hosted: frozenset[tuple[int, int]]) -> Msg:
        """A request of the controller's next version to ``b``'s current incarnation."""
        return Msg(kind, b, s.brokerEpoch[self._b[b]], s.controllerEpoch, s.seq + 1, p, t, flag,
                   hosted)

    def _set_row(self, disk: Disk, b: int, p: int, row: tuple[Log, ...]) -> Disk:
        i, j = self._b[b], self._p[p]
        return _set(disk, i, _set(disk[i], j, row))

    # -- Init ------------------------------------------------------------------------------

    def init_states(self) -> Iterable[State]:
        k = self.config
        nb, np_ = len(k.brokers), len(k.partitions)
        logs = tuple(Log(LIVE, 0, 0) if t == 1 else NO_LOG for t in self._topic_ids)
        return [SCState(
            now=0, controllerEpoch=1, seq=0, topicId=(1,) * np_,
            replicas=(frozenset(k.brokers),) * np_, assignedAt=(((1, 0),) * nb,) * np_,
            online=(True,) * nb, brokerEpoch=(1,) * nb, seenEpoch=(1,) * nb,
            appliedVersion=(((1, 0),) * np_,) * nb, sawFull=(True,) * nb,
            dirOnline=(True,) * nb, disk=((logs,) * np_,) * nb, network=frozenset(),
            lost=frozenset(),
        )]

    # -- actions, one method per TLA+ operator ---------------------------------------------

    def Tick(self, s: SCState) -> SCState | None:
        """Time passes."""
        if s.now >= self.config.max_time:
            return None
        return s._replace(now=s.now + 1)

    def Append(self, s: SCState, b: int, p: int) -> SCState | None:
        """A write to ``b``'s log of ``p``, hosted as the controller assigns it."""
        i, j = self._b[b], self._p[p]
        t = s.topicId[j]
        if not (s.online[i] and s.dirOnline[i] and self.Current(s, b, p, t)):
            return None
        log = self.log(s, b, p, t)
        if log.state != LIVE:
            return None
        row = _set(s.disk[i][j], t - 1, log._replace(lastWrite=s.now))
        return s._replace(disk=self._set_row(s.disk, b, p, row))

    def Assign(self, s: SCState, p: int, b: int) -> SCState | None:
        """The controller adds ``b`` to ``p``'s replicas; a live ``b`` is sent LeaderAndIsr."""
        j, i = self._p[p], self._b[b]
        if not s.replicas[j] or b in s.replicas[j] or s.seq >= self.config.max_seq:
            return None
        sent = ({self.Req(s, LAI, b, p, s.topicId[j], True, frozenset())} if s.online[i]
                else set())
        return s._replace(
            replicas=_set(s.replicas, j, s.replicas[j] | {b}),
            assignedAt=_set(s.assignedAt, j, _set(s.assignedAt[j], i,
                                                  (s.controllerEpoch, s.seq + 1))),
            network=s.network | sent, seq=s.seq + 1)

    def Unassign(self, s: SCState, p: int, b: int) -> SCState | None:
        """The controller removes ``b`` (one replica stays); a live ``b`` is sent StopReplica."""
        j, i = self._p[p], self._b[b]
        if b not in s.replicas[j] or s.replicas[j] == {b} or s.seq >= self.config.max_seq:
            return None
        sent = ({self.Req(s, STOP, b, p, s.topicId[j], True, frozenset())} if s.online[i]
                else set())
        return s._replace(
            replicas=_set(s.replicas, j, s.replicas[j] - {b}),
            assignedAt=_set(s.assignedAt, j, _set(s.assignedAt[j], i, NO_VERSION)),
            network=s.network | sent, seq=s.seq + 1)

    def DeleteTopic(self, s: SCState, p: int) -> SCState | None:
        """``p``'s topic is deleted: its live replicas are sent StopReplica."""
        j = self._p[p]
        if not s.replicas[j] or s.seq >= self.config.max_seq:
            return None
        sent = {self.Req(s, STOP, b, p, s.topicId[j], True, frozenset())
                for b in s.replicas[j] if s.online[self._b[b]]}
        return s._replace(
            replicas=_set(s.replicas, j, frozenset()),
            assignedAt=_set(s.assignedAt, j, (NO_VERSION,) * len(self.config.brokers)),
            network=s.network | sent, seq=s.seq + 1)

    def CreateTopic(self, s: SCState, p: int, S: frozenset[int]) -> SCState | None:
        """A topic is created under ``p``'s name with the next topic id, assigned to ``S``."""
        j = self._p[p]
        if (s.replicas[j] or not S or s.topicId[j] >= self.config.max_topic_id
                or s.seq >= self.config.max_seq):
            return None
        new = s.topicId[j] + 1
        sent = {self.Req(s, LAI, b, p, new, True, frozenset())
                for b in S if s.online[self._b[b]]}
        v = (s.controllerEpoch, s.seq + 1)
        return s._replace(
            topicId=_set(s.topicId, j, new), replicas=_set(s.replicas, j, S),
            assignedAt=_set(s.assignedAt, j, tuple(v if b in S else NO_VERSION
                                                   for b in self.config.brokers)),
            network=s.network | sent, seq=s.seq + 1)

    def StopBroker(self, s: SCState, b: int) -> SCState | None:
        """``b`` stops: its disk stays, its memory (epoch seen, versions applied) is lost."""
        i = self._b[b]
        if b not in self.config.faulty_brokers or not s.online[i]:
            return None
        return s._replace(
            online=_set(s.online, i, False), seenEpoch=_set(s.seenEpoch, i, 0),
            appliedVersion=_set(s.appliedVersion, i,
                                (NO_VERSION,) * len(self.config.partitions)),
            sawFull=_set(s.sawFull, i, False))

    def StartBroker(self, s: SCState, b: int) -> SCState | None:
        """``b`` registers with a new broker epoch; the controller sends it a FULL request."""
        i = self._b[b]
        if (s.online[i] or s.brokerEpoch[i] >= self.config.max_broker_epoch
                or s.seq >= self.config.max_seq):
            return None
        epoch = s.brokerEpoch[i] + 1
        full = self.Req(s, FULL, b, 0, 0, False, self.View(s, b))._replace(brokerEpoch=epoch)
        return s._replace(online=_set(s.online, i, True),
                          brokerEpoch=_set(s.brokerEpoch, i, epoch),
                          network=s.network | {full}, seq=s.seq + 1)

    def ControllerFailover(self, s: SCState) -> SCState | None:
        """A new controller: every live broker is sent a FULL request."""
        if s.controllerEpoch >= self.config.max_controller_epoch:
            return None
        e = s.controllerEpoch + 1
        sent = {Msg(FULL, b, s.brokerEpoch[i], e, 1, 0, 0, False, self.View(s, b))
                for b, i in self._b.items() if s.online[i]}
        return s._replace(controllerEpoch=e, seq=1, network=s.network | sent)

    def FailDir(self, s: SCState, b: int) -> SCState | None:
        """``b``'s log dir fails."""
        i = self._b[b]
        if b not in self.config.faulty_brokers or not s.dirOnline[i]:
            return None
        return s._replace(dirOnline=_set(s.dirOnline, i, False))

    def RepairDir(self, s: SCState, b: int) -> SCState | None:
        """``b``'s log dir is readable again."""
        i = self._b[b]
        if s.dirOnline[i]:
            return None
        return s._replace(dirOnline=_set(s.dirOnline, i, True))

    def Deliver(self, s: SCState, m: Msg) -> SCState | None:
        """``m`` reaches its broker (again, or for the first time); fenced, it is disabled."""
        k = self.config
        b = m.to
        i = self._b[b]
        if m not in s.network or not s.online[i] or m.brokerEpoch != s.brokerEpoch[i]:
            return None
        stale = m.epoch < s.seenEpoch[i]
        stale_bug = k.bug == "StaleEpochStrayDeletion" and stale
        if stale and not (stale_bug and m.kind == FULL):
            return None
        v = (m.epoch, m.seq)

        def fresh(p: int) -> bool:
            return not v_lt(v, s.appliedVersion[i][self._p[p]]) or stale_bug

        s2 = s._replace(seenEpoch=_set(s.seenEpoch, i, s.seenEpoch[i] if stale else m.epoch))
        online_dir = s.dirOnline[i]
        if m.kind == LAI:
            p, j = m.part, self._p[m.part]
            if not fresh(p):
                return s2
            if online_dir:
                return s2._replace(
                    disk=self._set_row(s.disk, b, p, self.HostRow(s, b, p, m.topic)),
                    appliedVersion=_set(s.appliedVersion, i, _set(s.appliedVersion[i], j, v)))
            if k.bug == "NonNewReplicaWithDirOffline" and not m.flag:
                old = self.log(s, b, p, m.topic)
                row = _set(s.disk[i][j], m.topic - 1, self.NewLog(s))
                return s2._replace(
                    disk=self._set_row(s.disk, b, p, row),
                    appliedVersion=_set(s.appliedVersion, i, _set(s.appliedVersion[i], j, v)),
                    lost=s.lost | self.LostBy(s, b, p, m.topic, old, False))
            return s2
        if m.kind == STOP:
            p, j = m.part, self._p[m.part]
            if not fresh(p) or not online_dir:
                return s2
            ignores = k.bug == "StopReplicaIgnoresTopicId"
            gone = [u for u in self._topic_ids if self.log(s, b, p, u).state == LIVE
                    and (u == m.topic or ignores)]
            lost = s.lost
            row = s.disk[i][j]
            for u in gone:
                lost = lost | self.LostBy(s, b, p, u, row[u - 1], u == m.topic)
                row = _set(row, u - 1, NO_LOG)
            return s2._replace(
                disk=self._set_row(s.disk, b, p, row),
                appliedVersion=_set(s.appliedVersion, i, _set(s.appliedVersion[i], j, v)),
                lost=lost)
        # FULL
        decided = [p for p in k.partitions if fresh(p)]
        if online_dir:
            disk, applied = s.disk, s.appliedVersion[i]
            for p in decided:
                j = self._p[p]
                disk = self._set_row(disk, b, p, self.FullRow(s, b, p, m.hosted))
                if v_lt(applied[j], v):
                    applied = _set(applied, j, v)
            return s2._replace(disk=disk, appliedVersion=_set(s.appliedVersion, i, applied),
                               sawFull=_set(s.sawFull, i, True))
        if k.bug == "NonNewReplicaWithDirOffline":
            made = [(p, u) for p, u in sorted(m.hosted) if p in decided]
            disk, applied, lost = s.disk, s.appliedVersion[i], s.lost
            for p, u in made:
                j = self._p[p]
                lost = lost | self.LostBy(s, b, p, u, self.log(s, b, p, u), False)
                disk = self._set_row(disk, b, p, _set(disk[i][j], u - 1, self.NewLog(s)))
                applied = _set(applied, j, v)
            return s2._replace(disk=disk, appliedVersion=_set(s.appliedVersion, i, applied),
                               lost=lost)
        return s2

    def DeleteStray(self, s: SCState, b: int, p: int, t: int) -> SCState | None:
        """KIP-370's delayed, age-guarded deletion of ``b``'s stray ``(p, t)``."""
        k = self.config
        i, j = self._b[b], self._p[p]
        if not (s.online[i] and s.dirOnline[i] and s.sawFull[i]):
            return None
        log = self.log(s, b, p, t)
        if log.state != STRAY or s.now < log.strayAt + k.stray_deletion_delay:
            return None
        if s.now - log.lastWrite < k.retention_period and k.bug != "NoAgeGuard":
            return None
        row = _set(s.disk[i][j], t - 1, NO_LOG)
        return s._replace(disk=self._set_row(s.disk, b, p, row),
                          lost=s.lost | self.LostBy(s, b, p, t, log, False))

    def Truncate(self, s: SCState, b: int, p: int, t: int, w: int) -> SCState | None:
        """A truncation of ``b``'s live log of ``(p, t)`` (a follower dropping the records its
        leader does not have; which ones may go is LogStartOffset's and LeaderElection's
        concern): what remains of it was last written at ``w``, before its newest write."""
        i, j = self._b[b], self._p[p]
        if not (s.online[i] and s.dirOnline[i]):
            return None
        log = self.log(s, b, p, t)
        if log.state != LIVE or not w < log.lastWrite:
            return None
        row = _set(s.disk[i][j], t - 1, log._replace(lastWrite=w))
        return s._replace(disk=self._set_row(s.disk, b, p, row))

    # -- Next --------------------------------------------------------------------------------

    def actions(self) -> Sequence[Action]:
        k = self.config
        bp = [(b, p) for b in k.brokers for p in k.partitions]
        pb = [(p, b) for p in k.partitions for b in k.brokers]
        bpt = [(b, p, t) for b, p in bp for t in self._topic_ids]
        bptw = [(b, p, t, w) for b, p, t in bpt for w in range(k.max_time + 1)]
        return [
            Action("Tick", lambda s: _each([self.Tick(_sc(s))])),
            Action("Append", lambda s: _each(self.Append(_sc(s), b, p) for b, p in bp)),
            Action("Assign", lambda s: _each(self.Assign(_sc(s), p, b) for p, b in pb)),
            Action("Unassign", lambda s: _each(self.Unassign(_sc(s), p, b) for p, b in pb)),
            Action("DeleteTopic",
                   lambda s: _each(self.DeleteTopic(_sc(s), p) for p in k.partitions)),
            Action("CreateTopic", lambda s: _each(self.CreateTopic(_sc(s), p, S)
                                                  for p in k.partitions
                                                  for S in self._subsets)),
            Action("StopBroker", lambda s: _each(self.StopBroker(_sc(s), b) for b in k.brokers)),
            Action("StartBroker",
                   lambda s: _each(self.StartBroker(_sc(s), b) for b in k.brokers)),
            Action("ControllerFailover", lambda s: _each([self.ControllerFailover(_sc(s))])),
            Action("FailDir", lambda s: _each(self.FailDir(_sc(s), b) for b in k.brokers)),
            Action("RepairDir", lambda s: _each(self.RepairDir(_sc(s), b) for b in k.brokers)),
            Action("Deliver", lambda s: _each(self.Deliver(_sc(s), m)
                                              for m in sorted(_sc(s).network, key=msg_order))),
            Action("DeleteStray",
                   lambda s: _each(self.DeleteStray(_sc(s), b, p, t) for b, p, t in bpt)),
            Action("Truncate",
                   lambda s: _each(self.Truncate(_sc(s), b, p, t, w) for b, p, t, w in bptw)),
        ]

    # -- invariants --------------------------------------------------------------------------

    def TypeOK(self, s: State) -> bool:
        """Every variable within its type (the TLA+ ``TypeOK``)."""
        s = _sc(s)
        k = self.config
        times = range(0, k.max_time + 1)
        brokers = set(k.brokers)

        def version(v: Version) -> bool:
            return 0 <= v[0] <= k.max_controller_epoch and 0 <= v[1] <= k.max_seq
        return (
            s.now in times and 1 <= s.controllerEpoch <= k.max_controller_epoch
            and 0 <= s.seq <= k.max_seq
            and all(t in self._topic_ids for t in s.topicId)
            and all(r <= brokers for r in s.replicas)
            and all(version(v) for row in s.assignedAt for v in row)
            and all(version(v) for row in s.appliedVersion for v in row)
            and all(1 <= e <= k.max_broker_epoch for e in s.brokerEpoch)
            and all(0 <= e <= k.max_controller_epoch for e in s.seenEpoch)
            and all(log.state in (NONE, LIVE, STRAY) and log.lastWrite in times
                    and log.strayAt in times
                    for row in s.disk for logs in row for log in logs)
            and all(m.kind in (LAI, STOP, FULL) and m.to in brokers
                    and 1 <= m.epoch <= k.max_controller_epoch and 1 <= m.seq <= k.max_seq
                    for m in s.network)
            and all(d[0] in brokers and d[1] in self._p and d[3] in times for d in s.lost)
        )

    def NoNewDataDeleted(self, s: State) -> bool:
        """No log was deleted while its data was owed (the ghost ``lost`` is empty)."""
        return not _sc(s).lost

    def TopicIdentity(self, s: State) -> bool:
        """No broker has two live logs (two topic ids) of one partition name."""
        return all(sum(log.state == LIVE for log in row) <= 1
                   for logs in _sc(s).disk for row in logs)

    def invariants(self) -> Sequence[Invariant]:
        table = {"TypeOK": self.TypeOK, "NoNewDataDeleted": self.NoNewDataDeleted,
                 "TopicIdentity": self.TopicIdentity}
        return [(name, table[name]) for name in self.config.invariants]

    def describe(self, s: State) -> str:
        s = _sc(s)
        lines = [f"now={s.now} controllerEpoch={s.controllerEpoch} seq={s.seq}"]
        for p, j in self._p.items():
            lines.append(f"partition {p}: topicId={s.topicId[j]} "
                         f"replicas={sorted(s.replicas[j])} assignedAt="
                         + ", ".join(f"{b}:{s.assignedAt[j][i]}" for b, i in self._b.items()))
        for b, i in self._b.items():
            state = "online" if s.online[i] else "offline"
            logs = [f"({p},id {t}) {log.state} lastWrite={log.lastWrite}"
                    + (f" strayAt={log.strayAt}" if log.state == STRAY else "")
                    for p, j in self._p.items() for t in self._topic_ids
                    if (log := s.disk[i][j][t - 1]).state != NONE]
            lines.append(f"broker {b}: {state} brokerEpoch={s.brokerEpoch[i]} "
                         f"seenEpoch={s.seenEpoch[i]} applied={list(s.appliedVersion[i])} "
                         f"sawFull={s.sawFull[i]} dir={'online' if s.dirOnline[i] else 'OFFLINE'}"
                         f" logs: {', '.join(logs) or '-'}")
        for m in sorted(s.network, key=msg_order):
            what = (f"hosted={sorted(m.hosted)}" if m.kind == FULL
                    else f"({m.part},id {m.topic}) {'isNew' if m.kind == LAI else 'delete'}"
                         f"={m.flag}")
            lines.append(f"sent: {m.kind} to broker {m.to}@{m.brokerEpoch} "
                         f"version ({m.epoch},{m.seq}) {what}")
        for b, p, t, w in sorted(s.lost):
            lines.append(f"LOST: ({p},id {t}) on broker {b}, written at {w}")
        return "\n".join(lines)


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


class StrayCleanupSpec(StrayCleanupTwin):
    """The twin as the registry :data:`logwright.model.SPECS` and ``logwright verify`` use it
    (the name the other modules give their packed twin; this one has no packed encoding)."""
