"""The trace recorder: one event per state change a model knows about, injected like the clock.

Every node holds a :class:`TraceRecorder`. The default, :data:`NO_TRACE`, is off: a call site
checks ``recorder.enabled`` (one attribute read) and does nothing else, so a run without a trace
pays nothing more. :class:`JsonLinesTrace` writes each event as one JSON object per line, in
the schema of ``traces/SCHEMA.md`` (version :data:`SCHEMA_VERSION`); :class:`ParquetTrace`
writes the same rows to a Parquet file when pyarrow is installed.

Events name the model (``LogStartOffset``, ``ControllerFencing``, ``FetcherFailure``), the
model instance (a partition, or a broker for FetcherFailure), the model's action, its arguments
and the model variables it changed (their new values). ``logwright traces check`` replays them
against the Python twins (``logwright.verify.traces``).

For LogStartOffset the recorder keeps, per replica, the values it last recorded, and records
only what changed (:meth:`TraceRecorder.replica_step`): a node reports its log's offsets after
the action and the recorder works out the change.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from typing import IO, Any, TypeVar

from logwright.errors import LogwrightError
from logwright.world.clock import Clock

SCHEMA_VERSION = 4
"""The version of the event schema (traces/SCHEMA.md); a checker refuses other versions but
:data:`READABLE_VERSIONS`. Version 2 added LogStartOffset's ``flushed``, ``epochStart`` and the
``Flush`` action; version 3 the ReplicaMove model's events (a JBOD move); version 4 the
bookkeeping event :data:`INTENT`."""

READABLE_VERSIONS = (2, 3, 4)
"""The versions a checker reads: a version 3 trace is a version 4 trace without intents, a
version 2 trace one without moves either."""

LOG_START_OFFSET = "LogStartOffset"
CONTROLLER_FENCING = "ControllerFencing"
FETCHER_FAILURE = "FetcherFailure"
STRAY_CLEANUP = "StrayCleanup"
REPLICA_MOVE = "ReplicaMove"
HEADER = "Header"
"""The action of a trace's first event (model ``"-"``): the run's seed and constants."""
INIT = "Init"
"""The action that starts a model instance: its constants and initial values."""
INTENT = "Intent"
"""A bookkeeping event (model ``"-"``) a node records just before a durable write whose own
event it records only once the write returns: ``args.action`` names that event, and the rest
of ``args`` are its arguments. A power loss during the write can leave the write durable and
its event never recorded; the checker then finds, at the replica's restart, the action the
intent names (traces/SCHEMA.md)."""

REPLICA_VARIABLES = ("leo", "hw", "logStart", "segStart", "ckptStart", "flushed")
"""LogStartOffset's per-replica variables, in the order :meth:`replica_step` takes them."""

Json = Any
K = TypeVar("K")
V = TypeVar("V")


class TraceError(LogwrightError):
    """A trace cannot be written (an unknown format, a path that cannot be opened)."""


def first_of_each(pairs: Iterable[tuple[K, V]]) -> dict[K, V]:
    """The first value of each key, in order (a partition named twice in a request: its first
    state stands, as the broker applies it)."""
    first: dict[K, V] = {}
    for key, value in pairs:
        first.setdefault(key, value)
    return first


def topic_id_text(topic_id: object | None) -> str:
    """A topic id as events carry it: its text, or "" when unknown (None or all zeros)."""
    text = "" if topic_id is None else str(topic_id)
    return "" if text.strip("A") == "" else text


def partition_instance(topic: str, partition: int) -> str:
    """The instance name of one partition's model (``"<topic>-<partition>"``)."""
    return f"{topic}-{partition}"


def move_instance(broker_id: int, topic: str, partition: int) -> str:
    """The instance name of one JBOD move (``"broker-<id>/<topic>-<partition>"``)."""
    return f"broker-{broker_id}/{topic}-{partition}"


class TraceRecorder:
    """Off: records nothing. Subclasses that record set :attr:`enabled` and :meth:`_write`."""

    enabled: bool = False
    """Call sites test this before building anything for an event."""

    def __init__(self) -> None:
        self._replicas: dict[tuple[str, str, int], list[int | None]] = {}
        self._now: list[int | None] = []  # would_change's values, replica_changes keeps them
        #: What nodes remember between their events (e.g. the store's last recorded epochs).
        self.memo: dict[str, Any] = {}

    def emit(self, node: str, model: str, instance: str, action: str,
             args: Mapping[str, Json] | None = None,
             changed: Mapping[str, Json] | None = None) -> None:
        """Record one event (nothing when off)."""

    def replica_step(self, node: str, instance: str, replica: int, action: str,
                     args: Mapping[str, Json],
                     values: tuple[int, int, int, int, int | None, int],
                     durable: bool = False, always: bool = False) -> None:
        """LogStartOffset: replica ``replica`` of ``instance`` now has ``values`` (leo, hw,
        logStart, segStart, ckptStart, flushed; ckptStart None when the action did not write
        the checkpoint; flushed is the log's recovery point). ``durable``: the log writes its
        start offset's checkpoint with every raise, so a raised logStart is its ckptStart too.
        Records ``action`` with the variables that changed since the replica's last event;
        nothing if none did, unless ``always``."""
        if not self.enabled:
            return
        changed = self.replica_changes(instance, replica, values, durable,
                                       topic_id=_text(args.get("topicId")))
        if changed or always:
            self.emit(node, LOG_START_OFFSET, instance, action, args, changed)

    def intent(self, node: str, instance: str, replica: int, action: str,
               args: Mapping[str, Json], values: tuple[int, int, int, int, int | None, int],
               durable: bool = False) -> None:
        """Record an :data:`INTENT`: replica ``replica`` of ``instance`` is about to make the
        ``values`` (as :meth:`replica_step` takes them) of ``action`` durable, and will record
        its event only once the write returns. ``args`` are its event's arguments (with
        ``replica`` and ``topicId``); ``then`` is what its event will record as changed. A
        write that changes none of the replica's variables needs no intent: none is
        recorded."""
        if not self.enabled:
            return
        then = self.would_change(instance, replica, values, durable,
                                 topic_id=_text(args.get("topicId")))
        if then:
            self.emit(node, "-", instance, INTENT, {"action": action, **args, "then": then}, {})

    def replica_changes(self, instance: str, replica: int,
                        values: tuple[int, int, int, int, int | None, int],
                        durable: bool = False, topic_id: str = "") -> dict[str, Json]:
        """The variables of replica ``replica`` of ``instance`` that ``values`` change since its
        last event (as :meth:`replica_step` reads them), taken as recorded: for an event that
        carries them with changes of its own."""
        changed = self.would_change(instance, replica, values, durable, topic_id=topic_id)
        if self.enabled:
            self._replicas[(instance, topic_id, replica)] = self._now
        return changed

    def would_change(self, instance: str, replica: int,
                     values: tuple[int, int, int, int, int | None, int],
                     durable: bool = False, topic_id: str = "") -> dict[str, Json]:
        """What :meth:`replica_changes` would give, not taken as recorded: what an event of
        replica ``replica`` would carry if the values were ``values`` (an ``Intent`` tells it
        before the write that makes them so)."""
        if not self.enabled:
            return {}
        # Per generation of the topic (``topic_id``): a replica of a deleted generation may
        # still act after the name was created again (a broker cut off from the controller),
        # and the new generation's first event carries every variable.
        before = self._replicas.get((instance, topic_id, replica))
        now: list[int | None] = list(values)
        if now[4] is None and durable and (before is None or before[2] != now[2]):
            now[4] = now[2]
        if now[4] is None:
            now[4] = before[4] if before is not None else None
        changed: dict[str, Json] = {}
        for i, name in enumerate(REPLICA_VARIABLES):
            if now[i] is not None and (before is None or before[i] != now[i]):
                changed[name] = {str(replica): now[i]}
        self._now = now
        return changed

    def forget_replica(self, instance: str, replica: int) -> None:
        """A replica's log was deleted: its next event records every variable again."""
        for key in [k for k in self._replicas if k[0] == instance and k[2] == replica]:
            del self._replicas[key]

    def forget_instance(self, instance: str) -> None:
        """A model instance ended (its topic deleted): forget the replicas' last values."""
        for key in [k for k in self._replicas if k[0] == instance]:
            del self._replicas[key]

    def close(self) -> None:
        """Finish the trace (flush and close its file)."""


def _text(value: Json) -> str:
    return value if isinstance(value, str) else ""


NO_TRACE = TraceRecorder()
"""The recorder of a run without a trace: off, shared, stateless."""


class _Recording(TraceRecorder):
    """What both file formats share: the trace id, the sequence numbers, the clock."""

    enabled = True

    def __init__(self, clock: Clock, trace_id: str | None, header: Mapping[str, Json]) -> None:
        super().__init__()
        self.clock = clock
        self.trace_id = trace_id if trace_id is not None else uuid.uuid4().hex
        self.seq = 0
        self.emit("-", "-", "-", HEADER, dict(header), {})

    def emit(self, node: str, model: str, instance: str, action: str,
             args: Mapping[str, Json] | None = None,
             changed: Mapping[str, Json] | None = None) -> None:
        event = {"v": SCHEMA_VERSION, "trace": self.trace_id, "seq": self.seq,
                 "time": self.clock.now_ms(), "node": node, "model": model,
                 "instance": instance, "action": action,
                 "args": dict(args) if args else {}, "changed": dict(changed) if changed else {}}
        self.seq += 1
        self._write(event)

    def _write(self, event: dict[str, Json]) -> None:
        raise NotImplementedError


class JsonLinesTrace(_Recording):
    """Each event one JSON object on one line of ``path`` (written as it happens)."""

    def __init__(self, path: str | os.PathLike[str], clock: Clock, trace_id: str | None = None,
                 header: Mapping[str, Json] | None = None) -> None:
        try:
            self._file: IO[str] | None = open(path, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise TraceError(f"cannot write the trace {path}: {exc.strerror or exc}") from exc
        self.path = str(path)
        super().__init__(clock, trace_id, header or {})

    def _write(self, event: dict[str, Json]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(event, separators=(",", ":"), sort_keys=True) + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class ParquetTrace(_Recording):
    """The same rows in a Parquet file (pyarrow), written at :meth:`close`; ``args`` and
    ``changed`` are JSON text columns."""

    def __init__(self, path: str | os.PathLike[str], clock: Clock, trace_id: str | None = None,
                 header: Mapping[str, Json] | None = None) -> None:
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise TraceError("a Parquet trace needs pyarrow (pip install 'logwright[traces]'); "
                             "a .jsonl path needs nothing") from exc
        self.path = str(path)
        self._rows: list[dict[str, Json]] = []
        self._closed = False
        super().__init__(clock, trace_id, header or {})

    def _write(self, event: dict[str, Json]) -> None:
        row = dict(event)
        row["args"] = json.dumps(event["args"], sort_keys=True)
        row["changed"] = json.dumps(event["changed"], sort_keys=True)
        self._rows.append(row)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        import pyarrow as pa
        import pyarrow.parquet as pq
        try:
            pq.write_table(pa.Table.from_pylist(self._rows), self.path)
        except OSError as exc:
            raise TraceError(f"cannot write the trace {self.path}: {exc}") from exc


def open_trace(path: str | os.PathLike[str], clock: Clock, trace_id: str | None = None,
               header: Mapping[str, Json] | None = None) -> TraceRecorder:
    """A recorder writing ``path``: Parquet if it ends in ``.parquet``, else JSON Lines."""
    if str(path).endswith(".parquet"):
        return ParquetTrace(path, clock, trace_id, header)
    return JsonLinesTrace(path, clock, trace_id, header)


__all__ = [
    "CONTROLLER_FENCING",
    "FETCHER_FAILURE",
    "HEADER",
    "INIT",
    "LOG_START_OFFSET",
    "NO_TRACE",
    "READABLE_VERSIONS",
    "REPLICA_MOVE",
    "REPLICA_VARIABLES",
    "SCHEMA_VERSION",
    "JsonLinesTrace",
    "ParquetTrace",
    "TraceError",
    "TraceRecorder",
    "first_of_each",
    "move_instance",
    "open_trace",
    "partition_instance",
    "topic_id_text",
]
