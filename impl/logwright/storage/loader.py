"""Loading a partition log from its directory (as Kafka's LogLoader): what start-up trusts.

``load_partition_dir`` reads one partition dir and returns a ``LoadedLog``: its segments, its
offsets, its topic id and its leader epoch cache, made to agree with each other. It never keeps
the dir open for writing beyond what recovery itself writes; ``PartitionLog.load`` turns the
result into a running log.

Invariants upheld here:
- After a clean shutdown the segments are trusted only if their files line up (``_layout_problem``);
  otherwise, and after a crash, recovery makes the segments one unbroken chain of offsets, no
  offset served twice and none skipped (``_recover_segments``), and the result is flushed.
- log start offset = max(checkpoint, first segment's base offset); the high watermark is clamped
  into [log start offset, log end offset]; if a crash took every record at and above the durable
  start offset, the log restarts empty there (nothing readable is left below it).
- The leader epoch cache describes only offsets the log holds: rebuilt from the batches when its
  file is missing and the log holds records, then cut to [log start offset, log end offset).
- A malformed ``partition.metadata`` or ``leader-epoch-checkpoint`` raises ``CheckpointError``
  (the log manager takes the dir offline, hazard 11); a missing topic id is no error (hazard 2).
"""

from __future__ import annotations

import posixpath
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field

from logwright.records import iter_batches
from logwright.storage.config import LogConfig
from logwright.storage.epoch_cache import LeaderEpochCache
from logwright.storage.metadata_files import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    parse_partition_metadata_generation,
)
from logwright.storage.naming import (
    OFFSET_MAX,
    SegmentFileKind,
    Uuid,
    parse_segment_file_names,
)
from logwright.storage.segment import LogSegment, RecoveryBuffer
from logwright.world.fs import FileSystem, child_path

_STEM_CHARS = 20  # a segment file name's zero-padded base offset


@dataclass
class LoadReport:
    """What loading a partition log found and did."""

    segments: int = 0
    recovered_segments: int = 0
    truncated_bytes: int = 0
    deleted_files: list[str] = field(default_factory=list)
    restarted_at: int | None = None
    #: Why a cleanly shut down log was not trusted (and was recovered), or None.
    distrusted: str | None = None


@dataclass(slots=True)
class LoadedLog:
    """A partition dir as loading left it: everything a ``PartitionLog`` starts from."""

    segments: list[LogSegment]
    log_start_offset: int
    high_watermark: int
    recovery_point: int
    topic_id: Uuid | None
    epoch_cache: LeaderEpochCache
    report: LoadReport
    generation: int = 0  # the log generation in partition.metadata (a JBOD move's step G)


def load_partition_dir(
    fs: FileSystem,
    dir_path: str,
    config: LogConfig,
    *,
    log_start_offset_checkpoint: int | None,
    recovery_point: int | None,
    high_watermark_checkpoint: int | None,
    clean_shutdown: bool,
) -> LoadedLog:
    """Load the partition dir ``dir_path``; the checkpoints are the dir-wide files' entries for
    it (None: no entry). See the module docstring for what is trusted and what is recovered.

    Raises ``OSError`` on an I/O error and ``CheckpointError`` on a malformed metadata file.
    """
    report = LoadReport()
    names = fs.listdir(dir_path)
    # (Two lookups in a short list cost less than making a set of it.)
    present = names if len(names) <= 16 else set(names)
    if PARTITION_METADATA_FILE in present:  # (PartitionMetadataFile.read_with_generation)
        metadata_path = child_path(dir_path, PARTITION_METADATA_FILE)
        topic_id, generation = parse_partition_metadata_generation(
            metadata_path, fs.read_file(metadata_path))
    else:
        topic_id, generation = None, 0
    epoch_cache = LeaderEpochCache.read(fs, dir_path,
                                        exists=LEADER_EPOCH_CHECKPOINT_FILE in present)
    lso_ckpt = log_start_offset_checkpoint or 0
    stem = _lone_segment_stem(names) if clean_shutdown else None
    if stem is not None:
        # The common dir after a clean shutdown: one segment, its three files and no other
        # segment file. What the general path below does with it (nothing to remove, one
        # segment, ``_layout_problem`` of it), in fewer steps.
        seg = LogSegment(fs, dir_path, int(stem), config.index_interval_bytes, stem=stem)
        segments = [seg]
        first = seg.load_tail()
        if first is not None and first < seg.base_offset:
            report.distrusted = _below_base(seg, first)
            segments = _recover_segments(fs, dir_path, segments, 0, report,
                                         not epoch_cache.entries)
        if report.distrusted is None and seg.next_offset >= lso_ckpt:
            # Nothing recovered, nothing restarted: the log as its files hold it.
            log_end_offset = seg.next_offset
            report.segments = 1
            log_start_offset = max(lso_ckpt, seg.base_offset)
            high_watermark = min(max(high_watermark_checkpoint or 0, log_start_offset),
                                 log_end_offset)
            if epoch_cache.latest_epoch is not None:  # (_reconcile_epoch_cache, not recovered)
                epoch_cache.truncate_from_end(log_end_offset + 1)
                epoch_cache.truncate_from_start(log_start_offset)
            return LoadedLog(segments, log_start_offset, high_watermark, log_end_offset,
                             topic_id, epoch_cache, report, generation)
    else:
        segments = _discover_segments(fs, dir_path, names, config, report)
    if not segments:
        start = max(lso_ckpt, recovery_point or 0)
        segments = [LogSegment(fs, dir_path, start, config.index_interval_bytes, create=True)]
        segments[0].flush()
        fs.fsync_dir(dir_path)
    elif stem is None:
        # Recovery keeps each segment's epoch runs only when the cache must be rebuilt from them.
        segments = _trusted_or_recovered(fs, dir_path, segments, recovery_point, clean_shutdown,
                                         report, collect_epochs=not epoch_cache.entries)
    report.segments = len(segments)
    log_end_offset = segments[-1].next_offset
    log_start_offset = max(lso_ckpt, segments[0].base_offset)
    high_watermark = min(max(high_watermark_checkpoint or 0, log_start_offset), log_end_offset)
    if log_start_offset > log_end_offset:
        # Unflushed records at and above the start offset were lost in a crash: nothing
        # readable is left, so the log restarts empty at its start offset. That offset is
        # already durable (it came from the checkpoint), so nothing is persisted here.
        segments = [restart_segments(fs, dir_path, segments, log_start_offset,
                                     config.index_interval_bytes)]
        report.restarted_at = log_start_offset
        log_end_offset = high_watermark = log_start_offset
    recovered = not clean_shutdown or report.distrusted is not None
    _reconcile_epoch_cache(epoch_cache, segments, log_start_offset, log_end_offset, recovered)
    return LoadedLog(segments, log_start_offset, high_watermark, log_end_offset, topic_id,
                     epoch_cache, report, generation)


def restart_segments(fs: FileSystem, dir_path: str, segments: list[LogSegment], offset: int,
                     index_interval_bytes: int) -> LogSegment:
    """Delete ``segments`` and durably create one empty segment at ``offset`` in their place."""
    for seg in segments:
        seg.delete_files()
    segment = LogSegment(fs, dir_path, offset, index_interval_bytes, create=True)
    segment.flush()
    fs.fsync_dir(dir_path)
    return segment


# ---- segments ----------------------------------------------------------------------------------


def _discover_segments(fs: FileSystem, dir_path: str, names: list[str], config: LogConfig,
                       report: LoadReport) -> list[LogSegment]:
    """The live segments of the dir (whose file names are ``names``) in base-offset order, each
    but the last knowing where the next begins. Leftovers of an interrupted deletion or swap
    (``.deleted``, ``.cleaned``, ``.swap``) and indexes whose log is gone are removed."""
    bases: list[int] = []
    indexes: list[tuple[str, int]] = []  # live index files, in name order, to match to a log
    for name, base, suffix, kind in parse_segment_file_names(names):
        if kind is not SegmentFileKind.LIVE:
            fs.remove(posixpath.join(dir_path, name))
            report.deleted_files.append(name)
        elif suffix == ".log":
            bases.append(base)
        elif suffix in (".index", ".timeindex"):
            indexes.append((name, base))
    bases.sort()
    base_set = set(bases)
    for name, base in indexes:
        if base not in base_set:
            fs.remove(posixpath.join(dir_path, name))
            report.deleted_files.append(name)
    segments = [LogSegment(fs, dir_path, b, config.index_interval_bytes) for b in bases]
    for seg, nxt in zip(segments, bases[1:], strict=False):
        seg.next_offset = nxt
    return segments


def _lone_segment_stem(names: list[str]) -> str | None:
    """The stem of the one segment a sorted dir listing holds, when its only segment files
    are that segment's live ``.index``, ``.log`` and ``.timeindex`` (as every segment has them
    after a clean shutdown); None for any other listing. For such a listing
    ``_discover_segments`` removes nothing and finds that one segment."""
    # Segment file names begin with 20 digits, so they sort before the others of a partition
    # dir (names beginning with a letter or a dot); the three come first, in this order.
    if len(names) < 3:
        return None
    index_name = names[0]
    stem = index_name[:_STEM_CHARS]
    if (index_name[_STEM_CHARS:] != ".index" or names[1] != stem + ".log"
            or names[2] != stem + ".timeindex" or not (stem.isascii() and stem.isdigit())
            or int(stem) > OFFSET_MAX):
        return None
    for name in names[3:]:
        if name[:1].isdigit() and parse_segment_file_names([name]):
            return None  # another segment's file, or a leftover
    return stem


def _trusted_or_recovered(fs: FileSystem, dir_path: str, segments: list[LogSegment],
                          recovery_point: int | None, clean_shutdown: bool,
                          report: LoadReport, collect_epochs: bool = False) -> list[LogSegment]:
    """The segments as they are after a clean shutdown whose files line up (indexes load
    lazily); otherwise recovered from the segment holding the recovery point on (the whole
    log when a clean one did not line up: ``report.distrusted`` says why)."""
    if clean_shutdown:
        report.distrusted = _layout_problem(segments)
        if report.distrusted is None:
            return segments
        recovery_point = None  # nothing in this log is trusted: recover it all
    first_to_recover = 0
    if recovery_point is not None:
        bases = [s.base_offset for s in segments]
        first_to_recover = max(0, bisect_right(bases, recovery_point) - 1)
    return _recover_segments(fs, dir_path, segments, first_to_recover, report, collect_epochs)


def _layout_problem(segments: list[LogSegment]) -> str | None:
    """Why the segments of a cleanly shut down log cannot be trusted as they are, or None.

    Reads each segment's first batch header and its tail from its last offset index entry,
    without loading any index but the active segment's offset index (whose tail start-up reads
    anyway; its time index waits for first use); sets each ``next_offset`` on the way.
    """
    previous: LogSegment | None = None
    active = segments[-1]
    for seg in segments:
        if seg is active:
            seg.next_offset = seg.base_offset
            first = seg.load_tail()
        else:
            seg.scan_end_offset()
            first = seg.first_batch_offset()
        if first is not None and first < seg.base_offset:
            return _below_base(seg, first)
        if previous is not None and seg.base_offset != previous.next_offset:
            kind = "overlaps" if seg.base_offset < previous.next_offset else "leaves a gap after"
            return (f"{posixpath.basename(seg.log_path)} {kind} "
                    f"{posixpath.basename(previous.log_path)}, which ends at offset "
                    f"{previous.next_offset}")
        previous = seg
    return None


def _below_base(seg: LogSegment, first: int) -> str:
    """Why ``seg`` is not trusted: its first batch starts at ``first``, below its base."""
    return f"{posixpath.basename(seg.log_path)} starts with offset {first}, below its base offset"


def _recover_segments(fs: FileSystem, dir_path: str, segments: list[LogSegment],
                      first_to_recover: int, report: LoadReport,
                      collect_epochs: bool = False) -> list[LogSegment]:
    """Re-validate ``segments[first_to_recover:]`` and make the log one unbroken offset chain.

    Walking in base-offset order, with ``end`` the offset after the last kept batch:
    - a torn or corrupt tail is cut, and every later segment is dropped (it cannot be trusted
      to follow on);
    - a segment starting above ``end`` (a gap: a segment lost or half-deleted) is dropped with
      every later one, so the replica's log end offset is where its data really stops and it
      fetches the rest again, instead of serving a hole;
    - a segment whose offsets all lie below ``end`` (a copy) is deleted: no offset is served
      twice;
    - a segment starting below ``end`` and reaching past it replaces the previous segment's
      tail from its first offset, when that offset starts a batch there (batches are atomic);
      otherwise it is dropped with every later one;
    - an empty segment off the chain (not the last one, continuing it) holds nothing and is
      deleted.
    """
    kept = segments[:first_to_recover]
    end = kept[-1].next_offset if kept else None
    rest = segments[first_to_recover:]

    def drop(doomed: list[LogSegment], counted: bool) -> None:
        for seg in doomed:
            if counted:
                report.truncated_bytes += seg.size_bytes
            report.deleted_files.append(posixpath.basename(seg.log_path))
            seg.delete_files()

    buffer = RecoveryBuffer()  # one for every segment: its memory is touched once
    for i, seg in enumerate(rest):
        cut = seg.recover(expected_first_offset=seg.base_offset, collect_epochs=collect_epochs,
                          buffer=buffer)
        report.recovered_segments += 1
        report.truncated_bytes += cut
        later = rest[i + 1:]
        first = seg.first_batch_offset()
        if first is None:
            if end is None or (not later and seg.base_offset == end):
                kept.append(seg)
                end = seg.next_offset
            else:
                drop([seg], False)
            continue
        if end is not None and first > end:
            drop([seg, *later], True)
            break
        if end is not None and first < end:
            if seg.next_offset <= end:
                drop([seg], False)  # every offset in it is already in the chain
                continue
            prev = kept[-1]
            loc = prev.locate(first)
            if loc is None or loc.base_offset != first:
                drop([seg, *later], True)
                break
            report.truncated_bytes += prev.truncate_to(first)
        kept.append(seg)
        end = seg.next_offset
        if cut:
            drop(later, True)
            break
    for seg in kept[max(0, first_to_recover - 1):]:
        seg.flush()
    fs.fsync_dir(dir_path)
    return kept


# ---- the leader epoch cache --------------------------------------------------------------------


def _reconcile_epoch_cache(cache: LeaderEpochCache, segments: list[LogSegment],
                           log_start_offset: int, log_end_offset: int, recovered: bool) -> None:
    """Make ``cache`` describe the loaded log: after a recovery, rebuilt from the batches'
    partition leader epochs when its file is missing but the log holds records (as Kafka's
    recovery reassigns epochs batch by batch); then, as recovery may have cut the log's tail and
    the start offset may have moved while the file was last written, cut to [log start offset,
    log end offset). A cleanly shut down log's cache file was flushed with its segments, so a
    clean load trusts it as it is (an absent file is an empty cache, as in Kafka) and reads no
    record: start-up stays a walk of the file names."""
    if recovered and not cache.entries and log_end_offset > log_start_offset:
        cache.rebuild(_batch_epochs(segments, log_start_offset, log_end_offset))
    # An epoch that begins exactly at the log's end is kept: a leader records its epoch there
    # before it writes anything, and that entry says the log held the epoch's leader's log up
    # to its end, which the recovery election compares (docs/cluster.md); only epochs beginning
    # past the end, whose start the log lost, go. (An empty cache, most of them at start-up,
    # has nothing to cut: both would change nothing.)
    if cache.latest_epoch is not None:
        cache.truncate_from_end(log_end_offset + 1)
        cache.truncate_from_start(log_start_offset)


def _batch_epochs(segments: list[LogSegment], start_offset: int, end_offset: int
                  ) -> Iterator[tuple[int, int]]:
    """(partition leader epoch, first offset at or above ``start_offset``) of every batch that
    holds an offset in [start_offset, end_offset), in offset order: of runs of batches with one
    epoch where recovery just walked a segment (``epoch_runs``), read from the file otherwise."""
    offset = start_offset
    for seg in segments:
        if seg.epoch_runs is not None:
            for epoch, first, last in seg.epoch_runs:
                if last >= offset and first < end_offset:
                    yield epoch, max(first, start_offset)
            offset = max(offset, seg.next_offset)
            continue
        while offset < min(seg.next_offset, end_offset):
            _, data = seg.read(offset, 1 << 20, end_offset)
            if not data:
                break
            next_offset = offset
            for _, header in iter_batches(data, verify_crc=False):
                yield header.partition_leader_epoch, max(header.base_offset, start_offset)
                next_offset = header.next_offset
            if next_offset <= offset:
                break
            offset = next_offset
