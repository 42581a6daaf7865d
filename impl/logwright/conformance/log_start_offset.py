"""The abstraction of one partition onto the LogStartOffset twin, and its refinement check.

What is abstracted, per replica (a broker holding the partition, or the one log of the storage
harness): its log end offset, high watermark and log start offset; ``segStart``, the base offset
of its first segment; ``ckptStart``, the partition's entry in its dir's
``log-start-offset-checkpoint`` file as it is on disk (0 when there is none); ``flushed``, the
log's recovery point (every record below it was fsynced). The partition: the ISR and the leader
(the controller's, for a cluster) and ``epochStart``, the leader's LEO when its leadership began.

Ghosts, kept by the projection from what it has seen, since the implementation holds no such
value: ``committed`` is the highest HW any leader reached (the partition's HW); ``acked`` the
highest low watermark acknowledged to a client (the storage harness's acknowledged
DeleteRecords); for a single log, ``epochStart`` is its LEO when it last (re)started.

One abstraction is not a plain read: ``segStart`` is the highest first-segment base seen for the
replica, not the first base on disk now. Deleting a segment's files is not fsynced (nor is it in
Kafka), so a power loss may bring a deleted segment back; it is always wholly below the start
offset, made durable before any file went (hazard 12), so nothing in it is served (the storage
oracle checks that a read below the start offset is refused) and the next retention pass deletes
it again. The model's segments, deleted for good, are the logical view of that.

Offsets of the implementation are unbounded: the twin is configured with ``MaxOffset`` 2**62,
so that no append is refused and TypeOK bounds nothing, and its segment size is 1: a segment of
the implementation holding n offsets is n segments of the model, and retention deleting it is n
``DeleteOldestSegment`` steps. So that one search stays cheap, :meth:`LogStartOffsetRefinement.
successors` tries a run of the same action as one move (``Append×5``: a produce of five
records; ``DeleteOldestSegment(1)×8``: one deleted segment of eight offsets), and a follower's
``ApplyFetch`` followed by the ``CheckpointStartOffset`` of the start offset it raised as one
move too (the implementation makes a follower's raise durable before its fetch returns: the
twin's ``FollowerFetch``). One fetch response handled may then flush the records appended
(``flush.messages``) and delete the segments wholly below the new start offset: ApplyFetch,
CheckpointStartOffset, Flush and DeleteOldestSegment×k, four moves the search's three did not
reach as separate ones (seed 6359, traces/regressions/0053). Parameter values are taken only
from the offsets present in the two states a move links; every move is still a sequence of
genuine twin steps, and the invariants are checked on the state it reaches. The twin's fetch
response in flight (``resp``) is hidden: abstract states hold none, and an ``ApplyFetch`` move
applies a response the leader may have served
(its state in the step's source, or one the projection saw earlier), ``ServeFetch`` folded
into it. The DeleteRecords waiting in the purgatory (``pending``) is hidden too (the
implementation does not expose it to the projection yet): abstract states have none, a
``DeleteRecords`` move is the request accepted with its outcome hidden, and an
``AcknowledgeDeleteRecords`` move acknowledges a hidden request for an offset the search
chooses (the acknowledged low watermark itself), so an acknowledgement is checked against the
model's rule, a low watermark durable on every counted replica. No replica is ``down`` in an
abstract state: a dead broker's replica keeps the state last seen, as before, and counts in the
low watermark (the stronger condition).

The leader's ISR floor (``isrFloor``) is carried, not abstracted
(:class:`~logwright.conformance.refinement.RefinementChecker`'s ``visible``): the search
ignores it when matching, and the twin's own steps set it along the path found (an election
sets it to the new leader's durable start offset, an acknowledged DeleteRecords raises it), so
every ISR expansion of the implementation is held to the model's rule: the follower's durable
start offset at least the floor. The implementation keeps its own floor
(``Partition.isr_floor``): set when a leadership begins, which may be later than the election
the model takes, and so at least the carried one; its expansions, gated on it, pass. At a
rebase (outside the twin) the floor carried on is the last one, or the leader's durable start
offset when the leader changed or restarted (what the model's election or restart sets).
"""


from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from logwright.broker.broker import Broker
from logwright.cluster import Cluster
from logwright.conformance.refinement import (
    DEFAULT_MAX_STEPS,
    ClusterObserver,
    Identity,
    RefinementChecker,
    RefinementViolation,
    snapshot,
)
from logwright.controller.store.records import NO_LEADER, PartitionState
from logwright.errors import KafkaError, LogwrightError
from logwright.identity import TopicPartition, Uuid
from logwright.model.core import State
from logwright.model.log_start_offset import (
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
)
from logwright.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT, OffsetCheckpointFile
from logwright.storage.log import PartitionLog

SERVED_KEPT = 64
"""How many of a partition's most recent leader states the cluster projection keeps as what an
in-flight fetch response may carry (a response is answered within a few events)."""

MAX_OFFSET = 2**62
"""The twin's MaxOffset for refinement: far beyond any offset a test reaches."""

S = LogStartOffsetState

_UNREAD = object()
"""A checkpoint entry not in the projection's cache (its file is read when needed)."""


def visible(s: State) -> State:
    """What the abstraction sees of a twin state: all but the carried ``isrFloor``."""
    assert isinstance(s, LogStartOffsetState)
    return s._replace(isrFloor=0)


def twin_for(replicas: tuple[int, ...], leader: int, bug: str = "none") -> LogStartOffsetTwin:
    """The twin a run of the implementation is checked against (see the module docstring)."""
    return LogStartOffsetTwin(LogStartOffsetConfig(
        replicas=replicas, leader=leader, max_offset=MAX_OFFSET, segment_size=1, bug=bug))


def _values(s: S) -> set[int]:
    out = {s.epochStart, s.committed, s.acked}
    for t in (s.leo, s.hw, s.logStart, s.segStart, s.ckptStart, s.flushed):
        out.update(t)
    return out


Served = tuple[int, int, int]
"""A leader's (LEO, HW, start offset) at some moment: what a fetch response served then
carries."""


class LogStartOffsetRefinement:
    """The LogStartOffset twin's steps for the refinement search (a :class:`Refinement`).

    The fetch response in flight (the twin's ``resp``) is hidden: abstract states have none,
    ``ServeFetch`` and ``DropResponse`` are stutters, and an ``ApplyFetch`` of follower r may
    apply a response carrying any leader state ``served`` returns (the leader's states seen
    since the behaviour started; the leader's state in the step's source is always one), as
    if ``ServeFetch(r)`` had been taken when the leader was in that state.
    """

    def __init__(self, spec: LogStartOffsetTwin,
                 served: Callable[[], Iterable[Served]] | None = None) -> None:
        self._spec = spec
        self._served = served

    @property
    def spec(self) -> LogStartOffsetTwin:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """Every twin move from ``state`` with parameters among the offsets of ``state`` and
        ``target``; runs of Append and of DeleteOldestSegment are one move, and so is a
        follower's ApplyFetch with the CheckpointStartOffset of the start offset it raised."""
        assert isinstance(state, LogStartOffsetState) and isinstance(target, LogStartOffsetState)
        # isrFloor is carried, as the twin's steps set it: see the module docstring.
        yield from self._moves(state, sorted(_values(state) | _values(target)))

    def _responses(self, s: S) -> list[Served]:
        L = self._spec.replicas.index(s.leader)
        out: dict[Served, None] = {(s.leo[L], s.hw[L], s.logStart[L]): None}
        if self._served is not None:
            out.update(dict.fromkeys(self._served()))
        return list(out)

    def _fetch_moves(self, s: S, values: list[int]) -> Iterator[tuple[str, State]]:
        """ApplyFetch(r) of each response that may be in flight, the response hidden again
        after it (so ServeFetch is folded into it), alone and followed by
        CheckpointStartOffset(r) of the start offset it raised, and TruncateFollower(r)."""
        spec = self._spec
        followers = [r for r in spec.replicas if r != s.leader]
        if not followers:
            return
        responses = self._responses(s)
        for r in followers:
            seen: set[S] = set()
            for m in responses:
                sm = s._replace(resp=s.resp | {(r, *m)})
                for o in values:  # the new LEO: the target's is among them
                    t = spec.ApplyFetch(sm, r, o)
                    if t is None or t in seen:
                        continue
                    seen.add(t)
                    label = f"ApplyFetch({r}, o={o}, served={m})"
                    yield label, t
                    # The raise written at once, as the implementation does (the twin's
                    # FollowerFetch): one move, so that a flush and the segments then deleted
                    # below the new start offset fit in the same search.
                    c = spec.CheckpointStartOffset(t, r)
                    if c is not None and c not in seen:
                        seen.add(c)
                        yield f"{label}+CheckpointStartOffset({r})", c
            for o in values:
                t = spec.TruncateFollower(s, r, o)
                if t is not None:
                    yield f"TruncateFollower({r}, {o})", t

    def _moves(self, s: S, values: list[int]) -> Iterator[tuple[str, State]]:
        spec = self._spec
        L = spec.replicas.index(s.leader)
        for v in values:  # Append×k: up to a LEO that occurs in either state
            if v > s.leo[L]:
                t: S | None = s
                for _ in range(v - s.leo[L]):
                    t = spec.Append(t) if t is not None else None
                if t is not None:
                    yield f"Append×{v - s.leo[L]}", t
        yield from self._fetch_moves(s, values)
        for h in values:
            t = spec.AdvanceHW(s, h)
            if t is not None:
                yield f"AdvanceHW({h})", t
        for r in spec.replicas:
            for name, fn in (("ShrinkIsr", spec.ShrinkIsr), ("ExpandIsr", spec.ExpandIsr),
                             ("ElectLeader", spec.ElectLeader),
                             ("CheckpointStartOffset", spec.CheckpointStartOffset)):
                t = fn(s, r)
                if t is not None:
                    yield f"{name}({r})", t
        for o in values:  # the request's outcome hidden: pending is 0 again after it
            t = spec.DeleteRecords(s, o)
            if t is not None:
                yield f"DeleteRecords({o})", t._replace(pending=0)
        lw = spec.AckLowWatermark(s)
        if lw > s.acked:  # a hidden request (pending, any offset up to lw) acknowledged
            t = spec.AcknowledgeDeleteRecords(s._replace(pending=lw))
            if t is not None:
                yield "AcknowledgeDeleteRecords", t
        for i, r in enumerate(spec.replicas):
            for v in values:  # DeleteOldestSegment(r)×k: up to a base that occurs
                if v > s.segStart[i]:
                    t = s
                    for _ in range(v - s.segStart[i]):
                        t = spec.DeleteOldestSegment(t, r) if t is not None else None
                    if t is not None:
                        yield f"DeleteOldestSegment({r})×{v - s.segStart[i]}", t
            for f in values:
                t = spec.Flush(s, r, f)
                if t is not None:
                    yield f"Flush({r}, {f})", t
            for e in values:
                for h in values:
                    t = spec.CrashRestart(s, r, e, h)
                    if t is not None:
                        yield f"CrashRestart({r}, e={e}, h={h})", t


@dataclass(frozen=True)
class ReplicaView:
    """What the abstraction reads of one replica's log."""

    leo: int
    hw: int
    log_start: int
    seg_start: int
    ckpt_start: int
    flushed: int


def checkpointed_start_offset(log: PartitionLog) -> int | None:
    """The partition's entry in its dir's start offset checkpoint file, as it is on disk (0 when
    the file or the entry is missing, as the loader reads it); None when the dir cannot be read
    (a failed dir: its logs are going offline, and are not abstracted)."""
    path = posixpath.join(posixpath.dirname(log.dir_path), LOG_START_OFFSET_CHECKPOINT)
    try:
        if not log.fs.exists(path):
            return 0
        return OffsetCheckpointFile(log.fs, path).read().get(log.tp, 0)
    except (OSError, LogwrightError):
        return None


def view_of(log: PartitionLog) -> ReplicaView | None:
    """The abstraction of one live log (None: its dir cannot be read now)."""
    if log.offline:
        return None
    ckpt = checkpointed_start_offset(log)
    if ckpt is None:
        return None
    return ReplicaView(log.log_end_offset, log.high_watermark, log.log_start_offset,
                       log.segments[0].base_offset, ckpt, log.recovery_point)


class LogProjection:
    """One log of the storage harness as the one-replica projection of the twin (replica 1,
    leader and only member of the ISR).

    ``observe(log)`` after every operation checks the change since the last observation.
    Outside the projection (the projection says so and starts a new behaviour at the state it
    finds, checking its invariants; see :meth:`RefinementChecker.rebase`): a truncation (a
    follower's, which a lone leader never does) and a power loss that lost records below the
    committed HW (a lone replica has no other copy; the model's fault model excludes it, and
    Kafka loses those acknowledged records too). ``bug`` is the twin's bug switch matching a
    bug the harness runs with (``StartOffsetCheckpointLazy`` for Kafka's periodic checkpoint).
    """

    def __init__(self, tp: TopicPartition, *, bug: str = "none",
                 max_steps: int = DEFAULT_MAX_STEPS) -> None:
        self.tp = tp
        self.spec = twin_for((1,), 1, bug)
        self.checker = RefinementChecker(LogStartOffsetRefinement(self.spec),
                                         max_steps=max_steps,
                                         initial=next(iter(self.spec.init_states())),
                                         visible=visible)
        self.committed = 0
        self.acked = 0
        self.epoch_start = 0
        self.seg_start = 0
        self.rebases = 0

    def state_of(self, log: PartitionLog, acked: int) -> S | None:
        """The abstract state of ``log``, the ghosts updated from what it shows (None: its dir
        cannot be read)."""
        v = view_of(log)
        if v is None:
            return None
        return S((v.leo,), (v.hw,), (v.log_start,), (max(self.seg_start, v.seg_start),),
                 (v.ckpt_start,), (v.flushed,), frozenset({1}), 1, self.epoch_start,
                 max(self.committed, v.hw), max(self.acked, acked))

    def _adopt(self, s: S) -> None:
        self.committed, self.acked, self.seg_start = s.committed, s.acked, s.segStart[0]

    def observe(self, log: PartitionLog, *, acked: int = 0, context: str = "") -> None:
        """Check the change since the last observation; ``acked``: the start offset the
        client was told of (a DeleteRecords response)."""
        s = self.state_of(log, acked)
        if s is not None:
            self.checker.check(s, context)
            self._adopt(s)

    def restarted(self, log: PartitionLog, *, acked: int = 0, context: str = "") -> None:
        """After a crash and restart: a CrashRestart step, unless the crash lost unflushed
        committed records (outside the fault model: the behaviour restarts there). A loss below
        the recovery point is checked, and no model step explains it."""
        before = self.checker.last
        self.epoch_start = log.log_end_offset
        s = self.state_of(log, acked)
        if s is None:
            return
        assert isinstance(before, LogStartOffsetState)
        if before.flushed[0] <= s.leo[0] < before.committed:
            self.rebase(log, acked=acked, context=f"{context}: committed records lost in a "
                        "power loss of the only replica")
            return
        self.checker.check(s, context)
        self._adopt(s)

    def rebase(self, log: PartitionLog, *, acked: int = 0, context: str = "") -> None:
        """Start a new behaviour at ``log``'s state: the ghost ``committed`` restarts at its HW,
        ``epochStart`` at its LEO, ``segStart`` at its first segment; ``acked`` stays (what a
        client was told)."""
        self.rebases += 1
        self.committed = 0
        self.seg_start = 0
        self.epoch_start = log.log_end_offset
        s = self.state_of(log, acked)
        if s is not None:
            self.checker.rebase(s, context)
            self._adopt(s)


@dataclass
class _Watch:
    """What the cluster projection keeps of one partition between events."""

    replicas: tuple[int, ...]
    spec: LogStartOffsetTwin
    checker: RefinementChecker
    views: dict[int, ReplicaView]
    incarnations: dict[int, object]
    fenced: dict[int, int]
    seg_start: dict[int, int]
    committed: int = 0
    leader: int = -1
    epoch_start: int = 0
    served: dict[Served, None] = field(default_factory=dict)
    """The leader states seen (most recent last, at most :data:`SERVED_KEPT`; kept across a
    new behaviour, as a response served before a restart may be applied after it): what a fetch
    response in flight may carry."""
    leaderless: bool = False
    """The controller gave the partition no leader since the last check."""
    recovered_epoch: int = -1
    """The leader epoch of the latest recovery or unclean election seen for the partition."""
    outside: str = ""
    """Set during a check when the change is outside the model (a restart): a new
    behaviour starts there."""
    acked: int = 0
    """The ghost ``acked``: the highest low watermark a DeleteRecords response reported that
    the projection mapped onto ``AcknowledgeDeleteRecords``."""
    reported: int = 0
    """The highest low watermark a DeleteRecords response reported (``acknowledge``)."""
    logs: dict[int, object] = field(default_factory=dict)
    """Each replica's log object as last seen: another one without a restart is the replica
    deleted and created again (a reassignment took it away and back) or moved between dirs."""


def _kept(w: _Watch | None) -> tuple[object, ...] | None:
    """What a check may change of what the projection keeps of a partition (its twin and
    checker go with the watch; the checker's state changes only as the counters do)."""
    if w is None:
        return None
    return (Identity(w), w.replicas, w.views, w.incarnations, w.fenced, w.seg_start,
            w.committed, w.leader, w.epoch_start, w.served, w.leaderless, w.recovered_epoch,
            w.outside, w.acked, w.reported, w.logs)


class ClusterProjection(ClusterObserver):
    """Partitions of a simulated cluster as LogStartOffset states, checked after every event.

    Per partition, the replicas are the controller's assignment (a reassignment starts the
    twin over with the new ones, the ghosts kept), the leader and ISR the controller's. A
    replica whose broker is dead, or whose dir failed, keeps the state last seen (the model's
    crash is the restart, when the state it loaded appears); so does one whose broker's new
    incarnation has not registered with the active controller yet: until it has, the
    controller's ISR is the last incarnation's (an AlterPartition made from that incarnation's
    fetches may still add it, traces/regressions/0060). A replica whose broker came back
    as a new incarnation is left out of the ISR until the controller has dropped it once (the
    controller fences a restarted broker's replicas: a later re-admission is a genuine
    ExpandIsr), and keeps the state last seen before its crash until then, or until the
    controller gave the partition a new leader epoch: in the model the crash of an in-sync
    replica that may lose data comes after the controller moved leadership away from it (the
    fault model). The leader is never left out of the ISR. A replica whose broker still leads
    in an older leader epoch (cut off from the controller, not yet told of its successor) is a
    second leader, which the model does not have: a change of its log (a DeleteRecords it
    accepted, an append) starts a new behaviour there, invariants checked.

    What is checked, after every event (``every`` > 1: after every ``every``-th) on every
    partition whose abstract state changed: that the change is a stutter or a path of at most
    ``max_steps`` twin steps, and every twin invariant on the new state. The fetch response in
    flight is hidden (:class:`LogStartOffsetRefinement`): a follower may apply any of the
    leader's states seen (the last :data:`SERVED_KEPT`, across restarts; the states
    inside each path found count, since a delayed fetch completed by a produce reads the log
    between the append and the HW's rise, and so do the states between the two the leader was
    seen in around a rebase made for another replica's sake), as the response served then, and
    no value the leader never had. Outside the twin, and so a new
    behaviour (:meth:`RefinementChecker.rebase`, invariants checked): a broker's restart (its new
    incarnation seen, or its restarted replica seen once no longer fenced as above), a new
    replica set, and a replica whose log was replaced on the same incarnation (deleted and
    created again: a reassignment took it away, the StopReplica landing after the decision
    that brought it back; or moved between the broker's dirs). A new leader epoch of the same
    leader (the controller bumps it with an ISR
    change of its own) is taken as given, its epoch start offset put into the state before, and
    the rest of the change checked as steps. ``steps=False`` checks the invariants only (what
    was checked before steps were; the tests use it to show what steps add). The counters
    ``steps``, ``rebases`` and ``epoch_bumps`` say how many changes were checked each way.
    """

    def __init__(self, cluster: Cluster, topic: str | None = None, partitions: int = 0, *,
                 every: int = 1,
                 follow: Callable[[], Iterable[TopicPartition]] | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, steps: bool = True) -> None:
        """Watch ``partitions`` partitions of ``topic``, or, with ``follow``, the partitions it
        returns at each check (every topic the controller knows, as topics come and go). A
        partition is one twin instance per topic id: a topic deleted and created again under
        its name starts a new one, and a log of another topic id is no replica of it."""
        assert every >= 1
        assert (topic is None) == (follow is not None), "a topic, or a function to follow"
        self.cluster = cluster
        self.topic = topic
        self.tps = [TopicPartition(topic, p) for p in range(partitions)] if topic else []
        self.follow = follow
        self._topic_ids: dict[TopicPartition, Uuid] = {}
        self.every = every
        self.events = 0
        self.checks = 0
        self.watches: dict[TopicPartition, _Watch] = {}
        self._ckpt_cache: dict[tuple[int, int, int], int] = {}
        self.max_steps = max_steps
        self.check_steps = steps
        self.steps = 0
        self.rebases = 0
        self.epoch_bumps = 0
        self.acks = 0
        self.acks_unmapped = 0
        #: Checkpoint files read (``_checkpoint``): a check that reads one is not quiet.
        self.ckpt_reads = 0
        #: Per partition, the inputs of its last check if it was quiet (``check``).
        self._quiet: dict[TopicPartition, tuple[object, ...]] = {}
        #: Check every partition in full, and assert that one whose inputs are those of its
        #: last quiet check is quiet again (tests); ``cross_checks`` counts those compared.
        self.cross_check = False
        self.cross_checks = 0
        self._cross_inputs: dict[TopicPartition, tuple[object, ...]] = {}

    def acknowledge(self, tp: TopicPartition, low_watermark: int) -> None:
        """A DeleteRecords response reported ``low_watermark`` for ``tp``: at the next check it
        is the twin's ``AcknowledgeDeleteRecords`` when it equals the twin's low watermark (the
        least durable start offset over the partition's replicas). It may not: a replica on a dead
        broker outside the ISR is not counted by the broker (Kafka's rule) and is by the twin;
        such an answer is counted in ``acks_unmapped`` and not mapped."""
        w = self.watches.get(tp)
        if w is not None:
            w.reported = max(w.reported, low_watermark)

    def check(self, context: str = "") -> None:
        """Abstract every partition and check the twin's invariants; raises
        RefinementViolation naming the invariant and the state.

        A partition whose inputs (:meth:`_inputs`: every value of the cluster the check reads,
        and the DeleteRecords answers reported) are those of its last *quiet* check (one that
        changed nothing the projection keeps and read no file) is not checked again: the
        check reads nothing else (no clock), so it would retrace that one, changing nothing
        (see ``_check_tracked``)."""
        elections: dict[tuple[TopicPartition, Uuid], int] | None = None
        brokers: dict[int, tuple[object, ...]] = {}
        for tp in (self.follow() if self.follow is not None else self.tps):
            if elections is None:
                elections = self._recovery_elections()
            inputs = self._inputs(tp, elections, brokers)
            if self.cross_check or inputs is None or inputs != self._quiet.get(tp):
                self._check_tracked(tp, context, inputs)

    def _recovery_elections(self) -> dict[tuple[TopicPartition, Uuid], int]:
        """The newest leader epoch of a recovery or unclean election each controller reported,
        by partition and topic id."""
        out: dict[tuple[TopicPartition, Uuid], int] = {}
        for c in self.cluster.controllers:
            for e in c.reported_elections:
                if e[2] in ("recovery", "unclean"):
                    key = (e[0], e[1])
                    out[key] = max(out[key], e[4]) if key in out else e[4]
        return out

    def _inputs(self, tp: TopicPartition, elections: dict[tuple[TopicPartition, Uuid], int],
                brokers: dict[int, tuple[object, ...]]) -> tuple[object, ...] | None:
        """Every value ``_check_partition`` reads for ``tp`` but the checkpoint files (a check
        that reads one is not quiet), with what it keeps that is changed from outside (the
        DeleteRecords answer reported); None when the partition is gone (nothing is checked).
        ``brokers`` keeps what is read of each broker during one ``check``."""
        cluster = self.cluster
        try:
            controller = cluster.controller
            state = controller.partition_state(tp)
            topic_id = controller.topic(tp.topic).topic_id
        except KafkaError:
            return None
        cache = self._ckpt_cache
        per_replica: list[object] = []
        for b in sorted(set(state.replicas)):
            seen = brokers.get(b)
            if seen is None:
                broker = cluster.brokers.get(b)
                if broker is None or not broker.alive:
                    seen = brokers[b] = (broker, False)
                else:
                    seen = brokers[b] = (broker, True, broker.incarnation_id,
                                         broker.broker_epoch, controller.store.broker(b))
            if not seen[1]:
                per_replica.append(seen)
                continue
            running = seen[0]
            assert isinstance(running, Broker)
            log = running.log_manager.get_log(tp)
            part = running.replica_manager.partitions.get(tp)
            log_seen = None
            if log is not None:
                start = log.log_start_offset
                log_seen = (log, log.offline, log.topic_id,
                            cache.get((b, id(log), start), _UNREAD), log.log_end_offset,
                            log.high_watermark, start, log.segments[0].base_offset,
                            log.recovery_point)
            part_seen = None
            if part is not None:
                part_seen = (part, part.role, part.leader_epoch, part.leader_id,
                             part.topic_id, part.leader_epoch_start_offset)
            per_replica.append((seen, log_seen, part_seen))
        w = self.watches.get(tp)
        return (id(w), w, w.reported if w is not None else None, state, topic_id,
                elections.get((tp, topic_id), -1), self._topic_ids.get(tp),
                tuple(per_replica))

    def _check_tracked(self, tp: TopicPartition, context: str,
                       inputs: tuple[object, ...] | None) -> None:
        """``_check_partition``, remembering ``inputs`` if the check was quiet: it changed
        nothing the projection keeps of the partition (its watch, the topic id, the state last
        checked), nor its counters, and read no checkpoint file."""
        w = self.watches.get(tp)
        last = w.checker.last if w is not None else None
        kept = snapshot((_kept(w), self._topic_ids.get(tp)))
        counters = (self.checks, self.steps, self.rebases, self.epoch_bumps, self.acks,
                    self.acks_unmapped, self.ckpt_reads)
        self._quiet.pop(tp, None)
        expected = (self.cross_check and inputs is not None
                    and inputs == self._cross_inputs.get(tp))
        self._check_partition(tp, context)
        w_after = self.watches.get(tp)
        quiet = (inputs is not None and w_after is w
                 and (w is None or w.checker.last is last)
                 and counters == (self.checks, self.steps, self.rebases, self.epoch_bumps,
                                  self.acks, self.acks_unmapped, self.ckpt_reads)
                 and kept == snapshot((_kept(w), self._topic_ids.get(tp))))
        if expected:
            self.cross_checks += 1
            assert quiet, (f"LogStartOffset projection, {tp}: the same inputs as a quiet check "
                           "gave another outcome")
        if quiet and inputs is not None:
            self._quiet[tp] = inputs
            self._cross_inputs[tp] = inputs
        else:
            self._cross_inputs.pop(tp, None)

    def _watch(self, tp: TopicPartition, replicas: tuple[int, ...], leader: int) -> _Watch:
        w = self.watches.get(tp)
        if w is not None and w.replicas == replicas:
            return w
        spec = twin_for(replicas, leader if leader in replicas else replicas[0])
        # A reassignment keeps the leader states seen: a response served before it may be
        # applied after it (a response of a leader outside the new replica set is harmless).
        served: dict[Served, None] = dict(w.served) if w is not None else {}
        checker = RefinementChecker(LogStartOffsetRefinement(spec, lambda: served),
                                    max_steps=self.max_steps, visible=visible)
        nw = _Watch(replicas, spec, checker, {}, {}, {}, {}, served=served)
        nw.outside = "a new replica set (a reassignment: the model's replicas are fixed)"
        if w is not None:  # a reassignment: the partition's ghosts and what was seen stay
            nw.committed, nw.leader, nw.epoch_start = w.committed, w.leader, w.epoch_start
            nw.views = {b: v for b, v in w.views.items() if b in replicas}
            nw.incarnations = {b: v for b, v in w.incarnations.items() if b in replicas}
            nw.fenced = {b: e for b, e in w.fenced.items() if b in replicas}
            nw.seg_start = {b: v for b, v in w.seg_start.items() if b in replicas}
            nw.logs = {b: v for b, v in w.logs.items() if b in replicas}
            # ``acked`` starts over: a new replica (start offset 0 until it fetches) is not
            # one the acknowledged deletions were counted on.
        self.watches[tp] = nw
        return nw

    def _view(self, b: int, tp: TopicPartition
              ) -> tuple[ReplicaView | None, object | None, PartitionLog | None]:
        broker = self.cluster.brokers.get(b)
        if broker is None or not broker.alive or not self._registered(b):
            # Not yet registered (a restart still loading, or waiting to register): not seen,
            # as if still down. The controller's view of the replica is its last incarnation's
            # until the registration, which ends that incarnation (unclean-shutdown detection
            # drops a replica that may have lost records from the ISR in the same step).
            return None, None, None
        log = broker.log_manager.get_log(tp)
        if log is None or log.offline or log.topic_id not in (None, self._topic_ids.get(tp)):
            return None, broker.incarnation_id, None
        ckpt = self._checkpoint(b, log)
        if ckpt is None:
            return None, broker.incarnation_id, None
        return (ReplicaView(log.log_end_offset, log.high_watermark, log.log_start_offset,
                            log.segments[0].base_offset, ckpt, log.recovery_point),
                broker.incarnation_id, log)

    def _registered(self, b: int) -> bool:
        """Whether broker ``b``'s running incarnation has registered with the active
        controller (it knows the broker epoch the controller stored for it)."""
        broker = self.cluster.brokers.get(b)
        if broker is None or not broker.alive or broker.broker_epoch < 0:
            return False
        registration = self.cluster.controller.store.broker(b)
        return registration is not None and registration.broker_epoch == broker.broker_epoch

    def _deposed_leader(self, b: int, tp: TopicPartition, leader_epoch: int) -> bool:
        """Whether broker ``b`` still leads ``tp`` in a leader epoch older than the
        controller's."""
        partition = self.cluster.brokers[b].replica_manager.partitions.get(tp)
        return (partition is not None and partition.is_leader
                and partition.leader_epoch < leader_epoch)

    def _follows_deposed_leader(self, b: int, tp: TopicPartition,
                                state: PartitionState) -> bool:
        """Whether broker ``b``'s replica of ``tp`` follows, in a leader epoch older than the
        controller's, a broker other than the controller's leader: a fetch in an older epoch
        is answered only by a leader of that epoch, so what it copies comes from a deposed
        leader's log."""
        partition = self.cluster.brokers[b].replica_manager.partitions.get(tp)
        return (partition is not None and not partition.is_leader
                and partition.leader_epoch < state.leader_epoch
                and partition.leader_id != state.leader)

    def _elected_not_told(self, b: int, tp: TopicPartition, state: PartitionState) -> bool:
        """Whether broker ``b``, the controller's leader of ``tp``, has not been told yet: its
        replica still follows in an older leader epoch."""
        partition = self.cluster.brokers[b].replica_manager.partitions.get(tp)
        return (partition is not None and not partition.is_leader
                and partition.leader_epoch < state.leader_epoch)

    def _checkpoint(self, b: int, log: PartitionLog) -> int | None:
        """The dir's start offset checkpoint entry, reread only when the log (a new one after
        a restart) or its start offset changed: the invariants checked here do not read it, so
        a periodic rewrite of the file that changes nothing else is not looked for."""
        key = (b, id(log), log.log_start_offset)
        if key in self._ckpt_cache:
            return self._ckpt_cache[key]
        self.ckpt_reads += 1
        value = checkpointed_start_offset(log)
        if value is not None:
            self._ckpt_cache = {k: v for k, v in self._ckpt_cache.items() if k[:2] != key[:2]}
            self._ckpt_cache[key] = value
        return value

    def _check_partition(self, tp: TopicPartition, context: str) -> None:
        try:
            state = self.cluster.controller.partition_state(tp)
            topic_id = self.cluster.controller.topic(tp.topic).topic_id
        except KafkaError:
            return  # deleted since the partitions were listed
        if self._topic_ids.setdefault(tp, topic_id) != topic_id:
            self._topic_ids[tp] = topic_id  # the name was created again: a new instance
            self.watches.pop(tp, None)
        replicas = tuple(sorted(set(state.replicas)))
        if not replicas:
            return
        if state.leader == NO_LEADER:
            # No replica is eligible to lead (offline until one is, or until a recovery
            # election): the model always has a leader, so this is outside it. The next
            # leader starts a new behaviour, with the committed ghost no higher than its log:
            # whether a recovery election kept every acknowledged record is checked by
            # ClusterRun and proved by the LeaderElection model, not here.
            watch = self.watches.get(tp)
            if watch is not None:
                watch.outside = watch.outside or "the partition had no leader"
                watch.leaderless = True
            return
        w = self._watch(tp, replicas, state.leader)
        recovered = max((e[4] for c in self.cluster.controllers for e in c.reported_elections
                         if e[0] == tp and e[1] == topic_id and e[2] in ("recovery", "unclean")),
                        default=-1)
        if recovered > w.recovered_epoch:
            # A leader from a recovery (or unclean) election, which the controller made in
            # the same step that left the partition without one: as after a time with none.
            w.recovered_epoch = recovered
            w.outside = w.outside or "a recovery or unclean election"
            w.leaderless = True
        previous_leader = w.leader
        if state.leader in replicas:
            w.leader = state.leader
        elif w.leader not in replicas:
            w.leader = replicas[0]
        zero = ReplicaView(0, 0, 0, 0, 0, 0)
        restarted: set[int] = set()
        seen_now: set[int] = set()
        for b in replicas:
            view, incarnation, log = self._view(b, tp)
            if incarnation is not None:
                seen = w.incarnations.setdefault(b, incarnation)
                if seen != incarnation:
                    restarted.add(b)
                    w.incarnations[b] = incarnation
                    w.outside = w.outside or f"broker {b} restarted"
                    if b in state.isr:
                        w.fenced[b] = state.leader_epoch
            # Fenced until the controller dropped it from the ISR or gave the partition a new
            # leader epoch since (which reaches the new incarnation as a LeaderAndIsr), or took
            # its registration: a replica that may have lost records leaves the ISR there
            # (unclean-shutdown detection), so one still in the ISR after it lost none.
            if b in w.fenced and (b not in state.isr or state.leader_epoch > w.fenced[b]
                                  or self._registered(b)):
                del w.fenced[b]
                w.outside = w.outside or f"broker {b}'s restarted replica is seen"
            if log is not None:
                if w.logs.get(b, log) is not log and b not in restarted:
                    # Another log object on the same incarnation: the replica was deleted and
                    # created again (a StopReplica of a reassignment that took it away landed
                    # after the one that brought it back was decided) or moved between dirs.
                    w.outside = w.outside or f"broker {b}'s replica was replaced"
                w.logs[b] = log
            if view is not None and b not in w.fenced:
                if (b != state.leader and view != w.views.get(b)
                        and self._deposed_leader(b, tp, state.leader_epoch)):
                    # It still leads in an older epoch (cut off from the controller, not yet
                    # told): its own steps (a DeleteRecords raising its start offset, an
                    # append) are a second leader's, which the model does not have.
                    w.outside = w.outside or (f"broker {b}, a deposed leader not yet told, "
                                              "changed its log (the model has one leader)")
                elif (b != state.leader and view != w.views.get(b)
                        and self._follows_deposed_leader(b, tp, state)):
                    # A follower not yet told of the new epoch fetches from the leader it
                    # knows, deposed but not told either: what it copies (records the deposed
                    # leader took in its old epoch) is the second leader's log, not the
                    # model's; it is truncated when the new epoch reaches it.
                    w.outside = w.outside or (f"broker {b} follows a deposed leader not yet "
                                              "told (the model has one leader)")
                elif (b == state.leader and view != w.views.get(b)
                        and self._elected_not_told(b, tp, state)):
                    # Elected, but its LeaderAndIsr has not come: it still follows the
                    # previous epoch's leader and may truncate to it (records above the
                    # committed offset it had and that leader lacks); the model's leader is
                    # told at once and never truncates. The invariants are checked on the
                    # state it starts from (CommittedDataOnIsr: committed records kept).
                    w.outside = w.outside or (f"broker {b}, elected but not yet told, changed "
                                              "its log as a follower of the previous epoch "
                                              "(the model's leader is told at once)")
                w.views[b] = view
                seen_now.add(b)
        views = [w.views.get(b, zero) for b in replicas]
        segs = []
        for b, v in zip(replicas, views, strict=True):
            w.seg_start[b] = max(w.seg_start.get(b, 0), v.seg_start)
            segs.append(w.seg_start[b])
        if w.leaderless:
            # After a time without a leader, or a recovery election that may have lost records
            # every replica lost: the leader's log is the committed data now. A replica whose
            # start offset or HW lies beyond it (raised by a DeleteRecords never acknowledged,
            # its records since lost) is outside the model until it follows the new leader
            # (truncated, or restarted at the leader's start offset, hazard 8). So is a
            # leader whose log is not seen now (down, its restarted incarnation still loading
            # or not yet registered): the last view of it may be of an incarnation that lost
            # records since, and its log is the committed data only once it is seen.
            if w.leader not in seen_now:
                return
            end = views[replicas.index(w.leader)].leo
            if any(max(v.log_start, v.seg_start, v.ckpt_start, v.hw) > end for v in views):
                return
            w.leaderless = False
            # No higher than the new leader's log, and no lower than any replica's HW (none
            # lies beyond that log, checked above): in the model the partition's HW is never
            # below a replica's (AdvanceHW raises both, a follower's comes from its leader),
            # so a behaviour starting with a HW above it could never raise it by a step.
            w.committed = max(min(w.committed, end), *(v.hw for v in views))
        else:
            w.committed = max(w.committed, *(v.hw for v in views))
        isr = (frozenset(state.isr) & set(replicas)) - (set(w.fenced) - {w.leader}) | {w.leader}
        leader_broker = self.cluster.brokers.get(w.leader)
        part = (leader_broker.replica_manager.partitions.get(tp)
                if leader_broker is not None and leader_broker.alive else None)
        if (part is not None and part.is_leader and part.leader_epoch == state.leader_epoch
                and part.topic_id in (None, self._topic_ids.get(tp))
                and part.leader_epoch_start_offset >= 0):
            # (a leader still of the deleted topic's id may hold the same epoch number: a
            # re-created topic starts its epochs again; its epoch start is no concern here)
            w.epoch_start = part.leader_epoch_start_offset
        elif w.leader != previous_leader:
            # Elected, not yet told (or down): its epoch starts at its LEO (the model's
            # election); when it takes the epoch, the offset it records is read instead.
            w.epoch_start = views[replicas.index(w.leader)].leo
        if w.reported > w.acked:
            if w.reported == min(max(w.seg_start[b], v.ckpt_start)
                                 for b, v in zip(replicas, views, strict=True)):
                w.acked = w.reported
                self.acks += 1
            else:
                self.acks_unmapped += 1
            w.reported = w.acked
        s = S(tuple(v.leo for v in views), tuple(v.hw for v in views),
              tuple(v.log_start for v in views), tuple(segs),
              tuple(v.ckpt_start for v in views), tuple(v.flushed for v in views), isr,
              w.leader, w.epoch_start, w.committed, w.acked)
        last = w.checker.last
        assert last is None or isinstance(last, LogStartOffsetState)
        if last is not None and visible(s) == visible(last):
            return  # the same abstract state: it was checked
        # The carried isrFloor, for a rebase or the invariants-only check (a step's search
        # sets its own): the last one, unless the leader changed or restarted.
        L = replicas.index(w.leader)
        floor = (last.isrFloor if last is not None and last.leader == w.leader
                 and w.leader not in restarted else max(s.ckptStart[L], s.segStart[L]))
        s = s._replace(isrFloor=floor)
        self.checks += 1
        where = f"{tp}, {context}"
        if not self.check_steps:
            w.checker.check_invariants(s, w.checker.last, where)
            w.checker.last = s
        elif w.outside or w.checker.last is None:
            self.rebases += 1
            if last is not None and last.leader == s.leader and w.leader not in restarted:
                self._serve_between(w, last, s)
            w.checker.rebase(s, f"{where}: {w.outside}" if w.outside else where)
        else:
            assert last is not None
            if last.leader == s.leader and last.epochStart != s.epochStart:
                # A new leader epoch of the same leader (the controller bumps it with an ISR
                # change it makes itself, or a reassignment): the model starts an epoch only
                # with an election or a restart. Taken as given; the rest is checked.
                self.epoch_bumps += 1
                w.checker.last = last._replace(epochStart=s.epochStart)
            self.steps += 1
            found = w.checker.check(s, where)
            for t in found.states[:-1]:  # a response may be served between two observations
                assert isinstance(t, LogStartOffsetState)
                self._serve(w, t)
        w.outside = ""
        self._serve(w, s)

    @classmethod
    def _serve_between(cls, w: _Watch, last: S, s: S) -> None:
        """A rebase for another replica's sake (its restart seen) hides the leader's own step
        from ``last`` to ``s``: within it the leader appended and raised its HW, and a fetch
        it answered in between (a delayed fetch completed by the append) carries a state no
        observation saw. Remember each state the leader's Appends and AdvanceHWs could have
        passed through (LEO and HW between the two observed, the HW within the LEO), if its
        start offset did not move; none beyond them."""
        L = w.replicas.index(s.leader)
        if s.logStart[L] != last.logStart[L]:
            return
        leos = range(last.leo[L], s.leo[L] + 1)
        hws = range(last.hw[L], s.hw[L] + 1)
        if len(leos) * len(hws) > SERVED_KEPT:
            return
        for leo in leos:
            for hw in hws:
                if hw <= leo:
                    cls._remember(w, (leo, hw, s.logStart[L]))

    @classmethod
    def _serve(cls, w: _Watch, s: S) -> None:
        """Remember the leader's state in ``s`` as one a fetch response may carry."""
        L = w.replicas.index(s.leader)
        cls._remember(w, (s.leo[L], s.hw[L], s.logStart[L]))

    @staticmethod
    def _remember(w: _Watch, key: Served) -> None:
        """Keep ``key`` as the newest of the leader states a fetch response may carry."""
        w.served.pop(key, None)
        w.served[key] = None
        while len(w.served) > SERVED_KEPT:
            del w.served[next(iter(w.served))]


__all__ = [
    "MAX_OFFSET",
    "ClusterProjection",
    "LogProjection",
    "LogStartOffsetRefinement",
    "RefinementViolation",
    "ReplicaView",
    "checkpointed_start_offset",
    "twin_for",
    "view_of",
    "visible",
]
