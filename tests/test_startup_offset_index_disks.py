"""A clean start-up reads each active segment's offset index through ``read_or_create``, which
the real disk answers with one stat when the file is empty (and the open could not fail) and the
simulated disk with an open, a read and a close. Whatever state the offset index is in (entries,
empty, garbage, torn, missing, emptied under a log that has entries, an unwritable empty file),
both disks must load the same log: the same offsets, the same answers on first use and after
more appends, and the same index files, byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import FileSystem, RealFileSystem, SimFileSystem
from tests.test_segment_lazy_time_index import (
    CLOCK,
    CONFIGS,
    answers,
    append_more,
    build,
    index_files,
    load,
)


def _as_written(fs: FileSystem, log: PartitionLog) -> None:
    """Leave the offset index as the clean shutdown wrote it."""


def _garbage(fs: FileSystem, log: PartitionLog) -> None:
    handle = fs.open(log.segments[-1].index_path, create=True)
    handle.truncate(0)
    handle.append(bytes.fromhex("00000005000000ff" "0000000100000001"))
    handle.fsync()
    handle.close()


def _torn(fs: FileSystem, log: PartitionLog) -> None:
    handle = fs.open(log.segments[-1].index_path, create=True)
    handle.append(b"\x00" * 3)
    handle.fsync()
    handle.close()


def _emptied(fs: FileSystem, log: PartitionLog) -> None:
    handle = fs.open(log.segments[-1].index_path, create=True)
    handle.truncate(0)
    handle.fsync()
    handle.close()


def _missing(fs: FileSystem, log: PartitionLog) -> None:
    fs.remove(log.segments[-1].index_path)


DAMAGES: list[Callable[[FileSystem, PartitionLog], None]] = [
    _as_written, _garbage, _torn, _emptied, _missing]


def _loaded(fs: FileSystem, path: str, seed: int, config: LogConfig,
            damage: Callable[[FileSystem, PartitionLog], None],
            unwritable: bool = False) -> tuple[object, object, list[bytes]]:
    built = build(fs, path, seed, config)
    damage(fs, built)
    if unwritable and isinstance(fs, RealFileSystem):
        os.chmod(built.segments[-1].index_path, 0o444)
    leo = built.log_end_offset
    log = load(fs, path, config, leo)
    try:
        first = (log.log_end_offset, [s.next_offset for s in log.segments])
        answered = answers(fs, log)
        append_more(log, seed)
        return first, (answered, answers(fs, log)), index_files(fs, log)
    finally:
        log.close()


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__.strip("_"))
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(4))
def test_a_clean_load_answers_alike_on_the_real_and_the_simulated_disk(
        tmp_path: Path, seed: int, config: LogConfig,
        damage: Callable[[FileSystem, PartitionLog], None]) -> None:
    sim = SimFileSystem(CLOCK)
    sim.makedirs("/d")
    real = RealFileSystem()
    assert _loaded(real, str(tmp_path / "t-0"), seed, config, damage) == _loaded(
        sim, "/d/t-0", seed, config, damage)


@pytest.mark.parametrize("seed", range(3))
def test_an_unwritable_empty_offset_index_loads_as_before_on_the_real_disk(
        tmp_path: Path, seed: int) -> None:
    """As root (the open could not fail) the stat alone serves; the log loads as the simulated
    disk loads it. Not as root, the open is made, and fails, as it did before."""
    config = CONFIGS[3]  # an interval above the log's size: the offset index stays empty
    sim = SimFileSystem(CLOCK)
    sim.makedirs("/d")
    real = RealFileSystem()
    if os.geteuid() != 0:
        with pytest.raises(PermissionError):
            _loaded(real, str(tmp_path / "t-0"), seed, config, _emptied, unwritable=True)
        return
    assert _loaded(real, str(tmp_path / "t-0"), seed, config, _emptied, unwritable=True) == (
        _loaded(sim, "/d/t-0", seed, config, _emptied))
