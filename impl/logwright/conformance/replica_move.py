"""The abstraction of one partition's JBOD move in a log manager onto the ReplicaMove twin.

A move of partition ``tp`` from dir ``src_dir`` to dir ``dest_dir`` of one broker's
:class:`~logwright.logmanager.LogManager` over a :class:`~logwright.world.SimFileSystem` is
mapped, at any instant, to the twin's variables (spec/ReplicaMove.tla):

* ``name`` / ``durName``: each log's dir name in its dir as the running broker sees it, and as
  a crash would leave it (the dir's entries at its last fsync): ``live`` (``<tp>``), ``future``
  (``<tp>.<id>-future``), ``delete`` (``<tp>.<id>-delete``), or ``none``. A future log not
  created yet, or lost in a crash before its dir entry was durable, is ``future`` with no
  records: the twin's future log starts empty, and an empty copy restarts the move;
* ``vol`` / ``dur``: each log's records written and fsynced, counted from offset 0 (its log end
  offset and recovery point; 0 once the log is gone);
* ``acked``: the live log's high watermark, capped at what the log appends go to has fsynced
  (the twin acknowledges fsynced records: a high watermark above the fsynced end is the
  replication layer's promise, LogStartOffset's concern, not this module's);
* ``agree`` and ``misplaced``: how many leading records both logs hold alike, and whether the
  future log holds a record at an offset where the source holds another, by identity (offset,
  key, value and timestamp compared, not counts);
* ``start``: each log's start offset; ``up``, ``current`` and ``locked`` as the caller says (the
  swap, S1 to S6, runs within one call that holds the partition's append lock);
* ``skew`` 0 and ``lateAppend`` False: nothing the code does makes either (the copier always
  reads at the future log's own end; an append during the swap waits for the lock);
* ``offline``: whether the log manager has each dir offline (a log on a failed dir is as it
  was when last readable, and after a restart its durable part); ``newer``: the log of the
  higher generation in ``partition.metadata`` (with no future dir on an online dir, the one a
  move would create); ``starting``: as the caller says (start-up runs within one call).

:class:`ReplicaMoveRefinement` gives a :class:`~logwright.conformance.refinement.RefinementChecker`
every twin step (the twin is small: twenty actions), but the ones overshooting the observed
state, and a write of several records as that many steps at once, so each file-system
operation of a move is checked as at most ``max_steps`` twin steps, and AtomicMoveSwap on every
state. :class:`ReplicaMoveProjection` does so for every move of a simulated cluster.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from logwright.broker.broker import Broker
from logwright.cluster import Cluster
from logwright.conformance.refinement import RefinementChecker, RefinementViolation
from logwright.errors import LogDirNameError, LogwrightError
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager
from logwright.model.core import State
from logwright.model.replica_move import ReplicaMoveConfig, ReplicaMoveSpec
from logwright.model.replica_move.twin import (
    DELETE,
    FUT,
    FUTURE,
    GONE,
    LIVE,
    NO_LOG,
    SRC,
    RMState,
)
from logwright.storage.log import PartitionLog
from logwright.storage.naming import DirKind, parse_dir_name
from logwright.world.simfs import SimFileSystem

_KIND = {DirKind.LIVE: LIVE, DirKind.FUTURE: FUTURE, DirKind.DELETE: DELETE}


class ReplicaMoveRefinement:
    """Every twin step from a state (a
    :class:`~logwright.conformance.refinement.Refinement`)."""

    def __init__(self, spec: ReplicaMoveSpec) -> None:
        self._spec = spec

    @property
    def spec(self) -> ReplicaMoveSpec:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """Every step of every action, but the ones that overshoot ``target`` on a running
        broker where nothing on the way can take it back: an append past the target's end of
        that log, a flush past its fsynced end, a start offset raised past its start offset
        (an observed change may be many such steps: a start offset raised by four is four)."""
        assert isinstance(state, RMState) and isinstance(target, RMState)
        for action in self._spec.actions():
            for nxt in action.fn(state):
                assert isinstance(nxt, RMState)
                if target.up and _overshoots(action.name, nxt, target):
                    continue
                yield action.name, nxt
                if action.name in _REPEATED:
                    # One write of several records (a produced or fetched batch, a copy of
                    # several batches) is as many steps of the action: taken at once here.
                    more = self._repeat(action.name, nxt, target)
                    if more is not None:
                        yield more

    def _repeat(self, action: str, s: RMState, target: RMState) -> tuple[str, State] | None:
        """``action`` applied to ``s`` again until the log it grows reaches ``target``'s
        length (None: it cannot, or one step already did)."""
        fn = getattr(self._spec, action)
        count = 1
        while True:
            if action == "Append":
                c = 0 if s.current == SRC else 1
                if s.current not in (SRC, FUT) or s.vol[c] >= target.vol[c]:
                    break
            elif (action == "Copy" and s.vol[1] >= target.vol[1]) or (
                    action == "RaiseStart" and s.start[0] >= target.start[0]):
                break
            t = fn(s)
            if t is None:
                return None
            s, count = t, count + 1
        return (f"{action} x{count}", s) if count > 1 else None


_REPEATED = ("Append", "Copy", "RaiseStart")
"""Actions of one record (or offset) each that one operation of the code may do many of."""


def _overshoots(action: str, nxt: RMState, target: RMState) -> bool:
    if action == "Append":
        return any(v > t for v, t in zip(nxt.vol, target.vol, strict=True))
    if action == "Flush":
        return any(d > t for d, t in zip(nxt.dur, target.dur, strict=True))
    if action == "RaiseStart":
        return target.name[0] != GONE and nxt.start[0] > target.start[0]
    return False


@dataclass
class MoveView:
    """What the projection remembers of a move between instants: the records last read of
    each log (a log closed by the swap, or renamed away, cannot be read again), whether a
    misplaced record was ever seen, and the highest ``acked`` (the twin's never falls)."""

    src_records: dict[int, tuple[object, ...]] | None = None
    fut_records: dict[int, tuple[object, ...]] | None = None
    misplaced: bool = False
    acked: int = 0
    src: PartitionLog | None = None
    """The source log the move started from (for a caller that must find it again)."""
    durable: dict[str, int] = field(default_factory=dict)
    """Each log's durable end when last readable on disk (kept while its dir is renamed)."""
    names: dict[str, list[str]] = field(default_factory=dict)
    """Each dir's entries when last listed (a failed dir cannot be listed; nothing renames in
    it meanwhile)."""
    fut_counts: tuple[int, int, int] = (0, 0, 0)
    """The future log's counts when last seen (the log manager drops a future log whose dir
    failed; its files stay as they were)."""
    manager: LogManager | None = None
    """The log manager last seen: another one is a restart, after which a log not loaded again
    (its dir failed) holds only what was durable."""
    fut_generation: int | None = None
    """The future log's generation when last seen (before it exists: the one it will get)."""
    skipped_to: int = 0
    """The future log's start offset (at most its end) when last seen: the records below it,
    skipped by the copier, are deleted in both logs alike."""

    def listdir(self, fs: SimFileSystem, path: str) -> list[str]:
        """``path``'s entries, or the ones last listed if it cannot be listed now."""
        try:
            self.names[path] = fs.listdir(path)
        except OSError:
            pass
        return self.names.get(path, [])

    def counts(self, which: str, fs: SimFileSystem, log: PartitionLog) -> tuple[int, int, int]:
        """``log``'s records written, records fsynced (:func:`durable_end`), start offset.

        No record at or above the start offset durable counts as fsynced to the start offset:
        an empty follower whose active segment was replaced by one at the base of a batch
        around its start offset (below it) has that segment's name not yet durable, and the
        records below the start are the log's no longer (traces/regressions/0037)."""
        end = durable_end(fs, log)
        if end is not None:
            self.durable[which] = min(max(end, log.log_start_offset), log.log_end_offset)
        return (log.log_end_offset, self.durable.get(which, log.recovery_point),
                log.log_start_offset)


def _name_in(names: Iterable[str], tp: TopicPartition, generation_dir: bool) -> str | None:
    """The twin name of ``tp``'s dir among ``names`` (None: none there)."""
    found = set()
    for n in names:
        try:
            parsed = parse_dir_name(n)
        except LogDirNameError:  # another entry of the dir: a file, a checkpoint
            continue
        if parsed.tp == tp and parsed.kind in _KIND:
            kind = _KIND[parsed.kind]
            if generation_dir or kind != FUTURE:
                found.add(kind)
    # A -delete dir beside a live or -future one is an earlier log's, queued for deletion.
    return next((k for k in (LIVE, FUTURE, DELETE) if k in found), None)


def _records(log: PartitionLog | None) -> dict[int, tuple[object, ...]] | None:
    """Every record of ``log`` by offset (None: no log, or it cannot be read any more)."""
    if log is None:
        return None
    try:
        return {offset: (r.key, r.value, r.timestamp_ms)
                for offset, r in log.read_records(log.log_start_offset)}
    except (OSError, ValueError, LogwrightError):  # closed by the swap, or renamed away
        return None


def _kept_below(records: dict[int, tuple[object, ...]] | None, start: int
                ) -> dict[int, tuple[object, ...]]:
    """The records last read below ``start``: deleted since (DeleteRecords, retention), they
    were the log's all the same, and what the other log holds there is compared with them."""
    return {o: r for o, r in (records or {}).items() if o < start}


def durable_end(fs: SimFileSystem, log: PartitionLog) -> int | None:
    """The offset below which ``log``'s records would survive a crash now: the whole batches in
    the fsynced part of its segment files whose names are durable in its dir, up to the first
    segment not wholly durable (None: the log's files are not where it says: renamed, or
    gone). Read from the simulated disk, not from the log's recovery point, which an fsync made
    for another reason (a new leader epoch's checkpoint) does not move."""
    try:
        names = set(fs.durable_listdir(log.dir_path))
        end = log.segments[0].base_offset
        for seg in log.segments:
            if posixpath.basename(seg.log_path) not in names:
                break
            data = fs.durable_bytes(seg.log_path)
            p = 0
            while p + _HEADER <= len(data):
                size = _OFFSET_AND_LENGTH + int.from_bytes(data[p + 8:p + 12], "big")
                if p + size > len(data):
                    break
                base = int.from_bytes(data[p:p + 8], "big")
                end = base + int.from_bytes(data[p + 23:p + 27], "big") + 1
                p += size
            if len(data) < fs.file_size(seg.log_path):
                break
        return end
    except OSError:
        return None


_OFFSET_AND_LENGTH = 12
"""A record batch starts with its base offset (8 bytes) and the length of the rest (4)."""
_HEADER = 27
"""Up to and including ``lastOffsetDelta`` (bytes 23 to 26 of a v2 batch)."""


def abstract_move(fs: SimFileSystem, lm: LogManager, tp: TopicPartition, src: PartitionLog,
                  src_dir: str, dest_dir: str, view: MoveView, *, up: bool = True,
                  locked: bool = False, current: str = SRC, starting: bool = False) -> RMState:
    """The twin state of ``tp``'s move from ``src_dir`` (whose log is ``src``) to
    ``dest_dir``, at this instant; ``view`` carries what a closed log cannot say again."""
    if view.manager is not None and view.manager is not lm:
        durable = view.durable.get(FUT, 0)
        view.fut_counts = (durable, durable, view.fut_counts[2])
        if view.fut_records is not None:
            view.fut_records = {o: r for o, r in view.fut_records.items() if o < durable}
        view.names = {d: fs.durable_listdir(d) for d in view.names}  # what the crash kept
    view.manager = lm
    in_dest = _name_in(view.listdir(fs, dest_dir), tp, True)
    name = (_name_in(view.listdir(fs, src_dir), tp, False) or GONE, in_dest or FUTURE)
    dur_name = (_name_in(fs.durable_listdir(src_dir), tp, False) or GONE,
                _name_in(fs.durable_listdir(dest_dir), tp, True) or FUTURE)
    if name[0] == GONE and dur_name[0] == DELETE:
        # S7 removes the -delete dir file by file; the twin's DeleteSource is the whole
        # removal, done once the removal is durable (a crash before leaves the dir to R4).
        name = (DELETE, name[1])
    live = lm.get_log(tp)
    fut = lm.get_future_log(tp)
    if fut is None and live is not None and posixpath.dirname(live.dir_path) == dest_dir:
        fut = live  # swapped in: the moved log
    theirs = _records(src)
    if theirs is not None:
        view.src_records = _kept_below(view.src_records, src.log_start_offset) | theirs
    offline = lm.offline_dirs
    if dest_dir in offline:
        ours = None  # as it was when last readable: nothing is written there any more
    elif fut is not None:
        ours = _records(fut)
        if ours is not None:
            ours = _kept_below(view.fut_records, fut.log_start_offset) | ours
    else:
        ours = {} if name[1] == FUTURE else None
    if ours is not None:
        view.fut_records = ours
    theirs, ours = view.src_records or {}, view.fut_records or {}
    # A record the future log skipped, below its start offset (DeleteRecords removed it before
    # it was copied: a copier starts the future log at the source's start offset), is deleted
    # in both logs: alike, as far as anything can read.
    # (With the future log's dir offline, as it was when last readable: its start offset is
    # durable.)
    if fut is not None and dest_dir not in offline:
        view.skipped_to = min(fut.log_start_offset, fut.log_end_offset)
    elif fut is None and name[1] == FUTURE and dest_dir not in offline:
        view.skipped_to = 0  # no future log yet: an empty one
    skipped_to = view.skipped_to
    agree = 0
    while (ours.get(agree) is not None and ours[agree] == theirs.get(agree)) or (
            agree not in ours and agree < skipped_to):
        agree += 1
    view.misplaced = view.misplaced or any(o in theirs and theirs[o] != r
                                           for o, r in ours.items())
    gone = name[0] == GONE
    src_counts = (0, 0, 0) if gone else view.counts(SRC, fs, src)
    if fut is not None and dest_dir not in offline:
        fut_counts = view.fut_counts = view.counts(FUT, fs, fut)
        view.fut_generation = fut.generation
    elif dest_dir in offline or name[1] != FUTURE:
        fut_counts = view.fut_counts  # dropped with its failed dir, or renamed away: as it was
        if name[1] == DELETE:
            fut_counts = (view.fut_counts[0], view.durable.get(FUT, 0), view.fut_counts[2])
    else:
        fut_counts = view.fut_counts = (0, 0, 0)
    appends_to = src_counts[1] if current == SRC else fut_counts[1]
    if up and live is not None:
        view.acked = max(view.acked, min(live.high_watermark, appends_to))
    if view.fut_generation is None or (fut is None and in_dest is None
                                       and dest_dir not in lm.offline_dirs):
        view.fut_generation = src.generation + 1  # the future log a move of it creates (G)
    fut_generation = fut.generation if fut is not None else view.fut_generation
    newer = SRC if fut_generation is not None and fut_generation <= src.generation else FUT
    return RMState(
        up=up, current=current if up else NO_LOG, locked=locked,
        vol=(src_counts[0], fut_counts[0]), dur=(src_counts[1], fut_counts[1]), name=name,
        durName=dur_name, acked=view.acked, lateAppend=False, agree=0 if gone else agree,
        skew=0, misplaced=view.misplaced, start=(src_counts[2], fut_counts[2]),
        offline=(src_dir in offline, dest_dir in offline), newer=newer, starting=starting)


@dataclass
class _Move:
    """One move followed by :class:`ReplicaMoveProjection`."""

    src: PartitionLog
    src_dir: str
    dest_dir: str
    incarnation: Uuid
    checker: RefinementChecker
    fut: PartitionLog | None = None
    view: MoveView = field(default_factory=MoveView)


class ReplicaMoveProjection:
    """Every JBOD move on every broker of a simulated cluster, projected onto the ReplicaMove
    twin after each file-system operation of that broker and checked (at most eight twin
    steps; a write of several records is as many appends or copies): the copy racing produce
    and replication, truncation, DeleteRecords, the swap, a dir failure under the move.

    A move is followed from the first operation that finds its future log, and is a new
    behaviour (a rebase: the invariants are checked, not the step) when it starts, when its
    broker restarts (the crash and the start-up are checked, operation by operation, by
    ``tests/test_refinement_replica_move.py``) and when it is asked to go to another dir. It is
    no longer followed once done (appends go to the moved log, S6), or cancelled, or when its
    partition is deleted or set aside or its source dir fails (the partition is then offline on
    that broker). The acknowledged prefix is the high watermark capped at what the
    log appends go to has fsynced (replication acknowledges more: LogStartOffset's concern)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.moves: dict[tuple[int, TopicPartition], _Move] = {}
        self.spec = ReplicaMoveSpec(ReplicaMoveConfig(max_records=1 << 30,
                                                      fail_dirs=frozenset({FUT})))
        self.checks = 0
        self.rebases = 0
        self.ended = 0
        self.pending = 0
        """Changes found half made between two operations and left to a later check."""

    def attach(self) -> None:
        """Observe every file-system operation of every broker, and every event of the world,
        from now on."""
        for b in self.cluster.brokers:
            self.cluster.simulated_world.new_fs(f"broker-{b}").after_op = (
                lambda b=b: self.observe(b))
        self.cluster.simulated_world.observe(self.on_event)

    def observe(self, b: int, *, final: bool = False) -> None:
        """Check every move of broker ``b``. Between two file-system operations of one call a
        log may be half changed (its start offset raised before its segments are replaced): a
        change no path explains is then left pending, and the state last accepted stands; at
        the end of the world's event (``final``) the change must be explained."""
        broker = self.cluster.brokers.get(b)
        if broker is None or not broker.alive or not broker.log_manager.started:
            return
        lm = broker.log_manager
        moving = {tp for state in lm.dirs.values() for tp in state.future_logs}
        for tp in sorted(moving | {tp for (m, tp) in self.moves if m == b}):
            self._check(b, broker, tp, final)

    def on_event(self) -> None:
        """The world's observer: every move of every broker, at the end of an event."""
        for b in sorted(self.cluster.brokers):
            self.observe(b, final=True)

    def _check(self, b: int, broker: Broker, tp: TopicPartition, final: bool) -> None:
        lm = broker.log_manager
        live, fut = lm.get_log(tp), lm.get_future_log(tp)
        key = (b, tp)
        m = self.moves.get(key)
        if live is None or (live.dir_path and posixpath.dirname(live.dir_path) in
                            lm.offline_dirs and m is not None
                            and posixpath.dirname(live.dir_path) == m.src_dir):
            self._end(key)  # deleted, or its source dir failed: offline on this broker
            return
        if m is not None and fut is not None and (
                posixpath.dirname(fut.dir_path) != m.dest_dir
                or (m.fut is not None and fut is not m.fut
                    and m.incarnation == broker.incarnation_id)):
            self._end(key)  # cancelled and asked again (to another dir or the same): a new move
            m = None
        if m is None:
            if fut is None:
                return
            m = _Move(live, posixpath.dirname(live.dir_path), posixpath.dirname(fut.dir_path),
                      broker.incarnation_id,
                      RefinementChecker(ReplicaMoveRefinement(self.spec), max_steps=12), fut)
            self.moves[key] = m
            self._rebase(m, broker, tp, "a move starts")
            return
        if fut is not None:
            m.fut = fut
        if m.incarnation != broker.incarnation_id:
            m.incarnation = broker.incarnation_id
            if posixpath.dirname(live.dir_path) == m.src_dir:
                m.src = live
            m.view.acked = 0  # a new behaviour: what the restart kept is what it holds
            self._rebase(m, broker, tp, "its broker restarted")
            return
        if not final and any(not log.segments for log in (live, fut, m.src)
                             if log is not None and not log.offline):
            return  # a log in the middle of replacing its segments: read it later
        in_dest = posixpath.dirname(live.dir_path) == m.dest_dir
        if fut is None and not in_dest and m.dest_dir not in lm.offline_dirs:
            self._end(key)  # cancelled (or its future log dropped and the move given up)
            return
        s = self._state(m, broker, tp)
        if not s.locked and s.current != FUT and s.name[0] not in (LIVE, GONE) \
                and s.name[1] == FUTURE:
            self._end(key)  # the source renamed outside a swap: deleted, or set aside
            return
        last = m.checker.last
        if s.current == FUT and isinstance(last, RMState) and s.start[1] > last.start[1]:
            # The moved log serves: its start offset raised since (DeleteRecords, retention,
            # a leader's) is the partition's life after the move, not a step of it.
            s = s._replace(start=(s.start[0], max(last.start[1], s.start[0])))
        self.checks += 1
        try:
            m.checker.check(s, f"broker {b} {tp}, " + (
                "at the end of an event" if final else "file-system op "
                f"{self.cluster.simulated_world.new_fs(f'broker-{b}').ops}"))
        except RefinementViolation:
            if final:
                raise
            self.pending += 1
            return
        if s.current == FUT:
            # S6 done: the moved log is the partition's log; what happens to it next (its
            # source's deletion is checked elsewhere) is the partition's life, not the move.
            self._end(key)

    def _state(self, m: _Move, broker: Broker, tp: TopicPartition) -> RMState:
        lm, mover = broker.log_manager, broker.replica_manager.dir_mover
        live = lm.get_log(tp)
        in_dest = live is not None and posixpath.dirname(live.dir_path) == m.dest_dir
        if live is None or live.offline or (in_dest and m.dest_dir in lm.offline_dirs):
            current = NO_LOG
        else:
            current = FUT if in_dest and tp not in mover.swapping else SRC
        locked = tp in mover.swapping and m.dest_dir not in lm.offline_dirs
        fs = self.cluster.simulated_world.new_fs(f"broker-{broker.broker_id}")
        return abstract_move(fs, lm, tp, m.src, m.src_dir, m.dest_dir, m.view, locked=locked,
                             current=current)

    def _rebase(self, m: _Move, broker: Broker, tp: TopicPartition, why: str) -> None:
        self.rebases += 1
        m.checker.rebase(self._state(m, broker, tp), f"broker {broker.broker_id} {tp}: {why}")

    def _end(self, key: tuple[int, TopicPartition]) -> None:
        if self.moves.pop(key, None) is not None:
            self.ended += 1


__all__ = ["MoveView", "ReplicaMoveProjection", "ReplicaMoveRefinement", "abstract_move"]
