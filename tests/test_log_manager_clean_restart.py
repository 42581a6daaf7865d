"""A clean restart of the log manager on a real disk: every partition answers as before it
(offsets, largest timestamps, search by timestamp, reads), the active segments' time indexes
wait for first use, and the one-call listing of a log dir tells partition dirs from files as
``is_dir`` did (a file named like a partition is no partition, a symbolic link to a partition
dir is one)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from logwright.logmanager import LogManager
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.naming import TopicPartition
from logwright.world import RealFileSystem, SimScheduler, VirtualClock

CLOCK = VirtualClock(1_000_000)


def manager(dirs: list[str]) -> LogManager:
    return LogManager(RealFileSystem(), dirs, CLOCK, SimScheduler(CLOCK, seed=0), None,
                      random.Random(0))


def answers(log: PartitionLog) -> object:
    return (log.log_start_offset, log.high_watermark, log.log_end_offset,
            [(s.base_offset, s.next_offset, s.max_timestamp_ms, s.first_batch_timestamp_ms)
             for s in log.segments],
            [log.offset_for_timestamp(t) for t in range(-1, 62)],
            list(log.read_records()))


def test_a_clean_restart_answers_as_before(tmp_path: Path) -> None:
    dirs = [str(tmp_path / "d0"), str(tmp_path / "d1")]
    rng = random.Random(7)
    first = manager(dirs)
    first.startup()
    tps = [TopicPartition("t", p) for p in range(6)]
    for tp in tps:
        log = first.create_log(tp)
        log.update_config(LogConfig(segment_bytes=rng.choice([300, 100_000]),
                                    index_interval_bytes=rng.choice([1, 100, 4096])))
        for _ in range(rng.randint(0, 15)):
            log.append_as_leader(build_simple_batch([b"v" * rng.randint(1, 50)],
                                                    rng.randint(0, 60)))
        log.update_high_watermark(log.log_end_offset)
    before = {}
    for tp in tps:
        running = first.get_log(tp)
        assert running is not None
        before[tp] = answers(running)
    first.shutdown()

    # Beside the partitions: a file named like one, and a link to a partition dir elsewhere.
    (tmp_path / "d0" / "t-9").write_bytes(b"")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "d1" / "u-0").symlink_to(elsewhere / "u-0")
    other = manager([str(elsewhere)])
    other.startup()
    other.create_log(TopicPartition("u", 0)).append_as_leader(build_simple_batch([b"u"], 5))
    other.shutdown()
    os.remove(elsewhere / ".kafka_cleanshutdown")

    again = manager(dirs)
    report = again.startup()
    try:
        assert report.loaded == len(tps) + 1
        assert again.get_log(TopicPartition("t", 9)) is None
        linked = again.get_log(TopicPartition("u", 0))
        assert linked is not None and linked.log_end_offset == 1
        for tp in tps:
            loaded = again.get_log(tp)
            assert loaded is not None
            assert loaded.active_segment._time_index is None  # read on first use only
            assert answers(loaded) == before[tp]
    finally:
        again.shutdown()
