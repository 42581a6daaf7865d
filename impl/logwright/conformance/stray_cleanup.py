"""The abstraction of a simulated cluster onto the StrayCleanup twin, per partition name.

One twin instance per partition name (``Partitions = {1}``), over every broker of the cluster
(``Brokers``, sorted; all of them ``FaultyBrokers``). Partition names do not interact in the
model nor in the code, so each name is checked on its own; a FULL LeaderAndIsr is, for each
name, the FULL request restricted to that name. Topic ids are Uuids in the code and ordinals in
the model: each name numbers its topic ids 1, 2, ... in the order the projection first sees
them (``MAX_TOPIC_IDS`` generations per name are followed; a name re-created more often than
that is no longer checked). Times are the code's milliseconds, the clock unbounded; the twin's
``RetentionPeriod`` is the brokers' ``log.retention.ms`` (-1, infinite, is beyond any run) and
``StrayDeletionDelay`` their ``orphan.partition.removal.delay.ms``.

What is abstracted, for name ``p`` and broker ``b``:

* ``disk[b][p][t]``: ``live`` when a log dir of ``b`` (online or not) holds the live log of
  ``p`` with topic id ``t`` in its ``partition.metadata``; ``stray`` when it holds a ``-stray``
  dir of ``p`` with that id; ``none`` otherwise. ``lastWrite`` is the time the projection saw
  the log's end offset grow (or the log created: a new empty log is written at its creation),
  kept through a set-aside and a revival, and, when its end offset falls (a truncation: the
  twin's ``Truncate``), the newest record or file time of the segments left, as orphan removal
  reads them; ``strayAt`` is ``StrayLog.since_ms``. A broker that is
  down keeps the disk last seen;
* ``online[b]``: the process is up; ``brokerEpoch[b]``: its registration epoch (the store's,
  once registered, as ControllerFencing's projection reads it); ``seenEpoch[b]``: the highest
  controller epoch it accepted (0 when down); ``appliedVersion[b]``: its
  ``ReplicaManager.applied_version(p)`` (``(0, 0)`` for none, and when down); ``sawFull[b]``:
  ``log_manager.full_request_applied``; ``dirOnline[b]``: every log dir of ``b`` holding a log
  of ``p`` is online, and, when none does, every log dir of ``b`` is (the model's broker has one
  dir: the code's refuses to create a replica that is not new while any dir is offline);
* the store: ``controllerEpoch``; ``topicId[p]`` (the newest id, kept after a deletion);
  ``replicas[p]`` (``{}`` while the topic is deleted or being deleted); ``assignedAt[p][b]``:
  ``NO_VERSION`` when ``b`` is not a replica; otherwise the version of the first request ``b``
  applied for ``p`` after it was assigned and that left it hosting the live log, newer than
  every request sent to ``b`` before the check that saw it assigned (the decision's version as
  far as the broker has learnt it); :data:`PENDING` until then (above every version: not yet
  ``Current``). A stray on an offline dir does not make ``dirOnline`` False (nothing is done
  to it there; the code acts on the online dirs).

Hidden, chosen by the search: ``seq`` (0 in every abstract state; the controller's correlation
ids are the versions of the requests it sent), and ``seenEpoch`` raised by a request about
other names (a broker's controller epoch is one per broker). Not hidden: ``network``. The
projection records every control request the controllers send (it taps the simulated
network's ``send``), and a ``Deliver`` step may only deliver one of those, addressed as sent:
kind, broker epoch, version, topic id and isNew as the code sent them. The abstract states
themselves have ``network = {}``.

Ghost: ``lost``, kept by the projection from the deletions it sees: a log of ``<<b, p, t>>``
gone (or superseded: a second live log of it on another dir, while the first is on an offline
one) that was ``Current`` just before, or whose newest write is younger than the retention,
without a StopReplica(delete) naming that very log (``p`` and its topic id) ever sent to ``b``.
``NoNewDataDeleted`` is checked on it, and every step the search tries keeps the ghost as the
projection computed it.

What is checked, after every event of the world (when the abstract state changed) and every
step of the fuzzer: ``NoNewDataDeleted`` and ``TopicIdentity`` (``TypeOK`` bounds what the code
does not), then that the change is a stutter or a path of at most ``MAX_STEPS`` twin steps.
Time passes first (the twin's Ticks up to the new time, one label), and the controller's
changes of the store are one composite step (a failover, a deletion, a creation, the
reassignment's Unassigns and Assigns, as the store shows them). A broker's restart (a new
incarnation: a power loss may have lost what was not durable) is outside the twin: the instance
starts a new behaviour there (:meth:`RefinementChecker.rebase`, invariants checked), keeping
the logs it knew on dirs the new incarnation cannot read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from logwright.broker.broker import Broker
from logwright.cluster import Cluster
from logwright.conformance.refinement import (
    ClusterObserver,
    Identity,
    RefinementChecker,
    RefinementViolation,
    snapshot,
)
from logwright.identity import TopicPartition, Uuid
from logwright.model.core import State
from logwright.model.stray_cleanup import (
    FULL,
    LAI,
    LIVE,
    NO_LOG,
    NO_VERSION,
    NONE,
    STOP,
    STRAY,
    Log,
    Msg,
    SCState,
    StrayCleanupConfig,
    StrayCleanupTwin,
    Version,
)
from logwright.protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrType,
    StopReplicaRequest,
)
from logwright.storage.segment import read_newest_timestamp_ms
from logwright.world.fs import FileSystem

UNBOUNDED = 2**62
"""The twin's bounds on epochs, sequence numbers and time: beyond any run."""

MAX_TOPIC_IDS = 8
"""Generations of one partition name followed (the twin's ``MaxTopicId``)."""

PENDING: Version = (UNBOUNDED, 0)
"""``assignedAt`` of a replica whose decision the broker has not applied yet."""

MAX_STEPS = 3
EMPTY = 0
"""``lastWrite`` of a log that never held a record (the twin's NewLog is written at its creation:
the projection shows a new empty log as holding no data, as old as can be)."""
"""Twin steps per observed change besides the Ticks and the controller's composite step."""

INVARIANTS = ("NoNewDataDeleted", "TopicIdentity")
"""The twin invariants checked (TypeOK bounds what the implementation does not)."""


def twin_for(brokers: tuple[int, ...], retention_ms: int, delay_ms: int) -> StrayCleanupTwin:
    """The twin one partition name is checked against (see the module docstring)."""
    return StrayCleanupTwin(StrayCleanupConfig(
        brokers=brokers, faulty_brokers=brokers, partitions=(1,), max_topic_id=MAX_TOPIC_IDS,
        max_controller_epoch=UNBOUNDED, max_seq=UNBOUNDED, max_broker_epoch=UNBOUNDED,
        max_time=UNBOUNDED, retention_period=retention_ms if retention_ms >= 0 else UNBOUNDED,
        stray_deletion_delay=delay_ms, invariants=INVARIANTS))


def _version(v: tuple[int, int]) -> Version:
    return NO_VERSION if v[0] < 0 else (v[0], max(0, v[1]))


class StrayCleanupRefinement:
    """The twin's steps toward a target, with ``seq`` hidden and the network the requests the
    projection saw sent (a :class:`~logwright.conformance.refinement.Refinement`)."""

    def __init__(self, spec: StrayCleanupTwin) -> None:
        self._spec = spec
        self.network: frozenset[Msg] = frozenset()
        #: The oldest version of a request the projection saw sent (None: none yet): a request
        #: older than that was sent before it attached, and is hidden (chosen by the search).
        self.first_seen: Version | None = None
        #: The brokers (indexes) holding no log of the name, with one log dir offline and
        #: another online: their ``dirOnline`` is False, but a new replica (isNew) is created
        #: on the online dir, and their strays there are deleted (the model's broker has one
        #: dir).
        self.mixed: frozenset[int] = frozenset()

    @property
    def spec(self) -> StrayCleanupTwin:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """Every twin step from ``state`` that may lead to ``target``, projected."""
        assert isinstance(state, SCState) and isinstance(target, SCState)
        return self._moves(state, target)

    def _prelude(self, s: SCState, target: SCState) -> SCState:
        """``s`` with what the search chooses before any step: the time passed (the twin's
        Ticks up to the target's time), the network the requests sent, the ghost the
        projection's, the controller epoch a broker saw raised by a request about other names,
        a decision's version a broker has now learnt, and the registration of a new incarnation
        completed (its broker epoch, the second half of the twin's StartBroker)."""
        brokers = self._spec.config.brokers
        seen = tuple(max(s.seenEpoch[i], target.seenEpoch[i])
                     if s.online[i] and target.online[i] else s.seenEpoch[i]
                     for i in range(len(brokers)))
        assigned = tuple(target.assignedAt[0][i]
                         if v == PENDING and target.assignedAt[0][i] not in (PENDING, NO_VERSION)
                         else v for i, v in enumerate(s.assignedAt[0]))
        registered = tuple(max(e, target.brokerEpoch[i]) if s.online[i] and target.online[i]
                           else e for i, e in enumerate(s.brokerEpoch))
        return s._replace(now=max(s.now, target.now), network=self.network, lost=target.lost,
                          seenEpoch=seen, assignedAt=(assigned,), brokerEpoch=registered)

    def _project(self, t: SCState, start: SCState, target: SCState) -> SCState:
        """A twin state as the projection shows it: seq and network hidden, the ghost the
        projection's, an assignment its broker has not learnt yet PENDING."""
        # A new topic id's assignments are all new, even one whose version (``seq`` hidden,
        # counted from 0 by the search) equals the old topic's.
        renewed = t.topicId != start.topicId
        assigned = tuple(PENDING if v != NO_VERSION and (renewed or v != start.assignedAt[0][i])
                         else v for i, v in enumerate(t.assignedAt[0]))
        disk = tuple(
            (tuple(Log(LIVE, EMPTY, 0) if log.state == LIVE and old.state == NONE
                   and aim == Log(LIVE, EMPTY, 0) else log
                   for log, old, aim in zip(row[0], start_row[0], target_row[0], strict=True)),)
            for row, start_row, target_row in zip(t.disk, start.disk, target.disk, strict=True))
        return t._replace(seq=0, network=frozenset(), lost=target.lost, assignedAt=(assigned,),
                          disk=disk)

    def _moves(self, s: SCState, target: SCState) -> Iterator[tuple[str, SCState]]:
        spec = self._spec
        s = self._prelude(s, target)
        if self._project(s, s, target) == target:
            yield "(Ticks, hidden values)", target
            return
        composite = self._controller(s, target)  # the store's changes, one composite step
        if composite is not None:
            labels, t = composite
            yield ", ".join(labels), self._project(t, s, target)
        for i, b in enumerate(spec.config.brokers):
            changed = _broker_part(s, i) != _broker_part(target, i)
            if not changed:
                continue
            unseen = self._unseen(s, target, i)
            sent = s._replace(network=s.network | unseen) if unseen else s
            for m in sorted(sent.network, key=_order):
                if m.to != b or not ((m.epoch, m.seq) == target.appliedVersion[i][0]
                                     or (m.kind == FULL and target.sawFull[i] != s.sawFull[i])
                                     or m in unseen):
                    continue
                start = sent
                if i in self.mixed and m.kind == LAI and m.flag:
                    start = sent._replace(dirOnline=_with(sent.dirOnline, i, True))
                delivered = spec.Deliver(start, m)
                if delivered is not None:
                    yield (f"Deliver({m.kind} to {b}, version ({m.epoch},{m.seq}))",
                           self._project(delivered, s, target))
                    if i in self.mixed and m.kind == FULL and not target.dirOnline[i]:
                        # the dir offline for the name: nothing created nor revived (no
                        # replica that is not new while a dir is offline), but the FULL
                        # request learnt: the strays of the online dirs were decided by it
                        seen = delivered._replace(sawFull=_with(delivered.sawFull, i, True))
                        yield (f"Deliver({m.kind} to {b}, version ({m.epoch},{m.seq})) "
                               "(the dir offline for the name, another online: FULL learnt)",
                               self._project(seen, s, target))
            # Orphan removal reads the strays' own dir, online here.
            strays = (s._replace(dirOnline=_with(s.dirOnline, i, True)) if i in self.mixed
                      else s)
            write = self._write(s, target, i)
            if write is not None:
                yield f"Write({b}) (a replica not told yet)", self._project(write, s, target)
            for tid, log in enumerate(s.disk[i][0], start=1):
                aim = target.disk[i][0][tid - 1]
                if log.state == LIVE and aim.state != NONE and aim.lastWrite < log.lastWrite:
                    cut = spec.Truncate(s, b, 1, tid, aim.lastWrite)
                    if cut is not None:
                        yield f"Truncate({b}, id {tid})", self._project(cut, s, target)
            for name, nxt in (("Append", spec.Append(s, b, 1)),
                              ("StopBroker", spec.StopBroker(s, b)),
                              ("FailDir", spec.FailDir(s, b)), ("RepairDir", spec.RepairDir(s, b))):
                if nxt is not None:
                    yield f"{name}({b})", self._project(nxt, s, target)
            for tid in range(1, MAX_TOPIC_IDS + 1):
                nxt = spec.DeleteStray(strays, b, 1, tid)
                if nxt is not None:
                    yield f"DeleteStray({b}, id {tid})", self._project(
                        nxt._replace(dirOnline=s.dirOnline), s, target)
            # One run of orphan removal deletes every stray whose time has come, perhaps more
            # than the search's steps: each of them the twin's DeleteStray, in turn.
            gone = [tid for tid in range(1, MAX_TOPIC_IDS + 1)
                    if s.disk[i][0][tid - 1].state == STRAY
                    and target.disk[i][0][tid - 1].state == NONE]
            if len(gone) > 1:
                run: SCState | None = strays
                for tid in gone:
                    run = spec.DeleteStray(run, b, 1, tid) if run is not None else None
                if run is not None:
                    yield (f"DeleteStray({b}, ids {gone}) (one run of orphan removal)",
                           self._project(run._replace(dirOnline=s.dirOnline), s, target))

    def _write(self, s: SCState, target: SCState, i: int) -> SCState | None:
        """A write the twin's Append does not allow but the code (and Kafka) makes: to a live
        log of a running broker, on an online dir, that the controller no longer assigns it
        (or assigns by a decision it has not applied yet): a follower fetches until a request
        tells it otherwise. Its newest write becomes now, which only keeps it longer."""
        b = self._spec.config.brokers[i]
        if not (s.online[i] and s.dirOnline[i]):
            return None
        row = s.disk[i][0]
        for t, log in enumerate(row, start=1):
            if log.state == LIVE and not self._spec.Current(s, b, 1, t) \
                    and target.disk[i][0][t - 1] == log._replace(lastWrite=s.now):
                new_row = (*row[:t - 1], log._replace(lastWrite=s.now), *row[t:])
                return s._replace(disk=(*s.disk[:i], (new_row,), *s.disk[i + 1:]))
        return None

    def _unseen(self, s: SCState, target: SCState, i: int) -> frozenset[Msg]:
        """The requests to broker ``i`` of the target's version the projection may not have
        seen sent (older than the first it saw): every kind, topic id and flag."""
        b, be = self._spec.config.brokers[i], s.brokerEpoch[i]
        ids = range(1, max(s.topicId[0], target.topicId[0]) + 1)
        out: set[Msg] = set()
        if self.first_seen is not None and target.sawFull[i] and not s.sawFull[i]:
            # a FULL request sent before, older than what the broker applied for this name
            old = (self.first_seen[0], self.first_seen[1] - 1)
            out |= {Msg(FULL, b, be, old[0], old[1], 0, 0, False, frozenset({(1, t)}))
                    for t in ids}
            out.add(Msg(FULL, b, be, old[0], old[1], 0, 0, False, frozenset()))
        v = target.appliedVersion[i][0]
        if v == NO_VERSION or (self.first_seen is not None and v >= self.first_seen):
            return frozenset(out)
        out.add(Msg(FULL, b, be, v[0], v[1], 0, 0, False, frozenset()))
        for t in ids:
            out.add(Msg(FULL, b, be, v[0], v[1], 0, 0, False, frozenset({(1, t)})))
            for flag in (False, True):
                out.add(Msg(LAI, b, be, v[0], v[1], 1, t, flag, frozenset()))
                out.add(Msg(STOP, b, be, v[0], v[1], 1, t, True, frozenset()))
        return frozenset(out)

    def _controller(self, s: SCState, target: SCState
                    ) -> tuple[list[str], SCState] | None:
        """The store's changes from ``s`` to ``target`` as twin steps, or None (none, or not
        steps of the twin)."""
        spec = self._spec
        brokers = spec.config.brokers
        if (s.controllerEpoch, s.topicId, s.replicas) == (
                target.controllerEpoch, target.topicId, target.replicas):
            return None
        labels: list[str] = []
        t: SCState | None = s
        while t is not None and t.controllerEpoch < target.controllerEpoch:
            t = spec.ControllerFailover(t._replace(seq=0))
            labels.append("ControllerFailover")
        if t is None:
            return None
        want = target.replicas[0]
        if t.topicId[0] != target.topicId[0]:
            if t.replicas[0]:
                t = spec.DeleteTopic(t._replace(seq=0), 1)
                labels.append("DeleteTopic")
            while t is not None and t.topicId[0] < target.topicId[0]:
                created = spec.CreateTopic(t._replace(seq=0), 1, want or frozenset(brokers))
                if created is not None and created.topicId[0] < target.topicId[0]:
                    created = spec.DeleteTopic(created._replace(seq=0), 1)
                    labels.append("CreateTopic, DeleteTopic")
                else:
                    labels.append("CreateTopic")
                t = created
            if t is None:
                return None
            if not want and t.replicas[0]:
                t = spec.DeleteTopic(t._replace(seq=0), 1)
                labels.append("DeleteTopic")
        elif not want and t.replicas[0]:
            t = spec.DeleteTopic(t._replace(seq=0), 1)
            labels.append("DeleteTopic")
        elif want and not t.replicas[0]:
            return None  # a deleted topic's name assigned again without a new id
        for b in sorted(want - t.replicas[0]) if t is not None else []:
            t = spec.Assign(t._replace(seq=0), 1, b) if t is not None else None
            labels.append(f"Assign({b})")
        for b in sorted(t.replicas[0] - want) if t is not None else []:
            t = spec.Unassign(t._replace(seq=0), 1, b) if t is not None else None
            labels.append(f"Unassign({b})")
        if t is None:
            return None
        return labels, t


def _newest_write(fs: FileSystem, path: str) -> int:
    """The newest record or file time of the segments in the dir ``path`` (EMPTY if none can
    be read): what orphan removal judges a log's age by."""
    newest = EMPTY
    try:
        for name in fs.listdir(path):
            if name.endswith(".log"):
                seg = posixpath.join(path, name)
                newest = max(newest, read_newest_timestamp_ms(fs, seg) or EMPTY,
                             fs.mtime_ms(seg))
    except OSError:
        pass
    return newest


def _kept(inst: _Instance) -> tuple[object, ...]:
    """What a check may change of what the projection keeps of a name (the requests recorded,
    ``network``, ``stopped`` and ``sent_max``, change only as they are sent)."""
    return (inst.ids, inst.topic_ord, inst.assigned, inst.floor, inst.logs, inst.lost,
            inst.dirs, inst.incarnation, inst.sent_max_checked, inst.overflow, inst.mixed,
            inst.unreadable, inst.disk,
            # told apart by identity (``is``): the incarnations
            [Identity(x) for x in inst.incarnation.values()],
            [Identity(x[2]) for d in inst.unreadable.values() for x in d.values()])


def _with(t: tuple[bool, ...], i: int, v: bool) -> tuple[bool, ...]:
    return (*t[:i], v, *t[i + 1:])


def _broker_part(s: SCState, i: int) -> tuple[object, ...]:
    return (s.online[i], s.brokerEpoch[i], s.seenEpoch[i], s.appliedVersion[i], s.sawFull[i],
            s.dirOnline[i], s.disk[i])


def _order(m: Msg) -> tuple[object, ...]:
    return (m.to, m.epoch, m.seq, m.kind, m.topic, m.flag, sorted(m.hosted))


@dataclass
class _LogSeen:
    """What the projection keeps of one log of one (broker, name, topic id)."""

    leo: int = -1
    last_write: int = 0


@dataclass
class _Instance:
    """One partition name's twin, checker and what the projection keeps of it."""

    brokers: tuple[int, ...]
    refinement: StrayCleanupRefinement
    checker: RefinementChecker
    ids: dict[Uuid, int] = field(default_factory=dict)
    topic_ord: int = 1
    assigned: dict[tuple[int, int], Version] = field(default_factory=dict)  # (b, ord)
    #: Per broker: the newest version of a request naming the name (or FULL) sent to it, now
    #: and as it was at the previous check.
    sent_max: dict[int, Version] = field(default_factory=dict)
    sent_max_checked: dict[int, Version] = field(default_factory=dict)
    #: (b, ord) -> the newest version sent to ``b`` before the check that first saw ``b``
    #: assigned: only a request newer than that can have told ``b`` of this assignment.
    floor: dict[tuple[int, int], Version] = field(default_factory=dict)
    logs: dict[tuple[int, int], _LogSeen] = field(default_factory=dict)
    lost: set[tuple[int, int, int, int]] = field(default_factory=set)
    disk: dict[int, tuple[Log, ...]] = field(default_factory=dict)
    dirs: dict[int, dict[int, str]] = field(default_factory=dict)  # b -> ord -> dir of the log
    incarnation: dict[int, object] = field(default_factory=dict)
    network: set[Msg] = field(default_factory=set)
    #: (b, ord) -> when a StopReplica(delete) naming that topic id was last sent to ``b``.
    stopped: dict[tuple[int, int], int] = field(default_factory=dict)
    #: (b, ord) -> when a FULL LeaderAndIsr that does not list that topic id for the name was
    #: last sent to ``b``: the controller ended the assignment, as a StopReplica(delete) does.
    dropped: dict[tuple[int, int], int] = field(default_factory=dict)
    overflow: bool = False
    mixed: set[int] = field(default_factory=set)
    #: Per broker: topic id -> (dir, log) of a live log on a dir its incarnation cannot read.
    unreadable: dict[int, dict[int, tuple[str, Log, object]]] = field(default_factory=dict)
    #: Control requests recorded for the name (``_record_for``): a part of the check's inputs.
    taps: int = 0
    #: The inputs of the last check, if it was quiet (``StrayCleanupProjection.check``).
    quiet_inputs: tuple[object, ...] | None = None
    #: The same, kept for the cross-check (``cross_check``), which checks every name in full.
    cross_inputs: tuple[object, ...] | None = None

    def ordinal(self, topic_id: Uuid) -> int:
        """The model's topic id of ``topic_id`` (numbered in order of appearance)."""
        n = self.ids.get(topic_id)
        if n is None:
            n = len(self.ids) + 1
            self.ids[topic_id] = n
        return n


class StrayCleanupProjection(ClusterObserver):
    """Every partition name of a simulated cluster as a StrayCleanup state, checked after every
    event (``attach``) and on ``check``; raises :class:`RefinementViolation`.

    ``follow`` returns the partitions to watch at each check; a name once followed is followed
    for the rest of the run (its strays outlive its topic)."""

    def __init__(self, cluster: Cluster,
                 follow: Callable[[], Iterable[TopicPartition]]) -> None:
        self.cluster = cluster
        self.follow = follow
        self.events = 0
        self.checks = 0
        self.steps = 0
        self.rebases = 0
        #: Changes that were time passing alone (the twin's Ticks, taken without a search).
        self.ticks = 0
        self.names: dict[TopicPartition, _Instance] = {}
        self._sent: list[tuple[int, LeaderAndIsrRequest | StopReplicaRequest, int]] = []
        self._superseded: dict[tuple[int, int], Log] = {}
        self._first_seen: Version | None = None
        #: Names no longer followed: re-created more than MAX_TOPIC_IDS times.
        self.overflowed = 0
        #: Strays the code deleted, each matched with the twin's DeleteStray.
        self.stray_deletions = 0
        #: Files read to date a log (``_newest_write``), and logs found superseded (``_lost``
        #: judges them by the time): a check that does either is not quiet.
        self.files_read = 0
        self.supersessions = 0
        #: Check every name in full, and assert that a name whose inputs are those of its last
        #: quiet check gets the state the shortcut would have given (tests).
        self.cross_check = False
        self.cross_checks = 0

    # ---- observing the requests sent --------------------------------------------------------

    def attach(self) -> None:
        """Check after every event of the world, and record every control request sent."""
        network = self.cluster.simulated_world.network
        send = network.send

        def tap(src: str, dst: str, message: object) -> None:
            if isinstance(message, (LeaderAndIsrRequest, StopReplicaRequest)) and \
                    dst.startswith("broker-"):
                self._record(int(dst.rsplit("-", 1)[1]), message)
            send(src, dst, message)
        network.send = tap  # type: ignore[method-assign]
        super().attach()

    def _record(self, b: int, request: LeaderAndIsrRequest | StopReplicaRequest) -> None:
        if self._first_seen is None:
            self._first_seen = (request.controller_epoch, request.correlation_id)
            for inst in self.names.values():
                inst.refinement.first_seen = self._first_seen
        sent_at = self.cluster.simulated_world.clock.now_ms()
        for tp, inst in self.names.items():
            self._record_for(b, request, tp, inst, sent_at)
        self._sent.append((b, request, sent_at))

    def _record_for(self, b: int, request: LeaderAndIsrRequest | StopReplicaRequest,
                    tp: TopicPartition, inst: _Instance, sent_at: int) -> None:
        inst.taps += 1
        version = (request.controller_epoch, request.correlation_id)
        names = (isinstance(request, LeaderAndIsrRequest)
                 and request.type == LeaderAndIsrType.FULL) or any(
            x.tp == tp for x in (request.partitions if isinstance(request, StopReplicaRequest)
                                 else request.partition_states))
        if names and version > inst.sent_max.get(b, NO_VERSION):
            inst.sent_max[b] = version
        if isinstance(request, StopReplicaRequest):
            for sp in request.partitions:
                if sp.tp == tp and sp.delete_partition and sp.topic_id != Uuid.ZERO:
                    t = inst.ordinal(sp.topic_id)
                    inst.stopped[(b, t)] = sent_at
                    inst.network.add(Msg(STOP, b, request.broker_epoch, request.controller_epoch,
                                         request.correlation_id, 1, t, True, frozenset()))
            return
        states = [s for s in request.partition_states if s.tp == tp]
        if request.type == LeaderAndIsrType.FULL:
            hosted = frozenset((1, inst.ordinal(s.topic_id)) for s in states[:1])
            for t in inst.ids.values():
                if (1, t) not in hosted:
                    inst.dropped[(b, t)] = sent_at
            inst.network.add(Msg(FULL, b, request.broker_epoch, request.controller_epoch,
                                 request.correlation_id, 0, 0, False, hosted))
        elif states:
            s = states[0]
            inst.network.add(Msg(LAI, b, request.broker_epoch, request.controller_epoch,
                                 request.correlation_id, 1, inst.ordinal(s.topic_id),
                                 s.is_new, frozenset()))

    # ---- the check ---------------------------------------------------------------------------

    def check(self, context: str = "") -> None:
        """Abstract every followed partition name and check it.

        A name whose inputs (:meth:`_inputs`: every value of the cluster the abstraction reads,
        and the requests recorded for it) are those of its last *quiet* check (one that
        changed nothing the projection keeps but the time, and read no file) is not abstracted
        again: the abstraction would retrace that check's path and find the same state with
        the time moved on, which is what :meth:`_ticked` records (see ``_check_tracked``)."""
        for tp in self.follow():
            if tp not in self.names:
                self.names[tp] = self._new_instance(tp)
        brokers = tuple(sorted(self.cluster.brokers))
        common: dict[int, tuple[object, ...]] | None = None
        store = self.cluster.store
        deleting: set[str] = set()
        controller_epoch = 0
        for tp, inst in list(self.names.items()):
            if inst.brokers != brokers:
                self.names[tp] = inst = self._new_instance(tp)
            if not inst.overflow:
                if common is None:
                    common = self._broker_inputs()
                    deleting = {d.name for d in store.deletions()}
                    controller_epoch = store.controller_epoch()
                inputs = (inst.taps, store.topic(tp.topic), store.partition(tp),
                          tp.topic in deleting, controller_epoch, self._inputs(tp, inst, common))
                if (self.cross_check or inputs != inst.quiet_inputs or self._superseded
                        or not self._ticked(inst)):
                    self._check_tracked(tp, inst, context, inputs)

    def _broker_inputs(self) -> dict[int, tuple[object, ...]]:
        """What the abstraction reads of each broker, whatever the name (a broker that is down:
        nothing but that)."""
        store = self.cluster.store
        out: dict[int, tuple[object, ...]] = {}
        for b, broker in self.cluster.brokers.items():
            if not broker.alive:
                out[b] = (broker, False)
                continue
            incarnation = broker.incarnation_id
            lm = broker.log_manager
            out[b] = (broker, True, incarnation, id(incarnation), broker.broker_epoch,
                      store.broker(b), broker.controller_epoch, lm.full_request_applied,
                      tuple((path, d.online) for path, d in lm.dirs.items()))
        return out

    def _inputs(self, tp: TopicPartition, inst: _Instance,
                common: dict[int, tuple[object, ...]]) -> tuple[object, ...]:
        """What :meth:`_abstract` reads of the brokers for the name ``tp`` but the files (a
        check that reads one is not quiet); ``check`` adds the store's records and the
        requests recorded for the name (``taps``): every value it reads but the clock."""
        per_broker: list[object] = []
        for b in inst.brokers:
            broker = self.cluster.brokers[b]
            seen = common[b]
            if seen[1]:
                dirs: list[object] = []
                for d in broker.log_manager.dirs.values():
                    log = d.logs.get(tp)
                    dirs.append(((log.topic_id, log.log_end_offset) if log is not None else None,
                                 tuple((x.topic_id, x.name_cut, x.since_ms)
                                       for x in d.strays.values() if x.tp == tp)
                                 if d.strays else ()))
                per_broker.append((seen, broker.replica_manager.applied_version(tp),
                                   tuple(dirs)))
            else:
                per_broker.append(seen)
        return tuple(per_broker)

    def _ticked(self, inst: _Instance) -> bool:
        """The check of a name whose inputs are those of its last quiet check: the state last
        checked with the time now (the twin's Ticks, as ``_check_name`` takes them); False if
        the clock went back (then the name is checked in full)."""
        before = inst.checker.last
        assert isinstance(before, SCState)
        now = self.cluster.simulated_world.clock.now_ms()
        if now > before.now:
            inst.checker.last = before._replace(now=now)
            self.ticks += 1
        return now >= before.now

    def _check_tracked(self, tp: TopicPartition, inst: _Instance, context: str,
                       inputs: tuple[object, ...]) -> None:
        """``_check_name``, remembering ``inputs`` if the check was quiet: it changed nothing
        the projection keeps (what it keeps of the name, its counters, the superseded logs),
        the state checked is the last one with the time moved on, no file was read and no log
        found superseded. Such a check read nothing but ``inputs``, the clock and what the
        projection keeps; the clock only for the state's time (``_disk`` writes it to a log
        whose end offset grew, which is a change; ``_lost`` reads it for a log gone, which is
        a change of the state, or superseded). So a check with the same inputs would retrace
        it with only the time changed."""
        before = inst.checker.last
        assert before is None or isinstance(before, SCState)
        kept = snapshot(_kept(inst))
        counters = (self.checks, self.steps, self.rebases, self.overflowed, self.stray_deletions,
                    self.files_read, self.supersessions, bool(self._superseded))
        ticks = self.ticks
        inst.quiet_inputs = None
        now = self.cluster.simulated_world.clock.now_ms()
        expected = (before._replace(now=now) if self.cross_check and before is not None
                    and inputs == inst.cross_inputs and now >= before.now else None)
        self._check_name(tp, inst, context)
        after = inst.checker.last
        assert after is None or isinstance(after, SCState)
        quiet = (before is not None and after is not None and not inst.overflow
                 and (after is before or after._replace(now=before.now) == before)
                 and self.ticks - ticks == (after is not before)
                 and counters == (self.checks, self.steps, self.rebases, self.overflowed,
                                  self.stray_deletions, self.files_read, self.supersessions,
                                  False)
                 and kept == snapshot(_kept(inst)))
        if expected is not None:
            self.cross_checks += 1
            assert quiet and after == expected, (
                f"StrayCleanup projection, {tp}: the same inputs as a quiet check gave "
                f"another outcome\n{before}\n{after}")
        if quiet:
            inst.quiet_inputs = inputs
        inst.cross_inputs = inputs if quiet else None

    def state_of(self, tp: TopicPartition) -> SCState | None:
        """The last abstract state checked for the name ``tp`` (None: not followed)."""
        inst = self.names.get(tp)
        last = inst.checker.last if inst is not None else None
        assert last is None or isinstance(last, SCState)
        return last

    def _new_instance(self, tp: TopicPartition) -> _Instance:
        brokers = tuple(sorted(self.cluster.brokers))
        settings = next(iter(self.cluster.brokers.values())).log_manager.orphan_settings()
        spec = twin_for(brokers, settings.retention_ms, settings.delay_ms)
        ref = StrayCleanupRefinement(spec)
        ref.first_seen = self._first_seen
        inst = _Instance(brokers, ref, RefinementChecker(ref, max_steps=MAX_STEPS))
        for b, request, sent_at in self._sent:
            self._record_for(b, request, tp, inst, sent_at)
        return inst

    def _check_name(self, tp: TopicPartition, inst: _Instance, context: str) -> None:
        before = inst.checker.last
        assert before is None or isinstance(before, SCState)
        mixed_before = set(inst.mixed)
        s, restarted = self._abstract(tp, inst, before)
        if inst.overflow:
            return
        if s == before:
            return
        if (before is not None and not restarted and s.now > before.now
                and s._replace(now=before.now) == before):
            # Time passed, nothing else: the twin's Ticks (time is unbounded, and neither
            # invariant reads it), the most common change by far; taken without a search.
            inst.checker.last = s
            self.ticks += 1
            return
        where = f"{tp}, {context}"
        self.checks += 1
        torn = before is not None and any(
            before.dirOnline[i] and not s.dirOnline[i] and s.online[i]
            and (before.appliedVersion[i], before.disk[i]) != (s.appliedVersion[i], s.disk[i])
            for i in range(len(inst.brokers)))
        if before is None or restarted or torn:
            self.rebases += 1
            why = (": a new incarnation" if restarted
                   else ": a dir failed in the middle of a request" if torn else "")
            inst.checker.rebase(s, where + why)
            return
        inst.checker.check_invariants(s, before, where)
        inst.refinement.network = frozenset(inst.network)
        inst.refinement.mixed = frozenset(
            i for i, b in enumerate(inst.brokers)
            if b in inst.mixed | mixed_before and before.online[i])
        found = inst.checker.check(s, where)
        if found.actions:
            self.steps += 1
            self.stray_deletions += sum("DeleteStray" in a for a in found.actions)

    def _abstract(self, tp: TopicPartition, inst: _Instance, before: SCState | None
                  ) -> tuple[SCState, bool]:
        cluster = self.cluster
        store = cluster.store
        clock = cluster.simulated_world.clock.now_ms()
        record = store.topic(tp.topic)
        state = store.partition(tp)
        deleting = {d.name for d in store.deletions()}
        if record is not None:
            inst.topic_ord = inst.ordinal(record.topic_id)
        if inst.topic_ord > MAX_TOPIC_IDS or len(inst.ids) > MAX_TOPIC_IDS:
            inst.overflow = True
            self.overflowed += 1
            return before if before is not None else self._empty(inst), False
        replicas: frozenset[int] = frozenset()
        if (record is not None and state is not None and tp.topic not in deleting
                and state.topic_id == record.topic_id):
            replicas = frozenset(state.replicas)
        restarted = False
        online, epochs, seen, applied, saw, dir_ok, disks = [], [], [], [], [], [], []
        new_lost = set(inst.lost)
        assigned_at: list[Version] = []
        for i, b in enumerate(inst.brokers):
            broker = cluster.brokers[b]
            alive = broker.alive
            new_incarnation = False
            if alive and inst.incarnation.get(b) is not broker.incarnation_id:
                new_incarnation = True
                if before is not None:
                    restarted = True
                inst.incarnation[b] = broker.incarnation_id
            row, dirs_ok = self._disk(tp, inst, b, broker, clock, alive,
                                      before.disk[i][0] if before is not None else None,
                                      before.dirOnline[i] if before is not None else True,
                                      new_incarnation)
            epoch = max(0, broker.broker_epoch)
            registration = store.broker(b)
            if (alive and registration is not None
                    and registration.incarnation_id == broker.incarnation_id):
                epoch = max(epoch, registration.broker_epoch)
            online.append(alive)
            epochs.append(max(1, epoch) if alive else (before.brokerEpoch[i]
                                                       if before is not None else 1))
            seen.append(max(0, broker.controller_epoch) if alive else 0)
            version = (_version(broker.replica_manager.applied_version(tp)) if alive
                       else NO_VERSION)
            full = bool(alive and broker.log_manager.full_request_applied)
            if (alive and not dirs_ok and before is not None and before.online[i]
                    and not before.dirOnline[i] and not restarted):
                # The dir is offline for the name: the twin records nothing more until the
                # restart (the code's records refuse only what the twin ignores anyway). But
                # a broker whose logs of the name all sit on online dirs (``mixed``) learns
                # a FULL request as the twin's broker with its dir online does: it decides
                # the strays there and may delete them (it creates no replica that is not new).
                version = before.appliedVersion[i][0]
                if b not in inst.mixed:
                    full = before.sawFull[i]
            applied.append((version,))
            saw.append(full)
            dir_ok.append(dirs_ok)
            disks.append((row,))
            # assignedAt: learnt when the broker applies a request leaving it hosting the log
            key = (b, inst.topic_ord)
            if b not in replicas:
                inst.assigned.pop(key, None)
                inst.floor.pop(key, None)
                assigned_at.append(NO_VERSION)
            else:
                # A request sent before this check's events cannot be of this assignment if
                # the previous check saw ``b`` unassigned (a StopReplica of the removal, say).
                floor = inst.floor.setdefault(
                    key, inst.sent_max_checked.get(b, NO_VERSION)
                    if before is not None and (b not in before.replicas[0]
                                               or before.topicId != (inst.topic_ord,))
                    else NO_VERSION)
                got = inst.assigned.get(key, PENDING)
                if (got == PENDING and alive and version != NO_VERSION and version > floor
                        and row[inst.topic_ord - 1].state == LIVE
                        and (before is None or before.appliedVersion[i][0] != version
                             or before.replicas[0] != replicas)):
                    got = version
                    inst.assigned[key] = got
                assigned_at.append(got)
        s = SCState(
            now=clock, controllerEpoch=max(1, store.controller_epoch()), seq=0,
            topicId=(inst.topic_ord,), replicas=(replicas,), assignedAt=(tuple(assigned_at),),
            online=tuple(online), brokerEpoch=tuple(epochs), seenEpoch=tuple(seen),
            appliedVersion=tuple(applied), sawFull=tuple(saw), dirOnline=tuple(dir_ok),
            disk=tuple(disks), network=frozenset(), lost=frozenset())
        if before is not None and not restarted:
            new_lost |= self._lost(inst, before, s)
        inst.lost = new_lost
        inst.sent_max_checked = dict(inst.sent_max)
        return s._replace(lost=frozenset(new_lost)), restarted

    def _empty(self, inst: _Instance) -> SCState:
        n = len(inst.brokers)
        return SCState(0, 1, 0, (1,), (frozenset(),), ((NO_VERSION,) * n,), (False,) * n,
                       (1,) * n, (0,) * n, ((NO_VERSION,),) * n, (False,) * n, (True,) * n,
                       (((NO_LOG,) * MAX_TOPIC_IDS,),) * n, frozenset(), frozenset())

    def _disk(self, tp: TopicPartition, inst: _Instance, b: int, broker: Broker, now: int,
              alive: bool, before: tuple[Log, ...] | None, dir_before: bool,
              restarted: bool = False) -> tuple[tuple[Log, ...], bool]:
        """``disk[b][p]`` and ``dirOnline[b]`` for the name (a broker that is down: as last
        seen)."""
        if not alive:
            return (before if before is not None else (NO_LOG,) * MAX_TOPIC_IDS, dir_before)
        row = [NO_LOG] * MAX_TOPIC_IDS
        held_dirs: list[bool] = []
        all_online = True
        seen_dirs: dict[int, str] = {}
        for path, dstate in broker.log_manager.dirs.items():
            online = dstate.online
            all_online = all_online and online
            log = dstate.logs.get(tp)
            if log is not None and log.topic_id is not None:
                t = inst.ordinal(log.topic_id)
                if t > MAX_TOPIC_IDS:
                    inst.overflow = True
                    continue
                held_dirs.append(online)
                kept = inst.logs.setdefault((b, t), _LogSeen())
                prev = before[t - 1] if before is not None else NO_LOG
                leo = log.log_end_offset
                if prev.state == NONE:
                    # created now: an empty log holds no data, as old as can be (EMPTY); a log
                    # found at start-up with data: its newest record or file time
                    if leo == 0:
                        kept.last_write = EMPTY
                    else:
                        self.files_read += 1
                        kept.last_write = _newest_write(broker.log_manager.fs, log.dir_path)
                elif prev.state == STRAY:
                    pass  # revived: its data as it was
                elif leo > kept.leo >= 0:
                    kept.last_write = now
                elif 0 <= leo < kept.leo:
                    # truncated (a follower dropping records its leader does not have): its
                    # newest write is what remains, judged as orphan removal judges it
                    self.files_read += 1
                    kept.last_write = _newest_write(broker.log_manager.fs, log.dir_path)
                kept.leo = leo
                if row[t - 1].state == LIVE and seen_dirs.get(t) != path:
                    self.supersessions += 1
                    self._superseded[(b, t)] = row[t - 1]
                row[t - 1] = Log(LIVE, kept.last_write, 0)
                seen_dirs[t] = path
            for stray in dstate.strays.values():
                if stray.tp != tp or stray.topic_id is None or stray.name_cut:
                    continue
                t = inst.ordinal(stray.topic_id)
                if t > MAX_TOPIC_IDS:
                    inst.overflow = True
                    continue
                if online:
                    # a stray on an offline dir is neither served nor revived nor deleted
                    # there: it does not take the name's dir offline (the code acts on the
                    # online dirs, which the twin's one dir then stands for)
                    held_dirs.append(online)
                if row[t - 1].state == LIVE:
                    continue
                kept = inst.logs.setdefault((b, t), _LogSeen())
                if before is None or before[t - 1].state == NONE:
                    # a stray first seen (found at start-up): its newest record or file time
                    self.files_read += 1
                    kept.last_write = _newest_write(broker.log_manager.fs, stray.path)
                row[t - 1] = Log(STRAY, kept.last_write, stray.since_ms)
        # The live logs the projection knew on a dir this incarnation cannot read: still on
        # disk, not shown (nothing can serve them), but a new log of the same topic id made on
        # another dir supersedes one.
        unreadable = inst.unreadable.setdefault(b, {})
        for t, path in inst.dirs.get(b, {}).items():
            held = broker.log_manager.dirs.get(path)
            if (held is not None and not held.online and before is not None
                    and before[t - 1].state == LIVE and t not in seen_dirs):
                # seen live by this incarnation, or known from before its restart (None)
                unreadable[t] = (path, before[t - 1],
                                 None if restarted else broker.incarnation_id)
        for t, (path, hidden, incarnation) in list(unreadable.items()):
            held = broker.log_manager.dirs.get(path)
            if held is None or held.online:
                del unreadable[t]
            elif t in seen_dirs and seen_dirs[t] != path:
                self.supersessions += 1
                self._superseded[(b, t)] = hidden  # another log of it made on another dir
                del unreadable[t]
            elif (incarnation is broker.incarnation_id
                  and row[t - 1].state == NONE and not any(x.state == LIVE for x in row)):
                # dropped from an offline dir's list by this incarnation: still on its disk
                row[t - 1] = hidden
                held_dirs.append(False)
        inst.dirs[b] = {**{t: path for t, (path, _, _) in unreadable.items()}, **seen_dirs}
        has_live = any(x.state == LIVE for x in row)
        ok = all(held_dirs) and (has_live or all_online)
        if not ok and all(held_dirs) and any(d.online for d in broker.log_manager.dirs.values()):
            inst.mixed.add(b)  # no live log of the name, one dir offline, another online
        else:
            inst.mixed.discard(b)
        return tuple(row), ok

    def _lost(self, inst: _Instance, before: SCState, after: SCState
              ) -> set[tuple[int, int, int, int]]:
        """The ghost's new entries: logs gone (or superseded) while their data was owed."""
        spec = inst.refinement.spec
        out: set[tuple[int, int, int, int]] = set()
        retention = spec.config.retention_period
        # The controller decides before its requests arrive: what is owed is judged on the
        # store as it is now, and on what the broker had applied before the change.
        judged = after._replace(appliedVersion=before.appliedVersion)
        for i, b in enumerate(inst.brokers):
            if not after.online[i]:
                continue
            for t in range(1, MAX_TOPIC_IDS + 1):
                old, new = before.disk[i][0][t - 1], after.disk[i][0][t - 1]
                gone = old.state != NONE and new.state == NONE
                superseded = (b, t) in self._superseded
                if not (gone or superseded):
                    continue
                if superseded:
                    old = self._superseded[(b, t)]
                if old.lastWrite == EMPTY:
                    continue  # a log that never held a record: no data to lose
                # Ordered: a StopReplica(delete) of this topic id was sent to b. A log
                # superseded (a new replica made on another dir while it sat on an offline
                # one) counts as ordered only if that StopReplica came after its last write:
                # the controller ended the assignment it was written under, the broker could
                # not carry the deletion out on the offline dir, and once the dir is back
                # start-up deletes it only if the copy it serves holds all its records, else
                # sets it aside (R8; spec/README.md, "Refinement against the code"). A FULL
                # LeaderAndIsr sent to b after the log's last write that did not list its
                # topic id ended the assignment the same way (the broker, restarted without the
                # log's dir, could not set it aside there): it too orders a log superseded,
                # never one gone.
                stop, dropped = inst.stopped.get((b, t)), inst.dropped.get((b, t))
                ordered = old.state == LIVE and (
                    (stop is not None and (gone or (superseded and stop >= old.lastWrite)))
                    or (superseded and dropped is not None and dropped >= old.lastWrite))
                if spec.Current(judged, b, 1, t) or (
                        not ordered and after.now - old.lastWrite < retention):
                    out.add((b, 1, t, old.lastWrite))
        self._superseded.clear()
        return out


__all__ = [
    "INVARIANTS",
    "MAX_STEPS",
    "MAX_TOPIC_IDS",
    "PENDING",
    "RefinementViolation",
    "StrayCleanupProjection",
    "StrayCleanupRefinement",
    "twin_for",
]
