"""The controller's side of a reassignment's log dirs (KIP-113): ask for each move, learn when
it is done.

A reassignment whose ``log_dirs`` names a dir (not "any") for a replica completes only once that
replica lives in that dir on its broker and no future log of it remains there. For each such
replica the controller:

- sends its broker an AlterReplicaLogDirs naming the dir, at once, whether the replica exists yet
  or not. A replica the broker does not host yet answers REPLICA_NOT_AVAILABLE and the broker
  remembers the choice for when it creates it (the LeaderAndIsr that adds the replica names the
  same dir, too), so the controller never waits for a creation before asking;
- learns where the replica is from the broker: a DescribeLogDirs of the partitions still moving
  there, sent at once and then every ``dir_move_poll_ms`` while a move is not done. A replica
  found in its dir, with no future log, is done. A replica found elsewhere with no future log
  heading for its dir (the broker forgot the choice in a restart, the move was cancelled, the
  request or its answer was lost, the destination was offline: KAFKA_STORAGE_ERROR) is asked
  again, at most once per answer, so the retries run at the poll's pace.

Everything is in messages, answers and one timer: one seed replays one run. What the controller
knows of the moves is kept in memory only; a new controller (or this one activated again) learns
it afresh from the stored pending reassignments and the brokers' answers.
"""

from __future__ import annotations

import logging
import posixpath
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from logwright.controller.config import ControllerConfig
from logwright.controller.control import ControlRequests
from logwright.controller.core import decision
from logwright.controller.store import ANY_LOG_DIR, MetadataStore, PendingReassignment
from logwright.errors import Errors
from logwright.identity import TopicPartition, broker_node_id
from logwright.protocol.effects import Request
from logwright.protocol.messages import (
    AlterReplicaLogDirsDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirsTopic,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    Message,
)
from logwright.world.clock import Clock

__all__ = [
    "DIR_MOVE_REQUESTS",
    "DIR_MOVE_RESPONSES",
    "DIR_MOVE_TIMER",
    "DirMoveStatus",
    "DirMoves",
    "dir_move_targets",
]

log = logging.getLogger(__name__)

DIR_MOVE_REQUESTS = (AlterReplicaLogDirsRequest, DescribeLogDirsRequest)
"""The requests this room sends (through the controller's request channel)."""
DIR_MOVE_RESPONSES = (AlterReplicaLogDirsResponse, DescribeLogDirsResponse)
"""Their answers."""
DIR_MOVE_TIMER = ("dir-moves", 0)
"""The key of the one poll timer, armed while some move is not known to be done."""


@dataclass(frozen=True)
class DirMoveStatus:
    """What the controller last learnt of one replica's move to its named dir.

    ``state``: "complete" (in ``target_dir``, no future log), "in progress" (a future log heading
    for ``target_dir``), "moving elsewhere" (a future log heading for another dir: asked again),
    "not moving" (in another dir with no future log: asked again), "missing" (the broker does
    not list the replica in any online dir: not created yet, or its dir is offline) or
    "unknown" (no answer from the broker yet). ``error``: the last error the broker answered
    AlterReplicaLogDirs with (REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR, LOG_DIR_NOT_FOUND...),
    None after a success.
    """

    tp: TopicPartition
    broker: int
    target_dir: str
    state: str
    current_dir: str | None = None
    future_dir: str | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        """Whether the replica is in its dir with no future log left."""
        return self.state == "complete"


@dataclass
class _Move:
    target: str
    current: str | None = None
    future: str | None = None
    seen: bool = False  # a DescribeLogDirs answer has been read for it
    error: Errors | None = None

    def state(self) -> str:
        if not self.seen:
            return "unknown"
        if self.future is not None:
            return "in progress" if same_dir(self.future, self.target) else "moving elsewhere"
        if self.current is None:
            return "missing"
        return "complete" if same_dir(self.current, self.target) else "not moving"

    def needs_asking(self) -> bool:
        """Whether to send AlterReplicaLogDirs again: not done and not heading for its dir."""
        return self.state() in ("moving elsewhere", "not moving", "missing")


def same_dir(a: str, b: str) -> bool:
    """Whether two absolute paths name the same dir (``/d1/`` is ``/d1``)."""
    return posixpath.normpath(a) == posixpath.normpath(b)


def dir_move_targets(pending: PendingReassignment) -> dict[int, str]:
    """The replicas of ``pending`` that name a dir: broker id -> dir."""
    return {b: d for b, d in zip(pending.target_replicas, pending.target_log_dirs, strict=True)
            if d != ANY_LOG_DIR}


class DirMoves(ControlRequests):
    """The room that sends a reassignment's dir moves and learns when they are done."""

    def __init__(self, controller_id: int, store: MetadataStore, clock: Clock,
                 rng: random.Random, config: ControllerConfig,
                 next_correlation_id: Callable[[], int],
                 id_rng: random.Random | None = None) -> None:
        super().__init__(controller_id, store, clock, rng, config, next_correlation_id, id_rng)
        # Per partition being reassigned with named dirs: its moves, by broker.
        self._moves: dict[TopicPartition, dict[int, _Move]] = {}
        self._poll_armed = False

    # ---- what the reassignment room asks ---------------------------------------------------

    def _dir_moves_settled(self, pending: PendingReassignment) -> bool:
        """Whether every replica of ``pending`` that names a dir is known to be in it, with no
        future log left. The first call for a partition starts asking its brokers."""
        targets = dir_move_targets(pending)
        if not targets:
            return True
        moves = self._moves
        tracked = moves.get(pending.tp)
        if tracked is None or {b: m.target for b, m in tracked.items()} != targets:
            tracked = moves[pending.tp] = {b: _Move(d) for b, d in targets.items()}
            self._ask_to_move(pending.tp, tracked, sorted(tracked))
            for broker_id in sorted(tracked):
                self._describe(broker_id, only=pending.tp)  # one per partition: O(n) in all
            self._arm_poll()
        return all(m.state() == "complete" for m in tracked.values())

    def _forget_dir_moves(self, tp: TopicPartition) -> None:
        """``tp``'s reassignment completed (or is gone): stop following its moves."""
        self._moves.pop(tp, None)

    def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        """Complete ``tp``'s reassignment if it is done (the reassignment room's)."""
        raise NotImplementedError

    def dir_move_statuses(self, tp: TopicPartition) -> tuple[DirMoveStatus, ...]:
        """What the controller last learnt of ``tp``'s dir moves, by broker."""
        tracked = self._moves.get(tp, {})
        return tuple(DirMoveStatus(tp, b, m.target, m.state(), m.current, m.future,
                                   None if m.error is None else m.error.name)
                     for b, m in sorted(tracked.items()))

    # ---- requests out ----------------------------------------------------------------------

    def _request(self, broker_id: int, message: Message) -> None:
        if not self.active or broker_id not in self._session_deadline_ms:
            return
        self._emit(Request(broker_node_id(broker_id), message, self.config.dir_move_poll_ms,
                           f"{self.node_id} {type(message).__name__} "
                           f"{message.correlation_id} unanswered"))

    def _ask_to_move(self, tp: TopicPartition, tracked: dict[int, _Move],
                     brokers: Iterable[int]) -> None:
        for broker_id in brokers:
            target = tracked[broker_id].target
            log.info("%s asks broker %d to move %s to %s", self.node_id, broker_id, tp, target)
            self._request(broker_id, AlterReplicaLogDirsRequest(
                self._next_correlation_id(), (AlterReplicaLogDirsDir(target, (
                    AlterReplicaLogDirsTopic(tp.topic, (tp.partition,)),)),)))

    def _describe(self, broker_id: int, only: TopicPartition | None = None) -> None:
        """Ask ``broker_id`` where its unfinished moves are (only ``only``'s, if given)."""
        wanted: dict[str, list[int]] = {}
        for tp, tracked in sorted(self._moves.items()):
            if only is not None and tp != only:
                continue
            move = tracked.get(broker_id)
            if move is not None and move.state() != "complete":
                wanted.setdefault(tp.topic, []).append(tp.partition)
        if wanted:
            self._request(broker_id, DescribeLogDirsRequest(
                self._next_correlation_id(),
                tuple((t, tuple(ps)) for t, ps in sorted(wanted.items()))))

    def _arm_poll(self) -> None:
        if self.active and not self._poll_armed:
            self._poll_armed = True
            self._arm(DIR_MOVE_TIMER, self.config.dir_move_poll_ms, "dir-move poll")

    def _poll_dir_moves(self) -> None:
        """The poll timer fired: ask every live broker with an unfinished move where it is."""
        self._poll_armed = False
        if not self.active:
            return
        # Reassignments cleared meanwhile (completed by a newer controller, say) are dropped.
        pending = {r.tp for r in self.store.reassignments()}
        for tp in [tp for tp in self._moves if tp not in pending]:
            del self._moves[tp]
        brokers = sorted({b for tracked in self._moves.values()
                          for b, m in tracked.items() if m.state() != "complete"})
        for broker_id in brokers:
            self._describe(broker_id)
        if brokers:
            self._arm_poll()

    def _stop(self, reason: str) -> None:
        """Stopping forgets the moves (a new activation learns them again)."""
        super()._stop(reason)
        self._moves.clear()
        if self._poll_armed:
            self._poll_armed = False
            self._cancel(DIR_MOVE_TIMER)

    # ---- answers in ------------------------------------------------------------------------

    @decision
    def on_dir_move_answer(self, dst: str, request: Message, answer: Message | None) -> None:
        """Node ``dst`` answered an AlterReplicaLogDirs or DescribeLogDirs this room sent
        (None: no answer within ``dir_move_poll_ms``; the next poll asks again)."""
        if answer is None or not self.active:
            return
        broker_id = int(dst.rsplit("-", 1)[1])
        if isinstance(answer, AlterReplicaLogDirsResponse):
            self._on_alter_answer(broker_id, answer)
        elif isinstance(answer, DescribeLogDirsResponse):
            self._on_describe_answer(broker_id, answer)

    def _on_alter_answer(self, broker_id: int, answer: AlterReplicaLogDirsResponse) -> None:
        moves = self._moves
        for topic in answer.results:
            for result in topic.partitions:
                move = moves.get(TopicPartition(topic.name, result.partition_index), {}).get(
                    broker_id)
                if move is None:
                    continue
                move.error = None if result.error == Errors.NONE else result.error
                if result.error not in (Errors.NONE, Errors.REPLICA_NOT_AVAILABLE):
                    log.warning("%s: broker %d refused to move %s-%d to %s: %s", self.node_id,
                                broker_id, topic.name, result.partition_index, move.target,
                                result.error.name)

    def _on_describe_answer(self, broker_id: int, answer: DescribeLogDirsResponse) -> None:
        if answer.error != Errors.NONE:
            log.warning("%s: DescribeLogDirs from broker %d failed: %s", self.node_id,
                        broker_id, answer.error.name)
            return
        current, future = answer.replica_dirs()
        settled: list[TopicPartition] = []
        ask: list[TopicPartition] = []
        for tp, tracked in sorted(self._moves.items()):
            move = tracked.get(broker_id)
            if move is None or move.state() == "complete":
                continue
            move.seen, move.current, move.future = True, current.get(tp), future.get(tp)
            if move.state() == "complete":
                log.info("%s: %s on broker %d is in %s", self.node_id, tp, broker_id,
                         move.target)
                if all(m.state() == "complete" for m in tracked.values()):
                    settled.append(tp)
            elif move.needs_asking():
                ask.append(tp)
        for tp in ask:
            self._ask_to_move(tp, self._moves[tp], [broker_id])
        for tp in settled:
            self._maybe_complete_reassignment(tp)
