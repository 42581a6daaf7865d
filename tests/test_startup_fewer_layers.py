"""Start-up's third round (docs/performance.md): each shortcut is compared with what it replaces.

- The offset checkpoint files: a well-formed file is parsed a column at a time
  (``_well_formed_entries``), taking the previous file's partitions when its key columns are
  the same; whatever that does not settle goes through the loop line by line
  (``_parse_entries``), which finds the first problem. Both must give the same offsets, and the
  file as a whole the same offsets or the same error as the code before (kept here), alone or
  read after others.
- ``decode_versioned_entries`` splits every line first and looks for a bad one after: the same
  entries, or the same error, as the loop before (kept here).
- ``partition.metadata``: the common file's topic id is remembered by its bytes; every answer,
  the first and the repeated ones, is the one the parse before gave (kept here).
- Dir names: ``parse_dir_names`` over a listing answers as ``parse_dir_name`` per name.
- A partition dir holding one segment after a clean shutdown takes the loader's short path
  (``_lone_segment_stem``); with it turned off the general path loads the same dir. Both must
  leave the same log (offsets, segments, topic id, epochs, report), the same answers on first
  use and after more appends, the same files byte for byte, and on the simulated disk the same
  count of operations, for every kind of damage the general path handles.
- The log manager lists each log dir once, for the recovery plan and the loading; with the
  listing taken again for the loading, start-up must come out the same in every scenario of a
  JBOD move cut short by a crash, and with unrecognised, ``-delete``, ``-stray`` and doubled
  entries, and with a dir whose listing fails.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.errors import CheckpointError, LogDirNameError
from logwright.identity import Uuid
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.records import build_simple_batch
from logwright.storage import loader
from logwright.storage.checkpoint import (
    FIRST_ENTRY_LINE,
    _parse_entries,
    _well_formed_entries,
    checkpoint_error,
    decode_lines,
    decode_versioned_entries,
    parse_offset_checkpoint,
)
from logwright.storage.config import LogConfig
from logwright.storage.epoch_cache import LeaderEpochCache
from logwright.storage.log import PartitionLog
from logwright.storage.metadata_files import (
    PartitionMetadataFile,
    _parse_partition_metadata_lines,
    parse_partition_metadata_generation,
)
from logwright.storage.naming import (
    TopicPartition,
    parse_dir_name,
    parse_dir_names,
    parse_segment_file_names,
)
from logwright.world import Fault, FileSystem, RealFileSystem, SimFileSystem, VirtualClock
from logwright.world.simfs import SimulatedCrash
from tests.storage_helpers import batch
from tests.test_segment_lazy_time_index import CLOCK, answers, append_more, index_files

# ---- the offset checkpoint files ---------------------------------------------------------------


def _decode_versioned_entries_before(path: str, data: bytes, version: int, fields: int,
                                     layout: str) -> list[list[str]]:
    """``decode_versioned_entries`` as it was: one line at a time."""
    lines = decode_lines(path, data)
    if not (lines[0].isascii() and lines[0].isdigit()):
        raise checkpoint_error(path, 1, f"version {lines[0]!r} is not a non-negative integer")
    if int(lines[0]) != version:
        raise checkpoint_error(path, 1, f"unsupported version {int(lines[0])} "
                               f"(expected {version})")
    if len(lines) < 2:
        raise checkpoint_error(path, 2, "the entry count is missing")
    count_text = lines[1]
    if not (count_text.isascii() and count_text.isdigit()):
        if count_text[:1] == "-" and count_text[1:].isascii() and count_text[1:].isdigit():
            raise checkpoint_error(path, 2, f"entry count {count_text} is negative")
        raise checkpoint_error(path, 2, f"entry count {count_text!r} is not an integer")
    count = int(count_text)
    body = lines[2:]
    entries: list[list[str]] = []
    for i, line in enumerate(body[:count]):
        parts = line.split(" ")
        if len(parts) != fields:
            raise checkpoint_error(path, FIRST_ENTRY_LINE + i,
                                   f"expected {fields} fields '{layout}' separated by single "
                                   f"spaces, found {len(parts)} in {line!r}")
        entries.append(parts)
    if len(body) < count:
        raise checkpoint_error(path, FIRST_ENTRY_LINE + len(body),
                               f"count mismatch: line 2 declares {count} entries but the file "
                               f"ends after {len(body)}")
    if len(body) > count:
        extra = body[count:]
        line_no = FIRST_ENTRY_LINE + count
        if all(len(x.split(" ")) == fields for x in extra):
            raise checkpoint_error(path, line_no,
                                   f"count mismatch: line 2 declares {count} entries but the "
                                   f"file has {len(body)}")
        raise checkpoint_error(path, line_no,
                               f"trailing garbage after the {count} entries declared on line 2: "
                               f"{extra[0]!r}")
    return entries


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return ("ok", fn())
    except CheckpointError as exc:
        return ("error", str(exc))


_field = st.one_of(
    st.sampled_from(["0", "7", "007", "123456789", "1234567890", "999999999999999999",
                     "9223372036854775807", "9223372036854775808", "", "-1", "+1", "1x", "x",
                     "\u0661", "t", "t.x", "..", ".", "a" * 250, "a b"]),
    st.integers(min_value=0, max_value=2**64).map(str),
    st.text(alphabet=string.ascii_letters + string.digits + "._- ", max_size=6))
_topic = st.one_of(st.sampled_from(["t", "topic-a", "a.b_c", "t2"]), _field)
_line = st.one_of(
    st.builds(lambda t, p, o: f"{t} {p} {o}", _topic, _field, _field),
    st.builds(lambda t, p, o: f"{t} {p} {o}", st.sampled_from(["t", "u"]),
              st.integers(min_value=0, max_value=4).map(str),
              st.integers(min_value=0, max_value=10**6).map(str)),
    _field)


@st.composite
def _checkpoint_files(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(_line, max_size=12))
    count = draw(st.one_of(st.just(len(lines)), st.integers(min_value=0, max_value=14)))
    version = draw(st.sampled_from(["0", "0", "0", "1", "x"]))
    text = "\n".join([version, str(count), *lines]) + "\n"
    return text.encode("utf-8") if draw(st.booleans()) else text.encode("ascii", "replace")


@given(_checkpoint_files())
def test_versioned_entries_split_as_one_line_at_a_time(data: bytes) -> None:
    for fields in (2, 3):
        assert _outcome(partial(decode_versioned_entries, "/d/f", data, 0, fields, "a b c")) == (
            _outcome(partial(_decode_versioned_entries_before, "/d/f", data, 0, fields, "a b c")))


def _parse_offset_checkpoint_before(path: str, data: bytes) -> dict[TopicPartition, int]:
    """``parse_offset_checkpoint`` as it was: the framing, then the loop alone."""
    return _parse_entries(path, _decode_versioned_entries_before(path, data, 0, 3,
                                                                 "topic partition offset"))


@given(_checkpoint_files())
def test_an_offset_checkpoint_parses_as_the_loop_alone_parsed_it(data: bytes) -> None:
    got = _outcome(lambda: parse_offset_checkpoint("/d/f", data))
    assert got == _outcome(lambda: _parse_offset_checkpoint_before("/d/f", data))
    if got[0] == "ok":  # the same entries, in the same order
        result = parse_offset_checkpoint("/d/f", data)
        assert list(result.items()) == list(_parse_offset_checkpoint_before("/d/f", data).items())
        assert all(type(tp) is TopicPartition for tp in result)


@given(st.lists(st.lists(_field, min_size=3, max_size=3), max_size=10))
def test_the_column_check_settles_only_what_the_loop_accepts_and_alike(
        entries: list[list[str]]) -> None:
    ascii_entries = [[f.encode("ascii", "replace").decode("ascii") for f in e] for e in entries]
    fast = _well_formed_entries(ascii_entries)
    slow = _outcome(lambda: _parse_entries("/d/f", ascii_entries))
    if fast is not None:
        assert slow == ("ok", fast)
        assert list(fast.items()) == list(_parse_entries("/d/f", ascii_entries).items())


@st.composite
def _files_of_a_dir(draw: st.DrawFn) -> list[bytes]:
    """Checkpoint files one after another as a dir's start-up reads them: mostly the same
    partitions in the same order, each file with its own offsets, some with a partition,
    topic or line changed, dropped or doubled."""
    keys = draw(st.lists(st.tuples(st.sampled_from(["t", "u", "a.b", "T-", "t!"]),
                                   st.integers(min_value=0, max_value=5)), max_size=8))
    files = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        these = list(keys)
        if these and draw(st.booleans()):
            i = draw(st.integers(min_value=0, max_value=len(these) - 1))
            change = draw(st.sampled_from(["partition", "topic", "drop", "double"]))
            if change == "partition":
                these[i] = (these[i][0], these[i][1] + 1)
            elif change == "topic":
                these[i] = ("v", these[i][1])
            elif change == "drop":
                del these[i]
            else:
                these.insert(i, these[i])
        lines = [f"{t} {p} {draw(st.integers(min_value=0, max_value=10**6))}" for t, p in these]
        files.append(("\n".join(["0", str(len(lines)), *lines]) + "\n").encode())
    return files


@given(st.lists(_files_of_a_dir(), min_size=1, max_size=3))
def test_files_read_one_after_another_parse_as_the_loop_alone_parsed_them(
        dirs: list[list[bytes]]) -> None:
    """The partitions of the previous file are taken again only for the same key columns."""
    for files in dirs:
        for data in files:
            got = _outcome(partial(parse_offset_checkpoint, "/d/f", data))
            assert got == _outcome(partial(_parse_offset_checkpoint_before, "/d/f", data))
            if got[0] == "ok":
                assert [type(tp) for tp in parse_offset_checkpoint("/d/f", data)] == [
                    TopicPartition] * len(got[1])  # type: ignore[index, arg-type]


def test_start_up_lets_go_of_the_last_checkpoint_file_s_partitions() -> None:
    from logwright.storage import checkpoint
    from logwright.world import SimScheduler

    clock = VirtualClock(1_000_000)
    fs = SimFileSystem(clock)
    lm = LogManager(fs, ["/d1"], clock, SimScheduler(clock, seed=1), None, random.Random(1))
    lm.startup()
    for p in range(3):
        lm.create_log(TopicPartition("t", p))
    lm.shutdown()
    parse_offset_checkpoint("/x", b"0\n1\nt 0 5\n")
    assert checkpoint._last_keys != checkpoint._NO_KEYS
    lm = LogManager(fs, ["/d1"], clock, SimScheduler(clock, seed=2), None, random.Random(2))
    assert lm.startup().loaded == 3
    assert checkpoint._last_keys == checkpoint._NO_KEYS


def test_a_duplicate_or_a_bad_line_deep_in_a_large_file_is_still_reported_where_it_is() -> None:
    lines = [f"t {p} {p * 3}" for p in range(2500)]
    good = ("\n".join(["0", "2500", *lines]) + "\n").encode()
    assert parse_offset_checkpoint("/d/f", good) == {TopicPartition("t", p): p * 3
                                                     for p in range(2500)}
    for i, bad in [(1700, "t 5 1"), (2499, "t 2500 1234567890123456789"), (3, "t. 9 9"),
                   (900, "t 900 "), (12, "T 12 -1")]:
        data = ("\n".join(["0", "2500", *lines[:i], bad, *lines[i + 1:]]) + "\n").encode()
        assert _outcome(partial(parse_offset_checkpoint, "/d/f", data)) == (
            _outcome(partial(_parse_offset_checkpoint_before, "/d/f", data)))


# ---- partition.metadata ------------------------------------------------------------------------


def _parse_partition_metadata_before(path: str, data: bytes) -> tuple[Uuid, int]:
    """The parse before the common file's ids were remembered: that file's id parsed each time,
    any other file (or a bad id) the long way, which did not change."""
    prefix = b"version: 0\ntopic_id: "
    if len(data) == len(prefix) + 23 and data.startswith(prefix) and data[-1] == 0x0A:
        try:
            topic_id = Uuid.parse(data[len(prefix):-1].decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            pass
        else:
            if topic_id != Uuid.ZERO:
                return topic_id, 0
    return _parse_partition_metadata_lines(path, data)


_ids = st.one_of(st.binary(min_size=16, max_size=16).map(lambda b: str(Uuid(b))),
                 st.sampled_from([str(Uuid.ZERO), "A" * 21 + "B", "A" * 21 + "!", "A" * 22,
                                  "\u00e9" * 22]),
                 st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=22,
                         max_size=22))


@given(st.lists(st.tuples(_ids, st.sampled_from(["", "log_generation: 3\n", "x"])),
                min_size=1, max_size=6))
def test_a_remembered_topic_id_is_the_one_the_parse_gives(
        files: list[tuple[str, str]]) -> None:
    for topic_id, tail in files * 2:  # each file twice: parsed, then remembered
        data = f"version: 0\ntopic_id: {topic_id}\n{tail}".encode()
        assert _outcome(partial(parse_partition_metadata_generation, "/d/t-0/pm", data)) == (
            _outcome(partial(_parse_partition_metadata_before, "/d/t-0/pm", data)))


# ---- dir names ---------------------------------------------------------------------------------

_dir_names = st.one_of(
    st.builds(lambda t, p: f"{t}-{p}",
              st.one_of(st.sampled_from(["t", "a.b", "x-y", "t-", "..", ".", "", "\u00e9",
                                         "a" * 249, "a" * 250, "t.0123456789abcdef0123456789abcd"
                                         "ef"]),
                        st.text(alphabet=string.ascii_letters + "._-", max_size=8)),
              st.one_of(st.integers(min_value=0, max_value=2**32).map(str),
                        st.sampled_from(["", "00", "01", "-1", "\u0661", "1a", "2147483648"]))),
    st.builds(lambda t, p, u, s: f"{t}-{p}.{u}{s}", st.sampled_from(["t", "a.b", "t-"]),
              st.integers(min_value=0, max_value=9).map(str),
              st.sampled_from(["0123456789abcdef" * 2, "0123456789ABCDEF" * 2, "abc"]),
              st.sampled_from(["-future", "-delete", "-stray", "-other", "-12", ""])),
    st.sampled_from(["lost+found", "a" * 256, "t-0" + "0" * 253, "", "-", "t-0.tmp"]),
    st.text(max_size=12))


@given(st.lists(_dir_names, max_size=10))
def test_parsing_a_log_dir_listing_at_once_is_parsing_each_name(names: list[str]) -> None:
    one_by_one = []
    for name in names:
        try:
            one_by_one.append((name, parse_dir_name(name)))
        except LogDirNameError:
            pass
    got = parse_dir_names(names)
    assert got == one_by_one
    assert all(type(p.tp) is TopicPartition for _, p in got)


# ---- the loader's short path for a lone segment ------------------------------------------------

TP = TopicPartition("t", 0)
CONFIGS = [LogConfig(segment_bytes=1 << 20, index_interval_bytes=64),
           LogConfig(segment_bytes=1 << 20, index_interval_bytes=1 << 20)]


def _built(fs: FileSystem, path: str, seed: int, config: LogConfig,
           topic_id: Uuid | None) -> PartitionLog:
    rng = random.Random(seed)
    log = PartitionLog.create(fs, path, TP, config, CLOCK, topic_id=topic_id)
    for i in range(rng.randint(0, 30)):
        log.append_as_leader(build_simple_batch([b"v" * rng.randint(1, 30)],
                                                rng.randint(0, 60)), leader_epoch=i // 10)
    log.update_high_watermark(log.log_end_offset)
    log.flush()
    log.close()
    return log


def _write(fs: FileSystem, path: str, data: bytes, truncate: bool = True) -> None:
    handle = fs.open(path, create=True)
    if truncate:
        handle.truncate(0)
    handle.append(data)
    handle.fsync()
    handle.close()


def _stem(log: PartitionLog) -> str:
    return log.segments[-1].log_path[:-len(".log")]


Damage = Callable[[FileSystem, PartitionLog, str], None]


def _none(fs: FileSystem, log: PartitionLog, path: str) -> None:
    pass


def _index_garbage(fs: FileSystem, log: PartitionLog, path: str) -> None:
    _write(fs, _stem(log) + ".index", bytes.fromhex("00000005000000ff0000000100000001"))


def _index_torn(fs: FileSystem, log: PartitionLog, path: str) -> None:
    _write(fs, _stem(log) + ".index", b"\x00" * 3, truncate=False)


def _index_missing(fs: FileSystem, log: PartitionLog, path: str) -> None:
    fs.remove(_stem(log) + ".index")


def _time_index_missing(fs: FileSystem, log: PartitionLog, path: str) -> None:
    fs.remove(_stem(log) + ".timeindex")


def _renamed_up(fs: FileSystem, log: PartitionLog, path: str) -> None:
    """The segment's files under a higher base: its first batch is below its base offset."""
    if not log.log_end_offset:
        return
    for suffix in (".log", ".index", ".timeindex"):
        fs.rename(_stem(log) + suffix, f"{path}/{5:020d}{suffix}")


def _tail_cut(fs: FileSystem, log: PartitionLog, path: str) -> None:
    handle = fs.open(_stem(log) + ".log")
    handle.truncate(max(0, handle.size() - 7))
    handle.fsync()
    handle.close()


def _leftovers(fs: FileSystem, log: PartitionLog, path: str) -> None:
    _write(fs, f"{path}/{0:020d}.log.deleted", b"old")
    _write(fs, f"{path}/{9:020d}.index", b"")


def _second_segment(fs: FileSystem, log: PartitionLog, path: str) -> None:
    _write(fs, f"{path}/{10_000:020d}.log", b"")


def _odd_names(fs: FileSystem, log: PartitionLog, path: str) -> None:
    _write(fs, f"{path}/.hidden", b"x")
    _write(fs, f"{path}/1junk", b"x")
    _write(fs, f"{path}/{0:020d}.snapshot", b"")


def _epochs_past_the_end(fs: FileSystem, log: PartitionLog, path: str) -> None:
    cache = LeaderEpochCache.read(fs, path)
    cache.assign(50, log.log_end_offset + 5)


DAMAGES: list[Damage] = [_none, _index_garbage, _index_torn, _index_missing,
                         _time_index_missing, _renamed_up, _tail_cut, _leftovers,
                         _second_segment, _odd_names, _epochs_past_the_end]


def _files(fs: FileSystem, path: str) -> dict[str, bytes]:
    return {n: fs.read_file(f"{path}/{n}") for n in fs.listdir(path)}


def _load_and_use(fs: FileSystem, path: str, config: LogConfig, lso: int, leo: int,
                  seed: int) -> tuple[object, ...]:
    ops = fs.ops if isinstance(fs, SimFileSystem) else None
    log, report = PartitionLog.load(fs, path, TP, config, CLOCK, log_start_offset_checkpoint=lso,
                                    recovery_point=leo, high_watermark_checkpoint=leo,
                                    clean_shutdown=True)
    try:
        loaded = ((log.log_start_offset, log.high_watermark, log.log_end_offset,
                   log.recovery_point, log.topic_id, log.generation,
                   log.leader_epoch_cache.pairs),
                  [(s.base_offset, s.next_offset, s.size_bytes, s.first_batch_timestamp_ms,
                    s.epoch_runs) for s in log.segments],
                  report,
                  fs.ops - ops if ops is not None else None,
                  _files(fs, path))
        first = answers(fs, log)
        append_more(log, seed)
        return loaded, first, answers(fs, log), index_files(fs, log)
    finally:
        log.close()


def _both_paths(make_fs: Callable[[], tuple[FileSystem, str]], seed: int, config: LogConfig,
                damage: Damage, lso: int, monkeypatch: pytest.MonkeyPatch
                ) -> tuple[object, object]:
    results = []
    for short in (True, False):
        fs, path = make_fs()
        topic_id = Uuid.from_random(random.Random(seed)) if seed % 3 else None
        built = _built(fs, path, seed, config, topic_id)
        damage(fs, built, path)
        with monkeypatch.context() as m:
            if not short:
                m.setattr(loader, "_lone_segment_stem", lambda names: None)
            try:
                results.append(_load_and_use(fs, path, config, lso, built.log_end_offset, seed))
            except Exception as exc:  # (a damage may break a later use: alike on both paths)
                results.append((type(exc), str(exc).replace(path, "<dir>")))
    return results[0], results[1]


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: d.__name__.strip("_"))
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lso", [0, 3, 1000])
def test_a_lone_segment_loads_by_the_short_path_as_by_the_general_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, config: LogConfig,
        damage: Damage, lso: int) -> None:
    def sim() -> tuple[FileSystem, str]:
        fs = SimFileSystem(VirtualClock(1_000_000))
        fs.makedirs("/d")
        return fs, "/d/t-0"

    runs = iter(range(2))

    def real() -> tuple[FileSystem, str]:
        return RealFileSystem(), str(tmp_path / f"r{next(runs)}" / "t-0")

    (tmp_path / "r0").mkdir()
    (tmp_path / "r1").mkdir()
    short, general = _both_paths(sim, seed, config, damage, lso, monkeypatch)
    assert short == general
    short, general = _both_paths(real, seed, config, damage, lso, monkeypatch)
    assert short == general


def test_the_short_path_is_taken_for_a_lone_segment_after_a_clean_shutdown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fs = SimFileSystem(VirtualClock(1_000_000))
    fs.makedirs("/d")
    _built(fs, "/d/t-0", 1, CONFIGS[0], Uuid.from_random(random.Random(1)))
    taken: list[str | None] = []
    real = loader._lone_segment_stem

    def spy(names: list[str]) -> str | None:
        taken.append(real(names))
        return taken[-1]

    monkeypatch.setattr(loader, "_lone_segment_stem", spy)
    _load_and_use(fs, "/d/t-0", CONFIGS[0], 0, 0, 1)
    assert taken == [f"{0:020d}"]


_segment_like = st.one_of(
    st.builds(lambda base, suffix: f"{base:020d}{suffix}",
              st.sampled_from([0, 0, 0, 7, 2**63 - 1]),
              st.sampled_from([".log", ".index", ".timeindex", ".snapshot", ".txnindex",
                               ".log.deleted", ".index.swap", ".timeindex.cleaned", ".lg"])),
    st.sampled_from(["partition.metadata", "leader-epoch-checkpoint", ".x", "-x", "1junk",
                     "\u0660" * 20 + ".log", "99999999999999999999.log",
                     "99999999999999999999.index", "99999999999999999999.timeindex"]),
    st.text(max_size=24))


@given(st.lists(_segment_like, max_size=8, unique=True))
def test_a_lone_segment_stem_is_found_only_where_the_listing_holds_just_that_segment(
        names: list[str]) -> None:
    names = sorted(names)
    stem = loader._lone_segment_stem(names)
    if stem is None:
        return
    base = int(stem)
    assert [(n, b, s, k.value) for n, b, s, k in parse_segment_file_names(names)] == [
        (stem + ".index", base, ".index", ""), (stem + ".log", base, ".log", ""),
        (stem + ".timeindex", base, ".timeindex", "")]


@pytest.mark.parametrize("names", [
    [f"{0:020d}.index", f"{0:020d}.log", f"{0:020d}.timeindex"],
    [f"{0:020d}.index", f"{0:020d}.log", f"{0:020d}.timeindex", "leader-epoch-checkpoint",
     "partition.metadata"],
    [f"{42:020d}.index", f"{42:020d}.log", f"{42:020d}.timeindex", "partition.metadata"],
])
def test_the_common_listings_have_a_lone_segment(names: list[str]) -> None:
    assert loader._lone_segment_stem(names) == names[0][:20]


# ---- one listing of each log dir ---------------------------------------------------------------

D1, D2, D3 = "/data/d1", "/data/d2", "/data/d3"
DIRS = [D1, D2, D3]
MOVED = TopicPartition("t", 0)
TOPIC_ID = Uuid.from_random(random.Random(7))
MANAGER_CONFIG = LogManagerConfig(log=LogConfig(segment_bytes=300, index_interval_bytes=64))


class _Forgets(dict[str, Any]):
    """A ``_listings`` that keeps nothing: each dir is listed again when it is loaded."""

    def __setitem__(self, key: str, value: Any) -> None:
        pass


def _start(fs: SimFileSystem, clock: VirtualClock, seed: int, relist: bool
           ) -> tuple[LogManager, object]:
    from logwright.world import SimScheduler

    lm = LogManager(fs, DIRS, clock, SimScheduler(clock, seed=seed), MANAGER_CONFIG,
                    random.Random(seed))
    if relist:
        lm._listings = _Forgets()
    return lm, lm.startup()


def _state(fs: SimFileSystem, lm: LogManager) -> object:
    dirs = {}
    for path, st_ in lm.dirs.items():
        dirs[path] = (
            st_.online, st_.offline_reason,
            sorted((str(tp), log.dir_path, log.log_start_offset, log.log_end_offset,
                    log.high_watermark, log.generation, log.topic_id)
                   for tp, log in st_.logs.items()),
            sorted((str(tp), log.dir_path, log.log_end_offset, log.generation)
                   for tp, log in st_.future_logs.items()),
            sorted(st_.strays), sorted(st_.pending_deletes.items()), list(st_.futures),
            sorted(st_.unrecognised.items()), sorted(st_.unloadable.items()))

    def tree(path: str) -> object:
        if not fs.exists(path):
            return None
        if not fs.is_dir(path):
            return fs.read_file(path), fs.durable_bytes(path)
        return {n: tree(f"{path}/{n}") for n in fs.listdir(path)}, fs.durable_listdir(path)

    ops = fs.ops
    for d in DIRS:
        fs.clear_fault(d)
    return dirs, {d: tree(d) for d in DIRS}, ops


Scenario = Callable[[SimFileSystem, VirtualClock], None]


def _move_cut_after(k: int) -> Scenario:
    def scenario(fs: SimFileSystem, clock: VirtualClock) -> None:
        lm, _ = _start(fs, clock, 100, False)
        log = lm.create_log(MOVED, TOPIC_ID, D1)
        for i in range(6):
            log.append_as_leader(batch(b"r%d.0" % i, b"r%d.1" % i), leader_epoch=i // 3)
        log.update_high_watermark(log.log_end_offset)
        log.flush()
        for p in range(1, 4):
            lm.create_log(TopicPartition("u", p), None, DIRS[p % 3])
        fs.crash_after(k)
        try:
            fut = lm.create_future_log(MOVED, D2)
            while fut.log_end_offset < log.recovery_point:
                fut.append_as_follower(log.read(fut.log_end_offset, 100,
                                                log.recovery_point).records)
            fut.update_high_watermark(min(log.high_watermark, fut.log_end_offset))
            lm.swap_future_log(MOVED)
            clock.advance(MANAGER_CONFIG.file_delete_delay_ms + 1)
            lm.run_delayed_deletes()
            lm.shutdown()
        except SimulatedCrash:
            pass
        fs.crash()
    return scenario


def _odd_entries(fs: SimFileSystem, clock: VirtualClock) -> None:
    lm, _ = _start(fs, clock, 100, False)
    lm.create_log(MOVED, TOPIC_ID, D1)
    lm.create_log(TopicPartition("v", 0), None, D2)
    lm.shutdown()
    fs.makedirs(f"{D1}/not a partition")
    fs.makedirs(f"{D2}/t-0")  # the same partition live in a second dir
    fs.makedirs(f"{D2}/w-1.{'a' * 32}-delete")
    fs.makedirs(f"{D3}/w-2.{'b' * 32}-stray")
    fs.makedirs(f"{D3}/w-3.{'c' * 32}-future")  # a lone future dir (R5)
    PartitionMetadataFile(fs, f"{D3}/w-3.{'c' * 32}-future").write(TOPIC_ID, 4)
    handle = fs.open(f"{D1}/stray-file", create=True)
    handle.close()


def _doubted(fs: SimFileSystem, clock: VirtualClock) -> None:
    lm, _ = _start(fs, clock, 100, False)
    log = lm.create_log(MOVED, TOPIC_ID, D1)
    log.restamp_generation(5)
    lm.shutdown()
    fs.makedirs(f"{D2}/t-0")
    PartitionMetadataFile(fs, f"{D2}/t-0").write(Uuid.from_random(random.Random(8)))
    fs.makedirs(f"{D3}/t-0")
    PartitionMetadataFile(fs, f"{D3}/t-0").write(TOPIC_ID, 3)


def _failing_dir(fs: SimFileSystem, clock: VirtualClock) -> None:
    _odd_entries(fs, clock)
    fs.inject_fault(D2, Fault.EIO)


SCENARIOS: list[tuple[str, Scenario]] = [
    *((f"move-cut-after-{k}", _move_cut_after(k)) for k in range(1, 60, 3)),
    ("odd-entries", _odd_entries), ("doubted", _doubted), ("failing-dir", _failing_dir)]


@pytest.mark.parametrize(("name", "scenario"), SCENARIOS, ids=[n for n, _ in SCENARIOS])
def test_one_listing_of_each_log_dir_starts_up_as_two_did(name: str,
                                                          scenario: Scenario) -> None:
    outcomes = []
    for relist in (False, True):
        clock = VirtualClock(1_000_000)
        fs = SimFileSystem(clock)
        scenario(fs, clock)
        lm, report = _start(fs, clock, 5, relist)
        outcomes.append((report, _state(fs, lm)))
    assert outcomes[0] == outcomes[1]
