"""JBOD moves at the log manager (docs/jbod.md): the log generation (G), the swap's file system
operations (S2..S5), start-up recovery from the dir names (R1..R5), and a crash after EVERY file
system operation of a move, from the future log's creation to the source's deletion: one live
log per partition after the restart, holding every record fsynced before the crash, its start
offset never lower."""

from __future__ import annotations

import random

import pytest

from logwright.broker.dir_move import DirMoveFetcher
from logwright.errors import KafkaStorageError, LogwrightError
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.storage.metadata_files import PartitionMetadataFile, parse_partition_metadata
from logwright.storage.naming import DirKind, TopicPartition, Uuid, parse_dir_name
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock
from logwright.world.simfs import SimulatedCrash
from tests.storage_helpers import batch, read_all

D1, D2, D3 = "/data/d1", "/data/d2", "/data/d3"
DIRS = [D1, D2, D3]
TP = TopicPartition("t", 0)
TOPIC_ID = Uuid.from_random(random.Random(7))


class Broker:
    """A log manager over a simulated world that survives its own crashes."""

    def __init__(self) -> None:
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.config = LogManagerConfig(log=LogConfig(segment_bytes=300, index_interval_bytes=64))
        self.seed = 0
        self.start()

    def start(self) -> None:
        self.seed += 1
        self.sched = SimScheduler(self.clock, seed=self.seed)
        self.lm = LogManager(self.fs, DIRS, self.clock, self.sched, self.config,
                             random.Random(self.seed))
        self.report = self.lm.startup()

    def crash_and_restart(self) -> None:
        self.fs.crash()
        self.start()


def names(b: Broker, d: str) -> list[tuple[DirKind, TopicPartition]]:
    out = []
    for n in b.fs.listdir(d):
        if b.fs.is_dir(f"{d}/{n}"):
            p = parse_dir_name(n)
            out.append((p.kind, p.tp))
    return sorted(out, key=str)


def live_dirs(b: Broker, tp: TopicPartition = TP) -> list[str]:
    return [d for d in DIRS if (DirKind.LIVE, tp) in names(b, d)]


def filled(b: Broker, batches: int = 6, delete_below: int = 0) -> PartitionLog:
    log = b.lm.create_log(TP, TOPIC_ID, D1)
    for i in range(batches):
        log.append_as_leader(batch(b"r%d.0" % i, b"r%d.1" % i), leader_epoch=i // 3)
    log.update_high_watermark(log.log_end_offset)
    if delete_below:
        log.increment_log_start_offset(delete_below)
    log.flush()
    return log


def copy_all(src: PartitionLog, fut: PartitionLog) -> None:
    """The copier's step C by hand: every fsynced source record, then HW and start offset."""
    while fut.log_end_offset < src.recovery_point:
        data = src.read(fut.log_end_offset, 100, src.recovery_point)
        fut.append_as_follower(data.records)
    fut.update_high_watermark(min(src.high_watermark, fut.log_end_offset))
    fut.increment_log_start_offset(src.log_start_offset)


def test_partition_metadata_keeps_kafkas_format_and_adds_the_generation() -> None:
    fs = SimFileSystem(VirtualClock(0))
    fs.makedirs("/d/t-0")
    f = PartitionMetadataFile(fs, "/d/t-0")
    f.write(TOPIC_ID)
    assert fs.read_file(f.path) == f"version: 0\ntopic_id: {TOPIC_ID}\n".encode()
    assert f.read_generation() == 0
    f.write(TOPIC_ID, 3)
    assert f.read() == TOPIC_ID and f.read_generation() == 3
    assert parse_partition_metadata(f.path, fs.read_file(f.path)) == TOPIC_ID
    assert PartitionMetadataFile(fs, "/d/none").read_generation() == 0


def test_a_future_log_is_one_generation_above_its_source_and_the_swap_keeps_everything() -> None:
    b = Broker()
    src = filled(b, delete_below=3)
    fut = b.lm.create_future_log(TP, D2)
    assert fut.generation == src.generation + 1 == 1
    assert fut.log_start_offset == 3 and b.lm.get_future_log(TP) is fut
    assert (DirKind.FUTURE, TP) in names(b, D2)
    copy_all(src, fut)
    before = read_all(src)
    new = b.lm.swap_future_log(TP)
    assert b.lm.get_log(TP) is new and b.lm.get_future_log(TP) is None
    assert read_all(new) == before and new.generation == 1
    assert (new.log_start_offset, new.high_watermark) == (3, src.high_watermark)
    assert live_dirs(b) == [D2] and names(b, D1) == [(DirKind.DELETE, TP)]
    # S7: the source goes after file.delete.delay.ms.
    b.clock.advance(b.config.file_delete_delay_ms + 1)
    b.lm.run_delayed_deletes()
    assert names(b, D1) == []
    # A second move: generation 2.
    again = b.lm.create_future_log(TP, D1)
    assert again.generation == 2


def test_a_move_is_refused_clearly() -> None:
    b = Broker()
    filled(b)
    with pytest.raises(LogwrightError, match="already in"):
        b.lm.create_future_log(TP, D1)
    with pytest.raises(LogwrightError, match="not a log dir"):
        b.lm.create_future_log(TP, "/elsewhere")
    with pytest.raises(LogwrightError, match="no live log"):
        b.lm.create_future_log(TopicPartition("u", 0), D2)
    b.lm.fail_dir(D3, "test")
    with pytest.raises(KafkaStorageError):
        b.lm.create_future_log(TP, D3)
    no_id = b.lm.create_log(TopicPartition("n", 0), None, D1)
    with pytest.raises(LogwrightError, match="topic id"):
        b.lm.create_future_log(no_id.tp, D2)


def test_not_caught_up_is_not_swapped() -> None:
    b = Broker()
    filled(b)
    b.lm.create_future_log(TP, D2)
    with pytest.raises(LogwrightError, match="caught up"):
        b.lm.swap_future_log(TP)


def test_abort_renames_the_future_dir_delete_and_a_new_dir_restarts_the_move() -> None:
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    other = b.lm.create_future_log(TP, D3)  # another destination: the first is aborted
    assert other is not fut and b.lm.future_dir_of(TP) is b.lm.dirs[D3]
    assert names(b, D2) == [(DirKind.DELETE, TP)]
    assert b.lm.create_future_log(TP, D3) is other  # the same destination: the same move
    assert b.lm.abort_future_log(TP) is not None and b.lm.get_future_log(TP) is None
    b.crash_and_restart()
    assert live_dirs(b) == [D1] and b.lm.get_future_log(TP) is None


def test_recovery_resumes_a_future_log_and_finishes_a_cut_swap() -> None:
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    fut.flush()
    b.crash_and_restart()
    # R3: the future log is resumed from its own end.
    resumed = b.lm.get_future_log(TP)
    assert resumed is not None and resumed.log_end_offset == src.log_end_offset
    assert b.lm.get_log(TP) is not None and live_dirs(b) == [D1]
    # Two live dirs (a crash between S4 and S5): R1 the newer generation, R2 the older goes.
    b.lm.swap_future_log(TP)
    gone = next(n for n in b.fs.listdir(D1) if n.endswith("-delete"))
    b.fs.rename(f"{D1}/{gone}", f"{D1}/t-0")
    b.fs.fsync_dir(D1)
    assert sorted(live_dirs(b)) == [D1, D2]
    b.crash_and_restart()
    assert live_dirs(b) == [D2] and b.lm.get_log(TP).generation == 1  # type: ignore[union-attr]
    assert names(b, D1) == [(DirKind.DELETE, TP)]


def test_two_live_dirs_of_one_generation_resolved_by_their_records_and_a_lone_future_never_promoted(
        ) -> None:
    """R8 decides between two live copies of one generation by their records: the empty one
    goes ``-delete``, whichever dir comes first; R5 leaves a lone future alone."""
    b = Broker()
    filled(b)
    b.lm.shutdown()
    b.fs.makedirs(f"{D2}/t-0")
    PartitionMetadataFile(b.fs, f"{D2}/t-0").write(TOPIC_ID)
    b.fs.makedirs(f"{D3}/t-1.{'a' * 32}-future")
    PartitionMetadataFile(b.fs, f"{D3}/t-1.{'a' * 32}-future").write(TOPIC_ID, 1)
    b.start()
    served = b.lm.get_log(TP)
    assert served is not None and served.dir_path == f"{D1}/t-0"
    assert served.log_end_offset == 12
    assert names(b, D2) == [(DirKind.DELETE, TP)]
    assert any("R5" in why for why in b.report.set_aside.values())
    assert b.fs.exists(f"{D3}/t-1.{'a' * 32}-future")
    assert b.lm.get_log(TopicPartition("t", 1)) is None


def _ops_of_a_move() -> int:
    b = Broker()
    src = filled(b)
    before = b.fs.ops
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    b.lm.swap_future_log(TP)
    b.clock.advance(b.config.file_delete_delay_ms + 1)
    b.lm.run_delayed_deletes()
    return b.fs.ops - before


@pytest.mark.parametrize("delete_below", [0, 5])
def test_a_crash_after_any_file_system_operation_of_a_move_loses_nothing(
        delete_below: int) -> None:
    total = _ops_of_a_move()
    assert total > 10
    outcomes = set()
    for k in range(1, total + 1):
        b = Broker()
        src = filled(b, delete_below=delete_below)
        acked = read_all(src)
        b.fs.crash_after(k)
        try:
            fut = b.lm.create_future_log(TP, D2)
            copy_all(src, fut)
            b.lm.swap_future_log(TP)
            b.clock.advance(b.config.file_delete_delay_ms + 1)
            b.lm.run_delayed_deletes()
        except SimulatedCrash:
            pass
        b.crash_and_restart()
        lives = live_dirs(b)
        assert len(lives) == 1, (k, lives)
        log = b.lm.get_log(TP)
        assert log is not None and log.dir_path == f"{lives[0]}/t-0"
        assert read_all(log) == acked, k
        assert log.log_start_offset == max(delete_below, 0), k
        outcomes.add((lives[0], b.lm.get_future_log(TP) is not None))
        # A second restart changes nothing (recovery is idempotent), and a resumed move ends.
        b.crash_and_restart()
        assert live_dirs(b) == lives and read_all(b.lm.get_log(TP)) == acked  # type: ignore
        fut = b.lm.get_future_log(TP)
        if fut is not None:
            copy_all(b.lm.get_log(TP), fut)  # type: ignore[arg-type]
            b.lm.swap_future_log(TP)
            b.crash_and_restart()
            assert live_dirs(b) == [D2] and read_all(b.lm.get_log(TP)) == acked  # type: ignore
    # Crashes before the commit point (source kept, with or without a future log to resume)
    # and after it (the moved log) were all met.
    assert outcomes == {(D1, False), (D1, True), (D2, False)}


def test_a_dir_failing_during_the_swap_before_the_commit_keeps_the_source() -> None:
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    b.fs.inject_fault(D2, Fault.EIO)
    with pytest.raises(KafkaStorageError):
        b.lm.swap_future_log(TP)
    assert b.lm.get_log(TP) is src and not src.offline
    assert b.lm.get_future_log(TP) is None and D2 in b.lm.offline_dirs


def _mover(b: Broker, rate: int = 2**63 - 1) -> DirMoveFetcher:
    swapped: list[PartitionLog] = []
    mover = DirMoveFetcher(1, b.lm, b.clock, b.sched, rate_bytes_per_s=rate, max_bytes=100,
                           backoff_ms=100, leader_epoch=lambda tp: 0,
                           on_swapped=lambda tp, log: swapped.append(log),
                           on_start_offset=lambda tp: None, on_storage_error=lambda: None)
    return mover


def test_the_future_log_follows_a_truncation_of_the_source() -> None:
    # A follower's current log truncated below the future log's end (it diverged from its
    # leader) and refetched other records: the future log drops what the source no longer has.
    b = Broker()
    src = filled(b, batches=6)  # epochs 0 (offsets 0-5) and 1 (offsets 6-11)
    fut = b.lm.create_future_log(TP, D2)
    mover = _mover(b)
    while mover.copy(src, fut, 10_000, src.recovery_point):
        pass
    assert fut.log_end_offset == 12
    src.truncate_to(8)
    src.append_as_leader(batch(b"new-a", b"new-b"), leader_epoch=2)
    src.append_as_leader(batch(b"new-c", b"new-d"), leader_epoch=2)
    src.update_high_watermark(src.log_end_offset)
    src.flush()
    expected, epochs = read_all(src), list(src.leader_epoch_cache.entries)
    mover.add(TP)
    b.sched.run_pending()
    assert b.lm.get_future_log(TP) is None and mover.stats.swaps == 1
    moved = b.lm.get_log(TP)
    assert moved is not None and moved.dir_path == f"{D2}/t-0"
    assert read_all(moved) == expected and [v for _, v in expected][-4:] == [
        b"new-a", b"new-b", b"new-c", b"new-d"]
    assert list(moved.leader_epoch_cache.entries) == epochs


def test_the_future_log_follows_a_start_offset_above_its_end() -> None:
    b = Broker()
    src = filled(b, batches=6)
    b.lm.create_future_log(TP, D2)
    src.increment_log_start_offset(9)
    src.delete_segments_below_start_offset()
    expected = read_all(src)
    mover = _mover(b)
    mover.add(TP)
    b.sched.run_pending()
    moved = b.lm.get_log(TP)
    assert moved is not None and moved is not src and moved.dir_path == f"{D2}/t-0"
    assert moved.log_start_offset == 9 and read_all(moved) == expected


def test_a_clean_shutdown_during_a_move_resumes_it() -> None:
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    _mover(b).copy(src, fut, 150, src.recovery_point)
    copied = fut.log_end_offset
    assert 0 < copied < src.log_end_offset
    expected = read_all(src)
    b.lm.shutdown()
    b.start()
    fut = b.lm.get_future_log(TP)  # type: ignore[assignment]
    assert fut is not None and fut.log_end_offset == copied and fut.generation == 1
    mover = _mover(b)
    mover.add(TP)
    b.sched.run_pending()
    assert live_dirs(b) == [D2] and read_all(b.lm.get_log(TP)) == expected  # type: ignore


def test_deleting_or_setting_aside_a_partition_cancels_its_move() -> None:
    b = Broker()
    filled(b)
    b.lm.create_future_log(TP, D2)
    b.lm.mark_stray(TP, "test")
    assert b.lm.get_future_log(TP) is None and names(b, D2) == [(DirKind.DELETE, TP)]
    other = TopicPartition("t", 1)
    b.lm.create_log(other, TOPIC_ID, D1)
    b.lm.create_future_log(other, D3)
    b.lm.delete_log(other)
    assert b.lm.get_future_log(other) is None
    assert (DirKind.DELETE, other) in names(b, D3) and (DirKind.FUTURE, other) not in names(b, D3)


def test_a_crash_during_start_up_recovery_is_recovered_by_the_next_start_up() -> None:
    # Two live dirs (a crash between S4 and S5); the start-up resolving them crashes after
    # each of its own file system operations in turn.
    expected: list[tuple[int, bytes | None]] = []

    def two_live() -> Broker:
        b = Broker()
        expected[:] = _cut_between_commit_and_source_rename(b)
        b.fs.crash()
        return b
    b = two_live()
    before = b.fs.ops
    b.start()
    total = b.fs.ops - before
    assert total >= 2, "the rename -delete and its dir fsync at least"
    for k in range(1, total + 1):
        b = two_live()
        b.fs.crash_after(k)
        try:
            b.start()
        except SimulatedCrash:
            pass
        b.crash_and_restart()
        assert live_dirs(b) == [D2], k
        assert read_all(b.lm.get_log(TP)) == expected  # type: ignore[arg-type]


def _cut_between_commit_and_source_rename(b: Broker) -> list[tuple[int, bytes | None]]:
    """A move of TP from D1 to D2 whose commit (S4) reached the disk and whose source rename
    (S5) did not: both dirs hold a live ``t-0``, D2's one generation higher. Returns the
    records both hold."""
    src = filled(b)
    records = read_all(src)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    b.lm.swap_future_log(TP)
    gone = next(n for n in b.fs.listdir(D1) if n.endswith("-delete"))
    b.fs.rename(f"{D1}/{gone}", f"{D1}/t-0")
    b.fs.fsync_dir(D1)
    assert sorted(live_dirs(b)) == [D1, D2]
    return records


@pytest.mark.parametrize("appends", [1, 4])
def test_a_restart_with_the_moved_log_s_dir_offline_and_then_back_loses_nothing(
        appends: int) -> None:
    """R6 (found by the ReplicaMove model's dir failures, bug NoRestampOnOfflineDir): D2 is
    offline at the restart, so the source in D1 is served and takes appends; when D2 is back,
    the moved copy there, a generation higher but stale, must not win over it."""
    b = Broker()
    _cut_between_commit_and_source_rename(b)
    b.fs.inject_fault(D2, Fault.EIO)
    b.crash_and_restart()
    assert D2 in b.lm.offline_dirs
    log = b.lm.get_log(TP)
    assert log is not None and log.dir_path == f"{D1}/t-0"
    stamped = (log.generation, dict(b.report.restamped),
               PartitionMetadataFile(b.fs, log.dir_path).read_generation())
    for i in range(appends):
        log.append_as_leader(batch(b"after%d" % i, b"x"), leader_epoch=5)
    log.flush()
    log.update_high_watermark(log.log_end_offset)
    acked = read_all(log)
    b.fs.clear_fault(D2)
    b.crash_and_restart()
    assert b.lm.offline_dirs == []
    assert live_dirs(b) == [D1] and names(b, D2) == [(DirKind.DELETE, TP)]
    assert read_all(b.lm.get_log(TP)) == acked  # type: ignore[arg-type]
    assert stamped == (2, {f"{D1}/t-0": 2}, 2)
    # No dir offline: no re-stamp, and the next move is above the re-stamped source.
    assert b.report.restamped == {}
    assert b.lm.create_future_log(TP, D3).generation == 3


def test_a_restart_with_every_dir_online_re_stamps_nothing_and_picks_the_moved_log() -> None:
    b = Broker()
    _cut_between_commit_and_source_rename(b)
    b.crash_and_restart()
    assert b.report.restamped == {} and live_dirs(b) == [D2]
    assert b.lm.get_log(TP).generation == 1  # type: ignore[union-attr]


def test_a_move_resumed_while_another_dir_is_offline_stays_above_its_source() -> None:
    """D3 offline at the restart: the source (D1) is re-stamped, and the future log being
    resumed (D2) goes one above it again, so that its swap is still the newer generation."""
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    fut.flush()
    acked = read_all(src)
    b.fs.inject_fault(D3, Fault.EIO)
    b.crash_and_restart()
    log, resumed = b.lm.get_log(TP), b.lm.get_future_log(TP)
    assert log is not None and resumed is not None
    assert (log.generation, resumed.generation) == (2, 3)
    b.lm.swap_future_log(TP)
    b.fs.clear_fault(D3)
    b.crash_and_restart()
    assert live_dirs(b) == [D2] and read_all(b.lm.get_log(TP)) == acked  # type: ignore
    assert b.lm.get_log(TP).generation == 3  # type: ignore[union-attr]


def test_a_future_log_not_above_its_source_is_never_swapped_in() -> None:
    b = Broker()
    src = filled(b)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    src.restamp_generation(1)  # as a re-stamp that skipped the future log would leave it
    with pytest.raises(LogwrightError, match="not above the live log"):
        b.lm.swap_future_log(TP)
    assert live_dirs(b) == [D1] and b.lm.get_log(TP) is src
    with pytest.raises(ValueError, match="not above"):
        src.restamp_generation(1)


def test_a_dir_failing_right_after_the_commit_stops_the_source() -> None:
    """The destination fails after S4 (its live name durable) while the moved log is opened:
    the source must acknowledge nothing more, since the next start-up with that dir back picks
    the moved log (R1). Found by the refinement check of dir failures against the model
    (tests/test_refinement_replica_move.py): the source went on serving."""
    b = Broker()
    src = filled(b)
    acked = read_all(src)
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)

    def fail_once_committed() -> None:
        if "t-0" in b.fs.durable_listdir(D2):
            b.fs.inject_fault(D2, Fault.EIO)

    b.fs.after_op = fail_once_committed
    try:
        with pytest.raises(KafkaStorageError):
            b.lm.swap_future_log(TP)
    finally:
        b.fs.after_op = None
    assert D2 in b.lm.offline_dirs
    stopped = src.offline
    try:  # a producer's append: acknowledged if the source takes it
        src.append_as_leader(batch(b"late"), leader_epoch=9)
        src.flush()
        src.update_high_watermark(src.log_end_offset)
        acked = read_all(src)
    except KafkaStorageError:
        pass
    b.fs.clear_fault(D2)
    b.crash_and_restart()
    assert live_dirs(b) == [D2] and read_all(b.lm.get_log(TP)) == acked  # type: ignore
    assert stopped


def test_live_copies_under_different_topic_ids_are_all_set_aside_for_the_controller() -> None:
    """R7 (traces/regressions/0028, 0029): a dir offline while its topic was deleted and
    created again comes back with the deleted generation's live copy beside the new one's.
    Generations of different topic ids are not compared (the old copy's is higher here, and R2
    would have deleted the new one's records); start-up cannot tell which topic id is current,
    so each copy is set aside as a stray, reported with where its log ends, and the one the
    controller names is revived from its own data."""
    b = Broker()
    old = filled(b)
    old.restamp_generation(5)
    b.lm.shutdown()
    b.fs.makedirs(f"{D3}/t-0.{'a' * 32}-future")  # a cut move of the old generation
    PartitionMetadataFile(b.fs, f"{D3}/t-0.{'a' * 32}-future").write(TOPIC_ID, 6)
    new_id = Uuid.from_random(random.Random(8))
    other = LogManager(b.fs, [D2], b.clock, SimScheduler(b.clock, seed=9), b.config,
                       random.Random(9))
    other.startup()
    new = other.create_log(TP, new_id, D2)
    new.append_as_leader(batch(b"new.0", b"new.1", b"new.2"), leader_epoch=4)
    new.flush()
    other.shutdown()
    b.crash_and_restart()
    assert b.lm.get_log(TP) is None and live_dirs(b) == []
    assert names(b, D3) == [(DirKind.DELETE, TP)]  # the old generation's move: its log has all
    doubted = {c.stray.topic_id: c for c in b.report.doubted}
    assert set(doubted) == {TOPIC_ID, new_id}
    assert (doubted[new_id].epochs[-1][0], doubted[new_id].log_end_offset) == (4, 3)
    assert doubted[TOPIC_ID].log_end_offset == old.log_end_offset == 12
    assert {s.topic_id for s in b.lm.stray_logs()} == {TOPIC_ID, new_id}
    stray = b.lm.find_stray(TP, new_id)
    assert stray is not None and stray.log_dir == D2
    revived = b.lm.revive_stray(stray)
    assert read_all(revived) == [(0, b"new.0"), (1, b"new.1"), (2, b"new.2")]
    # The set-aside is durable: a restart finds one live log and the other generation's stray.
    b.crash_and_restart()
    assert live_dirs(b) == [D2] and b.report.doubted == []
    assert [s.topic_id for s in b.lm.stray_logs()] == [TOPIC_ID]


def _copy_dir(src: Broker, src_dir: str, b: Broker, dst: str) -> None:
    """Every file of ``src``'s ``src_dir`` written, fsynced, into a new ``dst`` of ``b``."""
    b.fs.makedirs(dst)
    for name in src.fs.listdir(src_dir):
        h = b.fs.open(f"{dst}/{name}", create=True)
        h.append(src.fs.read_file(f"{src_dir}/{name}"))
        h.fsync()
        h.close()
    b.fs.fsync_dir(dst)


def test_live_copies_of_one_topic_id_still_resolve_by_generation_beside_another_id() -> None:
    """R7 keeps R2 within each topic id: the lower generation's live copy goes ``-delete``
    when the newer one holds every record it does (R8)."""
    b = Broker()
    filled(b)
    b.lm.shutdown()
    _copy_dir(b, f"{D1}/t-0", b, f"{D2}/t-0")  # the swap's copy
    PartitionMetadataFile(b.fs, f"{D2}/t-0").write(TOPIC_ID, 3)  # the same id, newer
    b.fs.makedirs(f"{D3}/t-0")
    PartitionMetadataFile(b.fs, f"{D3}/t-0").write(Uuid.from_random(random.Random(8)))
    b.start()
    assert names(b, D1) == [(DirKind.DELETE, TP)]
    assert sorted(c.stray.log_dir for c in b.report.doubted) == [D2, D3]
    assert b.lm.get_log(TP) is None


@pytest.mark.parametrize("newer", ["empty", "shorter", "another epoch", "the same"])
def test_the_live_copy_holding_the_others_records_serves_whatever_its_generation(
        newer: str) -> None:
    """R8: a generation orders the copies of one move, not copies made apart (a replica created
    afresh at generation 0 while the dir of an older, moved copy was offline). Of two live
    copies of one topic id, the one holding every record of the other serves, R1's of the
    higher generation when both do, and the other goes ``-delete``; when neither does (records
    of another leader epoch), the one whose last record has the newer epoch serves and the
    other is set aside, reported, and left on disk with its records, start-up after start-up."""
    b = Broker()
    filled(b)  # generation 0 in D1: offsets 0..11, leader epochs 0 and 1
    b.lm.shutdown()
    other = Broker()  # the copy of generation 1, made apart
    if newer == "empty":
        other.lm.create_log(TP, TOPIC_ID, D1).flush()
    elif newer == "shorter":
        filled(other, batches=3)
    elif newer == "another epoch":
        log = other.lm.create_log(TP, TOPIC_ID, D1)
        for i in range(6):
            log.append_as_leader(batch(b"x%d.0" % i, b"x%d.1" % i), leader_epoch=5)
        log.flush()
    else:
        filled(other)
    other.lm.shutdown()
    _copy_dir(other, f"{D1}/t-0", b, f"{D2}/t-0")
    PartitionMetadataFile(b.fs, f"{D2}/t-0").write(TOPIC_ID, 1)
    before = {n: b.fs.read_file(f"{D1}/t-0/{n}") for n in b.fs.listdir(f"{D1}/t-0")
              if n.endswith(".log")}
    b.start()
    served = b.lm.get_log(TP)
    assert served is not None
    if newer in ("empty", "shorter"):  # D1 holds all of D2's records, and more
        assert served.dir_path == f"{D1}/t-0" and served.log_end_offset == 12
        assert names(b, D2) == [(DirKind.DELETE, TP)]
        assert read_all(served)[:2] == [(0, b"r0.0"), (1, b"r0.1")]
        return
    assert served.dir_path == f"{D2}/t-0"  # R1's copy: the same records, or a newer epoch
    if newer == "the same":
        assert names(b, D1) == [(DirKind.DELETE, TP)]  # R2
        return
    for _ in range(2):
        assert names(b, D1) == [(DirKind.LIVE, TP)]
        assert "not deleted" in b.report.set_aside[f"{D1}/t-0"]
        assert {n: b.fs.read_file(f"{D1}/t-0/{n}") for n in before} == before
        b.lm.shutdown()
        b.start()
        loaded = b.lm.get_log(TP)
        assert loaded is not None and loaded.dir_path == f"{D2}/t-0"
