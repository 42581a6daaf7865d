"""Data dirs: file locks, meta.properties, and a broker or cluster refusing a dir not its own."""

from __future__ import annotations

import errno
import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from logwright import Cluster
from logwright.controller import MemoryStore, SqliteStore
from logwright.errors import CheckpointError, DataDirLockedError, DataDirMismatchError
from logwright.logmanager import DataDirIdentity, LogManager, LogManagerConfig
from logwright.storage.config import LogConfig
from logwright.storage.meta_properties import (
    MetaProperties,
    MetaPropertiesFile,
    parse_meta_properties,
)
from logwright.storage.naming import TopicPartition, Uuid
from logwright.world import (
    Fault,
    FileSystem,
    RealFileSystem,
    SimFileSystem,
    SimScheduler,
    VirtualClock,
)
from tests.storage_helpers import batch, read_all

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"  # Kafka's own example cluster id
OTHER_CLUSTER = str(Uuid.from_random(random.Random(99)))
TP = TopicPartition("t", 0)


# ---- FileSystem.lock ------------------------------------------------------------------------


def _fs_kinds(tmp_path: Path) -> list[tuple[FileSystem, str]]:
    sim = SimFileSystem(VirtualClock())
    sim.makedirs("/data")
    return [(sim, "/data/.lock"), (RealFileSystem(), str(tmp_path / ".lock"))]


def test_a_lock_excludes_every_other_holder_until_unlocked(tmp_path: Path) -> None:
    for fs, path in _fs_kinds(tmp_path):
        first = fs.lock(path)
        assert fs.exists(path), "the lock file is created"
        for _ in range(2):  # a second call in the same process conflicts too (flock semantics)
            with pytest.raises(OSError) as info:
                fs.lock(path)
            assert info.value.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
        fs.unlock(first)
        fs.unlock(first)  # idempotent
        second = fs.lock(path)
        assert second.held and not first.held
        fs.unlock(second)


def test_a_simulated_lock_goes_with_the_process_that_held_it() -> None:
    for die in ("crash", "kill_process"):
        fs = SimFileSystem(VirtualClock())
        fs.makedirs("/data")
        old = fs.lock("/data/.lock")
        assert fs.held_locks == ["/data/.lock"]
        getattr(fs, die)()
        assert fs.held_locks == [] and not old.held
        new = fs.lock("/data/.lock")
        fs.unlock(old)  # a dead process's handle does not release the new holder's lock
        assert fs.held_locks == ["/data/.lock"] and new.held


_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    print("busy", flush=True)
    sys.exit(0)
print("locked", flush=True)
sys.stdin.readline()
"""


def test_a_real_lock_conflicts_with_another_process(tmp_path: Path) -> None:
    path = str(tmp_path / ".lock")
    fs = RealFileSystem()
    lock = fs.lock(path)
    out = subprocess.run([sys.executable, "-c", _HOLD, path], input="", capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "busy"
    fs.unlock(lock)
    child = subprocess.Popen([sys.executable, "-c", _HOLD, path], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(OSError):
            fs.lock(path)
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=60)
    fs.unlock(fs.lock(path))  # the child's exit released it


# ---- meta.properties ------------------------------------------------------------------------


def test_meta_properties_round_trip_in_kafkas_format() -> None:
    rng = random.Random(7)
    for node in (0, 1, 2**31 - 1):
        meta = MetaProperties(CLUSTER, node, Uuid.from_random(rng))
        text = meta.encode().decode()
        assert f"cluster.id={CLUSTER}\n" in text and f"node.id={node}\n" in text
        assert "version=1\n" in text and f"directory.id={meta.directory_id}\n" in text
        assert parse_meta_properties("m", meta.encode()) == meta


def test_meta_properties_as_kafka_storage_format_writes_it_are_read() -> None:
    kafka = (b"#\n#Mon Nov 23 11:00:00 UTC 2026\nnode.id=3\ndirectory.id=Tl4sQsCzTqeRbz0dD6cTlQ\n"
             b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nsome.future.key = x\n")
    meta = parse_meta_properties("m", kafka)
    assert (meta.cluster_id, meta.node_id, str(meta.directory_id)) == (
        "MkU3OEVBNTcwNTJENDM2Qg", 3, "Tl4sQsCzTqeRbz0dD6cTlQ")


@pytest.mark.parametrize(("data", "line", "why"), [
    (b"", 1, "empty"),
    (b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n", 3, "directory.id is missing"),
    (b"version=0\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nbroker.id=1\n", 3, "node.id is missing"),
    (b"version=0\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\ndirectory.id="
     b"Tl4sQsCzTqeRbz0dD6cTlQ\n", 1, "unsupported version '0'"),
    (b"version=1\ncluster.id=not-a-uuid\nnode.id=1\ndirectory.id=Tl4sQsCzTqeRbz0dD6cTlQ\n",
     2, "bad cluster.id"),
    (b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=-1\ndirectory.id="
     b"Tl4sQsCzTqeRbz0dD6cTlQ\n", 3, "node.id '-1'"),
    (b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\nnode.id=2\n", 4, "set twice"),
    (b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\ndirectory.id="
     b"AAAAAAAAAAAAAAAAAAAAAQ\n", 4, "reserved"),
    (b"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\ndirectory.id=Tl4s", 4,
     "cut short"),
    (b"version=1\ncluster.id=\xff\n", 2, "not ASCII"),
    (b"version=1\njunk\n", 2, "expected 'key=value'"),
])
def test_a_malformed_meta_properties_is_rejected_with_its_line(data: bytes, line: int,
                                                              why: str) -> None:
    with pytest.raises(CheckpointError) as info:
        parse_meta_properties("/d/meta.properties", data)
    assert f"/d/meta.properties:{line}" in str(info.value) and why in str(info.value)


# ---- the log manager's data dirs ------------------------------------------------------------


DIRS = ["/data/d1", "/data/d2"]


class Node:
    """A log manager of node ``node_id`` of ``cluster`` on a simulated disk."""

    def __init__(self, fs: SimFileSystem | None = None, node_id: int = 1,
                 cluster: str = CLUSTER, dirs: list[str] | None = None) -> None:
        self.clock = VirtualClock(1_000_000)
        self.fs = fs if fs is not None else SimFileSystem(self.clock)
        self.node_id, self.cluster, self.dirs = node_id, cluster, dirs or DIRS

    def manager(self, seed: int = 1) -> LogManager:
        identity = DataDirIdentity(self.cluster, self.node_id, random.Random(seed))
        return LogManager(self.fs, self.dirs, self.clock, SimScheduler(self.clock, seed=1),
                          LogManagerConfig(log=LogConfig(segment_bytes=1000)), random.Random(0),
                          identity=identity)


def _disk_state(fs: SimFileSystem, root: str = "/data") -> dict[str, bytes | None]:
    state: dict[str, bytes | None] = {}
    stack = [root]
    while stack:
        path = stack.pop()
        if fs.is_dir(path):
            state[path] = None
            stack.extend(f"{path}/{name}" for name in fs.listdir(path))
        else:
            state[path] = fs.read_file(path)
    return state


def test_fresh_dirs_get_their_identity_and_keep_it_across_restarts() -> None:
    node = Node()
    lm = node.manager()
    report = lm.startup()
    assert report.formatted_dirs == DIRS and lm.locked_dirs == DIRS
    ids = dict(lm.directory_ids)
    assert len(set(ids.values())) == 2, "every dir has its own directory.id"
    for d in DIRS:
        meta = MetaPropertiesFile(node.fs, d).read()
        assert meta == MetaProperties(CLUSTER, 1, ids[d])
    lm.create_log(TP).append_as_leader(batch(b"a"))
    lm.shutdown()
    assert lm.locked_dirs == [] and node.fs.held_locks == []
    for restart in ("clean", "crash", "kill"):
        lm = node.manager(seed=2)  # another generator: only a fresh dir would draw from it
        report = lm.startup()
        assert report.formatted_dirs == [] and lm.directory_ids == ids, restart
        assert not report.offline_dirs
        if restart == "clean":
            lm.shutdown()
        elif restart == "crash":
            node.fs.crash()
        else:
            node.fs.kill_process()


def test_a_wiped_dir_gets_a_new_directory_id_and_the_other_keeps_its_own() -> None:
    node = Node()
    lm = node.manager()
    lm.startup()
    before = dict(lm.directory_ids)
    lm.shutdown()
    node.fs.rmtree("/data/d2")
    lm = node.manager(seed=5)
    assert lm.startup().formatted_dirs == ["/data/d2"]
    assert lm.directory_ids["/data/d1"] == before["/data/d1"]
    assert lm.directory_ids["/data/d2"] not in before.values()


@pytest.mark.parametrize("foreign", ["cluster", "node"])
def test_a_dir_of_another_cluster_or_node_is_refused_and_nothing_is_written(
        foreign: str) -> None:
    node = Node()
    lm = node.manager()
    lm.startup()
    lm.create_log(TP).append_as_leader(batch(b"a"))
    lm.shutdown()
    other = Node(node.fs, node_id=2) if foreign == "node" else Node(node.fs, cluster=OTHER_CLUSTER)
    before, ops = _disk_state(node.fs), node.fs.ops
    with pytest.raises(DataDirMismatchError) as info:
        other.manager().startup()
    message = str(info.value)
    assert "/data/d1" in message and CLUSTER in message
    assert (OTHER_CLUSTER in message) if foreign == "cluster" else ("node 2" in message)
    assert _disk_state(node.fs) == before and node.fs.ops == ops, "nothing was written"
    assert node.fs.held_locks == [], "the locks taken are released"
    lm = node.manager()
    assert lm.startup().loaded == 1, "the right owner still starts, clean"


def test_a_dir_among_fresh_ones_that_belongs_elsewhere_stops_all_of_them() -> None:
    fs = SimFileSystem(VirtualClock())
    Node(fs, node_id=7, dirs=["/data/d2"]).manager().startup()  # d2 is node 7's
    fs.crash()
    with pytest.raises(DataDirMismatchError):
        Node(fs, node_id=1).manager().startup()
    assert not fs.exists("/data/d1/meta.properties"), "d1 was not formatted either"


def test_two_dirs_with_one_directory_id_are_refused() -> None:
    node = Node()
    lm = node.manager()
    lm.startup()
    lm.shutdown()
    data = node.fs.read_file("/data/d1/meta.properties")
    handle = node.fs.open("/data/d2/meta.properties")
    handle.truncate(0)
    handle.append(data)
    handle.close()
    with pytest.raises(DataDirMismatchError) as info:
        node.manager().startup()
    assert "same directory.id" in str(info.value)


@pytest.mark.parametrize("garbage", [b"", b"version=1\n", b"\x00\x01", b"version=2\n"])
def test_a_corrupt_meta_properties_takes_only_its_dir_offline(garbage: bytes) -> None:
    node = Node()
    lm = node.manager()
    lm.startup()
    lm.create_log(TP, log_dir="/data/d1").append_as_leader(batch(b"kept"))
    lm.shutdown()
    handle = node.fs.open("/data/d2/meta.properties")
    handle.truncate(0)
    handle.append(garbage)
    handle.close()
    lm = node.manager()
    report = lm.startup()
    assert list(report.offline_dirs) == ["/data/d2"]
    assert "/data/d2/meta.properties" in report.offline_dirs["/data/d2"]
    assert lm.online_dirs == ["/data/d1"]
    log = lm.get_log(TP)
    assert log is not None and read_all(log) == [(0, b"kept")]


def test_a_dir_failing_at_start_up_goes_offline_alone() -> None:
    node = Node()
    node.fs.makedirs("/data/d2")
    node.fs.inject_fault("/data/d2", Fault.EIO)
    lm = node.manager()
    report = lm.startup()
    assert list(report.offline_dirs) == ["/data/d2"]
    assert "Input/output error" in report.offline_dirs["/data/d2"]
    assert lm.online_dirs == ["/data/d1"] and list(lm.directory_ids) == ["/data/d1"]
    assert lm.locked_dirs == ["/data/d1"]
    lm.create_log(TP).append_as_leader(batch(b"a"))
    lm.shutdown()
    node.fs.clear_fault("/data/d2")
    lm = node.manager()
    assert lm.startup().formatted_dirs == ["/data/d2"] and len(lm.online_dirs) == 2


def test_a_second_manager_on_held_dirs_fails_and_writes_nothing() -> None:
    node = Node()
    first = node.manager()
    first.startup()
    first.create_log(TP).append_as_leader(batch(b"a"))
    before, ops = _disk_state(node.fs), node.fs.ops
    for intruder in (Node(node.fs), Node(node.fs, node_id=2), Node(node.fs, dirs=["/data/d2"])):
        with pytest.raises(DataDirLockedError) as info:
            intruder.manager().startup()
        assert "/data/d" in str(info.value) and "nothing was written" in str(info.value)
    assert _disk_state(node.fs) == before and node.fs.ops == ops
    assert node.fs.held_locks == ["/data/d1/.lock", "/data/d2/.lock"], "first keeps its locks"
    first.halt()  # the process died: its locks go, nothing is written
    assert node.fs.held_locks == [] and node.fs.ops == ops
    second = node.manager()
    assert second.startup().loaded == 1


def test_a_manager_on_a_real_disk_refuses_dirs_another_holds(tmp_path: Path) -> None:
    dirs = [str(tmp_path / "d1"), str(tmp_path / "d2")]
    clock = VirtualClock(1_000_000)

    def manager() -> LogManager:
        return LogManager(RealFileSystem(), dirs, clock, SimScheduler(clock, seed=1), None,
                          random.Random(0), identity=DataDirIdentity(CLUSTER, 1, random.Random(1)))

    first = manager()
    first.startup()
    first.create_log(TP).append_as_leader(batch(b"a"))
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(DataDirLockedError) as info:
        manager().startup()
    assert dirs[0] in str(info.value)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == listing
    first.shutdown()
    text = (tmp_path / "d1" / "meta.properties").read_text()
    assert f"cluster.id={CLUSTER}\n" in text and "node.id=1\n" in text and "version=1\n" in text
    again = manager()
    assert again.startup().loaded == 1
    again.shutdown()


# ---- the cluster id and the cluster's dirs --------------------------------------------------


def test_the_store_keeps_one_cluster_id(tmp_path: Path) -> None:
    memory = MemoryStore()
    assert memory.cluster_id() is None
    assert memory.ensure_cluster_id(CLUSTER) == CLUSTER
    assert memory.ensure_cluster_id(OTHER_CLUSTER) == CLUSTER
    path = str(tmp_path / "metadata.db")
    sqlite = SqliteStore(path)
    assert sqlite.ensure_cluster_id(OTHER_CLUSTER) == OTHER_CLUSTER
    sqlite.close()
    reopened = SqliteStore(path)
    assert reopened.cluster_id() == OTHER_CLUSTER
    assert reopened.ensure_cluster_id(CLUSTER) == OTHER_CLUSTER
    reopened.close()


def test_a_simulated_cluster_formats_every_dir_and_refuses_a_foreign_one() -> None:
    c = Cluster.simulated(brokers=2, log_dirs_per_broker=2, seed=3)
    assert Uuid.parse(c.cluster_id) == Uuid.parse(c.cluster_id)
    ids = {}
    for b, dirs in c.log_dirs.items():
        fs = c.broker(b).fs
        for d in dirs:
            meta = MetaPropertiesFile(fs, d).read()
            assert meta is not None and (meta.cluster_id, meta.node_id) == (c.cluster_id, b)
            ids[d, b] = meta.directory_id
        assert c.broker(b).log_manager.directory_ids == {d: ids[d, b] for d in dirs}
    assert len(set(ids.values())) == 4
    assert Cluster.simulated(brokers=2, seed=3).cluster_id == c.cluster_id, "one seed, one id"
    c.crash_broker(1)
    c.restart_broker(1)
    assert c.broker(1).log_manager.directory_ids == {d: ids[d, 1] for d in c.log_dirs[1]}
    # broker 2's first dir is replaced by broker 1's (same path on another machine's disk).
    fs1, fs2 = c.broker(1).fs, c.broker(2).fs
    foreign = fs1.read_file(f"{c.log_dirs[1][0]}/meta.properties")
    target = f"{c.log_dirs[2][0]}/meta.properties"
    handle = fs2.open(target)
    handle.truncate(0)
    handle.append(foreign)
    handle.close()
    with pytest.raises(DataDirMismatchError) as info:
        c.restart_broker(2)
    assert c.log_dirs[2][0] in str(info.value) and "node 1" in str(info.value)
    assert not c.broker(2).alive


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_real_cluster_on_the_same_path_fails_before_writing(tmp_path: Path) -> None:
    path = str(tmp_path / "lw")
    first = Cluster.real(path, brokers=1, log_dirs_per_broker=1)
    try:
        first.create_topic("t", 1, 1)
        first.produce("t", 0, [b"a"])
        epoch = first.store.controller_epoch()
        files = {p: (p.stat().st_mtime_ns, _digest(p))
                 for p in Path(path).rglob("*") if p.is_file() and "metadata.db" not in p.name}
        db = Path(path) / "metadata.db"
        db_before = _digest(db)
        with pytest.raises(DataDirLockedError) as info:
            Cluster.real(path, brokers=1, log_dirs_per_broker=1)
        assert os.path.abspath(path) in str(info.value)
        assert _digest(db) == db_before and first.store.controller_epoch() == epoch
        assert {p: (p.stat().st_mtime_ns, _digest(p)) for p in files} == files
        assert first.fetch("t", 0, 0)[0].value == b"a", "the first cluster still serves"
    finally:
        first.close()
    again = Cluster.real(path, brokers=1, log_dirs_per_broker=1)
    try:
        assert again.cluster_id == first.cluster_id, "the cluster id is kept in metadata.db"
        assert again.store.controller_epoch() == epoch + 1
        assert [r.value for r in again.fetch("t", 0, 0)] == [b"a"]
    finally:
        again.close()


def test_a_real_cluster_refused_by_a_foreign_dir_releases_everything(tmp_path: Path) -> None:
    path = str(tmp_path / "lw")
    c = Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    cluster_id = c.cluster_id
    c.close()
    meta = Path(path) / "broker-2" / "d1" / "meta.properties"
    original = meta.read_text()
    meta.write_text(original.replace(f"cluster.id={cluster_id}", f"cluster.id={OTHER_CLUSTER}"))
    with pytest.raises(DataDirMismatchError) as info:
        Cluster.real(path, brokers=2, log_dirs_per_broker=1)
    assert str(meta.parent) in str(info.value) and OTHER_CLUSTER in str(info.value)
    meta.write_text(original)
    again = Cluster.real(path, brokers=2, log_dirs_per_broker=1)  # no lock was left behind
    again.close()
