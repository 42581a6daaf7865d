"""What a JBOD move reports to the trace recorder (``world/trace.py``), in ReplicaMove's terms
(traces/SCHEMA.md, "ReplicaMove").

The log manager (the future log's creation, the swap's S2 to S5, a cancellation, start-up's
resumption of a move) and the dir-move fetcher (the copy, its following of the source, its
flushes, S1 and S6) call :class:`MoveTracer` where they perform a step; it reads the two logs and
hands the recorder the model variables that changed since the move's previous event:

* ``vol`` / ``dur``: each log's end offset and recovery point (what the code knows is fsynced);
* ``name`` / ``durName``: each log's dir name as the broker sees it and as a crash would leave
  it (the code's renames, and the dir fsyncs that made them durable);
* ``start``: each log's start offset; ``acked``: the high watermark of the log appends go to,
  capped at its recovery point (never falling);
* ``current``, ``locked``: the log appends go to, and whether the swap holds the append lock;
* ``offline``: whether each log's dir is offline; ``newer``: the log of the higher generation.

The ghosts (``agree``, ``misplaced``, ``lateAppend``, ``skew``) are the checker's. Nothing here
decides anything; every method returns at once when the recorder is off.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from logwright.identity import TopicPartition
from logwright.storage.log import PartitionLog
from logwright.world.trace import REPLICA_MOVE, Json, TraceRecorder, move_instance, topic_id_text


class MoveOwner(Protocol):
    """What the tracer reads of its log manager: the recorder, the replica id it reports as,
    and the dirs offline."""

    trace: TraceRecorder
    trace_replica: int

    @property
    def offline_dirs(self) -> list[str]:
        """The dirs offline now."""
        ...

SRC, FUT = "src", "fut"
LIVE, FUTURE, DELETE, GONE = "live", "future", "delete", "none"


@dataclass
class _Move:
    src: PartitionLog
    fut: PartitionLog
    name: dict[str, str] = field(default_factory=lambda: {SRC: LIVE, FUT: FUTURE})
    dur_name: dict[str, str] = field(default_factory=lambda: {SRC: LIVE, FUT: FUTURE})
    acked: int = 0
    last: dict[str, Json] = field(default_factory=dict)


class MoveTracer:
    """The ReplicaMove events of one log manager's moves."""

    def __init__(self, log_manager: MoveOwner) -> None:
        self.lm = log_manager
        self.moves: dict[TopicPartition, _Move] = {}

    @property
    def enabled(self) -> bool:
        """Whether the recorder records."""
        return self.lm.trace.enabled

    def start(self, tp: TopicPartition, src: PartitionLog, fut: PartitionLog,
              reason: str) -> None:
        """A move begins (its future log created), or resumes at start-up (R3): ``StartMove``,
        with every variable."""
        if not self.enabled:
            return
        self.moves[tp] = _Move(src, fut)
        self._emit(tp, "StartMove", {
            "reason": reason, "from": posixpath.dirname(src.dir_path),
            "to": posixpath.dirname(fut.dir_path), "generation": fut.generation,
            "sourceGeneration": src.generation})

    def step(self, tp: TopicPartition, action: str, args: Mapping[str, Json] | None = None,
             *, locked: bool = False, current: str = SRC, renamed: tuple[str, str] | None = None,
             fsynced: str | None = None, moved: PartitionLog | None = None) -> None:
        """``action`` of ``tp``'s move was just performed: ``renamed`` (log, new name) and
        ``fsynced`` (the log whose dir was fsynced) say what it did to the dir names; ``moved``
        is the log the swap opened in place of the future log."""
        if not self.enabled or tp not in self.moves:
            return
        m = self.moves[tp]
        if renamed is not None:
            m.name[renamed[0]] = renamed[1]
        if fsynced is not None:
            m.dur_name[fsynced] = m.name[fsynced]
        if moved is not None:
            m.fut = moved
        self._emit(tp, action, dict(args or {}), locked=locked, current=current)

    def stop(self, tp: TopicPartition, reason: str) -> None:
        """The move ended without a swap (cancelled, failed, its partition deleted):
        ``StopMove``; the instance ends."""
        if not self.enabled or tp not in self.moves:
            return
        m = self.moves[tp]
        offline = set(self.lm.offline_dirs)
        for log, which in ((m.src, SRC), (m.fut, FUT)):
            was = m.last.get("offline", {}).get(which, False)
            if posixpath.dirname(log.dir_path) in offline and not was:
                # The dir failed since the move's last event: the model's FailDir(l).
                self._emit(tp, "FailDir", {"l": which}, current=self._serving(m))
        self._emit(tp, "StopMove", {"reason": reason}, current=self._serving(m))
        del self.moves[tp]

    def _serving(self, m: _Move) -> str:
        """The log appends go to outside a swap: the source, unless its dir failed."""
        offline = set(self.lm.offline_dirs)
        return "none" if m.src.offline or posixpath.dirname(m.src.dir_path) in offline \
            else SRC

    def end(self, tp: TopicPartition) -> None:
        """The move is done (S6 recorded): the instance ends."""
        self.moves.pop(tp, None)

    def _emit(self, tp: TopicPartition, action: str, args: dict[str, Json], *,
              locked: bool = False, current: str = SRC) -> None:
        m = self.moves[tp]
        offline = set(self.lm.offline_dirs)
        logs = {SRC: m.src, FUT: m.fut}
        appends_to = logs.get(current)  # None: "none", the partition offline here
        if appends_to is not None:
            m.acked = max(m.acked, min(appends_to.high_watermark, appends_to.recovery_point))
        now: dict[str, Json] = {
            "vol": {k: log.log_end_offset for k, log in logs.items()},
            "dur": {k: log.recovery_point for k, log in logs.items()},
            "start": {k: log.log_start_offset for k, log in logs.items()},
            "name": dict(m.name), "durName": dict(m.dur_name), "acked": m.acked,
            "current": current, "locked": locked,
            "offline": {k: posixpath.dirname(log.dir_path) in offline for k, log in logs.items()},
            "newer": FUT if m.fut.generation > m.src.generation else SRC,
        }
        changed = {k: v for k, v in now.items() if m.last.get(k) != v}
        m.last = now
        args = {"topicId": topic_id_text(m.src.topic_id), **args}
        r = self.lm.trace_replica
        self.lm.trace.emit(f"broker-{r}", REPLICA_MOVE, move_instance(r, tp.topic, tp.partition),
                           action, args, changed)


__all__ = ["MoveOwner", "MoveTracer"]
