"""Shared fixtures for storage tests: a simulated world and batches with recognisable values."""

from __future__ import annotations

from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.naming import TopicPartition
from logwright.world import SimFileSystem, VirtualClock

TP = TopicPartition("t", 0)
SMALL = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def world() -> tuple[SimFileSystem, VirtualClock]:
    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    fs.makedirs("/d1")
    fs.makedirs("/d2")
    return fs, clock


def batch(*values: bytes, ts: int = 1_000_000) -> bytes:
    return build_simple_batch(list(values), ts)


def new_log(fs: SimFileSystem, clock: VirtualClock, config: LogConfig = SMALL,
            path: str = "/d1/t-0") -> PartitionLog:
    return PartitionLog.create(fs, path, TP, config, clock)


def fill(log: PartitionLog, batches: int, per_batch: int = 2, ts: int = 1_000_000) -> None:
    for i in range(batches):
        log.append_as_leader(batch(*[b"v%d.%d" % (i, j) for j in range(per_batch)], ts=ts))


def read_all(log: PartitionLog, start: int | None = None, max_offset: int | None = None
             ) -> list[tuple[int, bytes | None]]:
    """Every (offset, value) from ``start`` (default: the log start offset) to the end."""
    return [(offset, rec.value) for offset, rec in log.read_records(start, max_offset)]
