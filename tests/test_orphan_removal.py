"""Orphan removal (KIP-370): a stray is deleted only after its delay, only once this broker
process applied a FULL LeaderAndIsr, and only when every segment's newest record and file time
is older than the broker's default retention; never on an offline dir, never once revived.
Its gauges, DescribeLogDirs and the CLI show it."""

from __future__ import annotations

import json
import os
import posixpath
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from logwright.broker import BrokerConfig
from logwright.broker.authorizer import CLUSTER_NAME, AclBinding, Operation, ResourceType
from logwright.broker.log_dirs import describe_json
from logwright.broker.metrics import ORPHAN_COUNT, ORPHAN_SIZE
from logwright.cli import main
from logwright.cluster import Cluster
from logwright.errors import Errors, InvalidConfig, LogwrightError
from logwright.identity import TopicPartition, Uuid
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.logmanager.orphans import (
    OrphanDecision,
    OrphanSettings,
    SegmentFacts,
    StrayFacts,
    decide,
    read_stray_facts,
)
from logwright.logmanager.strays import StrayLog
from logwright.protocol import DescribeLogDirsRequest, DescribeLogDirsResponse
from logwright.protocol.effects import Send
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.metadata_files import PartitionMetadataFile
from logwright.storage.naming import DirKind, parse_dir_name
from logwright.storage.segment import read_newest_timestamp_ms
from logwright.verify.traces import check_paths
from logwright.world import Fault, SimFileSystem, SimScheduler, VirtualClock
from logwright.world.realfs import RealFileSystem
from logwright.world.trace import TraceRecorder

MIN = 60_000
TP = TopicPartition("t", 0)
TID = Uuid.from_random(random.Random(7))


class _Recorder(TraceRecorder):
    """Keeps every event (the real recorder's ``emit`` signature)."""

    def __init__(self) -> None:
        super().__init__()
        self.enabled = True
        self.events: list[tuple[str, str, str, str, dict[str, object]]] = []

    def emit(self, node: str, model: str, instance: str, action: str,
             args: object, changed: object) -> None:
        assert isinstance(args, dict)
        self.events.append((node, model, instance, action, dict(args)))


class Node:
    """One log manager over a simulated disk, with its clock and scheduler."""

    def __init__(self, seed: int, *, delay_ms: int = 10 * MIN, retention_ms: int = 60 * MIN,
                 check_ms: int = MIN, dirs: tuple[str, ...] = ("/d1",),
                 file_delete_ms: int = MIN) -> None:
        self.rng = random.Random(seed)
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.config = LogManagerConfig(
            log=LogConfig(segment_bytes=self.rng.choice([150, 300, 100_000]),
                          retention_ms=retention_ms),
            retention_check_interval_ms=check_ms, initial_task_delay_ms=0,
            orphan_partition_removal_delay_ms=delay_ms,
            file_delete_delay_ms=file_delete_ms)
        self.dirs = dirs
        self.seed = seed
        self.manager = self.start()

    def start(self) -> LogManager:
        self.scheduler = SimScheduler(self.clock, seed=self.seed)
        manager = LogManager(self.fs, list(self.dirs), self.clock, self.scheduler, self.config,
                             random.Random(self.seed))
        manager.startup()
        self.recorder = _Recorder()
        manager.trace = self.recorder
        self.manager = manager
        return manager

    def restart(self) -> LogManager:
        self.manager.halt()
        return self.start()

    def log_with_records(self, tp: TopicPartition, n: int, timestamp_ms: int,
                         log_dir: str | None = None) -> None:
        log = self.manager.create_log(tp, TID, log_dir)
        for i in range(n):
            log.append_as_leader(build_simple_batch([b"v%04d" % i], timestamp_ms), 0)
        log.update_high_watermark(log.log_end_offset)

    def stray(self, tp: TopicPartition, n: int, timestamp_ms: int,
              log_dir: str | None = None) -> StrayLog:
        self.log_with_records(tp, n, timestamp_ms, log_dir)
        stray = self.manager.mark_stray(tp, "not in the controller's FULL request")
        assert stray is not None
        return stray

    def advance(self, ms: int) -> None:
        self.scheduler.advance(ms)

    def stray_dirs(self) -> list[str]:
        return [posixpath.join(d, n) for d in self.dirs if self.fs.exists(d)
                for n in self.fs.listdir(d) if n.endswith("-stray")]

    def entries(self, kind: DirKind) -> list[str]:
        out = []
        for d in self.dirs:
            for n in self.fs.listdir(d):
                if (self.fs.is_dir(posixpath.join(d, n)) and n.startswith(("t", "u"))
                        and parse_dir_name(n).kind is kind):
                    out.append(n)
        return out

    def actions(self) -> list[str]:
        return [a for _, _, _, a, _ in self.recorder.events]


# ---- the decision, as a pure function -----------------------------------------------------------


@st.composite
def _cases(draw: st.DrawFn) -> tuple[StrayLog, StrayFacts, int, OrphanSettings, bool]:
    since = draw(st.integers(0, 10**7))
    stray = StrayLog("/d", "t-0.x-stray", TP, TID, since, "test")
    settings = OrphanSettings(draw(st.integers(0, 10**6)),
                              draw(st.sampled_from([-1, 0, 1, 1_000, 10**6])),
                              draw(st.integers(1, 10**5)))
    now = since + draw(st.integers(0, 3 * 10**6))
    segments = tuple(SegmentFacts(f"{i:020d}.log", draw(st.integers(-1, now + 10**6)),
                                  draw(st.integers(0, now + 10**6)), draw(st.integers(0, 999)))
                     for i in range(draw(st.integers(0, 4))))
    unreadable = draw(st.sampled_from([None, None, "x.log is not a log of record batches"]))
    return stray, StrayFacts(segments, unreadable), now, settings, draw(st.booleans())


@given(_cases())
def test_a_stray_is_deleted_exactly_when_every_condition_holds(
        case: tuple[StrayLog, StrayFacts, int, OrphanSettings, bool]) -> None:
    stray, facts, now, settings, full = case
    decision = decide(stray, facts, now, settings, full)
    cutoff = now - settings.retention_ms
    allowed = (full and now >= stray.since_ms + settings.delay_ms
               and settings.retention_ms >= 0 and facts.unreadable is None
               and all(s.newest_timestamp_ms < cutoff and s.mtime_ms < cutoff
                       for s in facts.segments))
    assert decision.delete == allowed, decision.reason
    assert decision.reason
    if not decision.delete:
        nxt = decision.next_check_ms
        assert (nxt is None) == (full and now >= stray.since_ms + settings.delay_ms
                                 and settings.retention_ms < 0)
        assert nxt is None or nxt > now, "a deferral is always to a later time"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_segments_newest_timestamp_is_read_from_its_batch_headers(seed: int) -> None:
    rng = random.Random(seed)
    fs = SimFileSystem(VirtualClock(0))
    fs.makedirs("/s")
    stamps = [rng.randint(0, 10**12) for _ in range(rng.randint(1, 30))]
    data = b"".join(build_simple_batch([b"x" * rng.randint(0, 300)], ts, base_offset=i)
                    for i, ts in enumerate(stamps))
    handle = fs.open("/s/a.log", create=True)
    handle.append(data)
    handle.close()
    assert read_newest_timestamp_ms(fs, "/s/a.log") == max(stamps)
    # A torn tail: a last header cut short is not counted; a whole one whose body is cut is.
    last = build_simple_batch([b"y" * 100], max(stamps) + 5, base_offset=len(stamps))
    handle = fs.open("/s/a.log")
    handle.append(last[:30])
    handle.close()
    assert read_newest_timestamp_ms(fs, "/s/a.log") == max(stamps)
    handle = fs.open("/s/a.log")
    handle.truncate(len(data))
    handle.append(last[:-10])
    handle.close()
    assert read_newest_timestamp_ms(fs, "/s/a.log") == max(stamps) + 5
    empty = fs.open("/s/b.log", create=True)
    empty.close()
    assert read_newest_timestamp_ms(fs, "/s/b.log") == -1
    garbage = fs.open("/s/c.log", create=True)
    noise = bytearray(rng.randrange(256) for _ in range(200))
    noise[16] = 7  # not magic v2
    garbage.append(noise)
    garbage.close()
    assert read_newest_timestamp_ms(fs, "/s/c.log") is None



def test_a_segment_larger_than_one_read_is_walked_to_its_end() -> None:
    """The walk reads a segment a chunk (RECOVERY_CHUNK_BYTES) at a time; the newest timestamp
    of a segment several chunks long is its last batch's, however the batches straddle the
    chunks (an older stamp in the first chunk would let young data look old)."""
    from logwright.storage.segment import RECOVERY_CHUNK_BYTES

    fs = SimFileSystem(VirtualClock(0))
    fs.makedirs("/s")
    handle = fs.open("/s/big.log", create=True)
    value = b"v" * (RECOVERY_CHUNK_BYTES // 3 + 12_345)  # batches straddle the chunk ends
    stamps = [1_000 + i for i in range(8)]
    for i, ts in enumerate(stamps):
        handle.append(build_simple_batch([value], ts, base_offset=i))
    assert handle.size() > 2 * RECOVERY_CHUNK_BYTES
    handle.close()
    assert read_newest_timestamp_ms(fs, "/s/big.log") == max(stamps)

# ---- the log manager's task ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("fresh_by", ["timestamp", "mtime"])
def test_fresh_data_is_never_deleted_however_long_it_stays_stray(seed: int,
                                                                 fresh_by: str) -> None:
    retention = 60 * MIN
    node = Node(seed, delay_ms=5 * MIN, retention_ms=retention)
    node.manager.full_request_applied = True
    now = node.clock.now_ms()
    if fresh_by == "timestamp":
        # Records stamped ahead of the clock (a producer's clock): fresh for a long while, though
        # the files themselves were written long ago.
        newest = now + 10 * retention
        node.stray(TP, node.rng.randint(3, 20), newest)
        for seg in node.fs.listdir(node.stray_dirs()[0]):
            node.fs.set_mtime_ms(posixpath.join(node.stray_dirs()[0], seg), 0)
    else:
        # Records stamped long ago, but the files were written just now.
        newest = now
        node.stray(TP, node.rng.randint(3, 20), 0)
    steps, young_until = 0, newest + retention  # the last instant its data is not old
    while node.clock.now_ms() < young_until:
        node.advance(min(node.rng.randint(1, 40) * MIN, young_until - node.clock.now_ms()))
        steps += 1
        assert len(node.stray_dirs()) == 1, "fresh data deleted"
        assert node.manager.orphan_count() == 1
    assert steps >= 2
    assert "DeleteStray" not in node.actions() and "DeferStrayDeletion" in node.actions()
    deferred = node.manager.stray_logs()[0]
    assert deferred.last_decision is not None and "not older than" in deferred.last_decision
    node.advance(2 * MIN)
    assert node.stray_dirs() == [] and node.manager.orphan_count() == 0, \
        "once old enough it goes"


@pytest.mark.parametrize("seed", [4, 5, 6, 7])
def test_old_data_is_deleted_after_the_delay_and_not_before(seed: int) -> None:
    rng = random.Random(seed)
    delay = rng.randint(2, 30) * MIN
    node = Node(seed, delay_ms=delay, retention_ms=rng.randint(1, 20) * MIN,
                file_delete_ms=10 * MIN)
    node.manager.full_request_applied = True
    node.advance(30 * MIN)  # records and files older than retention
    node.log_with_records(TP, rng.randint(1, 30), 0)
    for name in node.fs.listdir("/d1/t-0"):
        node.fs.set_mtime_ms(posixpath.join("/d1/t-0", name), 0)
    stray = node.manager.mark_stray(TP, "topic id differs")
    assert stray is not None and stray.size_bytes > 0
    assert node.manager.orphan_size_bytes() == stray.size_bytes
    node.advance(delay - 1)
    assert node.stray_dirs() == [stray.path], "deleted before its delay"
    node.advance(MIN + 1)
    assert node.stray_dirs() == []
    assert node.manager.stray_logs() == [] and node.manager.orphan_count() == 0
    assert len(node.entries(DirKind.DELETE)) == 1, "renamed -delete first"
    assert stray.last_decision is not None and stray.last_decision.startswith("deleted")
    node.advance(10 * MIN + 1_000)
    assert node.entries(DirKind.DELETE) == [], "then removed after file.delete.delay"
    (event,) = [e for e in node.recorder.events if e[3] == "DeleteStray"]
    assert event[1] == "StrayCleanup" and event[2] == "t-0" and event[4]["reason"]


@pytest.mark.parametrize("seed", [1, 2])
def test_nothing_is_deleted_before_a_full_request_was_applied(seed: int) -> None:
    node = Node(seed, delay_ms=MIN, retention_ms=MIN)
    stray = node.stray(TP, 5, 0)
    node.advance(24 * 60 * MIN)
    assert node.stray_dirs() == [stray.path]
    assert stray.last_decision is not None and "FULL LeaderAndIsr" in stray.last_decision
    node.manager.full_request_applied = True
    node.advance(2 * MIN)
    assert node.stray_dirs() == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_restart_restarts_the_delay(seed: int) -> None:
    delay = 20 * MIN
    node = Node(seed, delay_ms=delay, retention_ms=MIN)
    node.manager.full_request_applied = True
    node.stray(TP, 4, 0)
    node.advance(delay - random.Random(seed).randint(1, 5) * MIN)
    manager = node.restart()
    manager.full_request_applied = True
    (found,) = manager.stray_logs()
    assert found.since_ms == node.clock.now_ms() and found.reason == "found at start-up"
    assert found.size_bytes > 0
    node.advance(delay - MIN)
    assert len(node.stray_dirs()) == 1, "the delay counts from the restart"
    node.advance(2 * MIN)
    assert node.stray_dirs() == []


def test_infinite_retention_never_deletes() -> None:
    node = Node(1, delay_ms=MIN, retention_ms=-1)
    node.manager.full_request_applied = True
    stray = node.stray(TP, 3, 0)
    node.advance(24 * 60 * MIN)
    assert node.stray_dirs() == [stray.path]
    assert stray.last_decision is not None and "infinite" in stray.last_decision
    assert stray.next_check_ms is None, "never looked at again"
    assert node.actions().count("DeferStrayDeletion") == 1


@pytest.mark.parametrize("fail", ["read", "rename"])
def test_an_io_error_takes_the_dir_offline_and_deletes_nothing_else(fail: str) -> None:
    node = Node(3, delay_ms=MIN, retention_ms=MIN, dirs=("/d1", "/d2"))
    node.manager.full_request_applied = True
    bad = node.stray(TP, 3, 0, "/d1")
    node.stray(TopicPartition("t", 1), 3, 0, "/d1")
    good = node.stray(TopicPartition("t", 2), 3, 0, "/d2")
    node.log_with_records(TopicPartition("u", 0), 3, 0, "/d1")
    node.log_with_records(TopicPartition("u", 1), 3, 0, "/d2")
    for d in ("/d1", "/d2"):
        for name in node.fs.listdir(d):
            if name.endswith("-stray"):
                for f in node.fs.listdir(posixpath.join(d, name)):
                    node.fs.set_mtime_ms(posixpath.join(d, name, f), 0)
    if fail == "read":
        node.fs.inject_fault(bad.path, Fault.EIO)
    else:
        node.fs.inject_fault(bad.path, Fault.ENOSPC)  # reads work, writes fail: the rename
    node.advance(5 * MIN)
    assert node.manager.offline_dirs == ["/d1"]
    node.fs.clear_fault(bad.path)
    assert sorted(node.stray_dirs()) == sorted(s.path for s in node.manager.dirs["/d1"].strays
                                               .values()), "the failed dir's strays all kept"
    assert len(node.manager.dirs["/d1"].strays) == 2
    assert good.path not in node.stray_dirs(), "the healthy dir's old stray still deleted"
    assert node.manager.get_log(TopicPartition("u", 1)) is not None
    assert node.fs.exists("/d1/u-0") and node.fs.exists("/d2/u-1")



@pytest.mark.parametrize("fail", [None, "read", "rename"])
def test_orphan_removal_returns_how_many_strays_it_deleted(fail: str | None) -> None:
    """``run_orphan_removal`` answers the number deleted: not the deferred ones, not one whose
    read or rename failed (its dir goes offline, its other strays untouched)."""
    node = Node(5, delay_ms=MIN, retention_ms=10 * MIN, dirs=("/d1", "/d2"))
    node.manager.full_request_applied = True
    old = [node.stray(TopicPartition("t", p), 3, 0, d)
           for p, d in ((0, "/d1"), (1, "/d1"), (2, "/d2"), (3, "/d2"))]
    for stray in old:
        for name in node.fs.listdir(stray.path):
            node.fs.set_mtime_ms(posixpath.join(stray.path, name), 0)
    young = node.stray(TopicPartition("t", 4), 3, node.clock.now_ms(), "/d2")
    node.clock.advance(2 * MIN)  # the delay is over; no periodic task has run
    if fail is not None:
        node.fs.inject_fault(old[0].path, Fault.EIO if fail == "read" else Fault.ENOSPC)
    deleted = node.manager.run_orphan_removal()
    gone = [s for s in old if s.path not in node.stray_dirs()]
    assert deleted == len(gone)
    assert young.path in node.stray_dirs() and young.last_decision is not None \
        and young.last_decision.startswith("deferred")
    if fail is None:
        assert deleted == 4
    else:
        assert deleted == 2 and node.manager.offline_dirs == ["/d1"]
        assert {s.path for s in gone} == {old[2].path, old[3].path}

def test_an_offline_dirs_strays_are_untouched() -> None:
    node = Node(2, delay_ms=MIN, retention_ms=MIN, dirs=("/d1", "/d2"))
    node.manager.full_request_applied = True
    stray = node.stray(TP, 3, 0, "/d1")
    node.manager.fail_dir("/d1", "test")
    node.advance(60 * MIN)
    assert node.stray_dirs() == [stray.path]
    assert stray.last_decision is None
    assert node.manager.orphan_count() == 0, "an offline dir's strays are not counted"
    assert node.actions() == []


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_stray_revived_just_before_its_due_time_is_not_deleted(seed: int) -> None:
    delay = 10 * MIN
    node = Node(seed, delay_ms=delay, retention_ms=MIN, check_ms=1_000)
    node.manager.full_request_applied = True
    n = random.Random(seed).randint(2, 20)
    stray = node.stray(TP, n, 0)
    node.advance(delay - random.Random(seed).randint(1, 999))
    log = node.manager.revive_stray(stray)
    state = node.manager.dirs["/d1"]
    # A deletion decided before the revival acts on the stray's path and finds it live.
    assert node.manager._delete_stray(state, stray, "a late decision") is False
    node.advance(60 * MIN)
    assert node.manager.get_log(TP) is log and log.log_end_offset == n
    assert node.entries(DirKind.DELETE) == [] and node.stray_dirs() == []
    assert node.fs.exists("/d1/t-0")
    # Set aside again, it is a new stray with its own delay, deleted in its turn.
    again = node.manager.mark_stray(TP, "again")
    assert again is not None and again.name != stray.name
    with pytest.raises(LogwrightError):
        node.manager.revive_stray(stray)
    node.advance(delay + 2_000)
    assert node.stray_dirs() == [] and node.manager.get_log(TP) is None


def test_the_delay_config_is_validated_and_parsed() -> None:
    assert LogManagerConfig().orphan_partition_removal_delay_ms == 7_200_000
    with pytest.raises(InvalidConfig):
        LogManagerConfig(orphan_partition_removal_delay_ms=-1)
    config = BrokerConfig.from_properties({"orphan.partition.removal.delay.ms": "60000"})
    assert config.log.orphan_partition_removal_delay_ms == 60_000
    with pytest.raises(InvalidConfig):
        BrokerConfig.from_properties({"orphan.partition.removal.delay.ms": "-5"})


def test_unreadable_segments_defer_and_are_never_deleted() -> None:
    node = Node(5, delay_ms=MIN, retention_ms=MIN)
    node.manager.full_request_applied = True
    stray = node.stray(TP, 3, 0)
    handle = node.fs.open(posixpath.join(stray.path, f"{0:020d}.log"))
    handle.write_at(16, b"\x07")  # the first batch's magic byte
    handle.close()
    facts = read_stray_facts(node.fs, stray)
    assert facts.unreadable is not None
    node.advance(60 * MIN)
    assert node.stray_dirs() == [stray.path]
    assert stray.last_decision is not None and "cannot be read" in stray.last_decision


# ---- in a cluster: gauges, DescribeLogDirs, the CLI ---------------------------------------------


def _cluster_with_a_stray(seed: int, trace: str | None = None) -> tuple[Cluster, int]:
    """A simulated cluster whose broker 1 holds ``gone-0`` set aside as a stray (the topic was
    deleted while broker 1 was down: the FULL LeaderAndIsr of its registration no longer lists
    the log it finds at start-up); returns the stray's size."""
    config = BrokerConfig.from_properties({"orphan.partition.removal.delay.ms": str(MIN),
                                           "log.retention.ms": str(3 * MIN)})
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed,
                                broker_config=config, trace=trace)
    cluster.create_topic("keep", 2, 3)
    cluster.create_topic("gone", 1, 3)
    cluster.produce("gone", 0, [b"x" * 50] * 5)
    cluster.produce("keep", 0, [b"k"])
    cluster.crash_broker(1, power_loss=False)
    cluster.delete_topic("gone")
    cluster.advance_time(5_000)
    broker = cluster.restart_broker(1)
    cluster.run_until_idle()
    tp = TopicPartition("gone", 0)
    assert broker.log_manager.get_log(tp) is None, "set aside by the FULL LeaderAndIsr"
    (stray,) = broker.log_manager.stray_logs()
    assert stray.tp == tp and broker.log_manager.full_request_applied
    size = read_stray_facts(broker.log_manager.fs, stray).size_bytes
    assert size > 0
    return cluster, size


@pytest.mark.parametrize("seed", [1, 2])
def test_gauges_follow_mark_revive_and_delete(seed: int) -> None:
    cluster, size = _cluster_with_a_stray(seed)
    lm = cluster.broker(1).log_manager
    assert cluster.metrics(1)[ORPHAN_COUNT] == 1 and cluster.metrics(1)[ORPHAN_SIZE] == size
    assert cluster.metrics()[ORPHAN_COUNT] == 1, "summed over brokers"
    assert cluster.metrics(2)[ORPHAN_COUNT] == 0
    exposition = cluster.metrics_exposition().decode()
    assert 'kafka_log_logmanager_orphanlogpartitioncount{broker="1"} 1.0' in exposition
    (stray,) = lm.stray_logs()
    lm.revive_stray(stray)
    assert cluster.metrics(1)[ORPHAN_COUNT] == 0 and cluster.metrics(1)[ORPHAN_SIZE] == 0
    again = lm.mark_stray(TopicPartition("gone", 0), "again")
    assert again is not None and cluster.metrics(1)[ORPHAN_SIZE] == size
    lm.full_request_applied = True
    cluster.advance_time(MIN // 2)
    assert cluster.metrics(1)[ORPHAN_COUNT] == 1, "its delay is not over"
    cluster.advance_time(5 * MIN)
    assert cluster.metrics(1)[ORPHAN_COUNT] == 0 and cluster.metrics(1)[ORPHAN_SIZE] == 0
    assert again.last_decision is not None and again.last_decision.startswith("deleted")
    cluster.close()


def test_the_decisions_are_traced_and_the_trace_still_checks(tmp_path: Path) -> None:
    path = str(tmp_path / "run.jsonl")
    cluster, _ = _cluster_with_a_stray(4, trace=path)
    cluster.advance_time(6 * MIN)
    cluster.broker(1).log_manager.full_request_applied = True
    cluster.advance_time(6 * MIN)
    cluster.close()
    events = [json.loads(line) for line in Path(path).read_text().splitlines()]
    stray_events = [(e["action"], e["node"], e["instance"]) for e in events
                    if e["model"] == "StrayCleanup"]
    assert stray_events[0] == ("MarkStray", "broker-1", "gone-0")
    assert stray_events[-1] == ("DeleteStray", "broker-1", "gone-0")
    assert all(e["args"]["reason"] for e in events if e["model"] == "StrayCleanup")
    report = check_paths([path])
    assert report.ok, [f.format() for f in report.failures]
    assert any(k.startswith("StrayCleanup.DeleteStray") for k in report.outside)


def test_describe_log_dirs_shows_strays_over_a_simulated_cluster() -> None:
    cluster, size = _cluster_with_a_stray(3)
    answers = cluster.describe_log_dirs()
    assert sorted(answers) == [1, 2, 3]
    strays = [(r.log_dir, s) for r in answers[1].results for s in r.strays]
    assert len(strays) == 1
    _, stray = strays[0]
    assert (stray.topic, stray.partition, stray.size_bytes) == ("gone", 0, size)
    assert stray.topic_id != Uuid.ZERO and stray.last_decision == ""
    assert stray.next_check_ms == stray.since_ms + MIN
    for b in (1, 2, 3):
        assert all(r.error is Errors.NONE for r in answers[b].results)
        parts = sorted((t.name, p.partition_index) for r in answers[b].results
                       for t in r.topics for p in t.partitions)
        assert parts == [("keep", 0), ("keep", 1)], (b, parts)
        assert all(r.strays == () for r in answers[b].results) or b == 1
    # A decision shows, with its next check; an offline dir answers KAFKA_STORAGE_ERROR.
    cluster.advance_time(2 * MIN)  # its delay is over; its records are not 3 minutes old
    cluster.broker(1).log_manager.run_orphan_removal()  # as the retention task does
    (answer,) = cluster.describe_log_dirs(1).values()
    (stray,) = [s for r in answer.results for s in r.strays]
    assert stray.last_decision.startswith("deferred: segment"), stray.last_decision
    assert stray.next_check_ms > cluster.runtime.clock.now_ms()
    lm = cluster.broker(1).log_manager
    failed = next(p for p, s in lm.dirs.items() if not s.strays)
    lm.fail_dir(failed, "test")
    (answer,) = cluster.describe_log_dirs(1).values()
    by_dir = {r.log_dir: r for r in answer.results}
    assert by_dir[failed].error is Errors.KAFKA_STORAGE_ERROR and by_dir[failed].topics == ()
    rendered = describe_json({1: answer})
    assert rendered["version"] == 1
    assert {d["logDir"]: d["error"] for d in rendered["brokers"][0]["logDirs"]}[failed] == \
        "KAFKA_STORAGE_ERROR"
    # Only the partitions asked for; DESCRIBE on the cluster is required.
    broker = cluster.broker(2)
    effects = broker.handle("client-x", DescribeLogDirsRequest(900, (("keep", (1,)),)))
    (send,) = [e for e in effects if isinstance(e, Send)]
    assert isinstance(send.message, DescribeLogDirsResponse)
    assert sorted((t.name, p.partition_index) for r in send.message.results for t in r.topics
                  for p in t.partitions) == [("keep", 1)]
    broker.authorizer.add_acl(AclBinding("User:admin", ResourceType.CLUSTER, CLUSTER_NAME,
                                         Operation.DESCRIBE))
    effects = broker.handle("client-x", DescribeLogDirsRequest(901, None, "User:mallory"))
    (send,) = [e for e in effects if isinstance(e, Send)]
    assert isinstance(send.message, DescribeLogDirsResponse)
    assert send.message.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert send.message.results == ()
    cluster.close()


def test_the_cli_prints_dirs_partitions_and_strays(tmp_path: Path) -> None:
    path = str(tmp_path)
    cluster = Cluster.real(path, brokers=2, log_dirs_per_broker=2)
    cluster.create_topic("keep", 1, 2)
    cluster.produce("keep", 0, [b"a", b"b"])
    lm = cluster.broker(1).log_manager
    tp = TopicPartition("keep", 0)
    live = lm.dir_of(tp)
    assert live is not None
    cluster.close()
    # Set the partition's dir aside by hand, as a previous run's stray; the broker re-creates
    # the partition from its leader at start-up and keeps the stray.
    # Another topic id than the one assigned, so it is not revived.
    stray_name = "keep-0.0123456789abcdef0123456789abcdef-stray"
    os.rename(os.path.join(live.path, "keep-0"), os.path.join(live.path, stray_name))
    PartitionMetadataFile(RealFileSystem(), os.path.join(live.path, stray_name)).write(
        Uuid.from_random(random.Random(11)))
    result = CliRunner().invoke(main, ["log-dirs", "describe", path])
    assert result.exit_code == 0, result.output
    assert "broker 1" in result.output and "broker 2" in result.output
    assert "keep-0" in result.output and stray_name in result.output
    result = CliRunner().invoke(main, ["log-dirs", "describe", path, "--json", "--broker", "1"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [b["broker"] for b in data["brokers"]] == [1]
    strays = [s for d in data["brokers"][0]["logDirs"] for s in d["strays"]]
    assert [s["name"] for s in strays] == [stray_name]
    assert strays[0]["partition"] == "keep-0" and strays[0]["size"] > 0
    missing = CliRunner().invoke(main, ["log-dirs", "describe", os.path.join(path, "nothing")])
    assert missing.exit_code == 1 and "error:" in missing.output


def test_a_stray_whose_name_was_cut_is_deleted_like_any_other() -> None:
    node = Node(8, delay_ms=MIN, retention_ms=MIN)
    long_tp = TopicPartition("x" * 249, 3)
    node.log_with_records(long_tp, 3, 0)
    assert node.manager.mark_stray(long_tp, "test") is not None
    manager = node.restart()
    (found,) = manager.stray_logs()
    assert found.name_cut and len(found.name) == 255
    manager.full_request_applied = True
    node.advance(5 * MIN)
    assert manager.stray_logs() == [] and node.stray_dirs() == []


def test_the_age_guard_at_its_boundaries_and_the_reason_and_next_check_it_gives() -> None:
    """A segment whose newest record or file time is exactly log.retention.ms old is still
    young; one millisecond older and the stray goes. A deferral names what made it young (the
    record's timestamp, or the file's time when that is newer) and is looked at again the first
    millisecond it can be old enough."""
    stray = StrayLog("/d", "t-0.x-stray", TP, TID, 0, "test")
    settings = OrphanSettings(0, 1_000, 500)
    now = 10_000

    def one(timestamp: int, mtime: int) -> OrphanDecision:
        return decide(stray, StrayFacts((SegmentFacts(f"{0:020d}.log", timestamp, mtime, 10),)),
                      now, settings, True)

    at_cutoff = one(9_000, 100)
    assert not at_cutoff.delete and at_cutoff.next_check_ms == now + 1
    assert "a record timestamped 9000" in at_cutoff.reason
    assert one(8_999, 8_999).delete, "one millisecond older than the retention: deleted"
    by_file = one(100, 9_500)
    assert not by_file.delete and "its file modified at 9500" in by_file.reason
    assert by_file.next_check_ms == 9_500 + 1_000 + 1
    both = one(9_200, 9_200)
    assert "a record timestamped 9200" in both.reason and both.next_check_ms == 10_201
