"""After a clean shutdown, start-up leaves the active segment's time index unread (as Kafka's lazy
indexes do): its largest timestamp, and the time index itself, come on first use.

Lazy must mean "the same answer, later": every scenario builds one log twice, byte for byte, in
two dirs, loads one copy as start-up now does and the other as it did before (both indexes read
and the tail stats computed at once, a damaged index rebuilt there and then), and compares what
each answers on first use and after the same further appends: offsets, largest timestamps, the
search by timestamp, every offset index lookup, and the index files byte for byte. A damaged
time index is found on first use, whatever that use is (a search, time retention, an append, a
truncation), and rebuilt as start-up rebuilt it; an I/O error reading it then takes the log
offline as any I/O error does; an unclean shutdown still recovers everything at once.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from logwright.errors import KafkaStorageError
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.segment import LogSegment
from logwright.world import FileSystem, RealFileSystem, SimFileSystem, VirtualClock
from logwright.world.simfs import Fault
from tests.storage_helpers import TP

CLOCK = VirtualClock(1_000_000)


def build(fs: FileSystem, path: str, seed: int, config: LogConfig) -> PartitionLog:
    """A log of one-record batches with random timestamps (not in offset order), shut down
    cleanly: every file flushed and closed."""
    rng = random.Random(seed)
    log = PartitionLog.create(fs, path, TP, config, CLOCK)
    for _ in range(rng.randint(1, 40)):
        log.append_as_leader(build_simple_batch([b"v" * rng.randint(1, 30)],
                                                rng.randint(0, 60)))
    log.update_high_watermark(log.log_end_offset)
    log.flush()
    log.close()
    return log


def load(fs: FileSystem, path: str, config: LogConfig, leo: int, clean: bool = True
         ) -> PartitionLog:
    log, _ = PartitionLog.load(fs, path, TP, config, CLOCK, log_start_offset_checkpoint=0,
                               recovery_point=leo if clean else 0,
                               high_watermark_checkpoint=leo, clean_shutdown=clean)
    return log


def load_eagerly(fs: FileSystem, path: str, config: LogConfig, leo: int) -> PartitionLog:
    """Load as start-up did before the time index became lazy: the active segment's indexes
    both read (a damaged one rebuilt) and its tail stats computed during the load."""
    log = load(fs, path, config, leo)
    log.active_segment._load_indexes()
    log.active_segment._recompute_tail_stats()
    return log


def time_index_unread(seg: LogSegment) -> bool:
    return seg._time_index is None


def answers(fs: FileSystem, log: PartitionLog) -> object:
    """Everything the log answers that the indexes or the tail stats feed."""
    segs = log.segments
    return {
        "offsets": (log.log_start_offset, log.high_watermark, log.log_end_offset),
        "segments": [(s.base_offset, s.next_offset, s.size_bytes, s.max_timestamp_ms,
                      s.offset_of_max_timestamp, s.first_batch_timestamp_ms,
                      s.index.entries, s.time_index.entries) for s in segs],
        "by_timestamp": [log.offset_for_timestamp(t) for t in range(-1, 63)],
        "lookups": [s.index.lookup(o) for s in segs for o in range(s.base_offset, s.next_offset)],
        "time_lookups": [s.time_index.lookup(t) for s in segs for t in range(-1, 63)],
        "reads": [log.read(o, 200).records for o in range(log.log_start_offset,
                                                            log.log_end_offset)],
    }


def index_files(fs: FileSystem, log: PartitionLog) -> list[bytes]:
    for seg in log.segments:
        seg.index.flush()
        seg.time_index.flush()
    return [fs.read_file(p) for s in log.segments for p in (s.index_path, s.time_index_path)]


CONFIGS = [LogConfig(segment_bytes=100_000, index_interval_bytes=1),
           LogConfig(segment_bytes=100_000, index_interval_bytes=150),
           LogConfig(segment_bytes=600, index_interval_bytes=60),
           LogConfig(segment_bytes=100_000, index_interval_bytes=100_000)]


def twin(seed: int, config: LogConfig,
         damage: Callable[[FileSystem, PartitionLog, str], None] | None = None,
         load_config: LogConfig | None = None,
         ) -> tuple[SimFileSystem, PartitionLog, PartitionLog, PartitionLog]:
    """The same log in /a/t-0, /b/t-0 and /c/t-0 (``damage`` applied to the first two),
    loaded lazily from /a (checked at once against the others before any other use), eagerly
    from /b, and lazily from /c (undamaged: what a rebuild must give back)."""
    fs = SimFileSystem(CLOCK)
    built = []
    for path in ("/a/t-0", "/b/t-0", "/c/t-0"):
        fs.makedirs(path[:2])
        built.append(build(fs, path, seed, config))
    if damage is not None:
        for path, log in zip(("/a/t-0", "/b/t-0"), built[:2], strict=True):
            damage(fs, log, path)
    leo = built[0].log_end_offset
    config = load_config or config
    lazy = load(fs, "/a/t-0", config, leo)
    eager = load_eagerly(fs, "/b/t-0", config, leo)
    intact = load(fs, "/c/t-0", config, leo)
    assert time_index_unread(lazy.active_segment)
    first = (lazy.active_segment.first_batch_timestamp_ms, lazy.log_end_offset,
             [s.next_offset for s in lazy.segments])
    assert first == (eager.active_segment.first_batch_timestamp_ms, eager.log_end_offset,
                     [s.next_offset for s in eager.segments])
    assert time_index_unread(lazy.active_segment)
    return fs, lazy, eager, intact


def append_more(log: PartitionLog, seed: int) -> None:
    rng = random.Random(seed + 1000)
    for _ in range(rng.randint(1, 12)):
        log.append_as_leader(build_simple_batch([b"w" * rng.randint(1, 30)], rng.randint(0, 60)))


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(8))
def test_first_use_after_a_clean_start_answers_as_an_eager_load(seed: int, config: LogConfig
                                                                ) -> None:
    fs, lazy, eager, _ = twin(seed, config)
    assert answers(fs, lazy) == answers(fs, eager)
    assert index_files(fs, lazy) == index_files(fs, eager)
    append_more(lazy, seed)
    append_more(eager, seed)
    assert answers(fs, lazy) == answers(fs, eager)
    assert index_files(fs, lazy) == index_files(fs, eager)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(8))
def test_first_use_after_a_clean_start_answers_as_the_log_did_before_it(seed: int,
                                                                        config: LogConfig
                                                                        ) -> None:
    """Against the log as it answered while it ran (not reloaded at all), and by brute force:
    each segment's largest timestamp is the largest it holds."""
    fs = SimFileSystem(CLOCK)
    fs.makedirs("/a")
    fs.makedirs("/b")
    running = build(fs, "/a/t-0", seed, config)
    built = build(fs, "/b/t-0", seed, config)
    running = load_eagerly(fs, "/a/t-0", config, running.log_end_offset)
    lazy = load(fs, "/b/t-0", config, built.log_end_offset)
    for log in (running, lazy):
        for seg in log.segments:
            held = [h.max_timestamp for h, _ in log.read_batches(seg.base_offset,
                                                                 seg.next_offset)]
            assert seg.max_timestamp_ms == max(held, default=-1)
    assert answers(fs, lazy) == answers(fs, running)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(8))
def test_an_append_before_any_other_use_continues_as_after_an_eager_load(seed: int,
                                                                         config: LogConfig
                                                                         ) -> None:
    """The first append needs the largest timestamp and both indexes: computed then, they
    leave the segment (and its index entries) as an eager load did."""
    fs, lazy, eager, _ = twin(seed, config)
    append_more(lazy, seed)
    append_more(eager, seed)
    assert index_files(fs, lazy) == index_files(fs, eager)
    assert answers(fs, lazy) == answers(fs, eager)


def _garbage(fs: FileSystem, log: PartitionLog, path: str) -> None:
    """Entries out of order: a time index that cannot be trusted."""
    seg = log.segments[-1]
    handle = fs.open(seg.time_index_path, create=True)
    handle.truncate(0)
    handle.append(bytes.fromhex("000000000000ffff00000003" "0000000000000001" "00000001"))
    handle.fsync()
    handle.close()


def _torn(fs: FileSystem, log: PartitionLog, path: str) -> None:
    """A size that is not a whole number of entries."""
    seg = log.segments[-1]
    handle = fs.open(seg.time_index_path, create=True)
    handle.append(b"\x00" * 5)
    handle.fsync()
    handle.close()


def _missing(fs: FileSystem, log: PartitionLog, path: str) -> None:
    fs.remove(log.segments[-1].time_index_path)


FIRST_USES: dict[str, Callable[[PartitionLog], object]] = {
    "search": lambda log: log.offset_for_timestamp(61),  # above every timestamp: all searched
    "largest timestamp": lambda log: log.active_segment.max_timestamp_ms,
    "append": lambda log: log.append_as_leader(build_simple_batch([b"x"], 7)),
    "truncation": lambda log: log.truncate_to(max(log.log_start_offset,
                                                  log.log_end_offset * 2 // 3)),
    "roll": lambda log: log.roll(),
}


#: (config the files were written under, config they are loaded under): an
#: index.interval.bytes changed in between makes a rebuilt offset index differ from the one on
#: disk, so a rebuild on first use must happen before anything reads the old one's entries.
CONFIG_PAIRS = [(CONFIGS[0], CONFIGS[0]), (CONFIGS[1], CONFIGS[1]), (CONFIGS[2], CONFIGS[2]),
                (CONFIGS[2], CONFIGS[1]), (CONFIGS[1], CONFIGS[2]), (CONFIGS[0], CONFIGS[1]),
                (CONFIGS[3], CONFIGS[1])]


@pytest.mark.parametrize("damage", [_garbage, _torn, _missing])
@pytest.mark.parametrize("first_use", sorted(FIRST_USES))
@pytest.mark.parametrize("configs", range(len(CONFIG_PAIRS)))
@pytest.mark.parametrize("seed", range(3))
def test_a_damaged_time_index_found_on_first_use_is_rebuilt_as_start_up_rebuilt_it(
        seed: int, configs: int, first_use: str,
        damage: Callable[[FileSystem, PartitionLog, str], None]) -> None:
    """Against an eager load of the same damaged files and against an undamaged copy."""
    config, load_config = CONFIG_PAIRS[configs]
    fs, lazy, eager, intact = twin(seed, config, damage, load_config)
    loaded_active = lazy.active_segment
    for log in (lazy, eager, intact):
        FIRST_USES[first_use](log)
    if loaded_active in lazy.segments and loaded_active.size_bytes:
        assert not time_index_unread(loaded_active)
    assert answers(fs, lazy) == answers(fs, eager)
    assert index_files(fs, lazy) == index_files(fs, eager)
    if load_config is config and damage is not _missing:
        # (A missing time index is taken as an empty one, not rebuilt, before as now: as in
        # Kafka, which only resizes a newly created one.)
        assert answers(fs, lazy) == answers(fs, intact)
    append_more(lazy, seed)
    append_more(eager, seed)
    assert answers(fs, lazy) == answers(fs, eager)
    assert index_files(fs, lazy) == index_files(fs, eager)


@pytest.mark.parametrize("seed", range(6))
def test_a_truncation_first_keeps_the_time_index_entries_an_eager_load_kept(seed: int) -> None:
    """Sparse entries (index.interval.bytes above a batch): an entry made at a batch past the
    cut may point below it, and stays, as after an eager load, at every cut."""
    config = CONFIGS[1]
    fs, probe, _, _ = twin(seed, config, _garbage)
    end = probe.log_end_offset
    for cut in range(end + 1):
        fs, lazy, eager, _ = twin(seed, config, _garbage)
        lazy.truncate_to(cut)
        eager.truncate_to(cut)
        assert answers(fs, lazy) == answers(fs, eager), cut
        assert index_files(fs, lazy) == index_files(fs, eager), cut


def test_a_damaged_time_index_is_left_as_it_is_until_first_use() -> None:
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=60)
    fs, lazy, _, _ = twin(3, config, _garbage)
    seg = lazy.active_segment
    damaged = fs.read_file(seg.time_index_path)
    lazy.read(lazy.log_start_offset, 1 << 20)  # a fetch reads the offset index only
    assert time_index_unread(seg) and fs.read_file(seg.time_index_path) == damaged
    assert seg.max_timestamp_ms >= 0
    seg.time_index.flush()
    assert fs.read_file(seg.time_index_path) != damaged


def test_time_retention_reads_the_time_index_on_first_use() -> None:
    """A restart leaves a young record's largest timestamp unread; retention finds it then."""
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=60, retention_ms=1_000)
    fs = SimFileSystem(CLOCK)
    fs.makedirs("/a")
    log = PartitionLog.create(fs, "/a/t-0", TP, config, CLOCK)
    now = CLOCK.now_ms()
    for ts in (now - 5_000, now - 100, now - 5_000):
        log.append_as_leader(build_simple_batch([b"v" * 80], ts))
    log.update_high_watermark(log.log_end_offset)
    leo = log.log_end_offset
    log.flush()
    log.close()
    loaded = load(fs, "/a/t-0", config, leo)
    assert time_index_unread(loaded.active_segment)
    assert loaded.delete_old_segments() == 0  # the young record keeps the segment
    assert loaded.active_segment.max_timestamp_ms == now - 100


def test_an_io_error_on_the_time_index_at_first_use_takes_the_log_offline() -> None:
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=60, retention_ms=1_000)
    fs, lazy, _, _ = twin(5, config)
    fs.inject_fault(lazy.active_segment.time_index_path, Fault.EIO)
    with pytest.raises(KafkaStorageError):
        lazy.delete_old_segments()
    assert lazy.offline


def test_an_unclean_shutdown_still_reads_and_rebuilds_everything_at_start_up() -> None:
    config = LogConfig(segment_bytes=100_000, index_interval_bytes=60)
    fs = SimFileSystem(CLOCK)
    fs.makedirs("/a")
    built = build(fs, "/a/t-0", 2, config)
    _garbage(fs, built, "/a/t-0")
    damaged = fs.read_file(built.segments[-1].time_index_path)
    loaded = load(fs, "/a/t-0", config, built.log_end_offset, clean=False)
    seg = loaded.active_segment
    assert not time_index_unread(seg)
    seg.time_index.flush()
    assert fs.read_file(seg.time_index_path) != damaged


def test_on_a_real_disk_too(tmp_path: Path) -> None:
    fs = RealFileSystem()
    config = LogConfig(segment_bytes=600, index_interval_bytes=60)
    paths = [str(tmp_path / d / "t-0") for d in ("a", "b")]
    for p in paths:
        fs.makedirs(str(Path(p).parent))
    built = [build(fs, p, 11, config) for p in paths]
    _garbage(fs, built[0], paths[0])
    _garbage(fs, built[1], paths[1])
    leo = built[0].log_end_offset
    lazy = load(fs, paths[0], config, leo)
    assert time_index_unread(lazy.active_segment)
    eager = load_eagerly(fs, paths[1], config, leo)
    try:
        assert answers(fs, lazy) == answers(fs, eager)
        assert index_files(fs, lazy) == index_files(fs, eager)
    finally:
        lazy.close()
        eager.close()
