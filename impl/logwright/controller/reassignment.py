"""Partition reassignment: Kafka's reassignment JSON, its validation, and the state transitions.

Invariant upheld: a reassignment never loses the last copy of committed data. Replicas are only
ever added first; the old ones are removed only once every target replica is in the ISR (so each
holds everything committed) and has answered (``reassigning.py``: so each holds it durably),
leadership moves to a target replica that is in the ISR, and the leader epoch is bumped so that
the removed replicas and the old leadership are fenced.

Input is Kafka's ``kafka-reassign-partitions.sh`` format (docs/kafka-compatibility.md, KIP-113)::

    {"version": 1,
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2],
                     "log_dirs": ["any", "/data/d2"]}]}

``log_dirs`` is optional and parallels ``replicas``; ``"any"`` means no preference. Bad input gets
a :class:`ReassignmentError` that names the JSON path of the problem (``partitions[2].replicas``)
and carries the Kafka code a Kafka tool would report. Unlike Kafka's tool, unknown keys are
rejected, so a misspelt ``log_dir`` is an error rather than a silently ignored preference.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from logwright.controller.store import (
    ANY_LOG_DIR,
    NO_LEADER,
    MetadataStore,
    PartitionState,
    PendingReassignment,
)
from logwright.errors import Errors, KafkaError
from logwright.identity import PARTITION_MAX, TopicPartition, topic_name_problem

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_PARTITIONS_PER_REASSIGNMENT",
    "MAX_REPLICAS",
    "SUPPORTED_VERSIONS",
    "PartitionMove",
    "ReassignmentError",
    "ReassignmentPlan",
    "begin_reassignment",
    "complete_reassignment",
    "keeps_replicas",
    "parse_reassignment",
    "reassignment_done",
    "validate_plan",
]

SUPPORTED_VERSIONS = (1,)
"""Reassignment JSON versions this parser reads (Kafka's tool writes version 1)."""

MAX_PARTITIONS_PER_REASSIGNMENT = 100_000
"""An explicit limit on one request, so a runaway file fails fast with a clear message."""

MAX_JSON_CHARS = 16 * 1024 * 1024
"""The longest reassignment document read: room for the partition limit at ~160 characters each;
a longer one is refused before it is parsed."""

MAX_JSON_DEPTH = 16
"""The deepest nesting of lists and objects read (Kafka's format needs 3); deeper input is
refused before it is parsed, so the parser never recurses without bound."""

MAX_REPLICAS = 1_000
"""An explicit limit on one partition's replica list."""

_TOP_KEYS = frozenset({"version", "partitions"})
_PARTITION_KEYS = frozenset({"topic", "partition", "replicas", "log_dirs"})


class ReassignmentError(KafkaError):
    """A reassignment request that cannot be carried out; ``path`` locates the problem in the JSON.

    Codes: INVALID_REQUEST for malformed JSON and structure (Kafka's tool fails before sending),
    INVALID_TOPIC_EXCEPTION for an illegal topic name, UNKNOWN_TOPIC_OR_PARTITION for a topic or
    partition that does not exist (a negative partition included, as ``validate_topic_partition``
    does), LOG_DIR_NOT_FOUND for a dir the broker did not register, and INVALID_REQUEST standing in
    for INVALID_REPLICA_ASSIGNMENT (39) and REASSIGNMENT_IN_PROGRESS (60), which ``Errors`` lacks.
    """

    def __init__(self, error: Errors, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(error, f"{path}: {problem}" if path else problem)


@dataclass(frozen=True)
class PartitionMove:
    """Where one partition's replicas should go; ``log_dirs`` parallels ``replicas``."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]

    def __post_init__(self) -> None:
        assert self.replicas and len(self.log_dirs) == len(self.replicas)


@dataclass(frozen=True)
class ReassignmentPlan:
    """A parsed reassignment request: one move per partition, in the order given."""

    version: int
    moves: tuple[PartitionMove, ...]


# ---- parsing --------------------------------------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ReassignmentError(Errors.INVALID_REQUEST, "", f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _reject_constant(name: str) -> None:
    raise ReassignmentError(Errors.INVALID_REQUEST, "", f"{name} is not valid JSON")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def parse_reassignment(text: str) -> ReassignmentPlan:
    """Parse and check the reassignment JSON on its own (no cluster needed).

    Raises ReassignmentError for: invalid JSON, a duplicate key, a missing or unknown field, a
    field of the wrong type, an unknown version, an empty partition list, an illegal topic name,
    a negative partition, an empty or duplicated replica list, a negative broker id, a log dir
    list whose length differs from the replica list, and a partition listed twice.
    """
    if not isinstance(text, str):
        raise ReassignmentError(Errors.INVALID_REQUEST, "",
                                f"the reassignment must be JSON text, not {_type_name(text)}")
    _check_size_and_depth(text)
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys,
                         parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise ReassignmentError(Errors.INVALID_REQUEST, "",
                                f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    except ValueError as e:  # an integer literal beyond Python's digit limit
        raise ReassignmentError(Errors.INVALID_REQUEST, "", f"invalid JSON: {e}") from e
    if not isinstance(doc, dict):
        raise ReassignmentError(Errors.INVALID_REQUEST, "",
                                f"the top level must be an object, not {_type_name(doc)}")
    _check_keys(doc, _TOP_KEYS, "")
    if "version" not in doc:
        raise ReassignmentError(Errors.INVALID_REQUEST, "version", "missing")
    version = doc["version"]
    if not _is_int(version):
        raise ReassignmentError(Errors.INVALID_REQUEST, "version",
                                f"must be an integer, not {_type_name(version)}")
    if version not in SUPPORTED_VERSIONS:
        raise ReassignmentError(Errors.INVALID_REQUEST, "version",
                                f"unknown version {version}; supported: "
                                f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    if "partitions" not in doc:
        raise ReassignmentError(Errors.INVALID_REQUEST, "partitions", "missing")
    entries = doc["partitions"]
    if not isinstance(entries, list):
        raise ReassignmentError(Errors.INVALID_REQUEST, "partitions",
                                f"must be a list, not {_type_name(entries)}")
    if not entries:
        raise ReassignmentError(Errors.INVALID_REQUEST, "partitions",
                                "is empty: nothing to reassign")
    if len(entries) > MAX_PARTITIONS_PER_REASSIGNMENT:
        raise ReassignmentError(Errors.INVALID_REQUEST, "partitions",
                                f"{len(entries)} entries, more than the limit of "
                                f"{MAX_PARTITIONS_PER_REASSIGNMENT}")
    moves: list[PartitionMove] = []
    first_seen: dict[TopicPartition, int] = {}
    for i, entry in enumerate(entries):
        move = _parse_move(entry, f"partitions[{i}]")
        if move.tp in first_seen:
            raise ReassignmentError(Errors.INVALID_REQUEST, f"partitions[{i}]",
                                    f"duplicate partition {move.tp} (also partitions"
                                    f"[{first_seen[move.tp]}])")
        first_seen[move.tp] = i
        moves.append(move)
    return ReassignmentPlan(version, tuple(moves))


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_size_and_depth(text: str) -> None:
    """Refuse a document longer than MAX_JSON_CHARS or nested deeper than MAX_JSON_DEPTH, before
    the parser sees it (strings are skipped, so brackets inside them do not count)."""
    if len(text) > MAX_JSON_CHARS:
        raise ReassignmentError(Errors.INVALID_REQUEST, "",
                                f"the document is {len(text)} characters long, more than the "
                                f"limit of {MAX_JSON_CHARS}")
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ReassignmentError(Errors.INVALID_REQUEST, "",
                                        f"the document nests lists and objects more than "
                                        f"{MAX_JSON_DEPTH} deep (at character {match.start()})")
        elif token in ("]", "}"):
            depth -= 1


def _check_keys(obj: dict[str, Any], allowed: frozenset[str], path: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        where = f"{path}." if path else ""
        raise ReassignmentError(Errors.INVALID_REQUEST, f"{where}{unknown[0]}",
                                f"unknown field; expected one of {', '.join(sorted(allowed))}")


def _parse_move(entry: object, path: str) -> PartitionMove:
    if not isinstance(entry, dict):
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                f"must be an object, not {_type_name(entry)}")
    _check_keys(entry, _PARTITION_KEYS, path)
    for key in ("topic", "partition", "replicas"):
        if key not in entry:
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}.{key}", "missing")
    topic = entry["topic"]
    if not isinstance(topic, str):
        raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}.topic",
                                f"must be a string, not {_type_name(topic)}")
    problem = topic_name_problem(topic)
    if problem is not None:
        raise ReassignmentError(Errors.INVALID_TOPIC_EXCEPTION, f"{path}.topic", problem)
    partition = entry["partition"]
    if not _is_int(partition):
        raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}.partition",
                                f"must be an integer, not {_type_name(partition)}")
    if partition < 0 or partition > PARTITION_MAX:
        raise ReassignmentError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{path}.partition",
                                f"partition {partition} of topic {topic!r} cannot exist "
                                f"(valid: 0 to {PARTITION_MAX})")
    replicas = _parse_replicas(entry["replicas"], f"{path}.replicas")
    log_dirs = _parse_log_dirs(entry.get("log_dirs"), len(replicas), f"{path}.log_dirs")
    return PartitionMove(TopicPartition(topic, partition), replicas, log_dirs)


def _parse_replicas(value: object, path: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                f"must be a list of broker ids, not {_type_name(value)}")
    if not value:
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                "is empty: a partition needs at least one replica")
    if len(value) > MAX_REPLICAS:
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                f"{len(value)} replicas, more than the limit of {MAX_REPLICAS}")
    for j, broker in enumerate(value):
        if not _is_int(broker):
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}[{j}]",
                                    f"a broker id must be an integer, not {_type_name(broker)}")
        if broker < 0:
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}[{j}]",
                                    f"broker id {broker} is negative")
    seen: set[int] = set()
    for j, broker in enumerate(value):
        if broker in seen:
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}[{j}]",
                                    f"duplicate replica: broker {broker} is listed twice")
        seen.add(broker)
    return tuple(value)


def _parse_log_dirs(value: object, replica_count: int, path: str) -> tuple[str, ...]:
    if value is None:
        return (ANY_LOG_DIR,) * replica_count
    if not isinstance(value, list):
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                f"must be a list of paths or \"any\", not {_type_name(value)}")
    if len(value) != replica_count:
        raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                f"has {len(value)} entries but replicas has {replica_count}; "
                                "log_dirs must parallel replicas")
    for j, log_dir in enumerate(value):
        if not isinstance(log_dir, str):
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}[{j}]",
                                    f"must be a path or \"any\", not {_type_name(log_dir)}")
        if log_dir != ANY_LOG_DIR and not posixpath.isabs(log_dir):
            raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}[{j}]",
                                    f"{log_dir!r} is neither an absolute path nor \"any\"")
    return tuple(value)


# ---- validation against the cluster ---------------------------------------------------------


def validate_plan(plan: ReassignmentPlan, store: MetadataStore) -> tuple[PartitionMove, ...]:
    """Check ``plan`` against the store; returns the moves with log dirs in the brokers' spelling.

    Raises ReassignmentError for an unknown topic or partition, a topic being deleted, a partition
    already being reassigned, a broker that never registered, and a log dir the broker did not
    register. Nothing is changed: the caller writes the whole plan in one transaction.
    """
    deleting = {d.name for d in store.deletions()}
    in_progress = {r.tp for r in store.reassignments()}
    checked: list[PartitionMove] = []
    for i, move in enumerate(plan.moves):
        path = f"partitions[{i}]"
        topic = store.topic(move.tp.topic)
        if topic is None or move.tp.topic in deleting:
            state = "is being deleted" if topic is not None else "does not exist"
            raise ReassignmentError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{path}.topic",
                                    f"topic {move.tp.topic!r} {state}")
        if move.tp.partition >= topic.partition_count:
            raise ReassignmentError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{path}.partition",
                                    f"topic {move.tp.topic!r} has {topic.partition_count} "
                                    f"partitions; {move.tp.partition} does not exist")
        if move.tp in in_progress:
            raise ReassignmentError(Errors.INVALID_REQUEST, path,
                                    f"{move.tp} is already being reassigned "
                                    "(REASSIGNMENT_IN_PROGRESS)")
        dirs: list[str] = []
        for j, (broker_id, log_dir) in enumerate(zip(move.replicas, move.log_dirs, strict=True)):
            registration = store.broker(broker_id)
            if registration is None:
                raise ReassignmentError(Errors.INVALID_REQUEST, f"{path}.replicas[{j}]",
                                        f"unknown broker id {broker_id}: no such broker is "
                                        "registered (INVALID_REPLICA_ASSIGNMENT)")
            dirs.append(log_dir if log_dir == ANY_LOG_DIR
                        else _registered_dir(log_dir, registration.log_dirs, broker_id,
                                             f"{path}.log_dirs[{j}]"))
        checked.append(replace(move, log_dirs=tuple(dirs)))
    return tuple(checked)


def _registered_dir(log_dir: str, registered: Iterable[str], broker_id: int, path: str) -> str:
    wanted = posixpath.normpath(log_dir)
    for candidate in registered:
        if posixpath.normpath(candidate) == wanted:
            return candidate
    raise ReassignmentError(Errors.LOG_DIR_NOT_FOUND, path,
                            f"broker {broker_id} has no log dir {log_dir!r} "
                            f"(its log dirs: {', '.join(registered) or 'none'})")


# ---- the state transitions ------------------------------------------------------------------


def begin_reassignment(state: PartitionState, move: PartitionMove) -> PartitionState:
    """The partition state while ``move`` is under way: old replicas followed by the new ones.

    The leader and ISR are unchanged; the leader epoch is bumped because the replica set the
    leader works with changes (every LeaderAndIsr the controller pushes carries a newer epoch).

    A move that keeps the replicas as they are (the same brokers in the same order: at most a
    change of log dirs, KIP-113) changes neither the leader epoch nor the ISR: only the stored
    dirs, with a new partition epoch, and nothing at all when they are the same already.
    """
    assert state.tp == move.tp
    if move.replicas == state.replicas:
        dirs = tuple(move.log_dirs)
        current = tuple(state.log_dir_for(r) for r in state.replicas)
        if dirs == current:
            return state
        return replace(state, target_log_dirs=dirs, partition_epoch=state.partition_epoch + 1)
    adding = tuple(r for r in move.replicas if r not in state.replicas)
    removing = tuple(r for r in state.replicas if r not in move.replicas)
    replicas = state.replicas + adding
    target_dir = dict(zip(move.replicas, move.log_dirs, strict=True))
    dirs = tuple(target_dir.get(r, state.log_dir_for(r)) for r in replicas)
    return replace(state, replicas=replicas, adding_replicas=adding, removing_replicas=removing,
                   target_log_dirs=dirs, leader_epoch=state.leader_epoch + 1,
                   partition_epoch=state.partition_epoch + 1)


def reassignment_done(state: PartitionState, pending: PendingReassignment) -> bool:
    """Whether every target replica is in the ISR, so the old replicas can go; at once when the
    replicas stay as they are (only their dirs may move: :func:`keeps_replicas`)."""
    return keeps_replicas(state, pending) or all(r in state.isr for r in pending.target_replicas)


def keeps_replicas(state: PartitionState, pending: PendingReassignment) -> bool:
    """Whether ``pending`` keeps ``state``'s replicas (same brokers, same order): at most a move
    between log dirs, which changes neither the leader epoch nor the ISR."""
    return state.replicas == pending.target_replicas and not state.reassigning


def complete_reassignment(state: PartitionState, pending: PendingReassignment,
                          live_brokers: Iterable[int]) -> PartitionState:
    """The partition state once the old replicas are removed.

    The leader stays if it is a live target replica in the ISR; otherwise the first target
    replica (in the target's order) that is alive and in the ISR leads. The leader epoch is
    bumped, which fences the removed replicas and the previous leadership. A reassignment that
    keeps the replicas (:func:`keeps_replicas`) returns ``state`` unchanged.
    """
    assert reassignment_done(state, pending), f"{state.tp}: target replicas not all in the ISR"
    if keeps_replicas(state, pending):
        return state  # begin_reassignment stored the dirs; no epoch moves
    live = set(live_brokers)
    target = pending.target_replicas
    isr = tuple(r for r in state.isr if r in target)
    if state.leader in target and state.leader in isr and state.leader in live:
        leader = state.leader
    else:
        leader = next((r for r in target if r in isr and r in live), NO_LEADER)
    return replace(state, replicas=target, isr=isr, leader=leader,
                   elr=tuple(r for r in state.elr if r in target),
                   recovery_log_ends=tuple(e for e in state.recovery_log_ends if e[0] in target),
                   adding_replicas=(), removing_replicas=(),
                   target_log_dirs=pending.target_log_dirs,
                   leader_epoch=state.leader_epoch + 1,
                   partition_epoch=state.partition_epoch + 1)
