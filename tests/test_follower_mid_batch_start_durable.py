"""An empty follower whose start offset falls inside the leader's first batch keeps it on a crash.

Such a replica replaces its empty active segment by one at the batch's base offset (hazard 7).
Once the log is flushed, that replacement is durable: after a power loss the records fetched
are all there, for start offsets anywhere inside the batch.
"""

from __future__ import annotations

import pytest

from logwright.errors import KafkaStorageError
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import Fault
from tests.storage_helpers import TP, world

PATH = "/d1/t-0"


@pytest.mark.parametrize("start", [4, 5, 7])
def test_a_flushed_follower_append_at_a_batch_below_its_start_survives_a_power_loss(
        start: int) -> None:
    fs, clock = world()
    config = LogConfig()
    log = PartitionLog.create(fs, PATH, TP, config, clock)
    log.truncate_fully_and_start_at(start)
    log.flush()
    batch = build_simple_batch([b"r%d" % o for o in range(3, 8)], 1_000_000, base_offset=3)
    log.append_as_follower(batch)
    assert (log.log_start_offset, log.log_end_offset) == (start, 8)
    log.update_high_watermark(8)
    log.flush()
    fs.crash()
    again, _ = PartitionLog.load(fs, PATH, TP, config, clock, log_start_offset_checkpoint=start,
                                 recovery_point=start, high_watermark_checkpoint=8,
                                 clean_shutdown=False)
    assert again.log_end_offset == 8
    values = [(o, r.value) for o, r in again.read_records(start, None)]
    assert values == [(o, b"r%d" % o) for o in range(start, 8)]


@pytest.mark.parametrize("failing", [PATH, f"{PATH}/{3:020d}.log"],
                         ids=["the old segment's deletion", "the new segment's creation"])
def test_a_dir_failing_during_the_replacement_takes_the_log_offline_whole(
        failing: str) -> None:
    """A dir failing while the empty active segment is replaced (fuzz campaign seed 60126: a
    follower's dir failed at that moment) takes the log offline with its segment list whole:
    before the fix the old segment left the list first, and the log had no active segment,
    not even a log end offset to report."""
    fs, clock = world()
    log = PartitionLog.create(fs, PATH, TP, LogConfig(), clock)
    log.truncate_fully_and_start_at(5)
    batch = build_simple_batch([b"r%d" % o for o in range(3, 8)], 1_000_000, base_offset=3)
    fs.inject_fault(failing, Fault.EIO)
    with pytest.raises(KafkaStorageError):
        log.append_as_follower(batch)
    assert log.offline
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
