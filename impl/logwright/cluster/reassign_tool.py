"""What ``logwright reassign-partitions`` prints, in the words of Kafka's
``kafka-reassign-partitions.sh``: the current assignment to save for a rollback, the lines that
say what started, and ``--verify``'s status of each partition and of each replica's log dir.

The replica states are read from the brokers' DescribeLogDirs answers, as Kafka's tool reads
them, so ``--verify`` says where each replica is now, whether or not a reassignment is pending.
Pure functions of what the cluster answered: the CLI (``cli.py``) opens the cluster and prints.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from logwright.controller.dir_moves import same_dir
from logwright.controller.reassigning import ReassignmentStatus
from logwright.controller.reassignment import ReassignmentPlan
from logwright.controller.store import ANY_LOG_DIR, MetadataStore
from logwright.errors import Errors
from logwright.identity import TopicPartition
from logwright.protocol.messages import DescribeLogDirsResponse

__all__ = [
    "ReplicaMove",
    "current_assignment_json",
    "execute_lines",
    "partition_status_lines",
    "replica_move_lines",
    "replica_moves",
    "verify_outcome",
]

#: ``ReplicaMove.state`` values, with Kafka's tool's names for them.
COMPLETED = "completed"          # CompletedMoveState: in its dir, no future log
ACTIVE = "in progress"           # ActiveMoveState, future log heading for the named dir
ELSEWHERE = "moving elsewhere"   # ActiveMoveState, future log heading for another dir
CANCELLED = "not moving"         # CancelledMoveState: in another dir, no future log
MISSING_DIR = "missing log dir"  # MissingLogDirMoveState: not listed, some dir offline
MISSING = "missing replica"      # MissingReplicaMoveState: not listed by the broker at all


@dataclass(frozen=True)
class ReplicaMove:
    """Where one replica named with a log dir is, from its broker's DescribeLogDirs answer."""

    tp: TopicPartition
    broker: int
    target_dir: str
    state: str
    current_dir: str | None = None
    future_dir: str | None = None

    @property
    def name(self) -> str:
        """Kafka's TopicPartitionReplica: ``<topic>-<partition>-<broker>``."""
        return f"{self.tp.topic}-{self.tp.partition}-{self.broker}"


def _tp_key(tp: TopicPartition) -> tuple[str, int]:
    return tp.topic, tp.partition


def current_assignment_json(plan: ReassignmentPlan, store: MetadataStore) -> str:
    """The partitions of ``plan`` as they are assigned now, in the reassignment JSON (to save
    for a rollback; sorted by topic and partition; ``log_dirs`` "any", as Kafka's tool writes
    it). Every partition must exist (``validate_plan`` first)."""
    partitions = []
    for tp in sorted((m.tp for m in plan.moves), key=_tp_key):
        state = store.partition(tp)
        assert state is not None, f"{tp}: validate the plan first"
        partitions.append({"topic": tp.topic, "partition": tp.partition,
                           "replicas": list(state.replicas),
                           "log_dirs": [ANY_LOG_DIR] * len(state.replicas)})
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _named_dirs(plan: ReassignmentPlan) -> dict[tuple[TopicPartition, int], str]:
    return {(m.tp, b): d for m in plan.moves
            for b, d in zip(m.replicas, m.log_dirs, strict=True) if d != ANY_LOG_DIR}


def execute_lines(plan: ReassignmentPlan) -> list[str]:
    """What ``--execute`` prints after the current assignment: the partitions whose
    reassignment started and the replicas whose log dir move started."""
    tps = sorted((m.tp for m in plan.moves), key=_tp_key)
    lines = [f"Successfully started partition reassignment{'' if len(tps) == 1 else 's'} for "
             + ",".join(f"{tp.topic}-{tp.partition}" for tp in tps)]
    replicas = sorted(_named_dirs(plan), key=lambda r: (r[1], r[0].topic, r[0].partition))
    if replicas:
        lines.append(f"Successfully started log directory move{'' if len(replicas) == 1 else 's'}"
                     " for: " + ",".join(f"{tp.topic}-{tp.partition}-{b}" for tp, b in replicas))
    return lines


def replica_moves(plan: ReassignmentPlan, answers: Mapping[int, DescribeLogDirsResponse]
                  ) -> list[ReplicaMove]:
    """The state of each replica ``plan`` names a log dir for, by broker, topic and partition,
    from ``answers`` (broker id -> its DescribeLogDirs answer; a broker missing from it did not
    answer: its replicas are "missing replica")."""
    moves = []
    for (tp, broker), target in sorted(_named_dirs(plan).items(),
                                       key=lambda i: (i[0][1], i[0][0].topic, i[0][0].partition)):
        answer = answers.get(broker)
        current = future = None
        offline = answer is None or answer.error != Errors.NONE
        if answer is not None:
            offline = offline or any(r.error != Errors.NONE for r in answer.results)
            where, moving = answer.replica_dirs()
            current, future = where.get(tp), moving.get(tp)
        if current is None:
            state = MISSING_DIR if offline and answer is not None else MISSING
        elif future is not None:
            state = ACTIVE if same_dir(future, target) else ELSEWHERE
        else:
            state = COMPLETED if same_dir(current, target) else CANCELLED
        moves.append(ReplicaMove(tp, broker, target, state, current, future))
    return moves



def partition_status_lines(statuses: Iterable[ReassignmentStatus]) -> list[str]:
    """``--verify``'s partition lines, Kafka's words, sorted by topic and partition."""
    lines = ["Status of partition reassignment:"]
    for s in sorted(statuses, key=lambda s: _tp_key(s.tp)):
        name = f"{s.tp.topic}-{s.tp.partition}"
        if s.state == "in progress":
            lines.append(f"Reassignment of partition {name} is still in progress.")
        elif s.state == "complete":
            lines.append(f"Reassignment of partition {name} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {name}, but replica set "
                         f"is {','.join(map(str, s.replicas))} rather than "
                         f"{','.join(map(str, s.target_replicas))}.")
    return lines


def replica_move_lines(moves: Sequence[ReplicaMove]) -> list[str]:
    """``--verify``'s replica lines (none when the plan names no dir), Kafka's words."""
    lines = []
    for m in moves:
        where = f"Partition {m.tp.topic}-{m.tp.partition}"
        if m.state == COMPLETED:
            lines.append(f"Reassignment of replica {m.name} completed successfully.")
        elif m.state == ACTIVE:
            lines.append(f"Reassignment of replica {m.name} is still in progress.")
        elif m.state == ELSEWHERE:
            lines.append(f"{where} on broker {m.broker} is being moved to log dir "
                         f"{m.future_dir} instead of {m.target_dir}.")
        elif m.state == CANCELLED:
            lines.append(f"{where} on broker {m.broker} is not being moved from log dir "
                         f"{m.current_dir} to {m.target_dir}.")
        elif m.state == MISSING_DIR:
            lines.append(f"{where} is not found in any live log dir on broker {m.broker}. "
                         "There is likely an offline log directory on the broker.")
        else:
            lines.append(f"{where} cannot be found in any live log directory on broker "
                         f"{m.broker}.")
    return lines


def verify_outcome(statuses: Sequence[ReassignmentStatus],
                   moves: Sequence[ReplicaMove]) -> str:
    """"complete" (every partition has its target replicas and no reassignment pending, every
    named replica is in its dir), "in progress" (some reassignment is still pending, or a replica
    is still copying into its dir) or "differs" (nothing pending, yet some partition or replica
    is not where the file says)."""
    pending = {s.tp for s in statuses if s.state == "in progress"}
    if pending or any(m.state == ACTIVE for m in moves):
        return "in progress"
    if all(s.state == "complete" for s in statuses) and all(m.state == COMPLETED
                                                            for m in moves):
        return "complete"
    return "differs"
