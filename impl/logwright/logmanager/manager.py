"""The log manager: all log dirs of one broker.

Invariants upheld here:
- A dir that fails (an I/O error, a corrupt checkpoint) goes offline alone: its partitions go
  offline, every other dir keeps serving (hazards 5 and 11). Only when every dir is offline does the
  broker have to stop (``all_dirs_offline``). Each dir's ``LogDirStatus`` (storage/) is handed
  to its logs, which report an I/O error there: no log calls up into the manager.
- A directory that cannot be classified is set aside and reported, never fatal and never deleted
  (hazard 2). ``lost+found`` and the broker's own files are ignored.
- A raised log start offset is durable before it is acknowledged: each dir has one
  ``LogStartOffsetCheckpoint`` (storage/), handed to every log of the dir, which the log rewrites
  (tmp + fsync + rename + dir fsync) before a raise returns, not on the periodic schedule Kafka
  uses (hazard 12). The manager writes the periodic checkpoints (recovery points, high
  watermarks, and start offsets too) from what it asks its logs; it never writes a file inside a
  partition dir: each log owns its own.
- A partition whose own metadata file (``partition.metadata``, ``leader-epoch-checkpoint``) is
  malformed takes its dir offline at start-up (hazard 11), and is never created afresh in
  another dir while its data sits in the offline one.
- ``-delete`` dirs are removed only after ``file.delete.delay.ms`` (the topic's, else the
  broker default).
- A log is trimmed only under its topic's own config: once ``await_topic_configs`` is called (a
  broker does, as the controller owns topic configs), retention skips a topic until
  ``set_topic_overrides`` has told its configs, so a broker default stricter than the topic's
  override never deletes records between start-up and the controller's first word.
- With a ``DataDirIdentity`` (every broker of a ``Cluster``): each dir's ``.lock`` is held from
  start-up to shutdown or halt, so a second broker process on the same dir fails with
  ``DataDirLockedError`` before writing anything; each dir's ``meta.properties`` names this
  cluster and node (a fresh dir gets one, with a new ``directory.id``), and a dir of another
  cluster or node, or two dirs with one ``directory.id``, make start-up fail with
  ``DataDirMismatchError`` before anything is written to any dir (Kafka refuses to start too).
  A corrupt ``meta.properties`` takes only its dir offline.
"""

from __future__ import annotations

import errno
import logging
import posixpath
import random
from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from logwright.configs import ConfigValue
from logwright.errors import (
    CheckpointError,
    DataDirError,
    DataDirLockedError,
    DataDirMismatchError,
    InvalidConfig,
    KafkaStorageError,
    LogDirNameError,
    LogwrightError,
)
from logwright.logmanager.collector import collector_paused
from logwright.logmanager.move_trace import MoveTracer
from logwright.logmanager.orphans import (
    DEFERRED,
    DELETED,
    OrphanSettings,
    decide,
    due_ms,
    precheck,
    read_stray_facts,
)
from logwright.logmanager.strays import StrayLog
from logwright.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    forget_last_keys,
)
from logwright.storage.config import LogConfig
from logwright.storage.dir_status import LogDirStatus
from logwright.storage.epoch_cache import epoch_at
from logwright.storage.log import PartitionLog, RaiseObserver
from logwright.storage.meta_properties import (
    LOCK_FILE,
    MetaProperties,
    MetaPropertiesFile,
    duplicate_directory_id,
    identity_mismatch,
)
from logwright.storage.metadata_files import PartitionMetadataFile, StrayStartOffsetFile
from logwright.storage.naming import (
    DirKind,
    ParsedDir,
    TopicPartition,
    Uuid,
    delete_dir_name,
    future_dir_name,
    is_ignored_entry,
    live_dir_name,
    parse_dir_name,
    parse_dir_names,
    stray_dir_name,
    validate_topic_partition,
)
from logwright.storage.start_offset_checkpoint import LogStartOffsetCheckpoint
from logwright.world.clock import Clock
from logwright.world.fs import FileLock, FileSystem, child_path, write_file_atomic
from logwright.world.scheduler import Scheduler, Task
from logwright.world.trace import (
    NO_TRACE,
    STRAY_CLEANUP,
    TraceRecorder,
    partition_instance,
    topic_id_text,
)

_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DataDirIdentity:
    """Whose log dirs these are: checked against, and written to, each dir's meta.properties.

    ``rng`` draws the ``directory.id`` of a fresh dir (injected, so one seed gives one id).
    """

    cluster_id: str
    node_id: int
    rng: random.Random = field(compare=False, repr=False)


@dataclass(frozen=True)
class LogManagerConfig:
    """Broker-level log settings, Kafka names and defaults (kafka-compatibility.md "Configs")."""

    log: LogConfig = field(default_factory=LogConfig)
    retention_check_interval_ms: int = 300_000  # log.retention.check.interval.ms
    initial_task_delay_ms: int = 30_000  # log.initial.task.delay.ms
    recovery_point_checkpoint_interval_ms: int = 60_000  # log.flush.offset.checkpoint.interval.ms
    high_watermark_checkpoint_interval_ms: int = 5_000  # replica.high.watermark.checkpoint...
    flush_interval_ms: int | None = None  # log.flush.interval.ms: None = leave it to the OS
    # log.segment.delete.delay.ms: the default of the topic config file.delete.delay.ms
    file_delete_delay_ms: int = 60_000
    # True: a raised log start offset is durable before it is acknowledged (hazard 12). False
    # is Kafka's behaviour (a periodic checkpoint only); it exists so the crash campaign can
    # show that it loses acknowledged deletions.
    durable_log_start_offset: bool = True
    # orphan.partition.removal.delay.ms (KIP-370): how long a stray waits, from when it was set
    # aside or found at start-up, before orphan removal may delete it (orphans.py).
    orphan_partition_removal_delay_ms: int = 7_200_000

    def __post_init__(self) -> None:
        delay = self.orphan_partition_removal_delay_ms
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
            raise InvalidConfig("orphan.partition.removal.delay.ms", delay,
                                "must be an integer >= 0")


@dataclass
class LogDirState:
    """One log dir as the manager sees it."""

    path: str
    logs: dict[TopicPartition, PartitionLog] = field(default_factory=dict)
    pending_deletes: dict[str, int] = field(default_factory=dict)  # dir name -> due time ms
    strays: dict[str, StrayLog] = field(default_factory=dict)  # dir name -> the stray
    #: Names of ``-future`` dirs found at start-up and not loaded (R5: a lone future dir, never
    #: promoted; docs/jbod.md).
    futures: list[str] = field(default_factory=list)
    #: The future logs in this dir (JBOD moves into it), by partition; each partition's live
    #: log is in another dir.
    future_logs: dict[TopicPartition, PartitionLog] = field(default_factory=dict)
    #: ``logs`` and ``future_logs`` together (read live, never copied): what the dir's status
    #: and start offset checkpoint cover.
    all_logs: ChainMap[TopicPartition, PartitionLog] = field(init=False, repr=False)
    unrecognised: dict[str, str] = field(default_factory=dict)  # dir name -> why
    # Partitions whose dir here could not be loaded (a malformed metadata file of their own):
    # their data is in this offline dir, so they are not created afresh elsewhere.
    unloadable: dict[TopicPartition, str] = field(default_factory=dict)
    #: The dir's ``log-start-offset-checkpoint``, over ``logs``; handed to each of its logs.
    start_offset_checkpoint: LogStartOffsetCheckpoint = field(init=False, repr=False)
    #: Online or offline, over ``logs``; handed to each of its logs, which report I/O errors.
    status: LogDirStatus = field(init=False)

    def __post_init__(self) -> None:
        self.all_logs = ChainMap(self.logs, self.future_logs)
        self.status = LogDirStatus(self.path, self.all_logs)

    @property
    def online(self) -> bool:
        """Whether the dir still serves."""
        return self.status.online

    @property
    def offline_reason(self) -> str | None:
        """Why the dir went offline, or None while it is online."""
        return self.status.offline_reason


def tp_is_live(state: LogDirState, log: PartitionLog) -> bool:
    """Whether ``log`` is its partition's live log in ``state`` (not a future log)."""
    return state.logs.get(log.tp) is log


#: What start-up does with a partition dir (R1..R5, docs/jbod.md), when the partition has more
#: than one live or future dir: load it as the live log, rename it ``-delete`` (R2), load it as
#: the future log of a move in progress (R3), or leave it untouched (R5); or, when live dirs of
#: the partition carry different topic ids (R7), load it, report it, and set it aside as a
#: stray for the controller's LeaderAndIsr to revive the one it names; or (R8) load another live
#: dir of the same topic id to compare with the one R1 chose: the copy that holds the others'
#: records serves, a copy another holds all of goes ``-delete`` (R2), any other is set aside.
_LOAD, _DELETE, _RESUME, _LEAVE, _DOUBT = "load", "delete", "resume", "leave", "doubt"
_COMPARE = "compare"


def holds_every_record_of(log: PartitionLog, other: PartitionLog) -> bool:
    """``log`` holds every record ``other`` holds, as a follower's truncation would judge it
    (OffsetForLeaderEpoch): ``other`` holds none, or it ends at or below ``log``'s end and
    ``log`` knows the leader epoch of ``other``'s last record to end at or beyond it. Records
    with one offset and one leader epoch are one record, with the same records before them
    (Kafka's log matching), so that settles every record below too."""
    end = other.log_end_offset
    if end <= other.log_start_offset:
        return True
    if end > log.log_end_offset:
        return False
    last = _last_epoch(other)
    if last < 0:
        return False  # the epoch of its last record is not known: nothing to compare
    answer = log.end_offset_for_epoch(last)
    return answer is not None and answer[0] == last and answer[1] >= end


def _last_epoch(log: PartitionLog) -> int:
    """The leader epoch of ``log``'s last record (-1: none, or not known)."""
    if log.log_end_offset <= log.log_start_offset:
        return -1
    found = epoch_at(log.leader_epoch_cache.pairs, log.log_end_offset - 1)
    return -1 if found is None else found


def _ahead(log: PartitionLog, other: PartitionLog) -> bool:
    """R8: ``log`` should serve rather than ``other``: it holds every record ``other`` does
    and more; or neither holds all of the other's and ``log``'s last record has the newer
    leader epoch, or the same and ``log`` is longer."""
    if holds_every_record_of(other, log):
        return False
    if holds_every_record_of(log, other):
        return True
    return (_last_epoch(log), log.log_end_offset) > (_last_epoch(other), other.log_end_offset)


class _DirCheckpoints(NamedTuple):
    """A dir's offset checkpoints as start-up read them."""

    recovery_points: dict[TopicPartition, int]
    start_offsets: dict[TopicPartition, int]
    high_watermarks: dict[TopicPartition, int]


@dataclass
class StartupReport:
    """What start-up found: per dir, partitions loaded, recovered, set aside, offline."""

    loaded: int = 0
    recovered: int = 0
    truncated_bytes: int = 0
    clean_dirs: list[str] = field(default_factory=list)
    offline_dirs: dict[str, str] = field(default_factory=dict)
    set_aside: dict[str, str] = field(default_factory=dict)  # path -> why
    queued_deletes: list[str] = field(default_factory=list)
    # Partition dirs shut down cleanly whose segment files did not line up (an overlap or a
    # gap), recovered as after a crash: path -> why.
    distrusted: dict[str, str] = field(default_factory=dict)
    formatted_dirs: list[str] = field(default_factory=list)  # got their first meta.properties
    # R6: logs re-stamped above any copy an offline dir can hold: path -> new generation.
    restamped: dict[str, int] = field(default_factory=dict)
    # R7: live copies of one partition under different topic ids, each set aside as a stray
    # (with where its log ended, for the registration's replica reports).
    doubted: list[DoubtedCopy] = field(default_factory=list)


@dataclass(frozen=True)
class DoubtedCopy:
    """A live copy of a partition that start-up found beside another under a different topic
    id (R7, docs/jbod.md): it cannot tell which generation of the topic is current, so it set
    each aside as a stray, and the LeaderAndIsr revives the one whose topic id it names. Where
    the copy's log ended is reported at registration, as for a loaded replica."""

    stray: StrayLog
    #: Its leader epoch cache (each epoch with the offset it begins at), its log end offset and
    #: its log start offset.
    epochs: tuple[tuple[int, int], ...]
    log_end_offset: int
    log_start_offset: int


class LogManager:
    """Owns every partition log of one broker, across its log dirs."""

    def __init__(
        self,
        fs: FileSystem,
        log_dirs: Iterable[str],
        clock: Clock,
        scheduler: Scheduler,
        config: LogManagerConfig | None,
        rng: random.Random,
        identity: DataDirIdentity | None = None,
        name_rng: random.Random | None = None,
    ) -> None:
        # The uuids of -delete, -future and -stray dir names (default: rng). A real broker's
        # come from the operating system's randomness: a seeded generator repeats its sequence
        # at every process start, and a name still on disk from the last run would collide.
        self.name_rng = name_rng if name_rng is not None else rng
        self.fs = fs
        self.identity = identity
        self._locks: dict[str, FileLock] = {}
        #: Each dir's ``directory.id`` from its meta.properties (with an identity only).
        self.directory_ids: dict[str, Uuid] = {}
        self.clock = clock
        self.scheduler = scheduler
        self.config = config if config is not None else LogManagerConfig()
        #: The trace recorder (``world/trace.py``), the replica id it reports as, and whether
        #: start-up is over (the broker reports the loaded logs first).
        self.trace: TraceRecorder = NO_TRACE
        self.trace_replica = -1
        self.trace_live = False
        #: ReplicaMove's events of this broker's moves (off with the recorder).
        self.move_trace = MoveTracer(self)
        self.rng = rng  # passed in (seeded by the world), never defaulted
        self.dirs: dict[str, LogDirState] = {}
        for path in log_dirs:
            norm = posixpath.normpath(path)
            if norm in self.dirs:
                raise LogwrightError(f"log dir {path} is listed twice")
            state = self.dirs[norm] = LogDirState(norm)
            state.start_offset_checkpoint = LogStartOffsetCheckpoint(fs, norm, state.all_logs)
        if not self.dirs:
            raise LogwrightError("at least one log dir is needed")
        self.topic_configs: dict[str, LogConfig] = {}
        self.topic_overrides: dict[str, dict[str, ConfigValue]] = {}
        # Topics whose configs came from the controller since start-up; None: no controller
        # supplies configs (a log manager used alone), so the broker defaults are the truth.
        self.configured_topics: set[str] | None = None
        self._tasks: list[Task] = []
        self.started = False
        self.full_request_applied = False  # set once this incarnation applied a FULL LeaderAndIsr
        self._plan: dict[tuple[str, str], str] = {}
        #: The parse of each dir entry name the recovery plan read, until the dirs are loaded.
        self._parsed_names: dict[str, ParsedDir] = {}
        #: Each dir's listing as the recovery plan took it, until that dir is loaded.
        self._listings: dict[str, list[tuple[str, bool | None]]] = {}
        #: R7: the doubted copies start-up loaded, to set aside once every dir is loaded.
        self._doubted: list[tuple[LogDirState, PartitionLog]] = []
        #: R8: the other live copies of one topic id start-up loaded (dir, entry name, log), to
        #: compare with R1's once every dir is loaded.
        self._compared: list[tuple[LogDirState, str, PartitionLog]] = []

    # ---- start-up ------------------------------------------------------------------------------

    def startup(self) -> StartupReport:
        """Load every partition of every dir and schedule the periodic tasks."""
        report = StartupReport()
        if self.identity is not None:
            self._claim_dirs(self.identity, report)
        with collector_paused():
            self._plan = self._recovery_plan()
            for state in self.dirs.values():
                if not state.online:
                    continue
                try:
                    self._load_dir(state, report)
                except (OSError, CheckpointError) as exc:
                    self._take_offline(state, f"{type(exc).__name__}: {exc}")
                    report.offline_dirs[state.path] = state.offline_reason or ""
            self._parsed_names = {}  # (before the pause's collection looks at them)
            self._listings = {}
            forget_last_keys()
        self._settle_live_copies(report)
        self._set_aside_doubted(report)
        if any(not state.online for state in self.dirs.values()):
            self._restamp_generations(report)
        self._schedule_tasks()
        self.started = True
        return report

    def _recovery_plan(self) -> dict[tuple[str, str], str]:
        """Recovery of JBOD moves, from the dir names (and the generations their
        ``partition.metadata`` records) alone, for each partition with more than one live or
        future dir across the online dirs: R1 the live dir of the highest generation is loaded
        (the first found of several); every other live dir of its topic id is loaded to compare
        (R8, ``_settle_live_copies``: the copy holding the others' records serves, and R2 renames
        ``-delete`` each copy it holds every record of); R3 a ``-future`` dir of a higher
        generation than R1's live dir is loaded as the move's future log (the newest one if
        several; any other goes ``-delete``); R5 with no live dir, a ``-future`` dir is left
        untouched (never promoted). Generations compare
        only within one topic id; R7: when live dirs of the partition carry different topic ids
        (a dir that was offline while the topic was deleted and created again), start-up cannot
        tell which is current, so each is doubted (``_set_aside_doubted``). A metadata file that
        cannot be read leaves its partition to the ordinary loading (which reports it).
        Returns (dir, name) -> what to do; a dir not named is loaded as it would be anyway.
        Each dir's listing is kept for its loading (``_listings``): nothing before that changes
        the dir, so a second listing would find the same entries."""
        found: dict[TopicPartition, list[tuple[str, str, DirKind]]] = {}
        for state in self.dirs.values():
            if not state.online:
                continue
            try:
                if not self.fs.exists(state.path):
                    continue
                listing = self._listings[state.path] = self.fs.list_entries(state.path)
            except OSError:
                continue  # loading the dir takes it offline
            for name, parsed in parse_dir_names(
                    name for name, _ in listing if not is_ignored_entry(name)):
                # A name's parse depends on the name alone: loading the dirs reuses it.
                self._parsed_names[name] = parsed
                if parsed.kind is DirKind.LIVE or parsed.kind is DirKind.FUTURE:
                    found.setdefault(parsed.tp, []).append((state.path, name, parsed.kind))
        plan: dict[tuple[str, str], str] = {}
        for entries in found.values():
            if len(entries) == 1 and entries[0][2] is DirKind.LIVE:
                continue
            try:
                ids = {(d, n): PartitionMetadataFile(self.fs, posixpath.join(d, n))
                       .read_with_generation() for d, n, _ in entries}
            except (OSError, CheckpointError):
                continue
            # A move never changes a log's topic id: generations compare within one topic id.
            by_id: dict[Uuid | None, list[tuple[str, str, DirKind]]] = {}
            for d, n, k in entries:
                by_id.setdefault(ids[(d, n)][0], []).append((d, n, k))
            doubt = sum(any(k is DirKind.LIVE for _, _, k in group)
                        for group in by_id.values()) > 1
            for group in by_id.values():
                self._plan_generations(
                    [(ids[(d, n)][1], d, n, k) for d, n, k in group], plan, doubt)
        return plan

    @staticmethod
    def _plan_generations(entries: list[tuple[int, str, str, DirKind]],
                          plan: dict[tuple[str, str], str], doubt: bool) -> None:
        """R1..R5 over the live and future dirs of one partition under one topic id (generation,
        dir, name, kind), every live dir but R1's left to R8 to compare; with ``doubt`` (R7: live
        dirs of the partition under another topic id too), the live dirs of the highest
        generation are doubted, and any future dir goes ``-delete`` (its live log holds all it
        does, and a doubted log's move is cancelled anyway)."""
        lives = [(g, d, n) for g, d, n, k in entries if k is DirKind.LIVE]
        futures = sorted(((g, d, n) for g, d, n, k in entries if k is DirKind.FUTURE),
                         reverse=True)
        if not lives:
            for _, d, n in futures:
                plan[(d, n)] = _LEAVE  # R5
            return
        top = max(g for g, _, _ in lives)
        winners = [(d, n) for g, d, n in lives if g == top]
        for g, d, n in lives:
            if g < top or (not doubt and (d, n) != winners[0]):
                plan[(d, n)] = _COMPARE  # R8, then R2 if R1's copy holds all it does
        if doubt:
            for winner in winners:
                plan[winner] = _DOUBT  # R7
            for _, d, n in futures:
                plan[(d, n)] = _DELETE
            return
        plan[winners[0]] = _LOAD  # R1
        resumed = False
        for g, d, n in futures:
            if g > top and d != winners[0][0] and not resumed:
                plan[(d, n)] = _RESUME  # R3
                resumed = True
            else:
                plan[(d, n)] = _DELETE

    def _settle_live_copies(self, report: StartupReport) -> None:
        """R8: a partition with live copies of one topic id in several dirs serves the copy that
        holds every record of the others (:func:`holds_every_record_of`): R1's, of the highest
        generation, when it does (a JBOD swap cut short leaves two equal copies); when none
        does, the one whose last record has the newest leader epoch, then the longest. Each
        other copy goes ``-delete`` (R2) when the copy served holds all it does, and is set
        aside otherwise (reported, never deleted). A generation orders the copies of one move,
        not copies made apart: a broker's copy sits on a failed dir, a reassignment moves the
        replica away and back while the broker restarted without that dir, and a new copy of
        generation 0 holds the newest records. Serving the other by its number, or by dir
        order, lost them. When R1's copy is doubted (R7), each other copy of its topic id goes
        ``-delete`` if the doubted one holds all it does, else is set aside. An I/O error takes
        its dir offline (the copy stays on disk, unserved)."""
        compared, self._compared = self._compared, []
        by_tp: dict[TopicPartition, list[tuple[LogDirState, str, PartitionLog]]] = {}
        for state, name, log in compared:
            by_tp.setdefault(log.tp, []).append((state, name, log))
        for tp, others in by_tp.items():
            topic_id = others[0][2].topic_id
            served = next(((d, posixpath.basename(x.dir_path), x) for d in self.dirs.values()
                           if d.online for x in (d.logs.get(tp),)
                           if x is not None and x.topic_id == topic_id), None)
            reference = served[2] if served is not None else next(
                (x for d, x in self._doubted if d.online and x.tp == tp
                 and x.topic_id == topic_id), None)
            if served is not None:
                best = served
                for copy in others:
                    if _ahead(copy[2], best[2]):
                        best = copy
                if best is not served:
                    self._serve_instead(served, best)
                    others = [served, *(c for c in others if c is not best)]
                reference = best[2]
            for state, name, log in others:
                log.close()
                if not state.online:
                    continue
                if reference is not None and holds_every_record_of(reference, log):
                    try:
                        self._recover_to_delete(state, name, report)
                    except OSError as exc:
                        self._take_offline(state, f"R2 on {log.dir_path}: {exc}")
                        report.offline_dirs[state.path] = state.offline_reason or ""
                    continue
                why = ("no copy of its topic id is served" if reference is None else
                       f"it holds records the copy {'served' if served else 'doubted'} from "
                       f"{reference.dir_path} (generation {reference.generation}) does not "
                       f"(its end {log.log_end_offset}, that copy's "
                       f"{reference.log_end_offset})")
                self._set_aside_copy(state, name, tp, why, report)

    def _serve_instead(self, served: tuple[LogDirState, str, PartitionLog],
                       best: tuple[LogDirState, str, PartitionLog]) -> None:
        """R8: ``best``, a copy start-up loaded to compare, is the partition's log instead of
        ``served`` (R1's); a move resumed from R1's copy (R3) is cancelled: its future log is
        closed, not served, and left for the next start-up's R3 or R2."""
        tp = best[2].tp
        assert served[0].logs.get(tp) is served[2], "R1's copy is the one served"
        del served[0].logs[tp]
        best[0].logs[tp] = best[2]
        for state in self.dirs.values():
            future = state.future_logs.pop(tp, None)
            if future is not None:
                future.close()
                _logger.warning("%s: the move resumed from %s is cancelled: %s serves instead "
                                "(R8)", tp, served[2].dir_path, best[2].dir_path)
        _logger.warning("%s: %s serves instead of %s (generation %d), whose records it holds "
                        "or whose last leader epoch is older (R8)", tp, best[2].dir_path,
                        served[2].dir_path, served[2].generation)

    def _set_aside_copy(self, state: LogDirState, name: str, tp: TopicPartition, why: str,
                        report: StartupReport) -> None:
        """R8's copy that may hold records the copy served does not: left on disk, unserved,
        reported (``StartupReport.set_aside``), never deleted."""
        path = child_path(state.path, name)
        reason = f"{tp}: another live copy of its topic id is served; not deleted: {why}"
        state.unrecognised[name] = reason
        report.set_aside[path] = reason
        _logger.warning("%s set aside: %s", path, reason)

    def _set_aside_doubted(self, report: StartupReport) -> None:
        """R7: set aside, as strays, the live copies of a partition found under different topic
        ids (loaded first, so that where each log ends is known and reported at registration).
        None is served before the controller names the topic id: its LeaderAndIsr then revives
        the copy of that id (``ReplicaManager._revive``), and the others wait for orphan
        removal, which deletes a stray only once that cannot destroy new data. Choosing one
        copy here, by dir order, served a deleted generation and left the current one's records
        unloaded. An I/O error takes the dir offline (its copy stays on disk, unserved)."""
        doubted, self._doubted = self._doubted, []
        touched = []
        for state, log in doubted:
            if not state.online:
                continue
            epochs = log.leader_epoch_cache.pairs
            end, start = log.log_end_offset, log.log_start_offset
            reason = (f"start-up found live copies of {log.tp} under different topic ids "
                      f"(this one {topic_id_text(log.topic_id)}); the controller names the "
                      f"current one")
            try:
                stray = self._rename_stray(state, log, reason)
            except KafkaStorageError as exc:
                report.offline_dirs[state.path] = str(exc)
                continue
            report.doubted.append(DoubtedCopy(stray, epochs, end, start))
            if state not in touched:
                touched.append(state)
        for state in touched:
            self._forget_removed(state)  # an I/O error takes the dir offline
            if not state.online:
                report.offline_dirs[state.path] = state.offline_reason or ""

    def _restamp_generations(self, report: StartupReport) -> None:
        """R6: a dir is offline at start-up, so recovery (R1) saw only the others, and the
        offline one may hold a copy of a partition of a higher generation than the log loaded
        here: a move whose commit (S4) reached the disk and whose source rename (S5) did not.
        That copy holds nothing this log lacks (appends waited from S1), but once this log takes
        an append, the copy must never win when its dir is back. So every live log is
        re-stamped with its generation + 2, above any copy of it the offline dir can hold (one
        above, a future log of it), before it serves anything; a future log being resumed goes
        one above its live log again. A log without a topic id has no generation and was never
        moved. An I/O error takes that log's dir offline, as anywhere else."""
        for state in self.dirs.values():
            if not state.online:
                continue
            for tp, log in list(state.logs.items()):
                if log.topic_id is None:
                    continue
                try:
                    log.restamp_generation(log.generation + 2)
                except KafkaStorageError as exc:
                    report.offline_dirs[state.path] = str(exc)
                    break
                report.restamped[log.dir_path] = log.generation
                fut = self.get_future_log(tp)
                fut_state = self.future_dir_of(tp)
                if fut is None or fut_state is None:
                    continue
                try:
                    fut.restamp_generation(log.generation + 1)
                except KafkaStorageError as exc:
                    fut_state.future_logs.pop(tp, None)
                    report.offline_dirs[fut_state.path] = str(exc)
                    continue
                report.restamped[fut.dir_path] = fut.generation
        if report.restamped:
            _logger.warning("a log dir is offline at start-up: %d logs re-stamped with a higher "
                            "generation, so that a stale copy there never wins when it is back "
                            "(R6)", len(report.restamped))

    def _claim_dirs(self, identity: DataDirIdentity, report: StartupReport) -> None:
        """Lock every dir, then check every meta.properties, then write the missing ones.

        Raises DataDirLockedError or DataDirMismatchError (with every lock taken here released)
        before writing anything but a missing dir and its ``.lock``.
        """
        try:
            self._lock_dirs(report)
            found = self._check_meta_properties(identity, report)
            for state in self.dirs.values():
                if not state.online:
                    continue
                meta = found.get(state.path)
                if meta is None:
                    meta = self._format_dir(state, identity, found, report)
                if meta is not None:
                    self.directory_ids[state.path] = meta.directory_id
        except DataDirError:
            self._release_locks()
            raise

    def _lock_dirs(self, report: StartupReport) -> None:
        """Take every dir's ``.lock`` (creating a missing dir); DataDirLockedError if another
        process holds one, any other failure takes that dir offline."""
        fs = self.fs
        for state in self.dirs.values():
            try:
                if not fs.exists(state.path):
                    fs.makedirs(state.path)
                self._locks[state.path] = fs.lock(posixpath.join(state.path, LOCK_FILE))
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise DataDirLockedError(state.path) from exc
                self._offline_at_startup(state, report, f"locking {LOCK_FILE}: {exc}")

    def _check_meta_properties(self, identity: DataDirIdentity, report: StartupReport
                               ) -> dict[str, MetaProperties]:
        """Every online dir's meta.properties that exists, by dir; DataDirMismatchError for one
        of another cluster or node, or two with one ``directory.id``; an unreadable one takes
        its dir offline."""
        found: dict[str, MetaProperties] = {}
        for state in self.dirs.values():
            if not state.online:
                continue
            try:
                meta = MetaPropertiesFile(self.fs, state.path).read()
            except (OSError, CheckpointError) as exc:
                self._offline_at_startup(state, report, f"{type(exc).__name__}: {exc}")
                continue
            if meta is None:
                continue
            problem = (identity_mismatch(state.path, meta, identity.cluster_id,
                                         identity.node_id)
                       or duplicate_directory_id(state.path, meta, found))
            if problem is not None:
                raise DataDirMismatchError(problem)
            found[state.path] = meta
        return found

    def _format_dir(self, state: LogDirState, identity: DataDirIdentity,
                    found: dict[str, MetaProperties], report: StartupReport
                    ) -> MetaProperties | None:
        taken = {m.directory_id for m in found.values()}
        directory_id = Uuid.from_random(identity.rng)
        while directory_id in taken:
            directory_id = Uuid.from_random(identity.rng)
        meta = MetaProperties(identity.cluster_id, identity.node_id, directory_id)
        try:
            MetaPropertiesFile(self.fs, state.path).write(meta)
        except OSError as exc:
            self._offline_at_startup(state, report, f"writing meta.properties: {exc}")
            return None
        found[state.path] = meta
        report.formatted_dirs.append(state.path)
        return meta

    def _offline_at_startup(self, state: LogDirState, report: StartupReport,
                            reason: str) -> None:
        self._take_offline(state, reason)
        report.offline_dirs[state.path] = state.offline_reason or ""

    def _release_locks(self) -> None:
        for lock in self._locks.values():
            self.fs.unlock(lock)
        self._locks = {}

    @property
    def locked_dirs(self) -> list[str]:
        """The dirs whose ``.lock`` this manager holds."""
        return sorted(self._locks)

    def _load_dir(self, state: LogDirState, report: StartupReport) -> None:
        """Classify every entry of the dir and load its partition logs; then mark the dir as
        started (the clean-shutdown marker goes, or the checkpoints are rewritten)."""
        fs = self.fs
        if not fs.exists(state.path):
            fs.makedirs(state.path)
        clean_marker = posixpath.join(state.path, CLEAN_SHUTDOWN_FILE)
        clean = fs.exists(clean_marker)
        checkpoints = _DirCheckpoints(
            recovery_points=self._checkpoint(state, RECOVERY_POINT_CHECKPOINT).read(),
            start_offsets=self._checkpoint(state, LOG_START_OFFSET_CHECKPOINT).read(),
            high_watermarks=self._checkpoint(state, REPLICATION_OFFSET_CHECKPOINT).read())
        seen: dict[TopicPartition, str] = {}
        plan = self._plan  # (empty unless a JBOD move was cut short: no lookup per entry then)
        # The recovery plan's listing of the dir, if it took one (the same entries: nothing
        # since has changed the dir); else listed here.
        entries = self._listings.pop(state.path, None)
        if entries is None:
            entries = fs.list_entries(state.path)
        for name, is_dir in entries:
            action = plan.get((state.path, name)) if plan else None
            if action == _DELETE:
                self._recover_to_delete(state, name, report)
                continue
            if action in (_RESUME, _DOUBT, _COMPARE):
                self._load_partition(state, name, self._parse_dir_name(name).tp, checkpoints,
                                     clean, report, into=action)
                continue
            tp = self._classify_entry(state, name, seen, report, is_dir)
            if tp is not None:
                self._load_partition(state, name, tp, checkpoints, clean, report)
        if state.unloadable:
            # Every other log of the dir is registered (offline with it), so none of them is
            # created afresh elsewhere.
            raise CheckpointError(next(iter(state.unloadable.values())))
        if clean and any(posixpath.dirname(p) == state.path for p in report.distrusted):
            # Recovery may have cut what the checkpoints point into: record the new points
            # before the marker goes, as after a crash.
            self._write_checkpoints(state)
        if clean:
            # The marker must go durably before any write: a later crash must not look clean.
            fs.remove(clean_marker)
            fs.fsync_dir(state.path)
            report.clean_dirs.append(state.path)
        else:
            # Recovery may have cut tails; record the new recovery points at once.
            self._write_checkpoints(state)

    def _recover_to_delete(self, state: LogDirState, name: str, report: StartupReport) -> None:
        """R2 (and a superseded ``-future`` dir, or one of a doubted copy, R7): rename ``name``
        ``-delete`` and fsync the dir (if a crash cuts this short, the next start-up decides
        again from the names), then queue it for the delayed delete (R4). Raises OSError (the
        dir goes offline)."""
        tp = parse_dir_name(name).tp
        new = delete_dir_name(tp, Uuid.from_random(self.name_rng))
        self.fs.rename(posixpath.join(state.path, name), posixpath.join(state.path, new))
        self.fs.fsync_dir(state.path)
        state.pending_deletes[new] = self.clock.now_ms() + self.file_delete_delay_ms_for(tp.topic)
        report.queued_deletes.append(posixpath.join(state.path, new))
        _logger.warning("%s: %s superseded by a newer log generation (a JBOD move's swap cut "
                        "short) or by the live log of a move start-up cancels, renamed %s", tp,
                        posixpath.join(state.path, name), new)

    def _parse_dir_name(self, name: str) -> ParsedDir:
        """``parse_dir_name(name)``, kept from the recovery plan's pass over the same names."""
        parsed = self._parsed_names.get(name)
        return parsed if parsed is not None else parse_dir_name(name)

    def _classify_entry(self, state: LogDirState, name: str, seen: dict[TopicPartition, str],
                        report: StartupReport, is_dir: bool | None = None
                        ) -> TopicPartition | None:
        """The partition whose live log the entry ``name`` of the dir is, to load; or None,
        having recorded what else it is (ignored, unrecognised, -delete, -stray, -future, or a
        second live copy of a partition, set aside). ``is_dir``: whether the entry is a
        directory, when the listing told (None: asked here)."""
        if is_ignored_entry(name):
            return None
        path = child_path(state.path, name)
        if not (self.fs.is_dir(path) if is_dir is None else is_dir):
            return None
        try:
            parsed = self._parse_dir_name(name)
        except LogDirNameError as exc:
            state.unrecognised[name] = str(exc)
            report.set_aside[path] = str(exc)
            return None
        if parsed.kind is DirKind.DELETE:
            state.pending_deletes[name] = self.clock.now_ms() + self.config.file_delete_delay_ms
            report.queued_deletes.append(path)
            return None
        if parsed.kind is DirKind.STRAY:
            state.strays[name] = self._found_stray(state, name, parsed.tp,
                                                   parsed.maybe_truncated)
            return None
        if parsed.kind is DirKind.FUTURE:
            state.futures.append(name)
            if self._plan.get((state.path, name)) == _LEAVE:
                report.set_aside[path] = ("a future log with no live log of its partition on "
                                          "an online dir: never promoted (R5)")
            return None
        tp = parsed.tp
        duplicate = tp in seen
        if not duplicate:
            for other in self.dirs.values():  # (a loop, not any(): start-up asks per partition)
                if other is not state and tp in other.logs:
                    duplicate = True
                    break
        if duplicate:
            why = f"{tp} is also live in {seen.get(tp) or 'another log dir'}"
            state.unrecognised[name] = why
            report.set_aside[path] = why
            return None
        seen[tp] = state.path
        return tp

    def _load_partition(self, state: LogDirState, name: str, tp: TopicPartition,
                        checkpoints: _DirCheckpoints, clean: bool, report: StartupReport,
                        into: str = _LOAD) -> None:
        """Load ``tp``'s log from the dir entry ``name`` as its live log (``into`` _LOAD), its
        future log (_RESUME, R3) or a doubted copy to set aside (_DOUBT, R7), handing it the
        dir's start offset checkpoint. A malformed file of its own marks it unloadable (the dir
        goes offline)."""
        path = child_path(state.path, name)
        try:
            log, load = PartitionLog.load(
                self.fs, path, tp, self.config_for(tp.topic), self.clock,
                log_start_offset_checkpoint=checkpoints.start_offsets.get(tp),
                recovery_point=checkpoints.recovery_points.get(tp),
                high_watermark_checkpoint=checkpoints.high_watermarks.get(tp),
                clean_shutdown=clean,
                start_offset_checkpoint=self._start_offset_checkpoint(state),
                dir_status=state.status)
        except CheckpointError as exc:
            if into == _COMPARE:  # R8: a copy that cannot be read cannot be compared
                self._set_aside_copy(state, name, tp, f"its log cannot be loaded ({exc})",
                                     report)
                return
            state.unloadable[tp] = str(exc)
            return
        if into == _COMPARE:
            self._compared.append((state, name, log))
            return
        if into == _RESUME:
            state.future_logs[tp] = log
            return
        if into == _DOUBT:
            self._doubted.append((state, log))
            return
        state.logs[tp] = log
        report.loaded += 1
        report.recovered += 1 if load.recovered_segments else 0
        report.truncated_bytes += load.truncated_bytes
        if load.distrusted is not None:
            report.distrusted[path] = load.distrusted
            _logger.warning("%s: shut down cleanly but not trusted, recovered: %s", path,
                            load.distrusted)

    def _checkpoint(self, state: LogDirState, name: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(self.fs, posixpath.join(state.path, name))

    def _schedule_tasks(self) -> None:
        cfg = self.config
        sched = self.scheduler
        delay = cfg.initial_task_delay_ms
        self._tasks = [
            # Orphan removal shares the retention task (and its period): a task of its own
            # would draw from the scheduler's seeded tie-breaks and change every seeded run.
            sched.schedule("log-retention", self._retention_and_orphan_removal, delay,
                           cfg.retention_check_interval_ms),
            sched.schedule("log-recovery-point-checkpoint", self.checkpoint_all, delay,
                           cfg.recovery_point_checkpoint_interval_ms),
            sched.schedule("high-watermark-checkpoint", self.checkpoint_high_watermarks, delay,
                           cfg.high_watermark_checkpoint_interval_ms),
            sched.schedule("delete-logs", self.run_delayed_deletes, 0, 1_000),
        ]
        if cfg.flush_interval_ms is not None:
            self._tasks.append(sched.schedule("log-flusher", self.flush_all, delay,
                                              cfg.flush_interval_ms))

    # ---- configuration -------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        """The log config of ``topic`` (its override, else the broker default)."""
        return self.topic_configs.get(topic, self.config.log)

    def set_topic_overrides(self, topic: str, overrides: Mapping[str, ConfigValue]) -> LogConfig:
        """Make ``overrides`` (parsed topic configs, Kafka names) ``topic``'s per-topic config:
        the broker defaults with them applied. Every live log of the topic gets the new config
        at once, and logs created later start with it. Returns the topic's log config."""
        overrides = dict(overrides)
        config = self.config.log.with_topic_overrides(overrides)
        if self.configured_topics is not None:
            self.configured_topics.add(topic)
        if overrides:
            self.topic_overrides[topic] = overrides
            self.topic_configs[topic] = config
        else:
            self.topic_overrides.pop(topic, None)
            self.topic_configs.pop(topic, None)
        for state in self.dirs.values():
            for tp, log in state.all_logs.items():
                if tp.topic == topic:
                    log.update_config(config)
        return config

    def await_topic_configs(self) -> None:
        """From now on a topic's logs get no retention until its configs are set (a broker
        calls this before start-up: the controller is the source of topic configs, and a log
        loaded from disk must not be trimmed by a broker default its topic overrides)."""
        self.configured_topics = set()

    def _configured(self, topic: str) -> bool:
        return self.configured_topics is None or topic in self.configured_topics

    def file_delete_delay_ms_for(self, topic: str) -> int:
        """How long ``topic``'s deleted dirs wait: its file.delete.delay.ms override, else the
        broker default (log.segment.delete.delay.ms)."""
        value = self.topic_overrides.get(topic, {}).get("file.delete.delay.ms")
        return value if isinstance(value, int) else self.config.file_delete_delay_ms

    # ---- lookup --------------------------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> PartitionLog | None:
        """The live log of ``tp`` on this broker, or None."""
        for state in self.dirs.values():
            log = state.logs.get(tp)
            if log is not None:
                return log
        return None

    def dir_of(self, tp: TopicPartition) -> LogDirState | None:
        """The dir holding ``tp``'s live log."""
        for state in self.dirs.values():
            if tp in state.logs:
                return state
        return None

    def all_logs(self) -> list[PartitionLog]:
        """Every live log, in every dir (online or not)."""
        return [log for state in self.dirs.values() for log in state.logs.values()]

    @property
    def online_dirs(self) -> list[str]:
        """The dirs still serving."""
        return [s.path for s in self.dirs.values() if s.online]

    @property
    def offline_dirs(self) -> list[str]:
        """The dirs taken offline."""
        return [s.path for s in self.dirs.values() if not s.online]

    @property
    def all_dirs_offline(self) -> bool:
        """When true the broker must stop: nothing is left to serve from."""
        return not any(s.online for s in self.dirs.values())

    # ---- create and delete ---------------------------------------------------------------------

    def create_log(self, tp: TopicPartition, topic_id: Uuid | None = None,
                   log_dir: str | None = None) -> PartitionLog:
        """Create ``tp``'s log (idempotent): in ``log_dir`` or the online dir with fewest logs."""
        validate_topic_partition(tp)
        existing = self.get_log(tp)
        if existing is not None:
            return existing
        held = next((s for s in self.dirs.values() if tp in s.unloadable), None)
        if held is not None:
            raise KafkaStorageError(f"{tp}: its log in {held.path} could not be loaded "
                                    f"({held.unloadable[tp]}) and that dir is offline")
        if log_dir is not None:
            state = self.dirs.get(posixpath.normpath(log_dir))
            if state is None:
                raise LogwrightError(f"{log_dir} is not a log dir of this broker")
            if not state.online:
                raise KafkaStorageError(f"log dir {log_dir} is offline")
        else:
            online = [s for s in self.dirs.values() if s.online]
            if not online:
                raise KafkaStorageError("every log dir is offline")
            state = min(online, key=lambda s: (len(s.logs), s.path))
        path = posixpath.join(state.path, live_dir_name(tp))
        try:
            log = PartitionLog.create(
                self.fs, path, tp, self.config_for(tp.topic), self.clock, topic_id,
                start_offset_checkpoint=self._start_offset_checkpoint(state),
                dir_status=state.status)
        except OSError as exc:
            self._take_offline(state, f"creating {path}: {exc}")
            raise KafkaStorageError(f"{tp}: I/O error creating its log in {state.path}: {exc}") \
                from exc
        state.logs[tp] = log
        return log

    def delete_log(self, tp: TopicPartition) -> str | None:
        """Rename ``tp``'s dir to ``-delete`` (durably) and delete it after the delay (a
        future log of it too: its move is cancelled).

        Returns the new dir name, or None if ``tp`` has no log here.
        """
        state = self.dir_of(tp)
        if state is None:
            return None
        log = state.logs[tp]
        if not state.online:
            raise KafkaStorageError(f"{tp}: log dir {state.path} is offline")
        self.abort_future_log(tp)  # a move of it is cancelled with it
        name = delete_dir_name(tp, Uuid.from_random(self.name_rng))
        try:
            log.close()
            self.fs.rename(log.dir_path, posixpath.join(state.path, name))
            self.fs.fsync_dir(state.path)
        except OSError as exc:
            self._take_offline(state, f"deleting {log.dir_path}: {exc}")
            raise KafkaStorageError(f"{tp}: I/O error deleting its log: {exc}") from exc
        del state.logs[tp]
        state.pending_deletes[name] = self.clock.now_ms() + self.file_delete_delay_ms_for(tp.topic)
        self._forget_removed(state)
        return name

    def run_delayed_deletes(self) -> int:
        """Remove ``-delete`` dirs whose delay has passed; returns how many went."""
        now = self.clock.now_ms()
        count = 0
        for state in self.dirs.values():
            if not state.online:
                continue
            for name, due in list(state.pending_deletes.items()):
                if due > now:
                    continue
                try:
                    path = posixpath.join(state.path, name)
                    if self.fs.exists(path):
                        self.fs.rmtree(path)
                    self.fs.fsync_dir(state.path)
                except OSError as exc:
                    self._take_offline(state, f"deleting {name}: {exc}")
                    break
                del state.pending_deletes[name]
                count += 1
        return count

    # ---- JBOD moves (KIP-113; docs/jbod.md) -----------------------------------------------

    def get_future_log(self, tp: TopicPartition) -> PartitionLog | None:
        """The future log of ``tp`` (the target of a move between this broker's dirs), or
        None."""
        for state in self.dirs.values():
            log = state.future_logs.get(tp)
            if log is not None:
                return log
        return None

    def future_dir_of(self, tp: TopicPartition) -> LogDirState | None:
        """The dir holding ``tp``'s future log, or None."""
        for state in self.dirs.values():
            if tp in state.future_logs:
                return state
        return None

    def create_future_log(self, tp: TopicPartition, log_dir: str) -> PartitionLog:
        """Start moving ``tp``'s live log to ``log_dir``: an empty future log there
        (``<tp>.<uuid>-future``, created durably) at the live log's start offset, of the live
        log's generation + 1 (step G). An existing future log in ``log_dir`` is returned as it
        is; one in another dir is aborted first.

        Raises LogwrightError when ``tp`` has no live log here, ``log_dir`` is not one of this
        broker's dirs, the live log is already in it, or it has no topic id (the generation is
        kept beside the topic id); KafkaStorageError when either dir is offline or fails
        meanwhile (the destination goes offline); KafkaError(INVALID_TOPIC_EXCEPTION) when the
        future dir's name would exceed 255 characters."""
        src_state = self.dir_of(tp)
        if src_state is None:
            raise LogwrightError(f"{tp} has no live log on this broker")
        dest = self.dirs.get(posixpath.normpath(log_dir))
        if dest is None:
            raise LogwrightError(f"{log_dir} is not a log dir of this broker")
        if dest is src_state:
            raise LogwrightError(f"{tp} is already in {dest.path}")
        if not src_state.online:
            raise KafkaStorageError(f"{tp}: log dir {src_state.path} is offline")
        if not dest.online:
            raise KafkaStorageError(f"log dir {dest.path} is offline")
        existing = dest.future_logs.get(tp)
        if existing is not None:
            return existing
        if self.get_future_log(tp) is not None:
            self.abort_future_log(tp)
        src = src_state.logs[tp]
        if src.topic_id is None:
            raise LogwrightError(f"{tp}: its log has no topic id, so no log generation can be "
                                 "recorded for a move")
        path = posixpath.join(dest.path, future_dir_name(tp, Uuid.from_random(self.name_rng)))
        try:
            log = PartitionLog.create(
                self.fs, path, tp, self.config_for(tp.topic), self.clock, src.topic_id,
                src.log_start_offset, start_offset_checkpoint=self._start_offset_checkpoint(dest),
                dir_status=dest.status, generation=src.generation + 1)
        except OSError as exc:
            self._take_offline(dest, f"creating {path}: {exc}")
            raise KafkaStorageError(f"{tp}: I/O error creating its future log in {dest.path}: "
                                    f"{exc}") from exc
        dest.future_logs[tp] = log
        if self.config.durable_log_start_offset and log.log_start_offset > 0:
            # The future log's start offset may lie inside a batch (a DeleteRecords): make it
            # durable now, or a crash would bring it back to the batch's base offset.
            try:
                dest.start_offset_checkpoint.write()
            except OSError as exc:
                dest.future_logs.pop(tp, None)
                self._take_offline(dest, f"writing checkpoints: {exc}")
                raise KafkaStorageError(f"{tp}: I/O error creating its future log in "
                                        f"{dest.path}: {exc}") from exc
        _logger.info("%s: moving from %s to %s (future log %s, generation %d)", tp,
                     src_state.path, dest.path, path, log.generation)
        self.move_trace.start(tp, src, log, "asked")
        return log

    def abort_future_log(self, tp: TopicPartition) -> str | None:
        """Cancel ``tp``'s move: its future dir renamed ``-delete`` (durably) and deleted after
        the delay; on an offline dir the future log is only forgotten (its files stay). Returns
        the ``-delete`` name, or None (no future log, or its dir offline). KafkaStorageError if
        the dir fails meanwhile (it goes offline)."""
        state = self.future_dir_of(tp)
        if state is None:
            return None
        self.move_trace.stop(tp, "cancelled")
        log = state.future_logs.pop(tp)
        log.close()
        if not state.online:
            return None
        name = delete_dir_name(tp, Uuid.from_random(self.name_rng))
        try:
            self.fs.rename(log.dir_path, posixpath.join(state.path, name))
            self.fs.fsync_dir(state.path)
        except OSError as exc:
            self._take_offline(state, f"aborting the move of {tp}: {exc}")
            raise KafkaStorageError(f"{tp}: I/O error aborting its move: {exc}") from exc
        state.pending_deletes[name] = self.clock.now_ms() + self.file_delete_delay_ms_for(tp.topic)
        # The dir's checkpoints forget it: a log of the same name created here later (the topic
        # deleted and created again) must not load the old log's offsets at a restart.
        self._forget_removed(state)
        return name

    def drop_future_log(self, tp: TopicPartition) -> None:
        """Forget ``tp``'s future log without touching its files (its dir, or the live log's,
        failed: the move stops; what is on disk is decided at the next start-up)."""
        state = self.future_dir_of(tp)
        if state is not None:
            self.move_trace.stop(tp, "its future log dropped (a dir failed)")
            state.future_logs.pop(tp).close()

    def swap_future_log(self, tp: TopicPartition) -> PartitionLog:
        """Steps S2 to S5 of the swap (docs/jbod.md), the caller holding ``tp``'s append lock
        (S1) with the future log caught up: the same end offset, start offset and high
        watermark as the live log, which is fsynced. In this order, each through the file
        system: S2 fsync the future log; S3 rename ``<tp>.<id>-future`` to ``<tp>`` in the
        destination; S4 fsync the destination dir (the commit point: from here a crash
        recovers to the moved log, R1); S5 rename the source to ``<tp>.<id>-delete`` and fsync
        the source dir. Returns the moved log, now ``tp``'s live log (step S6 is the caller's:
        appends go to it). The source is deleted after ``file.delete.delay.ms`` (S7).

        KafkaStorageError if a dir fails meanwhile: before S4 the live log stays the source
        (the future log is dropped); from S4 on, the moved log is live (the source dir is
        offline)."""
        src_state, dest = self.dir_of(tp), self.future_dir_of(tp)
        if src_state is None or dest is None:
            raise LogwrightError(f"{tp} has no move in progress")
        src, fut = src_state.logs[tp], dest.future_logs[tp]
        if (fut.log_end_offset, fut.log_start_offset) != (src.log_end_offset,
                                                           src.log_start_offset):
            raise LogwrightError(
                f"{tp}: the future log [{fut.log_start_offset}, {fut.log_end_offset}) has not "
                f"caught up with [{src.log_start_offset}, {src.log_end_offset})")
        assert src.recovery_point == src.log_end_offset, "S1 fsyncs the source first"
        if fut.generation <= src.generation:
            # Start-up re-stamps a resumed future log above its live log (R6); one that is not
            # above it would lose to the source at the next start-up (R1).
            raise LogwrightError(f"{tp}: the future log's generation {fut.generation} is not "
                                 f"above the live log's {src.generation}")
        live = posixpath.join(dest.path, live_dir_name(tp))
        renaming = False
        trace = self.move_trace
        try:
            fut.flush()  # S2
            trace.step(tp, "Flush", {"l": "fut"}, locked=True)
            # From S3 a power loss may restart the replica from the moved log, before the swap
            # records what it changes: the Intent of that event first.
            self._trace_swapped_segments(src, fut, intent=(src.high_watermark,
                                                           self._start_offset_checkpoint(dest)))
            fut.close()
            renaming = True
            self.fs.rename(fut.dir_path, live)  # S3
            trace.step(tp, "RenameFutureLive", locked=True, renamed=("fut", "live"))
            self.fs.fsync_dir(dest.path)  # S4: the commit point
            trace.step(tp, "FsyncDir", {"l": "fut"}, locked=True, fsynced="fut")
        except (OSError, KafkaStorageError) as exc:
            dest.future_logs.pop(tp, None)
            self._take_offline(dest, f"swapping {tp} in: {exc}")
            if renaming:
                # The rename may be durable: the next start-up may pick the moved log (R1), so
                # the source must acknowledge nothing more; it stops serving here.
                src.offline = True
                src.close()
            raise KafkaStorageError(f"{tp}: I/O error in the swap into {dest.path}: {exc}") \
                from exc
        del dest.future_logs[tp]
        gone = delete_dir_name(tp, Uuid.from_random(self.name_rng))
        try:
            new, _ = PartitionLog.load(
                self.fs, live, tp, self.config_for(tp.topic), self.clock,
                log_start_offset_checkpoint=fut.log_start_offset,
                recovery_point=fut.recovery_point, high_watermark_checkpoint=src.high_watermark,
                clean_shutdown=True, start_offset_checkpoint=self._start_offset_checkpoint(dest),
                dir_status=dest.status)
        except (OSError, CheckpointError) as exc:
            self._take_offline(dest, f"opening {live} after the swap: {exc}")
            # The commit (S4) is durable: the next start-up with this dir back picks the moved
            # log (R1), so the source must acknowledge nothing more; it stops serving here.
            src.offline = True
            src.close()
            raise KafkaStorageError(f"{tp}: I/O error opening its moved log: {exc}") from exc
        dest.logs[tp] = new
        del src_state.logs[tp]
        self._trace_swapped_segments(src, new)
        src.close()
        try:
            self.fs.rename(src.dir_path, posixpath.join(src_state.path, gone))  # S5
            trace.step(tp, "RenameSourceDelete", locked=True, renamed=("src", "delete"),
                       moved=new)
            self.fs.fsync_dir(src_state.path)
            trace.step(tp, "FsyncDir", {"l": "src"}, locked=True, fsynced="src")
        except OSError as exc:
            # The moved log is live (S4 is durable); the next start-up finishes S5 (R2).
            self._take_offline(src_state, f"renaming {src.dir_path} after the swap: {exc}")
            _logger.error("%s: the source %s was not renamed after the swap: %s", tp,
                          src.dir_path, exc)
        else:
            src_state.pending_deletes[gone] = (self.clock.now_ms()
                                               + self.file_delete_delay_ms_for(tp.topic))
            # The source dir's checkpoints forget it: a log of the same name created there
            # later (the topic deleted and created again) must not load its offsets.
            self._forget_removed(src_state)
        _logger.info("%s: moved from %s to %s", tp, src_state.path, dest.path)
        return new

    # ---- strays ---------------------------------------------------------------------------------

    def _found_stray(self, state: LogDirState, name: str, tp: TopicPartition,
                     name_cut: bool) -> StrayLog:
        """A ``-stray`` dir found at start-up; its topic id None when unreadable."""
        try:
            topic_id = PartitionMetadataFile(self.fs, posixpath.join(state.path, name)).read()
        except CheckpointError:
            topic_id = None
        path = posixpath.join(state.path, name)
        size = sum(self.fs.file_size(posixpath.join(path, f)) for f in self.fs.listdir(path)
                   if f.endswith(".log"))
        return StrayLog(state.path, name, tp, topic_id, self.clock.now_ms(),
                        "found at start-up", name_cut, size_bytes=size)

    def stray_logs(self) -> list[StrayLog]:
        """Every stray of every dir (an offline dir's too), by dir then name."""
        return [stray for path in sorted(self.dirs)
                for _, stray in sorted(self.dirs[path].strays.items())]

    def find_stray(self, tp: TopicPartition, topic_id: Uuid | None) -> StrayLog | None:
        """The stray on an online dir that is ``tp``'s log under ``topic_id``, if any (the
        newest set aside, should there be several)."""
        found = [s for state in self.dirs.values() if state.online
                 for s in state.strays.values() if s.matches(tp, topic_id)]
        return max(found, key=lambda s: (s.since_ms, s.name), default=None)

    def mark_stray(self, tp: TopicPartition, reason: str) -> StrayLog | None:
        """Set ``tp``'s live log aside: its start offset kept in its dir, the dir renamed
        ``-stray`` (durably), the log no longer live here. None when ``tp`` has no live log.
        KafkaStorageError when its dir is offline or fails meanwhile (then nothing is served
        from it either: the dir is offline)."""
        state = self.dir_of(tp)
        if state is None:
            return None
        if not state.online:
            raise KafkaStorageError(f"{tp}: log dir {state.path} is offline")
        self.abort_future_log(tp)  # a move of it is cancelled: only the live log is set aside
        stray = self._rename_stray(state, state.logs[tp], reason)
        self._forget_removed(state)
        return stray

    def _rename_stray(self, state: LogDirState, log: PartitionLog, reason: str) -> StrayLog:
        """Flush ``log`` (of dir ``state``), keep its start offset in its dir, close it and
        rename it ``-stray`` durably; it is no longer live here (the caller rewrites the dir's
        checkpoints). KafkaStorageError on an I/O error (the dir goes offline)."""
        tp = log.tp
        name = stray_dir_name(tp, Uuid.from_random(self.name_rng))
        try:
            log.flush()
            StrayStartOffsetFile(self.fs, log.dir_path).write(log.log_start_offset)
            log.close()
            self.fs.rename(log.dir_path, posixpath.join(state.path, name))
            self.fs.fsync_dir(state.path)
        except (OSError, KafkaStorageError) as exc:
            self._take_offline(state, f"setting {log.dir_path} aside as a stray: {exc}")
            raise KafkaStorageError(f"{tp}: I/O error setting its log aside: {exc}") from exc
        if state.logs.get(tp) is log:
            del state.logs[tp]
        stray = StrayLog(state.path, name, tp, log.topic_id, self.clock.now_ms(), reason,
                         size_bytes=log.size_bytes)
        state.strays[name] = stray
        _logger.warning("%s: set aside as stray %s (topic id %s): %s", tp, stray.path,
                        topic_id_text(log.topic_id), reason)
        return stray

    def revive_stray(self, stray: StrayLog) -> PartitionLog:
        """Make ``stray`` ``tp``'s live log again, from its own data (recovered as after a
        crash, with the start offset it had). LogwrightError if ``tp`` has a live log already
        or the stray is not one of this manager's; KafkaStorageError on an I/O error (its dir
        goes offline)."""
        state = self.dirs.get(stray.log_dir)
        if state is None or state.strays.get(stray.name) is not stray:
            raise LogwrightError(f"{stray.path} is not a stray of this broker")
        if stray.name_cut:
            raise LogwrightError(f"{stray.path}: its topic name was cut; it cannot be revived")
        if self.get_log(stray.tp) is not None:
            raise LogwrightError(f"{stray.tp} already has a live log")
        if not state.online:
            raise KafkaStorageError(f"{stray.tp}: log dir {state.path} is offline")
        path = posixpath.join(state.path, live_dir_name(stray.tp))
        try:
            start = StrayStartOffsetFile(self.fs, stray.path).read()
            self.fs.rename(stray.path, path)
            self.fs.fsync_dir(state.path)
            del state.strays[stray.name]
            log, _ = PartitionLog.load(
                self.fs, path, stray.tp, self.config_for(stray.tp.topic), self.clock,
                log_start_offset_checkpoint=start, recovery_point=None,
                high_watermark_checkpoint=None, clean_shutdown=False,
                start_offset_checkpoint=self._start_offset_checkpoint(state),
                dir_status=state.status)
            state.logs[stray.tp] = log
            self._write_checkpoints(state, untraced=log)
            kept = StrayStartOffsetFile(self.fs, path).path
            if state.online and self.fs.exists(kept):
                self.fs.remove(kept)
        except (OSError, CheckpointError) as exc:
            # Still on that disk (under either name), unreadable until the dir is back: listed
            # with its dir's other logs, as a live log stays listed when its dir fails; nothing
            # acts on an offline dir's strays (find_stray, orphan removal).
            state.strays[stray.name] = stray
            self._take_offline(state, f"reviving stray {stray.path}: {exc}")
            raise KafkaStorageError(f"{stray.tp}: could not revive its stray: {exc}") from exc
        _logger.warning("%s: stray %s revived (topic id %s)", stray.tp, stray.path,
                        topic_id_text(stray.topic_id))
        return log

    def orphan_settings(self) -> OrphanSettings:
        """What orphan removal decides with: its delay, the broker's default retention, and the
        retention check interval as its recheck period."""
        cfg = self.config
        return OrphanSettings(cfg.orphan_partition_removal_delay_ms, cfg.log.retention_ms,
                              cfg.retention_check_interval_ms)

    def orphan_count(self) -> int:
        """Strays on online dirs (the ``OrphanLogPartitionCount`` gauge)."""
        return sum(len(s.strays) for s in list(self.dirs.values()) if s.online)

    def orphan_size_bytes(self) -> int:
        """Bytes of the strays on online dirs (the ``OrphanLogPartitionSize`` gauge)."""
        return sum(stray.size_bytes for s in list(self.dirs.values()) if s.online
                   for stray in list(s.strays.values()))

    def run_orphan_removal(self) -> int:
        """Orphan removal (KIP-370, ``orphans.py``): every stray of an online dir whose check
        is due is deleted or deferred, each decision logged and traced with its reason.
        Returns how many were deleted. A stray is deleted by renaming its dir ``-delete``
        (durably; the delayed-delete task removes it after log.segment.delete.delay.ms), so
        a crash never leaves half a stray that could be revived. An I/O error takes its dir
        offline, and nothing more is done there."""
        now = self.clock.now_ms()
        settings = self.orphan_settings()
        deleted = 0
        for state in self.dirs.values():
            for stray in list(state.strays.values()):
                if not state.online:
                    break  # an offline dir's strays are never touched
                due = due_ms(stray, settings.delay_ms)
                if due is None or due > now:
                    continue
                if self._check_orphan(state, stray, now, settings):
                    deleted += 1
        return deleted

    def _check_orphan(self, state: LogDirState, stray: StrayLog, now: int,
                      settings: OrphanSettings) -> bool:
        """Decide about one stray and act on it; whether it was deleted."""
        decision = precheck(stray, now, settings, self.full_request_applied)
        if decision is None:
            try:
                facts = read_stray_facts(self.fs, stray)
            except OSError as exc:
                self._take_offline(state, f"reading stray {stray.path}: {exc}")
                _logger.error("%s: stray %s not deleted: I/O error reading it, dir offline: %s",
                              stray.tp, stray.path, exc)
                return False
            if facts.unreadable is None:
                stray.size_bytes = facts.size_bytes
            decision = decide(stray, facts, now, settings, self.full_request_applied)
        if decision.delete:
            return self._delete_stray(state, stray, decision.reason)
        stray.last_decision, stray.next_check_ms = f"{DEFERRED}: {decision.reason}", \
            decision.next_check_ms
        _logger.info("%s: stray %s deferred: %s (next check %s)", stray.tp, stray.path,
                     decision.reason, decision.next_check_ms)
        self._trace_stray(stray, "DeferStrayDeletion", decision.reason,
                          {"nextCheck": decision.next_check_ms})
        return False

    def _delete_stray(self, state: LogDirState, stray: StrayLog, reason: str) -> bool:
        """Rename ``stray``'s dir ``-delete`` and queue it; only if it is still this dir's
        stray (a revived one is live again and left alone) and the dir is online."""
        if not state.online or state.strays.get(stray.name) is not stray:
            return False
        name = delete_dir_name(stray.tp, Uuid.from_random(self.name_rng))
        try:
            self.fs.rename(stray.path, posixpath.join(state.path, name))
            self.fs.fsync_dir(state.path)
        except OSError as exc:
            self._take_offline(state, f"deleting stray {stray.path}: {exc}")
            _logger.error("%s: stray %s not deleted: I/O error, dir offline: %s", stray.tp,
                          stray.path, exc)
            return False
        del state.strays[stray.name]
        state.pending_deletes[name] = self.clock.now_ms() + self.config.file_delete_delay_ms
        stray.last_decision, stray.next_check_ms = f"{DELETED}: {reason}", None
        _logger.warning("%s: stray %s (topic id %s, %d bytes) deleted as %s: %s", stray.tp,
                        stray.path, topic_id_text(stray.topic_id), stray.size_bytes, name,
                        reason)
        self._trace_stray(stray, "DeleteStray", reason, {"renamedTo": name})
        return True

    def _trace_stray(self, stray: StrayLog, action: str, reason: str,
                     args: dict[str, object]) -> None:
        """Record StrayCleanup's ``action`` on ``stray`` (traces/SCHEMA.md)."""
        if not self.trace.enabled:
            return
        r = self.trace_replica
        self.trace.emit(f"broker-{r}", STRAY_CLEANUP,
                        partition_instance(stray.tp.topic, stray.tp.partition), action,
                        {"b": r, "dir": stray.log_dir, "stray": stray.name,
                         "topicId": topic_id_text(stray.topic_id), "reason": reason, **args},
                        {})

    # ---- periodic work -------------------------------------------------------------------------

    def _retention_and_orphan_removal(self) -> None:
        self.run_retention()
        self.run_orphan_removal()

    def run_retention(self) -> int:
        """Apply retention to every online log whose topic configs are known (see
        ``await_topic_configs``); returns the number of segments deleted."""
        deleted = 0
        for log in self._online_logs():
            if not self._configured(log.tp.topic):
                continue  # its topic's retention settings are not known yet
            bases = [seg.base_offset for seg in log.segments] if self.trace.enabled else []
            traced = self.trace.enabled and self.trace_live
            try:
                gone = log.delete_old_segments(self._retention_intent(log) if traced else None)
            except KafkaStorageError:
                continue  # that dir is offline now; the others go on
            deleted += gone
            if gone and self.trace.enabled and self.trace_live:
                first = log.segments[0].base_offset
                ends = [*bases[1:gone], first]
                sizes = [end - base for base, end in zip(bases[:gone], ends, strict=True)]
                self._trace_log(log, "DeleteOldestSegment", {"segments": sizes})
        return deleted

    def flush_all(self) -> None:
        """Flush every online log (the recovery points advance to the log end offsets)."""
        for log in self._online_logs():
            try:
                log.flush()
            except KafkaStorageError:
                continue
            if self.trace.enabled and self.trace_live:
                self._trace_log(log, "Flush", {})

    def checkpoint_all(self) -> None:
        """Write each online dir's recovery point and log start offset checkpoints."""
        for state in self.dirs.values():
            if state.online:
                self._write_checkpoints(state)

    def checkpoint_high_watermarks(self) -> None:
        """Write each online dir's ``replication-offset-checkpoint``."""
        for state in self.dirs.values():
            if state.online:
                self._write_high_watermarks(state)

    def _write_high_watermarks(self, state: LogDirState) -> None:
        try:
            self._checkpoint(state, REPLICATION_OFFSET_CHECKPOINT).write(
                {tp: log.high_watermark for tp, log in state.all_logs.items()})
        except OSError as exc:
            self._take_offline(state, f"writing {REPLICATION_OFFSET_CHECKPOINT}: {exc}")

    def _forget_removed(self, state: LogDirState) -> None:
        """A log left ``state`` (deleted, set aside, moved away, its move aborted): every
        checkpoint of the dir is written without it. A log of the same name made here later
        (the topic deleted and created again, a replica moved back) must not load the old
        log's start offset, recovery point or high watermark at a restart before the periodic
        writes: a high watermark above the new log's committed offset would let it serve
        records no other in-sync replica may hold. An I/O error takes the dir offline."""
        self._write_checkpoints(state)
        if state.online:
            self._write_high_watermarks(state)

    def _write_checkpoints(self, state: LogDirState, untraced: PartitionLog | None = None) -> None:
        """Write ``state``'s recovery point and start offset checkpoints (``untraced``: a log
        whose replica the trace does not know yet, a stray being revived, whose broker reports
        it as restarted right after)."""
        traced = [log for log in state.logs.values() if log is not untraced] \
            if self.trace.enabled and self.trace_live else []
        for log in traced:  # each raise of a start offset the write makes durable
            if log.log_start_offset > log.durable_log_start_offset:
                self._trace_log(log, "CheckpointStartOffset", {}, log.log_start_offset,
                                intent=True)
        try:
            self._checkpoint(state, RECOVERY_POINT_CHECKPOINT).write(
                {tp: log.recovery_point for tp, log in state.all_logs.items()})
            state.start_offset_checkpoint.write()
        except OSError as exc:
            self._take_offline(state, f"writing checkpoints: {exc}")
            return
        for log in traced:
            self._trace_log(log, "CheckpointStartOffset", {}, log.log_start_offset)

    def trace_flushed(self, log: PartitionLog) -> None:
        """``log`` (a partition's live log) was just fsynced by someone else than this log
        manager (a JBOD move, before it copies or swaps): LogStartOffset's ``Flush``."""
        if self.trace.enabled and self.trace_live:
            self._trace_log(log, "Flush", {})

    def _trace_swapped_segments(
            self, src: PartitionLog, moved: PartitionLog,
            intent: tuple[int, LogStartOffsetCheckpoint | None] | None = None) -> None:
        """The swap made ``moved`` the live log in place of ``src``. The future log began at the
        source's start offset (or at the base of the batch holding it), so the source's segments
        below the moved log's first segment are no longer the replica's: LogStartOffset's
        ``DeleteOldestSegment``, one size per source segment wholly below it and one for the rest
        of the segment it falls in (all below the start offset, which is the same in both
        logs). Without it the next event of the replica would record the first segment's
        change as its own.

        ``intent`` (before the swap's first rename, ``moved`` still the future log): record the
        event's ``Intent`` instead, the moved log's values as it will be loaded, with the high
        watermark and start offset checkpoint given (the source's HW, the destination's
        checkpoint)."""
        if not (self.trace.enabled and self.trace_live):
            return
        first = moved.segments[0].base_offset
        bases = [seg.base_offset for seg in src.segments if seg.base_offset < first]
        if not bases:
            return
        ends = [*bases[1:], first]
        args: dict[str, object] = {
            "segments": [end - base for base, end in zip(bases, ends, strict=True)],
            "cause": "JBOD move swapped in"}
        if intent is None:
            self._trace_log(moved, "DeleteOldestSegment", args)
            return
        hw, checkpoint = intent
        self._trace_log(moved, "DeleteOldestSegment", args, intent=True,
                        values=(moved.log_end_offset, hw, moved.log_start_offset, first, None,
                                moved.recovery_point), durable=checkpoint is not None)

    def _retention_intent(self, log: PartitionLog) -> RaiseObserver:
        """What records an ``Intent`` before each start offset raise of ``log``'s retention:
        the ``DeleteOldestSegment`` its event will record, with every segment deleted so far in
        this call (the event comes once, after them all)."""
        sizes: list[int] = []
        r = self.trace_replica

        def before_raise(bases: list[int], next_base: int, new_start: int) -> None:
            ends = [*bases[1:], next_base]
            sizes.extend(end - base for base, end in zip(bases, ends, strict=True))
            self.trace.intent(f"broker-{r}", partition_instance(log.tp.topic, log.tp.partition),
                              r, "DeleteOldestSegment",
                              {"replica": r, "topicId": topic_id_text(log.topic_id),
                               "segments": list(sizes)},
                              (log.log_end_offset, log.high_watermark, new_start, next_base,
                               None, log.recovery_point),
                              durable=log.start_offset_checkpoint is not None)
        return before_raise

    def _trace_log(self, log: PartitionLog, action: str, args: dict[str, object],
                   ckpt: int | None = None, intent: bool = False,
                   values: tuple[int, int, int, int, int | None, int] | None = None,
                   durable: bool | None = None) -> None:
        """Record LogStartOffset's ``action`` on this broker's replica of ``log`` (``intent``:
        its ``Intent``, before the write that makes it durable). ``values`` and ``durable``:
        the replica's offsets and checkpoint as the action will leave them, when not yet
        ``log``'s own."""
        r = self.trace_replica
        record = self.trace.intent if intent else self.trace.replica_step
        record(f"broker-{r}", partition_instance(log.tp.topic, log.tp.partition), r, action,
               {"replica": r, "topicId": topic_id_text(log.topic_id), **args},
               values if values is not None else (
                   log.log_end_offset, log.high_watermark, log.log_start_offset,
                   log.segments[0].base_offset, ckpt, log.recovery_point),
               durable=(log.start_offset_checkpoint is not None) if durable is None else durable)

    def _start_offset_checkpoint(self, state: LogDirState) -> LogStartOffsetCheckpoint | None:
        """What a log of ``state`` writes a raised start offset to: the dir's checkpoint, or
        nothing with ``durable_log_start_offset=False`` (Kafka's periodic checkpoint only)."""
        return state.start_offset_checkpoint if self.config.durable_log_start_offset else None

    def _online_logs(self) -> list[PartitionLog]:
        return [log for s in self.dirs.values() if s.online for log in s.logs.values()]

    # ---- failure -------------------------------------------------------------------------------

    def _take_offline(self, state: LogDirState, reason: str) -> None:
        state.status.take_offline(reason)

    def fail_dir(self, path: str, reason: str) -> None:
        """Take a dir offline by hand (operators, tests)."""
        state = self.dirs.get(posixpath.normpath(path))
        if state is None:
            raise LogwrightError(f"{path} is not a log dir of this broker")
        self._take_offline(state, reason)

    # ---- shutdown ------------------------------------------------------------------------------

    def halt(self) -> None:
        """The process died: cancel every periodic task, touch nothing on disk (its dir locks
        go, as a dead process's do)."""
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        self._release_locks()
        self.started = False

    def shutdown(self) -> None:
        """Clean shutdown: flush, checkpoint, and mark each online dir cleanly shut down."""
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        for state in self.dirs.values():
            if not state.online:
                continue
            try:
                for log in state.all_logs.values():
                    log.flush()
                    if self.trace.enabled and self.trace_live and tp_is_live(state, log):
                        self._trace_log(log, "Flush", {})
                self._write_checkpoints(state)
                self._checkpoint(state, REPLICATION_OFFSET_CHECKPOINT).write(
                    {tp: log.high_watermark for tp, log in state.all_logs.items()})
                if state.online:
                    write_file_atomic(self.fs, posixpath.join(state.path, CLEAN_SHUTDOWN_FILE), b"")
            except (OSError, KafkaStorageError) as exc:
                self._take_offline(state, f"during shutdown: {exc}")
            for log in state.all_logs.values():
                log.close()
        self._release_locks()
        self.started = False
