"""Checkpoint and per-partition metadata files: exact round trips, old-or-new content after a
crash at any step of a write, and a precise error (file, line, what) for every malformed file."""

import errno
import random
import string
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.errors import CheckpointError, Errors, KafkaError
from logwright.storage.checkpoint import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    checkpoint_path,
    offset_checkpoint_files,
)
from logwright.storage.metadata_files import (
    LeaderEpochCheckpointFile,
    PartitionMetadataFile,
    StrayStartOffsetFile,
)
from logwright.storage.naming import OFFSET_MAX, TopicPartition, Uuid
from logwright.world import Fault, RealFileSystem, SimFileSystem, SimulatedCrash

TP = TopicPartition
PATH = "/logs/replication-offset-checkpoint"

topics = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1,
                 max_size=249).filter(lambda t: t not in (".", ".."))
offset_maps = st.dictionaries(
    st.builds(TopicPartition, topics, st.integers(min_value=0, max_value=2**31 - 1)),
    st.integers(min_value=0, max_value=2**63 - 1),
    max_size=20,
)


def sim_dir(path: str = "/logs") -> SimFileSystem:
    fs = SimFileSystem()
    fs.makedirs(path)
    return fs


def put(fs: SimFileSystem, path: str, data: bytes) -> None:
    handle = fs.open(path, create=True)
    handle.append(data)
    handle.close()


# ---- offset checkpoints: format and round trips ---------------------------------------------


def test_file_names_are_kafkas() -> None:
    assert RECOVERY_POINT_CHECKPOINT == "recovery-point-offset-checkpoint"
    assert REPLICATION_OFFSET_CHECKPOINT == "replication-offset-checkpoint"
    assert LOG_START_OFFSET_CHECKPOINT == "log-start-offset-checkpoint"
    assert CLEANER_OFFSET_CHECKPOINT == "cleaner-offset-checkpoint"
    assert CLEAN_SHUTDOWN_FILE == ".kafka_cleanshutdown"
    assert sorted(offset_checkpoint_files(SimFileSystem(), "/d")) == sorted([
        RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT])


@pytest.mark.parametrize("log_dir", ["/logs", "/data/d2"])
def test_each_offset_checkpoint_file_of_a_dir_is_written_in_that_dir(log_dir: str) -> None:
    fs = sim_dir(log_dir)
    for name, cp in offset_checkpoint_files(fs, log_dir).items():
        assert checkpoint_path(log_dir, name) == f"{log_dir}/{name}"
        cp.write({TP("a", 0): len(name)})
        assert fs.read_file(f"{log_dir}/{name}") == b"0\n1\na 0 %d\n" % len(name)
        assert cp.read() == {TP("a", 0): len(name)}
    assert sorted(fs.listdir(log_dir)) == sorted(offset_checkpoint_files(fs, log_dir))


def test_write_is_sorted_and_byte_exact() -> None:
    fs = sim_dir()
    cp = OffsetCheckpointFile(fs, PATH)
    cp.write({TP("b", 1): 5, TP("a", 10): 7, TP("a", 2): 3})
    assert fs.read_file(PATH) == b"0\n3\na 2 3\na 10 7\nb 1 5\n"
    assert cp.read() == {TP("a", 2): 3, TP("a", 10): 7, TP("b", 1): 5}


def test_empty_and_missing() -> None:
    fs = sim_dir()
    cp = OffsetCheckpointFile(fs, PATH)
    assert cp.read() == {}
    cp.write({})
    assert fs.read_file(PATH) == b"0\n0\n"
    assert cp.read() == {}


def test_reads_a_file_as_kafka_writes_it() -> None:
    fs = sim_dir()
    put(fs, PATH, b"0\n2\n__consumer_offsets 17 88231\nmy.topic-v2 0 0\n")
    assert OffsetCheckpointFile(fs, PATH).read() == {
        TP("__consumer_offsets", 17): 88231, TP("my.topic-v2", 0): 0}


@given(offset_maps)
def test_round_trip(entries: dict[TopicPartition, int]) -> None:
    fs = sim_dir()
    cp = OffsetCheckpointFile(fs, PATH)
    cp.write(entries)
    assert cp.read() == entries
    fs.crash()  # what was written is durable
    assert cp.read() == entries


def test_round_trip_on_the_real_file_system(tmp_path: object) -> None:
    cp = OffsetCheckpointFile(RealFileSystem(), f"{tmp_path}/{RECOVERY_POINT_CHECKPOINT}")
    entries = {TP("t", p): p * 1000 for p in range(50)}
    cp.write(entries)
    assert cp.read() == entries
    cp.write({TP("t", 0): 1})
    assert cp.read() == {TP("t", 0): 1}


def test_2500_partitions_round_trip() -> None:
    fs = sim_dir()
    cp = OffsetCheckpointFile(fs, PATH)
    entries = {TP(f"topic-{t}", p): t * 1_000_000 + p for t in range(100) for p in range(25)}
    cp.write(entries)
    assert cp.read() == entries


# ---- offset checkpoints: every error names the file and the line ----------------------------


@pytest.mark.parametrize(("content", "line", "what"), [
    (b"", 1, "the file is empty (expected the version)"),
    (b"1\n0\n", 1, "unsupported version 1 (expected 0)"),
    (b"v0\n0\n", 1, "version 'v0' is not a non-negative integer"),
    (b"0\n", 2, "the entry count is missing"),
    (b"0\ntwo\n", 2, "entry count 'two' is not an integer"),
    (b"0\n-1\n", 2, "entry count -1 is negative"),
    (b"0\n 1\nt 0 1\n", 2, "entry count ' 1' is not an integer"),
    (b"0\n2\nt 0 1\n", 4, "count mismatch: line 2 declares 2 entries but the file ends after 1"),
    (b"0\n1\nt 0 1\nt 1 1\n", 4, "count mismatch: line 2 declares 1 entries but the file has 2"),
    (b"0\n1\nt 0 1\nhello\n", 4, "trailing garbage after the 1 entries declared on line 2: "
                                 "'hello'"),
    (b"0\n1\nt 0 1\n\n", 4, "trailing garbage after the 1 entries declared on line 2: ''"),
    (b"0\n1\nt 0 1", 3, "the last line has no newline: the file was cut short"),
    (b"0\n1\nt 0\n", 3, "expected 3 fields 'topic partition offset' separated by single spaces, "
                        "found 2 in 't 0'"),
    (b"0\n1\nt 0 1 2\n", 3, "expected 3 fields 'topic partition offset' separated by single "
                            "spaces, found 4 in 't 0 1 2'"),
    (b"0\n1\nt  0 1\n", 3, "expected 3 fields 'topic partition offset' separated by single "
                           "spaces, found 4 in 't  0 1'"),
    (b"0\n1\nt\t0\t1\n", 3, "expected 3 fields 'topic partition offset' separated by single "
                            "spaces, found 1 in 't\\t0\\t1'"),
    (b"0\n1\nt 0 x\n", 3, "offset 'x' is not a non-negative integer"),
    (b"0\n1\nt 0 -5\n", 3, "offset -5 is negative"),
    (b"0\n1\nt 0 +5\n", 3, "offset '+5' is not a non-negative integer"),
    (b"0\n1\nt 0 1_0\n", 3, "offset '1_0' is not a non-negative integer"),
    (b"0\n1\nt 0 9223372036854775808\n", 3,
     "offset 9223372036854775808 is above the maximum 9223372036854775807"),
    (b"0\n1\nt p 1\n", 3, "partition 'p' is not a non-negative integer"),
    (b"0\n1\nt -1 1\n", 3, "partition -1 is negative"),
    (b"0\n1\nt 2147483648 1\n", 3, "partition 2147483648 is above the maximum 2147483647"),
    (b"0\n1\nt 99999999999 1\n", 3, "partition 99999999999 is above the maximum 2147483647"),
    (b"0\n1\nbad/topic 0 1\n", 3, "topic name 'bad/topic' contains '/'; only ASCII letters, "
                                  "digits, '.', '_' and '-' are allowed"),
    (b"0\n1\n.. 0 1\n", 3, "topic name '..' is reserved ('.' and '..' are not allowed)"),
    (b"0\n1\n 0 1\n", 3, "topic name is empty"),
    (b"0\n3\na 0 1\nb 0 2\na 0 3\n", 5, "duplicate entry for partition a-0 (first on line 3)"),
    (b"0\n2\nt 0 1\nt 00 2\n", 4, "duplicate entry for partition t-0 (first on line 3)"),
    (b"0\n1\nt 0 1\r\n", 3, "offset '1\\r' is not a non-negative integer"),
    (b"0\n1\ncaf\xc3\xa9 0 1\n", 3, "byte 7 is 0xc3, not ASCII text"),
])
def test_malformed_offset_checkpoint(content: bytes, line: int, what: str) -> None:
    fs = sim_dir()
    put(fs, PATH, content)
    with pytest.raises(CheckpointError) as e:
        OffsetCheckpointFile(fs, PATH).read()
    assert str(e.value) == f"{PATH}:{line}: {what}"


def test_io_errors_are_not_hidden() -> None:
    fs = sim_dir()
    OffsetCheckpointFile(fs, PATH).write({TP("t", 0): 1})
    fs.inject_fault("/logs", Fault.EIO)
    with pytest.raises(OSError) as e:
        OffsetCheckpointFile(fs, PATH).read()
    assert e.value.errno == errno.EIO


def test_write_rejects_bad_entries_before_touching_the_disk() -> None:
    fs = sim_dir()
    cp = OffsetCheckpointFile(fs, PATH)
    cp.write({TP("t", 0): 1})
    ops = fs.ops
    with pytest.raises(ValueError) as v:
        cp.write({TP("t", 0): 2, TP("u", 0): -1})
    assert str(v.value) == "offset -1 for u-0 is outside [0, 9223372036854775807]"
    with pytest.raises(KafkaError) as k:
        cp.write({TP("t", 0): 2, TP("no space", 0): 1})
    assert k.value.error is Errors.INVALID_TOPIC_EXCEPTION
    with pytest.raises(KafkaError) as k:
        cp.write({TP("t", 0): 2, TP("t", -3): 1})
    assert k.value.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert fs.ops == ops
    assert cp.read() == {TP("t", 0): 1}


# ---- crash at every step of a write ---------------------------------------------------------


def crash_at_every_step(write_old: Callable[[SimFileSystem], None],
                        write_new: Callable[[SimFileSystem], None],
                        read: Callable[[SimFileSystem], object],
                        old: object, new: object, torn: bool = False,
                        directory: str = "/logs") -> None:
    """Crash after each mutating step k of ``write_new``; the survivor must be old or new."""
    seen: set[str] = set()
    for k in range(1, 100):
        fs = sim_dir(directory)
        write_old(fs)
        fs.crash_after(k)
        finished = False
        try:
            write_new(fs)
            finished = True
        except SimulatedCrash:
            pass
        fs.crash(random.Random(k) if torn else None)
        got = read(fs)
        assert got in (old, new), (k, got)
        seen.add("old" if got == old else "new")
        if finished:
            assert got == new, k  # a write that returned is durable
            break
    else:
        pytest.fail("the write never completed")
    assert seen == {"old", "new"}  # both outcomes were reached: the crash points were real


@pytest.mark.parametrize("torn", [False, True])
def test_offset_checkpoint_crash_at_every_step(torn: bool) -> None:
    old = {TP("t", p): p for p in range(5)}
    new = {TP("t", p): p + 100 for p in range(7)}
    crash_at_every_step(lambda fs: OffsetCheckpointFile(fs, PATH).write(old),
                        lambda fs: OffsetCheckpointFile(fs, PATH).write(new),
                        lambda fs: OffsetCheckpointFile(fs, PATH).read(), old, new, torn)


def test_first_offset_checkpoint_crash_leaves_none_or_new() -> None:
    new = {TP("t", 0): 9}
    crash_at_every_step(lambda fs: None,
                        lambda fs: OffsetCheckpointFile(fs, PATH).write(new),
                        lambda fs: OffsetCheckpointFile(fs, PATH).read(), {}, new)


# ---- partition.metadata ---------------------------------------------------------------------


DIR = "/logs/orders-0"
TOPIC_ID = Uuid.from_random(random.Random(1))


def test_partition_metadata_round_trip_and_format() -> None:
    fs = sim_dir(DIR)
    f = PartitionMetadataFile(fs, DIR)
    assert f.path == f"{DIR}/partition.metadata"
    assert f.read() is None
    f.write(TOPIC_ID)
    assert fs.read_file(f.path) == f"version: 0\ntopic_id: {TOPIC_ID}\n".encode()
    assert f.read() == TOPIC_ID


@given(st.binary(min_size=16, max_size=16).map(Uuid).filter(lambda u: u != Uuid.ZERO))
def test_partition_metadata_round_trips_any_id(topic_id: Uuid) -> None:
    fs = sim_dir(DIR)
    PartitionMetadataFile(fs, DIR).write(topic_id)
    assert PartitionMetadataFile(fs, DIR).read() == topic_id


def test_partition_metadata_refuses_to_write_the_zero_id() -> None:
    fs = sim_dir(DIR)
    with pytest.raises(ValueError) as e:
        PartitionMetadataFile(fs, DIR).write(Uuid.ZERO)
    assert str(e.value) == (f"refusing to write the zero Uuid as the topic id to "
                            f"{DIR}/partition.metadata")
    assert not fs.exists(f"{DIR}/partition.metadata")


@pytest.mark.parametrize(("content", "line", "what"), [
    (b"", 1, "the file is empty (expected 'version: 0')"),
    (b"version: 1\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n", 1, "unsupported version 1 (expected 0)"),
    (b"version: x\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n", 1,
     "version 'x' is not a non-negative integer"),
    (b"version 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw\n", 1,
     "expected 'version: <value>', found 'version 0'"),
    (b"version: 0\n", 2, "the topic_id line is missing"),
    (b"version: 0\ntopicid: AAECAwQFBgcICQoLDA0ODw\n", 2,
     "expected 'topic_id: <value>', found 'topicid: AAECAwQFBgcICQoLDA0ODw'"),
    (b"version: 0\ntopic_id: \n", 2, "expected 'topic_id: <value>', found 'topic_id: '"),
    (b"version: 0\ntopic_id: AAECAwQFBgcICQ\n", 2,
     "bad topic_id: Uuid 'AAECAwQFBgcICQ' has 14 characters, expected 22 (URL-safe base64 "
     "without padding)"),
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", 2,
     "topic_id is the zero Uuid, which means 'no topic id'"),
    (b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw\nextra\n", 3,
     "trailing garbage after the topic_id: 'extra'"),
    (b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw", 2,
     "the last line has no newline: the file was cut short"),
    (b"version: 0\ntopic_id: \xff\n", 2, "byte 21 is 0xff, not ASCII text"),
    # The size and the start of a well-formed file (read in one step at start-up), but not one:
    (b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODx\n", 2,
     "bad topic_id: Uuid 'AAECAwQFBgcICQoLDA0ODx' is not canonical: its last character carries "
     "non-zero padding bits (canonical form 'AAECAwQFBgcICQoLDA0ODw')"),
    (b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0OD\xff\n", 2, "byte 42 is 0xff, not ASCII text"),
    (b"version: 0\ntopic_id:  AECAwQFBgcICQoLDA0ODw\n", 2,
     "bad topic_id: Uuid 'AECAwQFBgcICQoLDA0ODw' has 21 characters, expected 22 (URL-safe "
     "base64 without padding)"),
    (b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0O.w\n", 2,
     "bad topic_id: Uuid 'AAECAwQFBgcICQoLDA0O.w' contains '.', which is not in the URL-safe "
     "base64 alphabet"),
])
def test_malformed_partition_metadata(content: bytes, line: int, what: str) -> None:
    fs = sim_dir(DIR)
    put(fs, f"{DIR}/partition.metadata", content)
    with pytest.raises(CheckpointError) as e:
        PartitionMetadataFile(fs, DIR).read()
    assert str(e.value) == f"{DIR}/partition.metadata:{line}: {what}"


def test_a_stray_start_offset_round_trips_and_is_absent_until_written() -> None:
    fs = sim_dir(DIR)
    f = StrayStartOffsetFile(fs, DIR)
    assert f.read() is None
    f.write(42)
    assert f.read() == 42
    assert fs.read_file(f"{DIR}/stray-log-start-offset") == b"0\n1\n42\n"


def test_a_stray_start_offset_takes_every_offset_up_to_the_largest_and_no_other() -> None:
    fs = sim_dir(DIR)
    f = StrayStartOffsetFile(fs, DIR)
    for offset in (0, OFFSET_MAX):
        f.write(offset)
        assert f.read() == offset
    for bad in (-1, OFFSET_MAX + 1):
        why = rf"^start offset {bad} is outside \[0, {OFFSET_MAX}\]$"
        with pytest.raises(ValueError, match=why):
            f.write(bad)
    assert f.read() == OFFSET_MAX  # a refused write changes nothing


@pytest.mark.parametrize(("content", "line", "what"), [
    (b"0\n2\n1\n2\n", 3, "expected one start offset, found 2"),
    (b"0\n0\n", 3, "expected one start offset, found 0"),
    (b"0\n1\n-3\n", 3, "start offset -3 is negative"),
    (b"0\n1\nx\n", 3, "start offset 'x' is not a non-negative integer"),
    (b"0\n1\n1 2\n", 3,
     "expected 1 fields 'start_offset' separated by single spaces, found 2 in '1 2'"),
    (b"1\n1\n5\n", 1, "unsupported version 1 (expected 0)"),
])
def test_a_malformed_stray_start_offset_says_where_and_what(content: bytes, line: int,
                                                             what: str) -> None:
    fs = sim_dir(DIR)
    put(fs, f"{DIR}/stray-log-start-offset", content)
    with pytest.raises(CheckpointError) as e:
        StrayStartOffsetFile(fs, DIR).read()
    assert str(e.value) == f"{DIR}/stray-log-start-offset:{line}: {what}"


def test_partition_metadata_crash_at_every_step() -> None:
    other = Uuid.from_random(random.Random(2))
    crash_at_every_step(lambda fs: PartitionMetadataFile(fs, DIR).write(TOPIC_ID),
                        lambda fs: PartitionMetadataFile(fs, DIR).write(other),
                        lambda fs: PartitionMetadataFile(fs, DIR).read(), TOPIC_ID, other,
                        torn=True, directory=DIR)


def test_first_partition_metadata_crash_leaves_none_or_new() -> None:
    # hazard 2: right after creation a crash can leave the dir without its topic id file.
    crash_at_every_step(lambda fs: None,
                        lambda fs: PartitionMetadataFile(fs, DIR).write(TOPIC_ID),
                        lambda fs: PartitionMetadataFile(fs, DIR).read(), None, TOPIC_ID,
                        directory=DIR)


# ---- leader-epoch-checkpoint ----------------------------------------------------------------


epoch_lists = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 10**6)), max_size=20).map(
    lambda xs: sorted({e: o for e, o in xs}.items()))


def monotone(entries: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for epoch, offset in entries:
        out.append((epoch, max(offset, out[-1][1]) if out else offset))
    return out


def test_leader_epoch_round_trip_and_format() -> None:
    fs = sim_dir(DIR)
    f = LeaderEpochCheckpointFile(fs, DIR)
    assert f.path == f"{DIR}/leader-epoch-checkpoint"
    assert f.read() == []
    f.write([(0, 0), (3, 120), (4, 120), (7, 9000)])
    assert fs.read_file(f.path) == b"0\n4\n0 0\n3 120\n4 120\n7 9000\n"
    assert f.read() == [(0, 0), (3, 120), (4, 120), (7, 9000)]


@given(epoch_lists.map(monotone))
def test_leader_epoch_round_trips(entries: list[tuple[int, int]]) -> None:
    fs = sim_dir(DIR)
    LeaderEpochCheckpointFile(fs, DIR).write(entries)
    assert LeaderEpochCheckpointFile(fs, DIR).read() == entries


@pytest.mark.parametrize(("content", "line", "what"), [
    (b"1\n0\n", 1, "unsupported version 1 (expected 0)"),
    (b"0\n2\n0 0\n", 4, "count mismatch: line 2 declares 2 entries but the file ends after 1"),
    (b"0\n1\n0 0\n1 5\n", 4, "count mismatch: line 2 declares 1 entries but the file has 2"),
    (b"0\n1\n0 0\nx\n", 4, "trailing garbage after the 1 entries declared on line 2: 'x'"),
    (b"0\n1\n0 0 0\n", 3, "expected 2 fields 'epoch start_offset' separated by single spaces, "
                          "found 3 in '0 0 0'"),
    (b"0\n1\n-1 0\n", 3, "epoch -1 is negative"),
    (b"0\n1\n2147483648 0\n", 3, "epoch 2147483648 is above the maximum 2147483647"),
    (b"0\n1\n1 -7\n", 3, "start offset -7 is negative"),
    (b"0\n1\n1 x\n", 3, "start offset 'x' is not a non-negative integer"),
    (b"0\n2\n3 10\n3 20\n", 4, "epoch 3 is not above epoch 3 on line 3: epochs must be strictly "
                               "increasing"),
    (b"0\n2\n3 10\n2 20\n", 4, "epoch 2 is not above epoch 3 on line 3: epochs must be strictly "
                               "increasing"),
    (b"0\n3\n1 0\n3 10\n4 9\n", 5, "start offset 9 is below 10 on line 4: start offsets must "
                                   "not decrease"),
    (b"0\n1\n1 0", 3, "the last line has no newline: the file was cut short"),
])
def test_malformed_leader_epoch_checkpoint(content: bytes, line: int, what: str) -> None:
    fs = sim_dir(DIR)
    put(fs, f"{DIR}/leader-epoch-checkpoint", content)
    with pytest.raises(CheckpointError) as e:
        LeaderEpochCheckpointFile(fs, DIR).read()
    assert str(e.value) == f"{DIR}/leader-epoch-checkpoint:{line}: {what}"


@pytest.mark.parametrize(("entries", "message"), [
    ([(1, 0), (1, 5)], "epoch 1 after epoch 1: epochs must be strictly increasing"),
    ([(2, 0), (1, 5)], "epoch 1 after epoch 2: epochs must be strictly increasing"),
    ([(1, 5), (2, 4)], "start offset 4 of epoch 2 is below 5 of epoch 1: start offsets must not "
                       "decrease"),
    ([(-1, 0)], "epoch -1 is outside [0, 2147483647]"),
    ([(0, -1)], "start offset -1 is outside [0, 9223372036854775807]"),
])
def test_leader_epoch_write_rejects_disorder(entries: list[tuple[int, int]],
                                             message: str) -> None:
    fs = sim_dir(DIR)
    with pytest.raises(ValueError) as e:
        LeaderEpochCheckpointFile(fs, DIR).write(entries)
    assert str(e.value) == message
    assert not fs.exists(f"{DIR}/leader-epoch-checkpoint")


def test_leader_epoch_crash_at_every_step() -> None:
    old = [(0, 0), (1, 50)]
    new = [(0, 0), (1, 50), (2, 75)]
    crash_at_every_step(lambda fs: LeaderEpochCheckpointFile(fs, DIR).write(old),
                        lambda fs: LeaderEpochCheckpointFile(fs, DIR).write(new),
                        lambda fs: LeaderEpochCheckpointFile(fs, DIR).read(), old, new,
                        torn=True, directory=DIR)
