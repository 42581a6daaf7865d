"""``logwright traces check``: recorded traces replayed against the Python twins.

Each event of a trace (traces/SCHEMA.md) is a step of one model instance: a partition for
LogStartOffset and ControllerFencing, a broker for FetcherFailure. The checker keeps each
instance's abstract state, starting from the instance's ``Init`` event (its constants: replicas,
leader, epochs), and for every event calls the twin's action of the same name with the event's
arguments. The step must be enabled, its result must equal the recorded new values of the model
variables, and every invariant must hold after it. A leader change is LogStartOffset's
ElectLeader when the new leader is in the ISR. A step the model cannot express (a new epoch of
the same leader, a registration that carries the controller epoch, a reassignment, a fetch
answer older than the leader's present state) is counted as *outside the model*, with its
reason, and the recorded values become the abstract state; the invariants are still checked.

Constants the twins fix are taken from the trace: the offset and epoch bounds are the largest
the trace reaches, a deleted segment's length is the SegmentSize of that one step.
"""

from __future__ import annotations

import copy
import hashlib
import json
import marshal
import operator
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import compress, count, pairwise, starmap
from pathlib import Path
from typing import Any

import orjson

from logwright.conformance.refinement import RefinementChecker, StepFound
from logwright.conformance.replica_move import ReplicaMoveRefinement
from logwright.errors import LogwrightError
from logwright.logmanager.collector import collector_paused
from logwright.model.controller_fencing import (
    LEADER_AND_ISR,
    NOT_HOSTED,
    STOP_REPLICA,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
    Request,
)
from logwright.model.core import Spec, State
from logwright.model.fetcher_failure import FetcherFailureConfig, FetcherFailureTwin, FFState
from logwright.model.log_start_offset import (
    LogStartOffsetConfig,
    LogStartOffsetState,
    LogStartOffsetTwin,
)
from logwright.model.replica_move import ReplicaMoveConfig, ReplicaMoveSpec
from logwright.model.replica_move.twin import FUT as RM_FUT
from logwright.model.replica_move.twin import SRC as RM_SRC
from logwright.model.replica_move.twin import RMState
from logwright.world.trace import (
    CONTROLLER_FENCING,
    FETCHER_FAILURE,
    HEADER,
    INIT,
    INTENT,
    LOG_START_OFFSET,
    READABLE_VERSIONS,
    REPLICA_MOVE,
    STRAY_CLEANUP,
)

Event = dict[str, Any]


class TraceFormatError(LogwrightError):
    """A trace file cannot be read: not JSON Lines (or Parquet), or not this schema."""


@dataclass
class Failure:
    """One event the models refuse: where it is, why, and the abstract states around it."""

    where: str
    seq: int
    model: str
    instance: str
    action: str
    kind: str
    """``not enabled``, ``mismatch`` or ``invariant``."""
    message: str
    before: str
    after: str
    trace: str = ""
    """The trace id of the event."""

    def format(self) -> str:
        """The failure, then the states before and after (twin.describe)."""
        lines = [f"{self.where} (seq {self.seq}) {self.model} {self.instance} {self.action}: "
                 f"{self.kind}: {self.message}", "  state before:"]
        lines += ["    " + ln for ln in self.before.splitlines()]
        lines.append("  state after:")
        lines += ["    " + ln for ln in self.after.splitlines()]
        return "\n".join(lines)


@dataclass(frozen=True)
class BadInput:
    """Input the checker could not replay, reported with its reason and never dropped: a line
    that is not an event of this schema, or a trace whose events are not a whole trace (a
    sequence number twice, events missing, cut short at its start) or name values the models
    cannot take. A trace with bad input is not replayed; every other trace is."""

    where: str
    """``file:line`` of the line at fault, or of the trace's first event."""
    trace: str
    """The trace id, ``""`` when the line names none (it is not JSON, say)."""
    reason: str

    def format(self) -> str:
        """One line: where, which trace, why."""
        of = f" trace {self.trace}" if self.trace else ""
        return f"bad input: {self.where}{of}: {self.reason}"


@dataclass
class CheckReport:
    """What ``check_paths`` found over every file."""

    files: int = 0
    traces: int = 0
    """Traces (distinct trace ids) seen, bad ones included."""
    events: int = 0
    steps: int = 0
    """Events checked as steps of a twin (enabled, result equal, invariants held)."""
    stutters: int = 0
    outside: Counter[str] = field(default_factory=Counter)
    actions: Counter[str] = field(default_factory=Counter)
    """Model actions checked, as ``Model.Action``."""
    stutter_actions: Counter[str] = field(default_factory=Counter)
    """Events checked as stutters (no change, e.g. a rejected request the model also fences),
    as ``Model.Action`` or ``Model.Action(outcome)``."""
    failures: list[Failure] = field(default_factory=list)
    bad_input: list[BadInput] = field(default_factory=list)
    states: set[str] = field(default_factory=set)
    """The abstract states the twins reached, as ``Model:fingerprint`` (:func:`fingerprint`),
    when :attr:`track_states` is on."""
    track_states: bool = False
    """Fingerprint every state a twin reaches (for coverage)."""
    ask_every_invariant: bool = field(default=False, repr=False, compare=False)
    """Ask every invariant after every step, and raise AssertionError when one that the
    declarations (:meth:`Spec.invariant_reads`) leave unasked does not hold: a test's check of
    the declarations, never a verdict of its own."""
    reached: set[tuple[str, Any]] = field(default_factory=set, repr=False, compare=False)
    """The states a replay reached, by model, not yet fingerprinted: a trace's states are
    gathered here (by ``==``, a hash each) and fingerprinted once each when the trace ends
    (:meth:`settle_states`). Two states of one trace equal as Python values but not in type (a
    recorded ``true`` where the twin has 1) count once."""
    outcomes: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """Events by (model, the event's action, outcome): ``step`` (some twin took it),
    ``stutter``, ``outside`` (the model cannot express it), ``refused``, ``bookkeeping``
    (Header, Init, Removed) and ``bad input`` (its trace was not replayed)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No event was refused and every line was a readable event of a whole trace."""
        return not self.failures and not self.bad_input

    def settle_states(self) -> None:
        """Fingerprint the states gathered in :attr:`reached` into :attr:`states`."""
        self.states.update(fingerprint(model, state) for model, state in self.reached)
        self.reached.clear()

    def merge(self, other: CheckReport) -> None:
        """Add ``other``'s figures and findings to these (the per-trace reports of a run)."""
        other.settle_states()
        self.files += other.files
        self.traces += other.traces
        self.events += other.events
        self.steps += other.steps
        self.stutters += other.stutters
        self.outside.update(other.outside)
        self.actions.update(other.actions)
        self.stutter_actions.update(other.stutter_actions)
        self.failures += other.failures
        self.bad_input += other.bad_input
        self.states |= other.states
        self.outcomes.update(other.outcomes)

    def distinct_states(self) -> dict[str, int]:
        """Distinct abstract states reached, per model."""
        return dict(sorted(Counter(s.split(":", 1)[0] for s in self.states).items()))

    @property
    def events_per_second(self) -> float:
        """Events replayed per second."""
        return self.events / self.seconds if self.seconds > 0 else float(self.events)

    def summary(self) -> str:
        """One line of figures and the verdict."""
        outside = sum(self.outside.values())
        verdict = "ok" if self.ok else ", ".join(
            ([f"{len(self.failures)} VIOLATED"] if self.failures else [])
            + ([f"{len(self.bad_input)} BAD INPUT"] if self.bad_input else []))
        return (f"{self.traces} trace(s) in {self.files} file(s), {self.events:,} events: "
                f"{self.steps:,} model steps, "
                f"{self.stutters:,} stutters, {outside:,} outside the model (per instance); "
                f"{self.seconds:.2f}s ({self.events_per_second:,.0f} events/s): {verdict}")


class _Refused(Exception):
    def __init__(self, kind: str, message: str, after: str = "") -> None:
        super().__init__(message)
        self.kind, self.message, self.after = kind, message, after


class _Outside(Exception):
    """A step the model cannot express; ``resync``: the recorded values become the state (else
    the instance has set its state itself)."""

    def __init__(self, reason: str, resync: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.resync = reason, resync


REQUIRED = ("trace", "seq", "model", "instance", "action", "args", "changed")
"""The fields every event must have (traces/SCHEMA.md); ``time`` and ``node`` are read when
present."""


def parse_event(obj: Any) -> Event | str:
    """``obj`` (one decoded JSON line, or one Parquet row with ``args`` and ``changed`` still
    JSON text) as an event, or the reason it is not one of this schema."""
    if type(obj) is dict:  # the common case at once: what every check below accepts as it is
        get = obj.get
        seq = get("seq")
        if (type(get("args")) is dict and type(get("changed")) is dict and type(seq) is int
                and seq >= 0 and type(get("trace")) is str and type(get("model")) is str
                and type(get("instance")) is str and type(get("action")) is str
                and get("v") in READABLE_VERSIONS):
            return obj
    if not isinstance(obj, dict):
        return f"not a JSON object but {type(obj).__name__}"
    if obj.get("v") not in READABLE_VERSIONS:
        return (f"schema version {obj.get('v')!r} is not read (versions read: "
                f"{', '.join(map(str, READABLE_VERSIONS))}; record the trace again)")
    for key in REQUIRED:
        if key not in obj or obj[key] is None:
            return f"the event has no {key!r}"
    # A copy only when a field is decoded here (a fresh line's object is the event itself).
    event = obj if isinstance(obj["args"], dict) and isinstance(obj["changed"], dict) \
        else dict(obj)
    for key in ("args", "changed"):
        if isinstance(event[key], str):
            value, reason = decode_line(event[key])
            if reason:
                return f"{key!r} is {reason}"
            event[key] = value
        if not isinstance(event[key], dict):
            return f"{key!r} is not an object"
    if not isinstance(event["seq"], int) or isinstance(event["seq"], bool) or event["seq"] < 0:
        return f"'seq' is not a sequence number: {event['seq']!r}"
    for key in ("trace", "model", "instance", "action"):
        if not isinstance(event[key], str):
            return f"{key!r} is not text: {event[key]!r}"
    return event


_DIGITS_AS_HASH = bytes.maketrans(b"0123456789", b"#" * 10)
_LONG_RUN = b"#" * 19
"""A run of 19 digits (once every digit is ``#``): a number that may not fit in 64 bits, or a
long one in a string. JSON's numbers are written in ASCII digits only."""


def _long_numbers(text: bytes) -> bool:
    """``text`` has a run of 19 ASCII digits (a pass in C, several times faster than a regular
    expression's search)."""
    return _LONG_RUN in text.translate(_DIGITS_AS_HASH)


MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a line may have (an event nests four deep): a line
nested deeper is bad input, whichever decoder read it and however deep the stack it ran on."""
_TOO_DEEP = f"not JSON of this schema: nested deeper than {MAX_DEPTH} levels"


def loads(line: str, long_numbers: bool = True) -> Any:
    """``json.loads(line)``: the same value, or the same error, about four times faster.

    orjson (a C extension) decodes a line to the value the standard library gives, with two
    differences it does not report: an integer beyond 64 bits becomes a float, and it refuses
    what the standard library accepts beyond JSON (NaN, Infinity, a lone surrogate, a number
    too large for a float). A line with a run of 19 digits is therefore given to the standard
    library, and so is every line orjson refuses, which then decodes it or raises its own
    error. (Nesting is the one place they part: each stops at its own depth, the standard
    library's depending on the stack; :func:`decode_line` puts one limit on both.)

    ``long_numbers=False``: the caller knows the line has no run of 19 digits."""
    if not long_numbers or not _long_numbers(line.encode("utf-8", "surrogatepass")):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass
    return json.loads(line)


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if children is not None:
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in children)
    return deepest


def decode_line(line: str, long_numbers: bool = True) -> tuple[Any, str]:
    """(value, ``""``) for one line of JSON, or (what could be decoded, the reason it is not
    JSON of this schema): also when it nests deeper than :data:`MAX_DEPTH`, never a
    RecursionError (the value is None unless it nests too deep but decoded: the trace it names
    is still reported). ``long_numbers``: as for :func:`loads`."""
    try:
        value = loads(line, long_numbers)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg}"
    except RecursionError:
        return None, _TOO_DEEP
    # Only a line with more brackets than the limit can nest deeper than it.
    if line.count("[") + line.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        return value, _TOO_DEEP
    return value, ""


def parse_line(line: str, long_numbers: bool = True) -> Event | str:
    """One line of a JSON Lines trace as an event, or the reason it is not one.
    ``long_numbers``: as for :func:`loads`."""
    obj, reason = decode_line(line, long_numbers)
    return reason or parse_event(obj)


def trace_of(obj: Any) -> str:
    """The trace id a line names, even when it is not a valid event; ``""`` when none."""
    trace = obj.get("trace") if isinstance(obj, dict) else None
    return trace if isinstance(trace, str) else ""


def scan(path: Path) -> Iterator[tuple[str, Event | BadInput]]:
    """(``file:line``, event or bad input) for every line of a JSON Lines or Parquet trace file,
    in file order: lenient, every line accounted for (:func:`scan_bytes`)."""
    yield from scan_bytes(str(path), path.read_bytes())


def scan_bytes(name: str, data: bytes) -> Iterator[tuple[str, Event | BadInput]]:
    """:func:`scan` of a file's bytes, ``name`` its path as reported (Parquet when it ends in
    ``.parquet``, JSON Lines otherwise). The Spark job reads files as bytes and calls this on
    the executors, so both engines read every file alike. A file that cannot be read at all
    (not Parquet, not UTF-8) is one bad input."""
    if name.endswith(".parquet"):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            yield name, BadInput(name, "", "reading Parquet needs pyarrow "
                                 "(pip install 'logwright[traces]')")
            return
        try:
            rows = pq.read_table(pa.BufferReader(data)).to_pylist()
        except Exception as exc:  # pyarrow raises several kinds for an unreadable file
            yield name, BadInput(name, "", f"not a Parquet file: {exc}")
            return
        for i, row in enumerate(rows, start=1):
            where = f"{name}:{i}"
            got = parse_event(row)
            yield where, (BadInput(where, trace_of(row), got) if isinstance(got, str) else got)
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield name, BadInput(name, "", f"not UTF-8 text: {exc.reason} at byte {exc.start}")
        return
    # One pass over the whole file tells whether any line needs the check for long numbers.
    long_numbers = _long_numbers(data)
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{i}"
        # parse_line's common case at once: a line orjson decodes, with too few brackets to
        # nest too deep, and no run of 19 digits (else parse_line, which decides the same).
        parsed: Event | str | None = None
        if (line.count("[") + line.count("{") <= MAX_DEPTH
                and not (long_numbers and _long_numbers(line.encode("utf-8", "surrogatepass")))):
            try:
                parsed = parse_event(orjson.loads(line))
            except orjson.JSONDecodeError:
                pass
        if parsed is None:
            parsed = parse_line(line, long_numbers)
        if isinstance(parsed, str):
            trace = trace_of(decode_line(line)[0])
            yield where, BadInput(where, trace, parsed)
        else:
            yield where, parsed


def read_events(path: Path) -> Iterator[tuple[int, Event]]:
    """(line number, event) of a JSON Lines or Parquet trace; strict: raises TraceFormatError at
    the first line that is not an event of this schema."""
    for n, (where, got) in enumerate(scan(path), start=1):
        if isinstance(got, BadInput):
            raise TraceFormatError(f"{got.where}: {got.reason}")
        yield int(where.rsplit(":", 1)[1]) if ":" in where else n, got


def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """The trace files named, directories searched for ``*.jsonl`` and ``*.parquet``."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.suffix in (".jsonl", ".parquet"))
            if not found:
                raise TraceFormatError(f"{p}: no trace (*.jsonl, *.parquet) in this directory")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise TraceFormatError(f"{p}: no such file or directory")
    return out


# ---- LogStartOffset ----------------------------------------------------------------------------

@cache
def _lso_twin(replicas: tuple[int, ...], leader: int, max_offset: int, segment_size: int,
              bug: str) -> LogStartOffsetTwin:
    return LogStartOffsetTwin(LogStartOffsetConfig(replicas, leader, max_offset, segment_size,
                                                   bug))


LAZY_CHECKPOINT = "StartOffsetCheckpointLazy"
"""The LogStartOffset configuration of a run whose raised start offsets are written only by
the periodic checkpoint (``durable_log_start_offset: false`` in the header: Kafka's own
behaviour), which the model calls a bug."""


_LSO_VARS = ("leo", "hw", "logStart", "segStart", "ckptStart", "flushed")
_LSO_VAR_FIELDS = tuple((LogStartOffsetState._fields.index(name), name) for name in _LSO_VARS)
_LEADER, _ISR, _EPOCH_START = map(LogStartOffsetState._fields.index,
                                  ("leader", "isr", "epochStart"))
_new_state = tuple.__new__
"""A named tuple from the list of its fields, as ``_make`` builds it (without its check of
their number, and its call in Python)."""
_LEADER_ACTIONS = frozenset({"Append", "AdvanceHW", "ShrinkIsr", "ExpandIsr", "DeleteRecords"})
_CUT_EVENTS = frozenset({"DeleteRecords", "FollowerFetch", "DeleteOldestSegment",
                         "CheckpointStartOffset", "RestartBelowStart"})
"""The actions an ``Intent`` may announce, whose event the checker can replay when a power
loss cut it (:meth:`_LsoInstance.step`)."""


_Plan = tuple[tuple[str, Any, int], ...]
"""A twin's invariants in order, each with the mask of the state's fields it reads (bit i:
field i; -1: every field)."""


class _Instance:
    """One model instance of a replay (a partition's, a broker's, a move's)."""

    held: tuple[Spec, State, _Plan] | None = None
    """Its twin, the last state every invariant held in, and the twin's invariants with what
    they read (:func:`_run`)."""
    reached: State = None
    """The last state it added to :attr:`CheckReport.reached` (adding it again is no news)."""
    label = ""
    """The model action its last event was checked as, when not the event's own (:func:`_run`
    reads it of every instance: an attribute each has, found without a miss)."""
    leaderless = False
    """The instance has no leader (a partition's, :class:`_LsoInstance`): outside the model."""
    notes: list[str]
    """Reasons of steps outside the model met besides the event's own (:func:`_run`)."""


class _LsoInstance(_Instance):
    def __init__(self, replicas: tuple[int, ...], leader: int, max_offset: int,
                 bug: str = "none") -> None:
        # ``first_leader`` is the twin's constant Leader (its Init's); the leader now is the
        # state's ``leader``.
        self.replicas, self.first_leader, self.max_offset = replicas, leader, max_offset
        self.bug = bug
        self._twin: tuple[tuple[int, ...] | None, LogStartOffsetTwin | None] = (None, None)
        """The replicas and the twin of segment size 1 for them (:meth:`twin`)."""
        self.state: LogStartOffsetState = next(iter(self.twin().init_states()))  # type: ignore
        self.label = ""
        """The model action the last event was checked as (ElectLeader for a BecomeLeader)."""
        self.pending_delete: Mapping[str, Any] | None = None
        """The recorded values of the leader's replica deleted before its successor led."""
        self.pending_restart: dict[int, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        """Replica -> (args, changed) of a restart checked once the replica leaves the ISR."""
        self.written_epoch = -1
        """The latest leader epoch the controller wrote for the partition (its ElectLeader)."""
        self.notes: list[str] = []
        """Reasons of steps outside the model met while settling a deferred restart."""
        self.proposed: dict[int, int] = {}
        """Member -> the broker epoch of an ExpandIsr the leader proposed (the controller has
        not answered as far as the trace shows)."""
        self.doomed: set[int] = set()
        """Members the leader's ISR shows only through a proposal the controller refuses (a
        stale broker epoch, KIP-903), or, restarted, only because the leader has not yet heard
        that the controller dropped them (:meth:`controller_isr`): not in the model's ISR,
        until an event records the leader's ISR without them."""
        self.deleted: dict[int, int] = {}
        """Replica -> the leader epoch the controller had written when a reassignment deleted
        it (its StopReplica comes after that epoch drops it), until it fetches again."""
        self.reregistered: set[int] = set()
        """Replicas whose restart waits for the ISR drop and whose broker registered again
        since (a broker that did not shut down cleanly leaves the ISR there, KIP-966)."""
        self.dropped_by_controller: set[int] = set()
        """Of those, the ones the controller has since elected another leader than."""
        self.stale_known: dict[int, int] = {}
        """Replica -> its log end before its last restart, until it fetches again: what the
        leader may still count of it (a fetch of the earlier incarnation arriving late)."""
        self.leader_epoch = -1
        """The leader epoch of the leader's last LeaderAndIsr (its BecomeLeader)."""
        self.registered: dict[int, int] = {}
        """Each broker's registered broker epoch as the trace has told so far (shared by the
        trace's instances: its Init and Register events)."""
        self.leaderless = False
        """The controller left the partition without a leader (no replica in the ISR or the
        ELR could lead): outside the model, which always has one, until a leader returns."""
        self.leader_hw = (leader, 0)
        """The leader and the highest HW its replica has had while it led (another leader resets
        it): a power loss takes the HW back to its checkpoint, but an answer its earlier
        incarnation sent may still arrive carrying the HW it had then."""
        self.intents: dict[int, dict[str, Any]] = {}
        """Replica -> the arguments of its last ``Intent`` whose event has not come yet: the
        action it was making durable when, perhaps, a power loss cut its event."""
        self.deferred_intents: dict[int, dict[str, Any]] = {}
        """Replica -> the intent pending at its restart when that restart's check waits for
        the ISR drop (the replica's later intents are its new incarnation's)."""
        self.heard: dict[int, int] = {}
        """Broker -> the leader epoch of the last LeaderAndIsr for the partition it applied (its
        accepted ``Deliver``, as ControllerFencing records it; -1 after a StopReplica), until
        its replica restarts or is deleted (a restarted broker leads and fetches nothing until
        it is told again)."""
        self.led: dict[int, int] = {}
        """Leader epoch -> the replica that became leader at it (its BecomeLeader)."""

    @property
    def leader(self) -> int:
        return self.state.leader

    def twin(self, segment_size: int = 1) -> LogStartOffsetTwin:
        known, twin = self._twin
        if segment_size == 1 and known is self.replicas and twin is not None:
            return twin  # asked several times an event: its replicas seldom change
        twin = _lso_twin(self.replicas, self.first_leader, self.max_offset, segment_size,
                         self.bug)
        if segment_size == 1:
            self._twin = (self.replicas, twin)
        return twin

    def spec(self) -> Spec:
        return self.twin()

    def recorded(self, changed: Mapping[str, Any], action: str = "",
                 args: Mapping[str, Any] | None = None) -> LogStartOffsetState:
        """The state with the recorded new values; a BecomeLeader's ``args.leader`` is the
        leader."""
        s = self.state
        # The new values, built as one list of the state's fields (a _replace each cost more).
        new: list[Any] | None = None
        if action == "BecomeLeader" and args is not None:
            leader = int(args["leader"])
            if leader not in self.replicas:
                self._add_replica(leader)
                raise _Outside("a reassignment added a replica (the model's replicas are fixed)")
            new = list(s)
            new[_LEADER] = leader
        # A replica a reassignment added may first show as an ISR member, its log still empty
        # (its fetches changed nothing the trace records).
        named = [*changed.get("isr", ()), *((args["r"],) if args is not None and "r" in args
                                            else ())]
        for m in named:
            if int(m) not in self.replicas:
                self._add_replica(int(m))
                raise _Outside("a reassignment added a replica (the model's replicas are fixed)")
        row: tuple[Any, ...] = s
        for i, name in _LSO_VAR_FIELDS:
            if name not in changed:
                continue  # unchanged: the state's own tuple
            values = list(row[i])
            for r, v in changed[name].items():
                if int(r) not in self.replicas:
                    self._add_replica(int(r))
                    raise _Outside("a reassignment added a replica (the model's replicas are "
                                   "fixed)")
                values[self.replicas.index(int(r))] = v
            if new is None:
                new = list(s)
            new[i] = tuple(values)
        if "isr" in changed:
            isr = frozenset(changed["isr"])
            if action == "BecomeLeader":
                self.proposed.clear()  # a LeaderAndIsr supersedes what was proposed
                self.doomed.clear()
            for m in [m for m in self.proposed if m not in isr]:
                del self.proposed[m]
            self.doomed &= isr
            if new is None:
                new = list(s)
            new[_ISR] = isr - self.doomed
        if "epochStart" in changed:
            epoch_start = int(changed["epochStart"])
            if new is None:
                new = list(s)
            new[_EPOCH_START] = epoch_start
        return s if new is None else _new_state(LogStartOffsetState, new)

    def resync(self, action: str, args: Mapping[str, Any],
               changed: Mapping[str, Any]) -> None:
        """After a step outside the model: the recorded values become the state."""
        self.state = self._after_outside(self._rebased_recorded(changed, action, args))

    def _rebased_recorded(self, changed: Mapping[str, Any], action: str = "",
                          args: Mapping[str, Any] | None = None) -> LogStartOffsetState:
        """:meth:`recorded`, re-based first on every replica the values name that the model
        does not have yet (``recorded`` adds one and refuses, as a step must; here the values
        are taken as they are, so it is asked again)."""
        while True:
            known = len(self.replicas)
            try:
                return self.recorded(changed, action, args)
            except _Outside:
                assert len(self.replicas) > known, "recorded() refuses only after a re-base"

    def _add_replica(self, r: int) -> None:
        """Re-base on a replica set with ``r`` added, its log empty at offset 0."""
        replicas = tuple(sorted((*self.replicas, r)))
        i = replicas.index(r)
        s = self.state
        self.state = s._replace(**{name: (*getattr(s, name)[:i], 0, *getattr(s, name)[i:])
                                   for name in _LSO_VARS})  # type: ignore[arg-type]
        self.replicas = replicas

    def _after_outside(self, t: LogStartOffsetState) -> LogStartOffsetState:
        L = self.replicas.index(t.leader)
        return t._replace(committed=max(t.committed, t.hw[L]))

    def _controller_isr(self, t: LogStartOffsetState | None,
                        isr: frozenset[int]) -> LogStartOffsetState | None:
        """``t`` with the ISR a LeaderAndIsr carries: one ShrinkIsr per member it drops, one
        ExpandIsr per member it adds (None if one of them is not enabled)."""
        twin = self.twin()
        if t is None:
            return None
        t = t._replace(isrFloor=0)  # hidden: the trace records no acknowledgement to raise it
        for m in sorted(t.isr - isr):
            t = twin.ShrinkIsr(t, m) if t is not None else None
        for m in sorted(isr - t.isr if t is not None else ()):
            t = twin.ExpandIsr(t, m) if t is not None else None
        return t

    def settle_restarts(self, action: str, args: Mapping[str, Any], node: str) -> None:
        """Check each deferred restart whose replica the controller has dropped from the ISR
        (the state so far is the state before it, the replica untouched since); one whose
        replica acts, or is elected, while still in the ISR is refused, and so is one still
        pending when the trace ends (``action`` ``""``)."""
        for r, (args0, changed0) in list(self.pending_restart.items()):
            s = self.state
            if r not in s.isr:
                del self.pending_restart[r]
                self.reregistered.discard(r)
                self.dropped_by_controller.discard(r)
                intent = self.deferred_intents.pop(r, None)
                want = self.recorded(changed0)
                try:
                    t = self._crash_restart(s, r, int(args0["h"]), want)
                    if intent is not None and not _restarted_as(t, want):  # as in step()
                        kept, full = self._kept(), self._as_recorded(changed0, r)
                        if self._cut_event(intent, f"broker-{r}"):
                            cut_want = self.recorded(full)
                            cut = self._crash_restart(self.state, r, int(args0["h"]), cut_want)
                            if cut is not None and _restarted_as(cut, cut_want):
                                s, t, want = self.state, cut, cut_want
                            else:
                                self._restore(kept)
                        else:
                            self._restore(kept)
                except _Outside as out:
                    self.notes.append(f"CrashRestart: {out.reason}")
                    self.state = self._after_outside(want)
                    continue
                if t is None or not _restarted_as(t, want):
                    raise _Refused("not enabled" if t is None else "mismatch",
                                   f"the restart of replica {r} (checked once it left the ISR): "
                                   f"recorded {_fmt(changed0)}, the twin's CrashRestart gives "
                                   f"{_diff(s, t) if t is not None else 'no successor'}",
                                   self.twin().describe(want))
                for inv, holds in self.twin().invariants():
                    if not holds(t):
                        raise _Refused("invariant", f"{inv} is violated after the restart of "
                                       f"replica {r} (checked once it left the ISR)",
                                       self.twin().describe(t))
                self.state = t
                continue
            acts = (node == f"broker-{r}" or args.get("replica") == r
                    or (action == "BecomeLeader" and int(args.get("leader", -1)) == r))
            if not action and r in self.dropped_by_controller:
                # The controller had dropped it (its registration, then an election of another
                # replica) when the trace ended, before an event of the partition showed it.
                del self.pending_restart[r]
                self.notes.append("CrashRestart: a restarted replica that lost committed records "
                                  "it had not flushed, dropped from the ISR by the controller "
                                  "when it registered again, before the trace's end showed the "
                                  "drop (not checked: the trace ended first)")
                continue
            if acts or not action:
                what = "the trace ended" if not action else f"its {action} event came"
                raise _Refused("not enabled", f"replica {r} restarted without committed records "
                               f"(below {s.committed}) while in the ISR, and {what} before the "
                               "controller dropped it from the ISR (the model's fault model "
                               "forbids it: committed records lost)", self.twin().describe(s))

    def _wait_for_isr_drop(self, r: int, args: Mapping[str, Any],
                           changed: Mapping[str, Any]) -> None:
        """Replica ``r``'s restart (``args``, ``changed``) is checked once it leaves the ISR;
        a registration or election seen before it does not count for it."""
        self.pending_restart[r] = (args, changed)
        self.reregistered.discard(r)
        self.dropped_by_controller.discard(r)

    def elected(self, leader: int) -> None:
        """The controller wrote a new leader epoch electing ``leader``: a replica whose
        restart waits for its ISR drop, registered again since, and not this leader, is out of
        the controller's ISR (its registration dropped it)."""
        self.dropped_by_controller |= self.reregistered - {leader}

    def registered_again(self, b: int, epoch: int) -> None:
        """Broker ``b`` registered as ``epoch``: a member the leader proposed with another
        broker epoch is refused by the controller (KIP-903); the model's ISR drops it here (a
        restart of it waiting for that drop is then checked). A replica of ``b`` whose restart
        waits for the drop will leave the controller's ISR: it did not shut down cleanly."""
        if b in self.pending_restart:
            self.reregistered.add(b)
        proposed = self.proposed.pop(b, None)
        if proposed is None or proposed == epoch or b == self.state.leader:
            return
        t = self.twin().ShrinkIsr(self.state, b)
        if t is not None:
            self.state = t
            self.doomed.add(b)

    def controller_isr(self, isr: frozenset[int]) -> None:
        """The active controller sent a LeaderAndIsr of the leader epoch it last wrote whose
        ISR (the store's, as it was sent) is ``isr``. A replica whose restart waits for the ISR
        drop and that ``isr`` lacks is out of the controller's ISR: dropped at its registration
        (KIP-966), or by a shrink the leader asked for and has not yet heard committed (its
        maximal ISR, which the events record, keeps the member until it hears). The model's
        ShrinkIsr is taken here (its restart is then checked, with the ISR drop first), the
        member kept out of the model's ISR until an event records the leader's ISR without it.
        Every other difference is left alone: the leader's maximal ISR is ahead of the
        controller's for a member it proposed."""
        s = self.state
        for r in sorted(self.pending_restart):
            if r == s.leader or r not in s.isr or r in isr:
                continue
            t = self.twin().ShrinkIsr(s, r)
            if t is None:
                continue
            s = self.state = t
            self.doomed.add(r)
            self.notes.append("ShrinkIsr: the controller's LeaderAndIsr left out a restarted "
                              "member its leader's ISR still showed (a shrink the leader had not "
                              "yet heard was committed): the ISR drop its restart waits for")

    def no_leader(self) -> None:
        """The controller wrote "no leader": restarts still deferred are no longer this model's
        question (whether a recovery election kept every acknowledged record is checked by the
        run and proved by the LeaderElection model). Their recorded state is the replica's
        from here on: the next leader's behaviour starts from it."""
        self.leaderless = True
        for _args, changed in self.pending_restart.values():
            self.state = self._rebased_recorded(changed)
        self.pending_restart.clear()
        self.reregistered.clear()
        self.dropped_by_controller.clear()
        self.deferred_intents.clear()

    def heard_of(self, b: int, epoch: int) -> None:
        """Broker ``b`` applied a control request for the partition: its LeaderAndIsr of
        leader epoch ``epoch`` (-1: a StopReplica, or one it could not apply)."""
        self.heard[b] = epoch

    def intend(self, args: Mapping[str, Any]) -> None:
        """An ``Intent`` event: replica ``args.replica`` is about to make ``args.action``
        durable, and will record it once the write returns."""
        self.intents[int(args["replica"])] = dict(args)

    def step(self, action: str, args: Mapping[str, Any], changed: Mapping[str, Any],
             node: str = "") -> LogStartOffsetState | None:
        """Check one event as a step of the twin: its successor, None for a stutter; raises
        _Outside for a step outside the model, _Refused for one the model does not allow.

        A restart the twin refuses is checked once more when its replica recorded an
        ``Intent`` whose event never came: a power loss during that action's durable write can
        leave the write on disk and its event unrecorded. The action is then replayed (as its
        event would have recorded it) before the restart, which must then match."""
        if "replica" not in args:
            return self._step(action, args, changed, node)
        r = int(args["replica"])
        intent = self.intents.get(r)
        if intent is not None and action == intent["action"]:
            del self.intents[r]  # its event came
        if action != "CrashRestart" or intent is None:
            return self._step(action, args, changed, node)
        kept = self._kept()
        try:
            t = self._step(action, args, changed, node)
        except _Refused as refused:
            first = refused
        except _Outside:
            intent = self.intents.pop(r)
            if r in self.pending_restart:  # deferred: settle_restarts may need the intent
                self.deferred_intents[r] = intent
            raise
        else:
            del self.intents[r]
            return t
        try:
            self._restore(kept)
            del self.intents[r]
            full = self._as_recorded(changed, r)
            if not self._cut_event(intent, node):
                self._restore(kept)
                raise first
            try:
                return self._step(action, args, full, node)
            except _Refused:
                self._restore(kept)
                raise first from None
        finally:
            del first  # kept, its traceback and this frame would be a cycle

    def _as_recorded(self, changed: Mapping[str, Any], r: int) -> dict[str, Any]:
        """``changed`` with every variable of replica ``r`` as it records them against the
        state now: the recorder never saw a cut event's values, so a restart's values after
        one are still relative to the event before it."""
        want, i = self.recorded(changed), self.replicas.index(r)
        return {**changed, **{name: {**changed.get(name, {}), str(r): getattr(want, name)[i]}
                              for name in _LSO_VARS}}

    def _kept(self) -> dict[str, Any]:
        """What :meth:`_restore` puts back: every attribute, its containers copied (the
        registered epochs are the trace's, shared, and never changed by a step)."""
        # By name, not vars(self): an instance of the compiled build has no __dict__.
        assert not hasattr(self, "__dict__") or vars(self).keys() <= set(_LSO_KEPT), \
            f"_LSO_KEPT misses {sorted(vars(self).keys() - set(_LSO_KEPT))}"
        return {k: v if k == "registered" else copy.copy(v)
                for k, v in ((k, getattr(self, k)) for k in _LSO_KEPT)}

    def _restore(self, kept: Mapping[str, Any]) -> None:
        for k, v in kept.items():
            setattr(self, k, v if k == "registered" else copy.copy(v))

    def _cut_event(self, intent: Mapping[str, Any], node: str) -> bool:
        """Check the event an ``Intent`` announced and a power loss cut, with its arguments and
        the values it would have recorded (``then``), as a step before its replica's restart;
        False when the model refuses it (the caller puts the instance back as it was)."""
        action, changed = intent["action"], intent.get("then")
        if action not in _CUT_EVENTS or not isinstance(changed, dict):
            return False
        args = {k: v for k, v in intent.items() if k not in ("action", "then")}
        deferred, self.pending_restart = self.pending_restart, {}  # settled by the caller
        try:
            t = self._step(action, args, changed, node)
        except _Refused:
            return False
        except _Outside as out:  # e.g. a deposed leader's: its values taken as they are
            if out.resync:
                self.resync(action, args, changed)
        else:
            if t is not None:
                self.state = t
        finally:
            self.pending_restart = deferred
        self.notes.append(f"CrashRestart: the restart shows the durable write of a {action} "
                          "whose event a power loss cut (its Intent names it; replayed before "
                          "the restart)")
        return True

    def _step(self, action: str, args: Mapping[str, Any], changed: Mapping[str, Any],
              node: str = "") -> LogStartOffsetState | None:
        """:meth:`_step_one`, for an append (a leader's, or a follower's fetch) that also
        flushed: with ``flush.messages`` reached, the log flushes within the append, and its
        event records both. Checked as the append, then the twin's Flush of the whole log, the
        only flush such an append makes."""
        if action not in ("Append", "FollowerFetch") or "flushed" not in changed:
            return self._step_one(action, args, changed, node)
        a = str(args["replica"])
        recorded = changed["flushed"]
        if a not in recorded or int(a) not in self.replicas:
            return self._step_one(action, args, changed, node)
        i = self.replicas.index(int(a))
        before = self.state.flushed[i]
        leo = int(changed.get("leo", {}).get(a, self.state.leo[i]))
        if int(recorded[a]) == before or int(recorded[a]) != leo:
            return self._step_one(action, args, changed, node)
        try:  # the step itself may set it (a follower's log started at its leader's start)
            return self._step_one(action, args, changed, node)
        except _Refused as refused:
            if refused.kind != "mismatch":
                raise
            # Its values, not the exception: one kept in a local holds this frame (a cycle).
            first = (refused.kind, refused.message, refused.after)
        # The append without its flush: the replica's recovery point as it was (as the state
        # holds it when the step is checked, after any restart it settles first).
        rest = {k: v for k, v in recorded.items() if k != a}
        unflushed = {k: v for k, v in changed.items() if k != "flushed"}
        if rest:
            unflushed["flushed"] = rest
        try:
            t = self._step_one(action, args, unflushed, node)
        except _Refused:
            raise _Refused(*first) from None
        flushed = self.twin().Flush(self.state if t is None else t, int(a), leo)
        if flushed is None:
            raise _Refused("not enabled", f"{action}{_args(args)} flushed its log to {leo}, "
                           "which the twin's Flush does not allow after it",
                           self.twin().describe(self.recorded(changed)))
        return flushed

    def _step_one(self, action: str, args: Mapping[str, Any], changed: Mapping[str, Any],
                  node: str = "") -> LogStartOffsetState | None:
        if action == "BecomeLeader":
            self.led[int(args.get("leaderEpoch", -1))] = int(args["leader"])
        elif action in ("CrashRestart", "DeleteReplica"):
            gone = int(args["replica"])
            self.heard.pop(gone, None)
            if action == "CrashRestart" and gone in self.replicas:
                # Until a fetch of the new incarnation, the leader may still count where the
                # earlier one's log ended.
                self.stale_known[gone] = max(self.stale_known.get(gone, 0),
                                             self.state.leo[self.replicas.index(gone)])
        if self.leaderless:
            if action != "BecomeLeader":
                raise _Outside("a step while the partition has no leader (the model always has "
                               "one)")
            self.leaderless = False
            want = self.recorded(changed, action, args)
            L = self.replicas.index(want.leader)
            self.state = want._replace(committed=min(self.state.committed, want.leo[L]))
            raise _Outside("the first leader after a time with none (elected from the ELR or "
                           "by a recovery election): a new behaviour", resync=False)
        s = self.state
        hw_now = s.hw[self.replicas.index(s.leader)]
        self.leader_hw = ((s.leader, max(self.leader_hw[1], hw_now))
                          if self.leader_hw[0] == s.leader else (s.leader, hw_now))
        restarted = int(args["replica"]) if action == "CrashRestart" else None
        if restarted in self.pending_restart and restarted in s.isr:
            # Restarted again while its last restart waits for the ISR drop: it has neither
            # served nor fetched since (that would have been refused), so the two are one
            # restart, checked once it leaves the ISR; this one's values are recorded against
            # the first's.
            assert restarted is not None
            _, changed0 = self.pending_restart[restarted]
            merged = dict(changed0)
            for name, values in changed.items():
                merged[name] = ({**changed0[name], **values} if isinstance(values, dict)
                                and isinstance(changed0.get(name), dict) else values)
            self._wait_for_isr_drop(restarted, args, merged)
            raise _Outside("a replica whose restart waits for the ISR drop restarted again "
                           "before it (one restart, checked once it leaves the ISR)",
                           resync=False)
        if self.pending_restart:
            self.settle_restarts(action, args, node)
        # The twin's purgatory (pending) and the leader's ISR floor are hidden: the trace records
        # neither (nor the acknowledgement that raises the floor), so ExpandIsr is not held to
        # it here; the projections carry it (conformance/log_start_offset.py).
        if self.state.pending or self.state.isrFloor:
            self.state = self.state._replace(pending=0, isrFloor=0)
        s, twin = self.state, self.twin()
        self.label = action
        actor = int(node.rsplit("-", 1)[1]) if node.startswith("broker-") else self.leader
        if action in _LEADER_ACTIONS and actor != self.leader:
            # Its own log's values are true of its replica; the ISR is the current leader's.
            self.state = self._after_outside(self.recorded(
                {k: v for k, v in changed.items() if k != "isr"}))
            raise _Outside("a step of a deposed leader that has not yet heard of its successor "
                           "(the model has one leader)", resync=False)
        if (action == "BecomeLeader" and self.pending_delete is not None
                and int(args.get("leaderEpoch", self.written_epoch)) >= self.written_epoch):
            # (not for a LeaderAndIsr already overtaken, refused below as outside: the
            # deletion waits for the successor's current one)
            self.state = s = self.recorded(self.pending_delete)
            self.pending_delete = None
        want = self.recorded(changed, action, args)
        r = int(args["replica"]) if "replica" in args else None
        t: LogStartOffsetState | None
        if action == "Append":
            t = s
            for _ in range(int(args.get("records", 1))):
                t = twin.Append(t) if t is not None else None
        elif action == "FollowerFetch":
            assert r is not None
            self.deleted.pop(r, None)
            self.stale_known.pop(r, None)
            t = twin.FollowerFetch(s, r)
            i = self.replicas.index(r)
            if t is not None and not _same(t, want):
                # Offsets in the model are records; in a log they come in batches. A follower
                # restarted at a start offset inside a batch takes the whole batch, so its first
                # segment begins at the batch's base offset, below its start.
                batch = want.segStart[i] < s.segStart[i] <= want.logStart[i]
                seg = want.segStart[i]

                def rebased(x: LogStartOffsetState) -> LogStartOffsetState:
                    return x._replace(segStart=_put(x.segStart, i, seg)) if batch else x

                stale = self._stale_fetch(s, r, args)
                if _same(rebased(t), want) and batch:
                    raise _Outside("a follower's first fetch into a log restarted at the "
                                   "leader's start offset took the whole batch around it (the "
                                   "model's offsets are records, not batches)")
                if stale is not None and _same(rebased(stale), want):
                    raise _Outside("a fetch answered from the leader's earlier state (the "
                                   "model's fetch reads the leader's present state)")
            if ((t is None or not _same(t, want))
                    and int(args.get("fetchedTo", -1)) > s.leo[self.replicas.index(s.leader)]):
                raise _Outside("a fetch from a deposed leader, past the present leader's end: "
                               "the follower had not yet heard of the new leader (the model "
                               "has one leader)")
            if t is None or not _same(t, want):
                deposed = self._deposed_answer(s, r, args)
                if deposed is not None and _same(deposed, want):
                    raise _Outside("a fetch answered by a deposed leader that had not yet heard "
                                   "of its successor, from a follower that had not either "
                                   "(both last told of the epoch it led; the model has one "
                                   "leader): the follower's step from that leader's log")
        elif action == "AdvanceHW":
            # The leader's HW may stop short of the ISR's least LEO (what it last heard of the
            # followers): the model's AdvanceHW(h) takes any h up to it.
            t = twin.AdvanceHW(s, want.hw[self.replicas.index(s.leader)])
            if t is None:
                t = self._advance_past_restarted(s, want.hw[self.replicas.index(s.leader)],
                                                 args)
                if t is not None:
                    want = want._replace(isr=t.isr)
        elif action in ("ShrinkIsr", "ExpandIsr"):
            member = int(args["r"])
            t = getattr(twin, action)(s, member)
            epoch = int(args.get("brokerEpoch", -1))
            if (t is None and action == "ExpandIsr" and epoch != -1
                    and self.registered.get(member, epoch) != epoch):
                # The controller refuses it (KIP-903); the leader then forgets what that
                # incarnation fetched. The model's leader knows where every log ends.
                self.doomed.add(member)
                raise _Outside("the leader proposed a member on what an earlier incarnation "
                               "of its broker had fetched (the controller refuses it: a stale "
                               "broker epoch)", resync=False)
            if (t is None and action == "ExpandIsr"
                    and str(args.get("cause", "")).startswith("AlterPartition proposed")
                    and self.leader_epoch < self.deleted.get(member, -1)):
                # The leader, not yet told of the epoch that took the member away, proposed
                # it on a fetch made before its replica was deleted; the controller refuses
                # the proposal (its leader epoch is stale). The model's leader knows where
                # every log ends.
                self.doomed.add(member)
                raise _Outside("the leader proposed a member a reassignment had deleted, on "
                               "what its replica had fetched before (the controller refuses "
                               "it: a stale leader epoch)", resync=False)
            stale_members = frozenset(m for m, e in self.deleted.items() if self.leader_epoch < e)
            if (t is not None and action == "ExpandIsr" and stale_members and not _same(t, want)
                    and want.isr - t.isr <= stale_members and _same(t, want._replace(isr=t.isr))):
                # The leader, not yet told of the epoch that took a member away (a reassignment
                # deleted its replica), still shows it in the ISR it proposes; the model's ISR
                # does not hold it, and keeps it out until the leader's ISR drops it.
                self.doomed |= want.isr - t.isr
                want = want._replace(isr=t.isr)
            if (t is not None and action == "ExpandIsr" and epoch != -1
                    and str(args.get("cause", "")).startswith("AlterPartition proposed")):
                self.proposed[member] = epoch
            if t is None and args.get("cause", "").startswith("AlterPartition refused"):
                raise _Outside("an ISR change the controller refused was withdrawn")
        elif action == "DeleteRecords":
            # The request's outcome (the twin's purgatory, pending) is not recorded: hidden.
            t = twin.DeleteRecords(s, int(args["o"]))
            t = None if t is None else t._replace(pending=0)
        elif action == "DeleteOldestSegment":
            assert r is not None
            t = s
            for size in args["segments"]:
                t = (self.twin(int(size)).DeleteOldestSegment(t, r) if t is not None and size > 0
                     else None)
        elif action == "CheckpointStartOffset":
            assert r is not None
            t = twin.CheckpointStartOffset(s, r)
        elif action == "Flush":
            assert r is not None
            t = twin.Flush(s, r, want.flushed[self.replicas.index(r)])
        elif action == "CrashRestart":
            assert r is not None
            outside: tuple[str, bool] | None = None  # not the exception: a cycle with this frame
            try:
                t = self._crash_restart(s, r, int(args["h"]), want)
            except _Outside as unmodelled:  # raised below, unless it waits for the ISR drop
                t, outside = None, (unmodelled.reason, unmodelled.resync)
            i = self.replicas.index(r)
            if r == s.leader and r in s.isr and want.leo[i] < s.committed:
                # The leader itself lost committed records: the controller takes it out of the
                # ISR when it registers again (unclean-shutdown detection, before the model's
                # fault model would allow the crash), electing another replica or none.
                self._wait_for_isr_drop(r, args, changed)
                raise _Outside("a restarted leader lost committed records it had not flushed "
                               "(checked as CrashRestart once the controller drops it from the "
                               "ISR)", resync=False)
            if t is None and r in s.isr and want.leo[i] < s.committed:
                try:
                    out = self._crash_restart(s._replace(isr=s.isr - {r}), r, int(args["h"]),
                                              want._replace(isr=s.isr - {r}))
                    dropped = out is not None and _same(
                        out._replace(isr=s.isr, epochStart=want.epochStart), want)
                except _Outside:
                    dropped = True  # settled (as outside) once the replica leaves the ISR
                if dropped:
                    # The broker loads its logs before it registers again; the controller then
                    # drops it from the ISR (its broker epoch is stale) before it serves or
                    # fetches. The model's fault model has the ISR drop first: so checked.
                    self._wait_for_isr_drop(r, args, changed)
                    raise _Outside("a restarted in-sync replica lost committed records it had "
                                   "not flushed (checked as CrashRestart once the controller "
                                   "drops it from the ISR, which the model has first)",
                                   resync=False)
            if outside is not None:
                raise _Outside(*outside)
            if t is not None:
                # A restarted leader's new epoch starts at its LEO (recorded by the BecomeLeader
                # of that epoch, which the twin's value is then checked against).
                want = want._replace(epochStart=t.epochStart)
                if _same(t, s) and _same(want, s):
                    return None
        elif action == "BecomeLeader":
            leader = want.leader
            if int(args.get("leaderEpoch", self.written_epoch)) < self.written_epoch:
                raise _Outside("a LeaderAndIsr the controller had already overtaken with a newer "
                               "leader epoch (its leader and ISR are no longer the partition's; "
                               "the newer one follows)", resync=False)
            self.leader_epoch = int(args.get("leaderEpoch", -1))
            if leader != s.leader:
                if leader not in s.isr:
                    raise _Outside("the controller elected a replica outside the ISR its "
                                   "previous leader last recorded (the model elects only "
                                   "in-sync replicas)")
                self.label = "ElectLeader"
                t = self._controller_isr(twin.ElectLeader(s, leader), want.isr)
                if t is None and twin.ElectLeader(s, leader) is not None:
                    raise _Outside("the controller set the ISR in the LeaderAndIsr of a new "
                                   "leader (a member the model's leader would not add)")
            elif _same(want, s):
                return None
            elif want.epochStart != s.epochStart:
                raise _Outside("a new leader epoch of the same leader (the model starts an "
                               "epoch only with an election or a restart)")
            else:
                t = self._controller_isr(s, want.isr)
                if t is None:
                    raise _Outside("the controller set the ISR in a LeaderAndIsr")
                self.label = "ShrinkIsr" if want.isr < s.isr else "ExpandIsr" \
                    if want.isr > s.isr else action
        elif action == "DeleteReplica":
            assert r is not None
            if r == s.leader:
                # The controller chose its successor before it sent the StopReplica; the
                # deletion is applied when the successor leads (the model has one leader).
                self.pending_delete = dict(changed)
                raise _Outside("a reassignment deleted the leader's replica and its log before "
                               "its successor led (the model's replicas are fixed)", resync=False)
            # The controller dropped it from the ISR before it sent the StopReplica; a leader
            # not yet told may still show it in its ISR, which the model's does not hold.
            self.deleted[r] = self.written_epoch
            self.state = self._after_outside(want._replace(isr=s.isr - {r}))
            raise _Outside("a reassignment deleted a replica and its log (the model's replicas "
                           "are fixed)", resync=False)
        elif action == "ReviveReplica":
            raise _Outside("a stray revived: the replica is back with its own data (the model's "
                           "replicas are never set aside and brought back)")
        elif action == "Truncate":
            raise _Outside("a follower truncated to its leader's epoch end offset (the model "
                           "has no divergent logs)")
        elif action == "RestartBelowStart":
            raise _Outside("a follower restarted below its start offset: its leader's log ends "
                           "there (records lost by every replica that held them; the model's "
                           "start offsets never move back)")
        else:
            raise _Refused("not enabled", f"{action} is no action of LogStartOffset")
        if t is None and _same(want, s):
            return None  # the event records no change: a stutter
        if t is None:
            raise _Refused("not enabled", f"{action}{_args(args)} is not enabled here",
                           twin.describe(want))
        if not _same(t, want):
            raise _Refused("mismatch", f"recorded {_fmt(changed)}, the twin's step gives "
                           f"{_diff(s, t)}", twin.describe(want))
        return t

    def _crash_restart(self, s: LogStartOffsetState, r: int, h: int,
                       want: LogStartOffsetState) -> LogStartOffsetState | None:
        """The twin's CrashRestart(r, e, h) for the e the recorded log end offset shows (a
        log that lost everything above its start offset restarts empty at it)."""
        twin, i = self.twin(), self.replicas.index(r)
        start = max(s.ckptStart[i], s.segStart[i])
        for e in dict.fromkeys((want.leo[i], start, s.flushed[i], s.leo[i])):
            t = twin.CrashRestart(s, r, e, h)
            if _restarted_as(t, want):
                return t
        if want.segStart[i] < s.segStart[i] <= want.logStart[i]:
            raise _Outside("a power loss brought back a deleted segment wholly below the start "
                           "offset (the model's deletions are for good)")
        if (self.bug == LAZY_CHECKPOINT and want.segStart[i] < s.segStart[i]
                and want.ckptStart[i] <= want.logStart[i] < s.logStart[i]):
            raise _Outside("a power loss brought back deleted segments, and with the start "
                           "offset checkpointed lazily (Kafka's way) the start offset went back "
                           "with them: records deleted are in this replica's log again (the "
                           "model's deletions are for good; the crash campaign's "
                           "PeriodicStartOffsetCheckpoint row shows what that costs)")
        # Offsets in the model are records; in a log they come in batches. A follower restarted
        # at a start offset inside a batch began its first segment at the batch's base (the
        # FollowerFetch that "took the whole batch"); a power loss that took that segment, not
        # yet durable, leaves the log restarted empty at its start offset again, where the
        # model keeps the batch's base: checked with the log's own first segment.
        t = twin.CrashRestart(s, r, want.leo[i], h)
        if (t is not None and want.segStart[i] == want.logStart[i] == want.leo[i]
                and t.segStart[i] < want.segStart[i]):
            t = t._replace(segStart=_put(t.segStart, i, want.segStart[i]))
            if _restarted_as(t, want):
                return t
        # Refused: not enabled (records below the flushed offset lost, or an in-sync replica's
        # committed ones), or a mismatch.
        return twin.CrashRestart(s, r, want.leo[i], h)

    def _advance_past_restarted(self, s: LogStartOffsetState, h: int,
                                args: Mapping[str, Any]) -> LogStartOffsetState | None:
        """The leader's HW raised to ``h`` on what it last heard of in-sync followers that
        have restarted since, without records they had then (a power loss): a follower's fetch
        sent before the loss may reach the leader after it. Such a replica did not shut down
        cleanly, so the controller drops it from the ISR when it registers again (KIP-966),
        before it can lead; the model's fault model has that drop first. Taken as ShrinkIsr of
        each such member, then AdvanceHW, the members kept out of the model's ISR until the
        leader's recorded ISR drops them; only when what the leader counted for each is more
        than its log holds now and no more than its log held before the restart. None
        otherwise."""
        known = args.get("known") or {}
        gone = {m for m in s.isr if m != s.leader and s.leo[self.replicas.index(m)] < h}
        if not gone or any(
                m not in self.stale_known
                or not s.leo[self.replicas.index(m)] < int(known.get(str(m), -1))
                <= self.stale_known[m] for m in gone):
            return None
        twin = self.twin()
        t: LogStartOffsetState | None = s
        for m in sorted(gone):
            t = twin.ShrinkIsr(t, m) if t is not None else None
        t = twin.AdvanceHW(t, h) if t is not None else None
        if t is not None:
            self.doomed |= gone
        return t

    def _stale_fetch(self, s: LogStartOffsetState, r: int,
                     args: Mapping[str, Any]) -> LogStartOffsetState | None:
        L = self.replicas.index(self.leader)
        # The HW as high as the leader's has been while it led (an answer sent before a power
        # loss of the leader may carry more than the HW it restarted with).
        high = self.leader_hw[1] if self.leader_hw[0] == self.leader else s.hw[L]
        return self._answered_by(s, self.leader, r, args, max(s.hw[L], high))

    def _deposed_answer(self, s: LogStartOffsetState, r: int,
                        args: Mapping[str, Any]) -> LogStartOffsetState | None:
        """Follower ``r``'s fetch as the twin's FollowerFetch served by a deposed leader: the
        replica that became leader at the leader epoch ``r`` was last told of, when a later
        epoch's leader leads now and that replica was not told of a later epoch either (in
        Kafka both still carry that epoch, so it answers the fetch). Its log is the one its own
        steps, outside the model, left; the answer's values must be within it. None when no
        replica can have answered so, or its log cannot have given the answer."""
        epoch = self.heard.get(r, -1)
        d = self.led.get(epoch)
        if (epoch < 0 or epoch >= self.leader_epoch or d is None or d in (r, s.leader)
                or d not in self.replicas or self.heard.get(d) != epoch):
            return None
        return self._answered_by(s, d, r, args, s.hw[self.replicas.index(d)])

    def _answered_by(self, s: LogStartOffsetState, a: int, r: int, args: Mapping[str, Any],
                     hw_bound: int) -> LogStartOffsetState | None:
        """The twin's FollowerFetch of follower ``r`` served by replica ``a``'s log with the
        values the answer carried (its HW at most ``hw_bound``, its start offset and log end
        at most ``a``'s), ``a``'s own values and the leader kept as they are; None if the
        answer is beyond ``a``'s log or the fetch not enabled."""
        A = self.replicas.index(a)
        hw = int(args.get("leaderHw", s.hw[A]))
        start = int(args.get("leaderLogStart", s.logStart[A]))
        leo = int(args.get("fetchedTo", s.leo[A]))
        if not (hw <= hw_bound and start <= s.logStart[A] and leo <= s.leo[A]):
            return None
        snap = s._replace(leader=a, hw=_put(s.hw, A, max(0, hw)),
                          logStart=_put(s.logStart, A, start), leo=_put(s.leo, A, leo))
        t = self.twin().FollowerFetch(snap, r)
        if t is None:
            return None
        return t._replace(leader=s.leader, hw=_put(t.hw, A, s.hw[A]),
                          logStart=_put(t.logStart, A, s.logStart[A]),
                          leo=_put(t.leo, A, s.leo[A]))


_LSO_KEPT = ("replicas", "first_leader", "max_offset", "bug", "_twin", "state", "label",
             "pending_delete", "pending_restart", "written_epoch", "notes", "proposed", "doomed",
             "deleted", "reregistered", "dropped_by_controller", "stale_known", "leader_epoch",
             "registered", "leaderless", "leader_hw", "intents", "deferred_intents", "heard",
             "led", "held", "reached")
"""Every attribute of an :class:`_LsoInstance` (``_kept`` and ``_restore``)."""


def _put(t: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return (*t[:i], v, *t[i + 1:])


def _same(a: LogStartOffsetState, b: LogStartOffsetState) -> bool:
    """Equal on the implementation's variables (the ghosts committed and acked aside)."""
    return a[:9] == b[:9]


def _restarted_as(t: LogStartOffsetState | None, want: LogStartOffsetState) -> bool:
    """A restart's successor ``t`` is the recorded ``want`` (whose new epoch's start is
    recorded by its BecomeLeader, not by the restart)."""
    return t is not None and _same(t, want._replace(epochStart=t.epochStart))


def _diff(s: LogStartOffsetState, t: LogStartOffsetState) -> str:
    parts = [f"{name}={list(getattr(t, name)) if name != 'isr' else sorted(t.isr)}"
             for name in (*_LSO_VARS, "isr") if getattr(s, name) != getattr(t, name)]
    parts += [f"{name}={getattr(t, name)}" for name in ("leader", "epochStart")
              if getattr(s, name) != getattr(t, name)]
    return ", ".join(parts) or "no change"


# ---- ControllerFencing -------------------------------------------------------------------------

@cache
def _cf_twin(brokers: tuple[int, ...], max_ce: int, max_be: int, max_le: int,
             max_in_flight: int) -> ControllerFencingTwin:
    return ControllerFencingTwin(ControllerFencingConfig(brokers, max_ce, max_be, max_le,
                                                         max_in_flight))


class _CfInstance(_Instance):
    def __init__(self, init: Mapping[str, Any], bounds: tuple[int, int, int, int]) -> None:
        self.brokers = tuple(sorted(int(b) for b in init["brokerEpochs"]))
        self.base = int(init["controllerEpoch"]) - 1
        self.epochs = {int(b): [int(e)] for b, e in init["brokerEpochs"].items()}
        self.bounds = bounds
        self.twin_ = twin = _cf_twin(self.brokers, *self.bounds)  # both fixed from here on
        self.index = {b: i for i, b in enumerate(self.brokers)}
        s: CFState = next(iter(twin.init_states()))  # type: ignore[assignment]
        self.state = s._replace(controllerEpoch=1, leaderEpoch=int(init.get("leaderEpoch", 0)))
        self.notes: list[str] = []

    def twin(self) -> ControllerFencingTwin:
        return self.twin_

    def spec(self) -> Spec:
        return self.twin_

    def ce(self, c: int) -> int:
        return int(c) - self.base

    def be(self, b: int, e: int) -> int:
        if e < 0:
            return -1
        known = self.epochs.get(b, [])
        if e in known:
            return known.index(e) + 1
        raise _Outside(f"a request addressed to broker {b}'s epoch {e}, an incarnation from "
                       "before this instance began")

    def request(self, kind: str, args: Mapping[str, Any]) -> Request:
        b = int(args["b"])
        if b not in self.brokers:
            raise _Outside(f"broker {b} registered after this partition was created")
        c, le = self.ce(args["c"]), int(args["le"])
        if c < 1:
            raise _Outside(f"a request from controller epoch {args['c']}, before this "
                           "partition existed")
        if le < 0:
            raise _Outside("a StopReplica during topic deletion (no leader epoch; the model's "
                           "requests carry one)")
        return Request(kind, c, b, self.be(b, int(args["e"])), le)

    def step(self, action: str, args: Mapping[str, Any], changed: Mapping[str, Any],
             node: str = "") -> CFState | None:
        s, twin, idx = self.state, self.twin_, self.index
        if action == "ElectController":
            t = twin.ElectController(s)
            if t is not None and t.controllerEpoch != self.ce(changed["controllerEpoch"]):
                raise _Refused("mismatch", f"controller epoch {changed['controllerEpoch']} is "
                               "not the next one")
            return self._enabled(t, action, args, s)
        if action == "ElectLeader":
            c = self.ce(args["c"])
            t = twin.ElectLeader(s, c) if c >= 1 else None
            if args.get("outcome") == "refused":
                if t is not None:
                    raise _Refused("mismatch", f"the store refused controller epoch {args['c']}'s "
                                   "write, which the model's conditional write accepts")
                return None
            t = self._enabled(t, action, args, s)
            # One decision may write several leader epochs (a reassignment's steps): one
            # ElectLeader each.
            while t is not None and t.leaderEpoch < int(changed["leaderEpoch"]):
                t = self._enabled(twin.ElectLeader(t, c), action, args, t)
            if t.leaderEpoch != int(changed["leaderEpoch"]):
                raise _Refused("mismatch", f"leader epoch {changed['leaderEpoch']} recorded, "
                               f"the twin writes {t.leaderEpoch}", twin.describe(t))
            return t
        if action == "Register":
            b = int(args["b"])
            if b not in idx:
                raise _Outside(f"broker {b} registered after this partition was created")
            t = self._enabled(twin.Register(s, b), action, args, s)
            self.epochs.setdefault(b, []).append(int(args["e"]))
            return t
        if action == "ControllerEpochSeen":
            b = int(args["b"])
            if b not in idx:
                return None
            seen = max(0, self.ce(changed["brokerControllerEpoch"][str(b)]))
            had = s.brokerControllerEpoch[idx[b]]
            if args["type"] != "BrokerRegistration" and self.ce(args["c"]) < had:
                raise _Refused("not enabled", f"broker {b} applied a {args['type']} from "
                               f"controller epoch {args['c']} after accepting epoch "
                               f"{had + self.base}: the model fences it (StaleControllerFenced)",
                               twin.describe(s))
            if seen < had:
                raise _Refused("mismatch", f"broker {b}'s controller epoch went down from "
                               f"{had + self.base} to {seen + self.base}", twin.describe(s))
            if seen == had:
                return None
            self.state = s._replace(brokerControllerEpoch=_put(s.brokerControllerEpoch, idx[b],
                                                               seen))
            raise _Outside(f"the broker's controller epoch was set by {args['type']}, not by "
                           "a request for this partition (the model's only way)")
        if action in ("SendLeaderAndIsr", "SendStopReplica"):
            m = self.request(LEADER_AND_ISR if action == "SendLeaderAndIsr" else STOP_REPLICA,
                             args)
            if m in s.network:
                return None  # the same request again: the set already holds it
            if not (m.controllerEpoch <= s.controllerEpoch and m.leaderEpoch <= s.leaderEpoch
                    and 1 <= m.brokerEpoch <= s.brokerEpoch[idx[m.broker]]):
                raise _Refused("not enabled", f"{action}{_args(args)}: Next sends only epochs "
                               "that exist", twin.describe(s))
            return self._enabled(twin.Send(s, m.type, m.controllerEpoch, m.broker,
                                           m.brokerEpoch, m.leaderEpoch), action, args, s)
        if action == "Deliver":
            m = self.request(args["type"], args)
            if m not in s.network:
                raise _Refused("not enabled", f"Deliver{_args(args)}: no such request was sent")
            i = idx[m.broker]
            if args.get("outcome") == "reject":
                if twin.Accepts(s, m.broker, m):
                    raise _Refused("mismatch", f"the broker rejected ({args.get('error')}) a "
                                   "request the model accepts", twin.describe(s))
                return None
            if not twin.Accepts(s, m.broker, m):
                raise _Refused("not enabled", f"the broker applied {m.type}{_args(args)}, which "
                               "the model fences", twin.describe(s))
            t = twin.Deliver(s, m)
            bce = self.ce(changed["brokerControllerEpoch"][str(m.broker)])
            replica = int(changed["replicaEpoch"][str(m.broker)])
            result = args.get("result", "NONE")
            if result in _UNAPPLIED:
                # The ghost replicaPeak follows the replica as the twin's Deliver keeps it.
                peak = (NOT_HOSTED if replica == NOT_HOSTED
                        else max(s.replicaPeak[i], replica))
                self.state = s._replace(
                    brokerControllerEpoch=_put(s.brokerControllerEpoch, i, max(0, bce)),
                    replicaEpoch=_put(s.replicaEpoch, i, replica),
                    replicaPeak=_put(s.replicaPeak, i, peak))
                raise _Outside(f"the broker accepted the request but could not apply it to this "
                               f"partition ({result}: {_UNAPPLIED[result]}); the model's replica "
                               "always can")
            agrees = ((bce, replica) == (s.brokerControllerEpoch[i], s.replicaEpoch[i])
                      if t is None else
                      (bce, replica) == (t.brokerControllerEpoch[i], t.replicaEpoch[i]))
            if result == "STALE_CONTROLLER_EPOCH" and not agrees:
                # Per partition name, a request older (controller epoch, correlation id) than
                # one the broker applied changes nothing (docs/topic-identity.md); the model's
                # requests carry no such order. The recorded values become the state.
                peak = (NOT_HOSTED if replica == NOT_HOSTED
                        else max(s.replicaPeak[i], replica))
                self.state = s._replace(
                    brokerControllerEpoch=_put(s.brokerControllerEpoch, i, max(0, bce)),
                    replicaEpoch=_put(s.replicaEpoch, i, replica),
                    replicaPeak=_put(s.replicaPeak, i, peak))
                raise _Outside("a request older than one the broker already applied for this "
                               "partition name changes nothing about it (the model's requests "
                               "are not ordered by correlation id)")
            if t is None:
                if bce == s.brokerControllerEpoch[i] and replica == s.replicaEpoch[i]:
                    return None
                raise _Refused("mismatch", f"recorded {_fmt(changed)}, the twin changes nothing")
            if (bce, replica) != (t.brokerControllerEpoch[i], t.replicaEpoch[i]):
                raise _Refused("mismatch", f"recorded controller epoch {bce} and replica epoch "
                               f"{replica} (model numbering), the twin gives "
                               f"{t.brokerControllerEpoch[i]} and {t.replicaEpoch[i]}",
                               twin.describe(t))
            return t
        raise _Refused("not enabled", f"{action} is no action of ControllerFencing")

    def _enabled(self, t: CFState | None, action: str, args: Mapping[str, Any],
                 s: CFState) -> CFState:
        if t is None:
            raise _Refused("not enabled", f"{action}{_args(args)} is not enabled here",
                           self.twin().describe(s))
        return t


_UNAPPLIED = {
    "KAFKA_STORAGE_ERROR": "its replica's log dir is offline",
    "UNKNOWN_TOPIC_OR_PARTITION": "the broker is not among its replicas",
    "INCONSISTENT_TOPIC_ID": "the broker still holds another generation of the topic",
    "LOG_DIR_NOT_FOUND": "it names a log dir the broker does not have",
}
"""A partition's result in an accepted LeaderAndIsr or StopReplica that means the broker could
not act on it (no fencing involved), and why."""


# ---- FetcherFailure ----------------------------------------------------------------------------

@cache
def _ff_twin(partitions: int, max_le: int) -> FetcherFailureTwin:
    return FetcherFailureTwin(FetcherFailureConfig(partitions, 1, max_le))


_FF_FIELDS = {name: i for i, name in enumerate(FFState._fields)}


class _FfInstance(_Instance):
    def __init__(self, partitions: int, max_le: int) -> None:
        self.twin_ = _ff_twin(partitions, max_le)
        self.state: FFState = next(iter(self.twin_.init_states()))  # type: ignore[assignment]
        self.known_high: dict[int, int] = {}
        """Partition index -> the highest leader epoch the broker has known for it (a fence
        may answer a request sent before a StopReplica, after which it knows none)."""
        self.fetched: dict[tuple[int, int], FFState] = {}
        """(partition, epoch) -> the last state a FetchOk recording no change left as it was:
        the step is a function of the state, the partition and the epoch alone."""
        self.notes: list[str] = []

    def spec(self) -> Spec:
        return self.twin_

    def step(self, action: str, p: int, args: Mapping[str, Any],
             changed: Mapping[str, Any]) -> FFState | None:
        s, twin, i = self.state, self.twin_, p - 1
        t: FFState | None
        self.known_high[i] = max(self.known_high.get(i, -1), s.knownEpoch[i])
        if action == "Restart":
            fresh: FFState = next(iter(twin.init_states()))  # type: ignore[assignment]
            fresh = fresh._replace(leaderEpoch=s.leaderEpoch)
            if fresh == s:
                return None
            self.state = fresh
            raise _Outside("a broker restart: its fetchers start empty (the model has no "
                           "restart)")
        if action == "ElectLeader":
            t = twin.ElectLeader(s, p)
            while t is not None and t.leaderEpoch[i] < int(changed.get("leaderEpoch", 0)):
                t = twin.ElectLeader(t, p)
        elif action == "LeaderAndIsr":
            epoch = int(args["epoch"])
            t = twin.LeaderAndIsr(s, p)
            if ((t is None or t.knownEpoch[i] != epoch)
                    and s.knownEpoch[i] <= epoch <= s.leaderEpoch[i]):
                self.state = s._replace(
                    knownEpoch=_put(s.knownEpoch, i, epoch),
                    fetching=_setb(s.fetching, i, True), alive=_setb(s.alive, 0, True),
                    failedEpoch=_put(s.failedEpoch, i, -1))
                if self.state == s:
                    return None
                raise _Outside("a LeaderAndIsr overtaken by a newer election, or repeating "
                               "the epoch the broker knows (the model's carries the latest)")
        elif action == "FetchOk":
            epoch = int(args["epoch"])
            if not changed and self.fetched.get((p, epoch)) is s:
                return s  # this state took this FetchOk as a step to itself: it does again
            sent = twin.FetchRequest(s, p)
            if sent is None or sent.inflight[i] != epoch:
                raise _Refused("not enabled", f"FetchOk{_args(args)}: no fetch at epoch {epoch} "
                               "could have been sent", twin.describe(s))
            t = twin.FetchOk(sent, p)
            if t is None:
                raise _Outside("a fetch answered by a leader that had not yet heard of the "
                               "newer leader epoch (the model's leader knows it at once)")
        elif action == "FetchFenced":
            epoch = int(args["epoch"])
            if not 0 <= epoch <= self.known_high[i]:
                raise _Refused("not enabled", f"FetchFenced{_args(args)}: the broker never "
                               f"fetched at epoch {epoch}", twin.describe(s))
            t = twin.FetchFenced(s._replace(inflight=_put(s.inflight, i, epoch)), p)
        elif action == "StorageError":
            t = twin.StorageError(s, p)
        elif action == "StopReplica":
            t = twin.StopReplica(s, p)
        elif action == "ShutdownIdle":
            t = twin.ShutdownIdle(s, int(args.get("f", 1)))
        else:
            raise _Refused("not enabled", f"{action} is no action of FetcherFailure")
        if t is None:
            raise _Refused("not enabled", f"{action}{_args(args)} is not enabled here",
                           twin.describe(s))
        want = t
        if changed and _FF_FIELDS.keys() >= changed.keys():
            # The common case as one list of the fields (a _replace per field cost more); a
            # name FFState has not is refused by the loop below, as it always was.
            fields: list[Any] = list(t)
            for name, value in changed.items():
                j = _FF_FIELDS[name]
                current = fields[j]
                fields[j] = (_setb(current, 0, bool(value)) if name == "alive"
                             else (*current[:i], value, *current[i + 1:]))
            want = _new_state(FFState, fields)
        else:
            for name, value in changed.items():
                if name == "alive":
                    want = want._replace(alive=_setb(want.alive, 0, bool(value)))
                else:
                    current = getattr(want, name)
                    want = want._replace(**{name: (*current[:i], value, *current[i + 1:])})
        if want != t:
            raise _Refused("mismatch", f"recorded {_fmt(changed)}, the twin gives another "
                           "state", twin.describe(t))
        if action == "FetchOk" and not changed and type(t) is type(s) and t == s \
                and _one_value(t, s):
            self.fetched[(p, int(args["epoch"]))] = s
            return s
        return t


class _RmInstance(_Instance):
    """One JBOD move (ReplicaMove, traces/SCHEMA.md): the recorded variables after each event,
    checked as a path of at most :data:`RM_MAX_STEPS` twin steps from the state so far, the
    ghosts (records by identity, the copier's skew) carried by the twin's own steps. Between
    two events of a move its source may have changed without one (appends, a replication
    round's flush, a DeleteRecords, a follower's truncation: LogStartOffset's events): those are
    steps of the path too; the event's own action must be one of them."""

    def __init__(self) -> None:
        # Either dir may fail: the implementation meets an I/O error on the source's dir as
        # well as on the future log's (the model holds with either failing alone,
        # tests/test_model_replica_move.py). A failure stops the move (the code drops the
        # future log): in one move, one instance here, what follows its FailDir events is its
        # StopMove. The known limit of two failures one after the other spans a restart, and a
        # move resumed after it is a new instance from its recorded state. AtomicMoveSwap is
        # checked after every event either way.
        self.twin = ReplicaMoveSpec(ReplicaMoveConfig(max_records=1 << 30,
                                                      fail_dirs=frozenset({RM_SRC, RM_FUT})))
        self.checker = RefinementChecker(ReplicaMoveRefinement(self.twin),
                                         max_steps=RM_MAX_STEPS, visible=_rm_visible)
        self.values: dict[str, Any] = {}
        self.state: RMState | None = None
        self.label = ""
        self.notes: list[str] = []

    def spec(self) -> Spec:
        return self.twin

    def recorded(self, changed: Mapping[str, Any]) -> RMState:
        """The twin state the recorded variables make, the ghosts as the state so far has
        them."""
        for k, v in changed.items():
            self.values[k] = v
        v = self.values

        def pair(name: str) -> tuple[Any, Any]:
            return (v[name]["src"], v[name]["fut"])

        base = self.state
        return RMState(
            up=True, current=str(v["current"]), locked=bool(v["locked"]), vol=pair("vol"),
            dur=pair("dur"), name=pair("name"), durName=pair("durName"), acked=int(v["acked"]),
            lateAppend=base.lateAppend if base is not None else False,
            agree=base.agree if base is not None else 0,
            skew=0, misplaced=base.misplaced if base is not None else False,
            start=pair("start"), offline=pair("offline"), newer=str(v["newer"]),
            starting=False)

    def start(self, args: Mapping[str, Any], changed: Mapping[str, Any]) -> RMState:
        """``StartMove``: a new behaviour from the recorded state (a move asked has an empty
        future log; one resumed after a restart holds the copy made so far, alike)."""
        self.values = {}
        self.state = None
        t = self.recorded(changed)
        t = t._replace(agree=min(t.vol[1], t.vol[0]))
        self.checker.rebase(t, "StartMove")
        self.state = t
        raise _Outside(f"a move begins ({args.get('reason', '')}): its state as recorded",
                       resync=False)

    def step(self, action: str, args: Mapping[str, Any],
             changed: Mapping[str, Any]) -> RMState | None:
        if self.state is None:
            raise _Outside("an event of a move whose StartMove is not in the trace")
        if action == "AbandonSwap":
            # The swap found the source's start offset above the copy's and let go of the lock
            # to follow it first: the twin's lock has no such release.
            t = self.recorded(changed)
            self.checker.rebase(t, action)
            self.state = t
            raise _Outside("the swap let go of the lock to follow the source's start offset "
                           "first (the model keeps it and follows under it)", resync=False)
        before = self.state
        if action == "Copy" and int(args["offset"]) != before.vol[1]:
            # The copier read elsewhere than the future log's own end (KAFKA-9087): the twin's
            # skew, which marks what it copies misplaced.
            before = before._replace(skew=int(args["offset"]) - before.vol[1])
        target = self.recorded(changed)
        key = (_exact(before), _exact(target))
        if key in _RM_PATHS:
            found = _RM_PATHS[key]
        else:
            found = self.checker.find_path(before, target)
            if len(_RM_PATHS) >= _FINGERPRINTS_KEPT:
                _RM_PATHS.clear()  # bounded, as the fingerprints
            _RM_PATHS[key] = found
        if found is None:
            raise _Refused("not enabled", f"no path of at most {RM_MAX_STEPS} twin steps "
                           f"leads to the recorded state ({_fmt(changed)})",
                           self.twin.describe(target))
        if not found.actions:
            return None
        names = [label.split(" ")[0] for label in found.actions]
        if action not in names:
            raise _Refused("mismatch", f"the recorded change is {' then '.join(found.actions)}"
                           f", not {action}", self.twin.describe(target))
        reached = self.checker.reached(before, found)
        assert isinstance(reached, RMState)
        reached = reached._replace(skew=0)
        self.checker.last = reached
        self.label = action
        return reached


RM_MAX_STEPS = 12
"""How many twin steps one move event may stand for (its own, and the source's changes since
the previous event of the move)."""

_RM_PATHS: dict[tuple[str | bytes, str | bytes], StepFound | None] = {}
"""The paths already searched in this process, by the two states' :func:`_exact` forms: every
move's checker is the same (one twin, its constants fixed; the same bound and projection), and
its search is a function of the two states alone, so a move event met again (in another trace,
say) is not searched again."""


_RM_GHOSTS = ("lateAppend", "agree", "skew", "misplaced")
_RM_GHOST_VALUES = (False, 0, 0, False)
_RM_FIRST_GHOST = RMState._fields.index(_RM_GHOSTS[0])
_RM_AFTER_GHOSTS = _RM_FIRST_GHOST + len(_RM_GHOSTS)
assert RMState._fields[_RM_FIRST_GHOST:_RM_AFTER_GHOSTS] == _RM_GHOSTS, "the ghosts are adjacent"
_new_rm_state = tuple.__new__


def _rm_visible(s: State) -> State:
    """What a ReplicaMove event records: every variable but the ghosts (their four fields
    reset; built as a tuple, the path search's inner step, where ``_replace`` cost a fifth)."""
    assert isinstance(s, RMState)
    return _new_rm_state(RMState, s[:_RM_FIRST_GHOST] + _RM_GHOST_VALUES
                         + s[_RM_AFTER_GHOSTS:])


def _setb(t: tuple[bool, ...], i: int, v: bool) -> tuple[bool, ...]:
    return (*t[:i], v, *t[i + 1:])


# ---- the replay --------------------------------------------------------------------------------

def _args(args: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in sorted(args.items())) + ")"


def _fmt(changed: Mapping[str, Any]) -> str:
    return json.dumps(changed, sort_keys=True, separators=(",", ":"))


def _most(v: Any, best: int) -> int:
    """The largest of ``best`` and every integer (not a bool) in ``v``."""
    if isinstance(v, bool):
        return best
    if isinstance(v, int):
        return v if v > best else best
    if isinstance(v, dict):
        v = v.values()
    elif not isinstance(v, list):
        return best
    for x in v:
        best = _most(x, best)
    return best


def _bounds(events: list[tuple[str, Event]]) -> tuple[int, int, int, int, int]:
    """(max offset, max controller epoch, max broker epochs per broker, max leader epoch,
    sends) over a whole trace, for the twins' constants."""
    offsets, ce, le, sends = 0, 1, 0, 0
    regs: Counter[int] = Counter()
    most = _most
    for _, e in events:
        a, c = e["args"], e["changed"]
        if e["model"] == LOG_START_OFFSET:
            offsets = most(c, offsets)
            for k, v in a.items():
                if k != "replica" and k != "r":
                    offsets = most(v, offsets)
        elif e["action"] == INTENT:
            offsets = max(offsets, int(a.get("o", 0)))
        elif e["action"] == "ElectController":
            ce = max(ce, int(a["c"]))
        elif e["action"] == "Register":
            regs[int(a["b"])] += 1
        elif e["action"].startswith("Send"):
            sends += 1
        if "le" in a:
            le = max(le, int(a["le"]))
        if "leaderEpoch" in c:
            le = max(le, int(c["leaderEpoch"]))
        if "epoch" in a:
            le = max(le, int(a["epoch"]))
    return offsets + 1, ce, max(regs.values(), default=0) + 1, le + 1, sends + 1


def whole_trace(trace: str, lines: list[tuple[str, Event]]) -> list[BadInput]:
    """Why the events of ``trace`` (in ``seq`` order) are not a whole trace: a sequence number
    twice, events missing, or the start cut off (no ``Header`` at ``seq`` 0). A trace cut off at
    its end cannot be told from a whole one by its events; a line cut in half is bad input of
    its own."""
    problems: list[BadInput] = []
    if not lines:
        return problems
    first_where, first = lines[0]
    if first["seq"] != 0 or first["action"] != HEADER:
        problems.append(BadInput(first_where, trace, "cut short at its start: the first event "
                                 f"is seq {first['seq']} {first['action']}, not the Header at "
                                 "seq 0"))
    for (_, a), (where, b) in pairwise(lines):
        if b["seq"] == a["seq"]:
            problems.append(BadInput(where, trace, f"sequence number {b['seq']} twice"))
        elif b["seq"] > a["seq"] + 1:
            gap = (f"{a['seq'] + 1}" if b["seq"] == a["seq"] + 2
                   else f"{a['seq'] + 1} to {b['seq'] - 1}")
            problems.append(BadInput(where, trace, f"events missing: seq {gap} (a line lost or "
                                     "unreadable)"))
    return problems


def check_trace(trace: str, lines: Iterable[tuple[str, Event]], report: CheckReport) -> None:
    """Replay the events of one trace (``file:line`` and event, in any order: they are put in
    ``seq`` order) into ``report``. A trace that is not whole, or holds a value the models
    cannot take, is bad input: reported, its figures left out, never a crash. The Spark job and
    :func:`check_paths` both check each trace here, so they give the same verdicts."""
    lines = list(lines)
    seqs = [e["seq"] for _, e in lines]
    # Already in strictly rising seq order (as a recorder writes them): that is _order's too.
    ordered = lines if all(map(operator.lt, seqs, seqs[1:])) else sorted(lines, key=_order)
    report.traces += 1
    report.events += len(ordered)
    problems = whole_trace(trace, ordered)
    if problems:
        report.bad_input += problems
        _not_replayed(ordered, report)
        return
    one = CheckReport(track_states=report.track_states,
                      ask_every_invariant=report.ask_every_invariant)
    try:
        _replay_trace(ordered, one)
    except TraceFormatError as exc:
        where, reason = str(exc).split(": ", 1) if ": " in str(exc) else ("", str(exc))
        report.bad_input.append(BadInput(where or ordered[0][0], trace, reason))
        _not_replayed(ordered, report)
        return
    for failure in one.failures:
        failure.trace = trace
    report.merge(one)


def skip_trace(lines: Sequence[tuple[str, Event]], report: CheckReport) -> None:
    """Count a trace that has a line of bad input: its events are counted, not replayed (a
    replay with a line missing would report faults that are not there). Both engines call
    this."""
    report.traces += 1
    report.events += len(lines)
    _not_replayed(lines, report)


def _not_replayed(lines: Iterable[tuple[str, Event]], report: CheckReport) -> None:
    """Count the events of a trace with bad input, not replayed, in the coverage."""
    for _, e in lines:
        report.outcomes[(e["model"], e["action"], "bad input")] += 1


TRACE_ACTIONS: dict[str, tuple[str, ...]] = {
    LOG_START_OFFSET: ("Append", "FollowerFetch", "AdvanceHW", "ShrinkIsr", "ExpandIsr",
                       "DeleteRecords", "DeleteOldestSegment", "CheckpointStartOffset", "Flush",
                       "CrashRestart", "BecomeLeader"),
    CONTROLLER_FENCING: ("ElectController", "ElectLeader", "Register", "SendLeaderAndIsr",
                         "SendStopReplica", "Deliver"),
    FETCHER_FAILURE: ("LeaderAndIsr", "FetchOk", "FetchFenced", "StorageError", "StopReplica",
                      "ShutdownIdle"),
    REPLICA_MOVE: ("Copy", "Flush", "FollowStart", "TruncateSource", "BeginSwap",
                   "RenameFutureLive", "RenameSourceDelete", "FsyncDir", "EndSwap", "FailDir"),
}
"""Per model, the recorded actions (traces/SCHEMA.md) a twin can take as a step: coverage
names those no event exercised."""


def never_exercised(report: CheckReport) -> dict[str, list[str]]:
    """Per model, the actions of :data:`TRACE_ACTIONS` that no event took as a step."""
    stepped = {(m, a) for (m, a, outcome) in report.outcomes if outcome == "step"}
    return {m: [a for a in actions if (m, a) not in stepped]
            for m, actions in TRACE_ACTIONS.items()}


def _order(line: tuple[str, Event]) -> tuple[int, str, int]:
    """Events in ``seq`` order; two of one seq (bad input) by file, then line: the same order
    whichever engine read them, so the same one is reported as the second."""
    where, event = line
    path, _, number = where.rpartition(":")
    return int(event["seq"]), path, int(number) if number.isdigit() else 0


_PLAIN = frozenset({int, str, bool, float, type(None)})
"""Types :func:`_canon` leaves as they are (and whose repr is the same in every process)."""


def _canon(x: Any) -> Any:
    """``x`` with every set sorted and every mapping in key order: a value whose repr is the
    same in every process (a set of strings iterates in a per-process order)."""
    if type(x) in _PLAIN:
        return x
    if isinstance(x, (set, frozenset)):
        if _PLAIN.issuperset(map(type, x)):  # the common case, without a call per element
            return ("set", sorted(x, key=repr))
        return ("set", sorted(map(_canon, x), key=repr))
    if isinstance(x, (tuple, list)):
        if _PLAIN.issuperset(map(type, x)):
            return tuple(x)
        return tuple(map(_canon, x))
    if isinstance(x, Mapping):
        return ("map", sorted(((_canon(k), _canon(v)) for k, v in x.items()), key=repr))
    return x


_FINGERPRINTS: dict[tuple[str, type, str | bytes], str] = {}
"""Fingerprints already computed in this process, by model, the state's type and
:func:`_exact` form."""
_FINGERPRINTS_KEPT = 1 << 17


def _exact(state: Any) -> str | bytes:
    """A form of ``state`` that only values of the same types at every level share: its
    ``marshal`` form (of its fields, for a named tuple: a pass in C that reads ints, bools,
    floats, strings, tuples and sets each as its own, and refuses any other type), else its
    ``repr``. Version 2 of the format: it writes no references back and no mark of an
    interned string, so a value has one form (a set's, one per order it iterates in)."""
    try:
        return marshal.dumps(tuple(state) if isinstance(state, tuple) else state, 2)
    except ValueError:  # a type marshal does not write (a named tuple inside, say)
        return repr(state)


def fingerprint(model: str, state: Any) -> str:
    """``Model:<16 hex digits>``: an abstract state of ``model``, the same in every process.

    Remembered by the state's type and :func:`_exact` form, several times cheaper than the
    canonical form: two states with one such form have the same values of the same types, so
    their canonical forms are equal too (not so by ``==``, for which ``1 == True``); a state
    may have several (a set's order), each remembered with the one fingerprint."""
    key = (model, type(state), _exact(state))
    known = _FINGERPRINTS.get(key)
    if known is None:
        digest = hashlib.blake2b(repr(_canon(state)).encode(), digest_size=8).hexdigest()
        known = f"{model}:{digest}"
        if len(_FINGERPRINTS) >= _FINGERPRINTS_KEPT:
            _FINGERPRINTS.clear()  # bounded: a long run's states do not pile up
        _FINGERPRINTS[key] = known
    return known


class _Replay:
    """The instances of one trace's replay (:func:`_replay_trace`) and its step: an object,
    not closures over the replay's locals (a closure of the compiled build is a cycle, which
    would outlive the check with the cyclic collector paused)."""

    def __init__(self, report: CheckReport, bounds: tuple[int, int, int, int, int],
                 ff_partitions: int, lso_bug: str) -> None:
        self.report = report
        self.max_offset, self.max_ce, self.max_be, self.max_le, self.sends = bounds
        self.ff_partitions, self.lso_bug = ff_partitions, lso_bug
        self.lso: dict[str, _LsoInstance] = {}
        self.cf: dict[str, _CfInstance] = {}
        self.ff: dict[str, _FfInstance] = {}
        self.ff_ids: dict[str, int] = {}  # "<tp>#<topic id>" -> FetcherFailure partition number
        self.rm: dict[str, _RmInstance] = {}  # the moves under way, by instance
        self.generation: dict[str, str] = {}  # instance -> the topic id of its current generation
        self.failed: set[str] = set()
        self.registered: dict[int, int] = {}  # broker -> its registered broker epoch so far
        self.controller_epoch = -1  # the newest controller epoch an ElectController recorded

    def ff_instance(self, name: str) -> _FfInstance:
        ff = self.ff
        if name not in ff:
            ff[name] = _FfInstance(self.ff_partitions, self.max_le)
        return ff[name]

    def ff_p(self, tp: str, topic_id: str = "") -> int:
        ff_ids = self.ff_ids
        key = f"{tp}#{topic_id or self.generation.get(tp, '')}"
        if key not in ff_ids:
            ff_ids[key] = len(ff_ids) + 1
        return ff_ids[key]

    def other_generation(self, inst: str, args: Mapping[str, Any]) -> bool:
        """The event names a topic id that is not the instance's current generation's."""
        generation = self.generation
        tid = args.get("topicId") or ""
        return bool(tid) and inst in generation and bool(generation[inst]) \
            and tid != generation[inst]

    def step(self, e: Event, where: str) -> None:
        """Check one event of the trace into the report."""
        report, failed, registered = self.report, self.failed, self.registered
        lso, cf, ff, rm, generation = self.lso, self.cf, self.ff, self.rm, self.generation
        max_offset, max_ce, max_be, max_le, sends = (
            self.max_offset, self.max_ce, self.max_be, self.max_le, self.sends)
        lso_bug = self.lso_bug
        model, inst, action = e["model"], e["instance"], e["action"]
        args, changed = e["args"], e["changed"]
        if action == HEADER:
            return
        if action == INIT:
            generation[inst] = str(args.get("topicId", ""))
            replicas = tuple(sorted(int(r) for r in args["replicas"]))
            lso[inst] = _LsoInstance(replicas, int(args["leader"]), max_offset, lso_bug)
            registered.update({int(b): int(v) for b, v in args.get("brokerEpochs", {}).items()})
            lso[inst].registered = registered
            lso[inst].state = lso[inst].state._replace(isr=frozenset(args["isr"]))
            lso[inst].written_epoch = int(args.get("leaderEpoch", -1))
            cf[inst] = _CfInstance(args, (max(2, max_ce - int(args["controllerEpoch"]) + 1),
                                          max_be, max_le, sends))
            # A new instance (the topic created again): checked afresh, whatever its
            # predecessor of the same name was refused.
            failed.discard(f"{LOG_START_OFFSET}/{inst}")
            failed.discard(f"{CONTROLLER_FENCING}/{inst}")
            self.ff_p(inst)
            return
        if action == "Removed":
            lso.pop(inst, None)
            cf.pop(inst, None)
            return
        if action == INTENT:
            if inst in lso and not self.other_generation(inst, args):
                lso[inst].intend(args)
            return
        targets: list[tuple[str, Any]] = []
        if model == LOG_START_OFFSET:
            if inst in lso:
                targets = [(inst, lso[inst])]
        elif model == CONTROLLER_FENCING:
            targets = ([(i, c) for i, c in cf.items()] if inst == "*"
                       else [(inst, cf[inst])] if inst in cf else [])
            if (action == "Deliver" and args.get("outcome") == "accept" and inst in lso
                    and not self.other_generation(inst, args)):
                for b, epoch in changed.get("replicaEpoch", {}).items():
                    lso[inst].heard_of(int(b), int(epoch))
            if action == "ElectController":
                self.controller_epoch = max(self.controller_epoch,
                                            int(changed.get("controllerEpoch", args["c"])))
            if (action == "SendLeaderAndIsr" and "isr" in args and inst in lso
                    and not self.other_generation(inst, args)
                    and int(args["c"]) == self.controller_epoch
                    and int(args["le"]) == lso[inst].written_epoch):
                lso[inst].controller_isr(frozenset(int(m) for m in args["isr"]))
            if action == "Register":
                registered[int(args["b"])] = int(args["e"])
                for instance_ in lso.values():
                    instance_.registered_again(int(args["b"]), int(args["e"]))
            if (action == "ElectLeader" and args.get("outcome") == "written" and inst in lso
                    and not self.other_generation(inst, args)):
                lso[inst].written_epoch = int(changed.get("leaderEpoch", -1))
                lso[inst].elected(int(args.get("leader", -1)))
                if int(args.get("leader", 0)) == -1:
                    lso[inst].no_leader()
            if action == "ElectLeader" and args.get("outcome") == "written" and inst in cf:
                p = self.ff_p(inst, str(args.get("topicId", "")))
                for name in list(ff):
                    _run(report, where, e, FETCHER_FAILURE, name, ff[name], failed,
                         ff[name].step, "ElectLeader", p, {"tp": inst}, changed)
        elif model == FETCHER_FAILURE:
            fx = self.ff_instance(inst)
            p = self.ff_p(args["tp"], str(args.get("topicId", ""))) if "tp" in args else 1
            _run(report, where, e, model, inst, fx, failed, fx.step, action, p, args, changed)
            return
        elif model == REPLICA_MOVE:
            if action == "StartMove":
                rm[inst] = _RmInstance()
                failed.discard(f"{model}/{inst}")
                _run(report, where, e, model, inst, rm[inst], failed, rm[inst].start, args,
                     changed)
                return
            if inst not in rm:
                report.outside[f"{model}.{action}: an event of a move whose StartMove is not "
                               "in the trace"] += 1
                return
            _run(report, where, e, model, inst, rm[inst], failed, rm[inst].step, action, args,
                 changed)
            if action in ("EndSwap", "StopMove"):
                del rm[inst]
            return
        elif model == STRAY_CLEANUP:
            # Recorded with their reasons (traces/SCHEMA.md); no twin replays them yet.
            report.outside[f"{model}.{action}: recorded, not replayed against a twin"] += 1
            return
        else:
            report.failures.append(Failure(where, int(e["seq"]), model, inst, action,
                                           "not enabled", f"unknown model {model!r}", "", ""))
            return
        if targets and inst != "*" and self.other_generation(inst, args):
            report.outside[f"{model}.{action}: an event of another generation of the topic "
                           "(deleted and re-created under its name; each is its own "
                           "instance)"] += 1
            return
        if not targets:
            if inst == "*":  # a cluster-wide event before any partition exists
                report.stutters += 1
                report.stutter_actions[f"{model}.{action}"] += 1
            else:
                report.outside[f"{model}.{action}: an event of a partition whose instance has "
                               "not begun or has ended (no Init yet, or its topic deleted)"] += 1
            return
        node = e["node"]
        for name, x in targets:
            _run(report, where, e, model, name, x, failed, x.step, action, args, changed, node)


def _replay_trace(events: list[tuple[str, Event]], report: CheckReport) -> None:
    """Replay one whole trace, in ``seq`` order, into ``report`` (steps, outcomes, failures);
    TraceFormatError (``file:line: reason``) at a value the models cannot take."""
    try:
        bounds = _bounds(events)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise TraceFormatError(f"{events[0][0]}: a malformed event ({type(exc).__name__}: "
                               f"{exc})") from exc
    # Every partition generation (an Init) and every partition a fetcher names gets a number.
    ff_partitions = max(1, len({f"{e['instance']}#{e['args'].get('topicId', '')}"
                                for _, e in events if e["action"] == INIT}
                               | {f"{e['args'].get('tp')}#{e['args'].get('topicId', '')}"
                                  for _, e in events if e["model"] == FETCHER_FAILURE}))
    header: dict[str, Any] = next((e["args"] for _, e in events if e["action"] == HEADER), {})
    lso_bug = "none" if header.get("durable_log_start_offset", True) else LAZY_CHECKPOINT

    replay = _Replay(report, bounds, ff_partitions, lso_bug)
    lso, rm, failed = replay.lso, replay.rm, replay.failed

    outcomes, failures = report.outcomes, report.failures
    for where, e in events:
        steps, refused, stutters = report.steps, len(failures), report.stutters
        try:
            replay.step(e, where)
        except (KeyError, ValueError, TypeError, IndexError, AttributeError) as exc:
            raise TraceFormatError(f"{where}: a malformed event ({type(exc).__name__}: "
                                   f"{exc})") from exc
        # What became of it, from the report's figures before and after it.
        model = e["model"]
        outcomes[(model, e["action"],
                  "bookkeeping" if model == "-" else "refused" if len(failures) > refused
                  else "step" if report.steps > steps else "stutter"
                  if report.stutters > stutters else "outside")] += 1
    if rm:
        report.outside[f"{REPLICA_MOVE}: a move still under way when the trace ends "
                       "(not a failure: a trace shows safety, not progress)"] += len(rm)
    # A restart still waiting for its replica to leave the ISR when the trace ends.
    last = int(events[-1][1]["seq"]) if events else 0
    for inst, x in lso.items():
        if x.pending_restart and f"{LOG_START_OFFSET}/{inst}" not in failed:
            before = x.twin().describe(x.state)
            try:
                x.settle_restarts("", {}, "")
            except _Refused as ref:
                report.failures.append(Failure(f"{events[-1][0]} (end)", last, LOG_START_OFFSET,
                                               inst, "CrashRestart", ref.kind, ref.message,
                                               before, ref.after or "(no successor)"))
            for note in x.notes:
                report.outside[f"{LOG_START_OFFSET}.{note}"] += 1
            x.notes.clear()


_PLANS: weakref.WeakKeyDictionary[Spec, tuple[type, _Plan]] = weakref.WeakKeyDictionary()
"""Each twin's plan, made once per state type (a twin builds its list at each call)."""


def _plan(spec: Spec, state: State) -> _Plan:
    """The invariants of ``spec`` with what they read of ``state``'s fields, an invariant
    made of parts part by part (:meth:`Spec.invariant_reads`, :meth:`Spec.invariant_parts`)."""
    kind = type(state)
    known = _PLANS.get(spec)
    if known is not None and known[0] is kind:
        return known[1]
    fields: tuple[str, ...] = getattr(kind, "_fields", ())

    def mask(reads: Iterable[str]) -> int:
        return (sum(1 << fields.index(f) for f in set(reads)) if set(reads) <= set(fields)
                else -1)

    reads, parts = spec.invariant_reads(), spec.invariant_parts()
    plan: list[tuple[str, Any, int]] = []
    for name, holds in spec.invariants():
        if name in parts:
            plan += [(name, part, mask(part_reads)) for part_reads, part in parts[name]]
        else:
            plan.append((name, holds, mask(reads[name]) if name in reads else -1))
    _PLANS[spec] = (kind, tuple(plan))
    return tuple(plan)


_ATOMS = frozenset({int, bool, str, type(None)})
"""Types whose values are equal only when they are the same value (not float: 0.0 == -0.0)."""


def _same_value(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are one value, whatever an invariant computes from them: the same
    object, or equal and of one type, an atom (:data:`_ATOMS`) or a tuple of atoms of one type
    at each position (1 and True, equal, are not one value). Any other value that is not the
    same object counts as changed: only an invariant more is asked."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is tuple and len(a) == len(b) and all(map(operator.is_, a, b)):
        return True  # every member the same object (a tuple built again from them)
    if a != b:
        return False
    if kind in _ATOMS:
        return True
    if kind is tuple:
        kinds = list(map(type, a))
        return kinds == list(map(type, b)) and _ATOMS.issuperset(kinds)
    return False


def _to_ask(x: _Instance, spec: Spec, after: State) -> tuple[_Plan, _Plan]:
    """The invariants of ``spec`` and those of them to ask of ``after``, ``x``'s state now:
    those that read a field changed since ``x.held``, the twin and the last state it held
    every invariant in (every one when there is none, or it was another twin's, or another
    kind of state)."""
    held = x.held
    if (held is None or held[0] is not spec or type(held[1]) is not type(after)
            or not isinstance(after, tuple) or len(held[1]) != len(after)):  # type: ignore[arg-type]
        plan = _plan(spec, after)
        return plan, plan
    before, plan = held[1], held[2]
    if before is after:
        return plan, ()
    changed = 0
    for i in compress(count(), map(operator.is_not, before, after)):  # type: ignore[call-overload]
        if not _same_value(before[i], after[i]):  # type: ignore[index]
            changed |= 1 << i
    return plan, tuple(p for p in plan if p[2] & changed) if changed else ()


def _one_value(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Every field of ``a`` is one value with ``b``'s (:func:`_same_value`)."""
    return all(starmap(_same_value, compress(zip(a, b, strict=True), map(operator.is_not, a, b))))


def _run(report: CheckReport, where: str, e: Event, model: str, name: str, x: Any,
         failed: set[str], step: Any, *args: Any) -> None:
    """Check event ``e`` as ``step(*args)``, a step of ``x``, the instance ``name`` of
    ``model``, into ``report``: its outcome, then the invariants after it."""
    key = f"{model}/{name}"
    if key in failed:
        return
    before = x.state
    spec: Spec = x.spec()
    try:
        t = step(*args)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise TraceFormatError(f"{where}: a malformed {model} {e['action']} event "
                               f"({type(exc).__name__}: {exc})") from exc
    except _Outside as out:
        report.outside[f"{model}.{e['action']}: {out.reason}"] += 1
        if model == LOG_START_OFFSET and out.resync:
            x.resync(e["action"], e["args"], e["changed"])
        t = None
        after = x.state
    except _Refused as ref:
        failed.add(key)
        report.failures.append(Failure(where, int(e["seq"]), model, name, e["action"], ref.kind,
                                       ref.message, spec.describe(before),
                                       ref.after or "(no successor)"))
        return
    else:
        if t is None:
            report.stutters += 1
            outcome = e["args"].get("outcome")
            label = f"{model}.{e['action']}" + (f"({outcome})" if outcome in (
                "reject", "refused") else "")
            report.stutter_actions[label] += 1
            return
        if (t is not before and type(t) is type(before) and t == before
                and _one_value(t, before)):
            t = before  # the same value: its object kept (its invariants are not asked again)
        x.state = t
        after = t
        report.steps += 1
        if report.track_states and t is not x.reached:
            try:
                report.reached.add((model, t))
            except TypeError:  # a value recorded in a trace that is not hashable
                report.states.add(fingerprint(model, t))
            x.reached = t
        report.actions[f"{model}.{x.label or e['action']}"] += 1
    finally:
        notes = x.notes
        if notes:
            for note in notes:
                report.outside[f"{model}.{note}"] += 1
            notes.clear()
    if x.leaderless:
        return  # no leader: outside the model, whose invariants speak of its leader's log
    # A leader change, or a replica added, re-bases LogStartOffset's constants: ``before`` is
    # described by the spec it was a state of.
    now = x.spec()
    # An invariant that held in x.held (the twin and the last state every invariant held in)
    # and reads no field changed since holds now: only the others are asked. The first one
    # violated is the first of them all.
    plan, asked = _to_ask(x, now, after)
    if report.ask_every_invariant:
        _ask_every_invariant(now, model, plan, asked, after)
    for inv, holds, _ in asked:
        if not holds(after):
            failed.add(key)
            report.failures.append(Failure(where, int(e["seq"]), model, name, e["action"],
                                           "invariant", f"{inv} is violated after this step",
                                           spec.describe(before), now.describe(after)))
            return
    x.held = (now, after, plan)


def _ask_every_invariant(spec: Spec, model: str, plan: _Plan, asked: _Plan,
                         after: State) -> None:
    """The cross-check of :attr:`CheckReport.ask_every_invariant`: each invariant of ``spec``
    is the conjunction of its parts in ``plan``, and one violated in ``after`` has a part
    violated among those ``asked`` (else AssertionError)."""
    for inv, holds in spec.invariants():
        verdict = holds(after)
        if verdict != all(part(after) for name, part, _ in plan if name == inv):
            raise AssertionError(f"{inv} of {model} is not the conjunction of its parts")
        if not verdict and all(part(after) for name, part, _ in asked if name == inv):
            raise AssertionError(f"{inv} of {model} is violated after a step that changed "
                                 "none of the variables its twin declares it reads")


def check_file(path: Path, report: CheckReport) -> None:
    """Replay every trace of one file into ``report`` (see :func:`check_paths`)."""
    check_paths([path], report)


def check_paths(paths: Iterable[str | Path], report: CheckReport | None = None) -> CheckReport:
    """Replay every trace under ``paths``: events are grouped by trace id (a trace may span
    files, a file may hold several), put in ``seq`` order, and each trace is checked by
    :func:`check_trace`. Bad input is reported per trace (or per line, when a line names no
    trace) and the rest is checked; TraceFormatError only for a path that holds no trace."""
    report = report if report is not None else CheckReport()
    start = time.perf_counter()
    # The events and the states they make are hundreds of thousands of objects, none in a
    # cycle: with the cyclic collector on, its passes over them cost a third of the check.
    with collector_paused():
        _check_paths(paths, report)
    report.seconds += time.perf_counter() - start
    return report


def _check_paths(paths: Iterable[str | Path], report: CheckReport) -> None:
    """:func:`check_paths` but its clock (the events are freed when it returns)."""
    traces: dict[str, list[tuple[str, Event]]] = {}
    for path in trace_files(paths):
        report.files += 1
        for where, got in scan(path):
            if isinstance(got, BadInput):
                report.bad_input.append(got)
                report.events += 1
                report.outcomes[("?", "?", "bad input")] += 1
            else:
                traces.setdefault(got["trace"], []).append((where, got))
    named_bad = {b.trace for b in report.bad_input if b.trace}
    report.traces += len(named_bad - set(traces))  # every line of these was bad
    for trace, lines in traces.items():
        if trace in named_bad:  # a line of it is not an event: do not replay the rest
            skip_trace(lines, report)
            continue
        check_trace(trace, lines, report)


__all__ = ["BadInput", "CheckReport", "Failure", "TraceFormatError", "check_file", "check_paths",
           "check_trace", "parse_event", "parse_line", "read_events", "scan", "scan_bytes",
           "skip_trace", "trace_files", "whole_trace"]
