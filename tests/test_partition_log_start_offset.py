"""On load, the log start offset is the larger of its checkpoint and the first segment's base.

The checkpoint alone is not enough: it may be missing (a lost or hand-deleted file, a dir from
elsewhere) or older than the segments (Kafka writes it only periodically, so a crash after a
retention run leaves it behind). Trusting it would put the start offset below the first record
still on disk: reads there would return records from a later offset instead of failing, and
ListOffsets would name an earliest offset that does not exist. Named fault "the start offset
loaded from its checkpoint alone" (``make mutants``).
"""

from __future__ import annotations

import pytest

from logwright.errors import OffsetOutOfRange
from logwright.storage.checkpoint import LOG_START_OFFSET_CHECKPOINT
from logwright.storage.log import PartitionLog
from logwright.storage.naming import Uuid
from logwright.world import SimFileSystem, VirtualClock
from tests.storage_helpers import SMALL, TP, fill, new_log, read_all, world
from tests.test_log_manager import DIRS, Broker, tp


def trimmed_log() -> tuple[SimFileSystem, VirtualClock, int, list[tuple[int, bytes | None]]]:
    """A flushed, closed log whose oldest segments retention deleted: (fs, clock, first base,
    every record left)."""
    fs, clock = world()
    log = new_log(fs, clock, SMALL.with_(retention_bytes=2000))
    fill(log, 60)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    base = log.segments[0].base_offset
    assert base > 0 and log.log_start_offset == base
    records = read_all(log)
    log.flush()
    log.close()
    return fs, clock, base, records


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("checkpoint", ["missing", "zero", "older", "equal"])
def test_a_missing_or_older_checkpoint_yields_to_the_first_segment(checkpoint: str,
                                                                   clean: bool) -> None:
    fs, clock, base, records = trimmed_log()
    lso = {"missing": None, "zero": 0, "older": base - 1, "equal": base}[checkpoint]
    log, _ = PartitionLog.load(fs, "/d1/t-0", TP, SMALL, clock, log_start_offset_checkpoint=lso,
                               recovery_point=None if not clean else base,
                               high_watermark_checkpoint=None, clean_shutdown=clean)
    assert log.log_start_offset == base
    assert read_all(log) == records
    for below in (0, base - 1):
        with pytest.raises(OffsetOutOfRange):
            log.read(below, 1 << 20)
    assert log.read(base, 1 << 20).first_batch_offset == base


def test_a_checkpoint_inside_the_first_segment_is_kept() -> None:
    """DeleteRecords can raise the start offset into the middle of a segment: then the
    checkpoint, not the segment's base, is the start offset."""
    fs, clock, base, records = trimmed_log()
    log, _ = PartitionLog.load(fs, "/d1/t-0", TP, SMALL, clock,
                               log_start_offset_checkpoint=base + 3, recovery_point=None,
                               high_watermark_checkpoint=None, clean_shutdown=False)
    assert log.log_start_offset == base + 3
    assert read_all(log) == [r for r in records if r[0] >= base + 3]
    with pytest.raises(OffsetOutOfRange):
        log.read(base + 2, 1 << 20)


def test_a_lost_checkpoint_file_does_not_lower_the_start_offset_after_restart() -> None:
    b = Broker()
    log = b.lm.create_log(tp(0), Uuid.from_random(b.lm.rng), log_dir=DIRS[0])
    log.update_config(log.config.with_(retention_bytes=2000))
    fill(log, 60)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    base = log.log_start_offset
    records = read_all(log)
    b.lm.shutdown()
    b.fs.remove(f"{DIRS[0]}/{LOG_START_OFFSET_CHECKPOINT}")
    b.start()
    reloaded = b.lm.get_log(tp(0))
    assert reloaded is not None and reloaded.log_start_offset == base
    assert read_all(reloaded) == records
    with pytest.raises(OffsetOutOfRange):
        reloaded.read(0, 1 << 20)
