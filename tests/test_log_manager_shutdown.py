"""A clean shutdown marks a log dir clean only if everything for it was written.

The clean-shutdown marker tells the next start-up to trust the dir's segments and checkpoints
without recovery, so it must never be written for a dir that hit an I/O error during shutdown,
even one the manager absorbed (a checkpoint write that failed takes the dir offline without
raising). Named fault "the clean-shutdown marker written after an I/O error" (``make mutants``).
"""

from __future__ import annotations

import pytest

from logwright.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from logwright.world import Fault
from tests.storage_helpers import batch, read_all
from tests.test_log_manager import DIRS, Broker, tp


def populated() -> Broker:
    b = Broker()
    for n, d in enumerate(DIRS):
        log = b.lm.create_log(tp(n), log_dir=d)
        log.append_as_leader(batch(b"a%d" % n, b"b%d" % n))
        log.update_high_watermark(2)
    return b


@pytest.mark.parametrize("fault", [Fault.EIO, Fault.ENOSPC])
@pytest.mark.parametrize("failing", [RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                     REPLICATION_OFFSET_CHECKPOINT])
def test_a_dir_whose_shutdown_writes_fail_is_not_marked_clean(failing: str, fault: Fault) -> None:
    b = populated()
    bad, good = DIRS
    failing_path = f"{bad}/{failing}.tmp"  # every checkpoint is written through <name>.tmp
    b.fs.inject_fault(failing_path, fault)
    b.lm.shutdown()
    assert b.lm.offline_dirs == [bad]
    assert not b.fs.exists(f"{bad}/{CLEAN_SHUTDOWN_FILE}")
    assert b.fs.exists(f"{good}/{CLEAN_SHUTDOWN_FILE}")
    b.fs.clear_fault(failing_path)
    b.start()
    assert b.report.clean_dirs == [good], "the failed dir must be recovered, not trusted"
    assert b.report.recovered >= 1 and not b.lm.offline_dirs
    for n in range(len(DIRS)):
        log = b.lm.get_log(tp(n))
        assert log is not None
        assert read_all(log) == [(0, b"a%d" % n), (1, b"b%d" % n)]


def test_a_dir_without_faults_is_marked_clean_and_trusted() -> None:
    b = populated()
    b.lm.shutdown()
    assert all(b.fs.exists(f"{d}/{CLEAN_SHUTDOWN_FILE}") for d in DIRS)
    b.start()
    assert sorted(b.report.clean_dirs) == DIRS and b.report.recovered == 0
