"""Names on disk parse back to exactly what made them, stay within 255 characters, and anything
else is rejected with a precise reason."""

import random
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.errors import Errors, KafkaError, LogDirNameError
from logwright.storage.naming import (
    DirKind,
    ParsedDir,
    ParsedSegmentFile,
    SegmentFileKind,
    TopicPartition,
    Uuid,
    delete_dir_name,
    dir_name,
    future_dir_name,
    is_ignored_entry,
    live_dir_name,
    parse_dir_name,
    parse_segment_file_name,
    parse_segment_file_names,
    segment_file_name,
    stray_dir_name,
    validate_topic,
    validate_topic_partition,
)

HEX = "0123456789abcdef" * 2
UID = Uuid.from_hex(HEX)

topics = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1,
                 max_size=249).filter(lambda t: t not in (".", ".."))
partitions = st.integers(min_value=0, max_value=2**31 - 1)
uuids = st.binary(min_size=16, max_size=16).map(Uuid)


# ---- topics and partitions ------------------------------------------------------------------


def test_topic_partition_prints_as_kafka_does() -> None:
    assert str(TopicPartition("orders", 7)) == "orders-7"


@pytest.mark.parametrize("topic", ["a", "x" * 249, "...", ".a", "a-b_c.D9", "-",
                                   "__consumer_offsets"])
def test_legal_topic_names(topic: str) -> None:
    validate_topic(topic)


@pytest.mark.parametrize(("topic", "message"), [
    ("", "topic name is empty"),
    (".", "topic name '.' is reserved ('.' and '..' are not allowed)"),
    ("..", "topic name '..' is reserved ('.' and '..' are not allowed)"),
    ("x" * 250, "topic name is 250 characters long, more than the limit of 249"),
    ("a b", "topic name 'a b' contains ' '; only ASCII letters, digits, '.', '_' and '-' are "
            "allowed"),
    ("caf\u00e9", "topic name 'caf\u00e9' contains '\u00e9'; only ASCII letters, digits, '.', "
                  "'_' and '-' are allowed"),
    ("a/b", "topic name 'a/b' contains '/'; only ASCII letters, digits, '.', '_' and '-' are "
            "allowed"),
])
def test_illegal_topic_names(topic: str, message: str) -> None:
    with pytest.raises(KafkaError) as e:
        validate_topic(topic)
    assert e.value.error is Errors.INVALID_TOPIC_EXCEPTION
    assert e.value.message == message


@pytest.mark.parametrize(("partition", "message"), [
    (-1, "partition -1 is negative (topic 't')"),
    (2**31, "partition 2147483648 is above the int32 maximum 2147483647 (topic 't')"),
    (True, "partition must be an int, not bool (topic 't')"),
])
def test_invalid_partitions(partition: int, message: str) -> None:
    with pytest.raises(KafkaError) as e:
        validate_topic_partition(TopicPartition("t", partition))
    assert e.value.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert e.value.message == message


# ---- Uuid -----------------------------------------------------------------------------------


def test_uuid_text_form_is_kafkas() -> None:
    assert str(Uuid(bytes(range(16)))) == "AAECAwQFBgcICQoLDA0ODw"
    assert str(Uuid.ZERO) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert str(Uuid.METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert Uuid(bytes(range(16))).hex == "000102030405060708090a0b0c0d0e0f"
    # URL-safe alphabet: '-' and '_' rather than '+' and '/'.
    assert str(Uuid(b"\xfb\xff" * 8)) == "-__7__v_-__7__v_-__7_w"


@given(uuids)
def test_uuid_round_trips_through_both_text_forms(uid: Uuid) -> None:
    text = str(uid)
    assert len(text) == 22
    assert Uuid.parse(text) == uid
    assert Uuid.from_hex(uid.hex) == uid


@pytest.mark.parametrize(("text", "message"), [
    ("AAAA", "Uuid 'AAAA' has 4 characters, expected 22 (URL-safe base64 without padding)"),
    ("AAAAAAAAAAAAAAAAAAAAAA==", "Uuid 'AAAAAAAAAAAAAAAAAAAAAA==' has 24 characters, expected 22 "
                                 "(URL-safe base64 without padding)"),
    ("AAAAAAAAAAAAAAAAAAAA+A", "Uuid 'AAAAAAAAAAAAAAAAAAAA+A' contains '+', which is not in the "
                               "URL-safe base64 alphabet"),
    ("AAAAAAAAAAAAAAAAAAAAAB", "Uuid 'AAAAAAAAAAAAAAAAAAAAAB' is not canonical: its last "
                               "character carries non-zero padding bits (canonical form "
                               "'AAAAAAAAAAAAAAAAAAAAAA')"),
])
def test_uuid_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as e:
        Uuid.parse(text)
    assert str(e.value) == message


def test_uuid_rejects_wrong_sizes_and_bad_hex() -> None:
    with pytest.raises(ValueError, match="a Uuid is 16 bytes"):
        Uuid(bytes(15))
    with pytest.raises(ValueError, match="is not 32 lowercase hex digits"):
        Uuid.from_hex(HEX.upper())


def test_random_uuids_are_reproducible_from_the_seed() -> None:
    a = [Uuid.from_random(random.Random(42)) for _ in range(2)]
    assert a[0] == a[1]
    assert Uuid.from_random(random.Random(43)) != a[0]
    rng = random.Random(7)
    drawn = [Uuid.from_random(rng) for _ in range(2000)]
    assert len(set(drawn)) == len(drawn)
    for uid in drawn:
        assert uid.value[6] >> 4 == 4  # version 4
        assert uid.value[8] >> 6 == 0b10  # IETF variant
        assert not str(uid).startswith("-")
        assert uid not in (Uuid.ZERO, Uuid.METADATA_TOPIC_ID)


def test_random_uuid_skips_ids_whose_text_starts_with_a_dash() -> None:
    # Find a seed whose first draw would start with '-' and check it is skipped.
    for seed in range(10_000):
        raw = bytearray(random.Random(seed).getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        if str(Uuid(bytes(raw))).startswith("-"):
            break
    else:
        pytest.fail("no seed below 10000 draws a leading '-'")
    uid = Uuid.from_random(random.Random(seed))
    assert uid != Uuid(bytes(raw))
    assert not str(uid).startswith("-")


# ---- partition directory names --------------------------------------------------------------


def test_dir_names_of_every_kind() -> None:
    tp = TopicPartition("orders", 3)
    assert live_dir_name(tp) == "orders-3"
    assert future_dir_name(tp, UID) == f"orders-3.{HEX}-future"
    assert delete_dir_name(tp, UID) == f"orders-3.{HEX}-delete"
    assert stray_dir_name(tp, HEX) == f"orders-3.{HEX}-stray"
    assert parse_dir_name("orders-3") == ParsedDir(DirKind.LIVE, tp, None, False)
    assert parse_dir_name(f"orders-3.{HEX}-future") == ParsedDir(DirKind.FUTURE, tp, HEX, False)
    assert parse_dir_name(f"orders-3.{HEX}-delete") == ParsedDir(DirKind.DELETE, tp, HEX, False)
    assert parse_dir_name(f"orders-3.{HEX}-stray") == ParsedDir(DirKind.STRAY, tp, HEX, False)


def test_topics_that_look_like_suffixes_still_parse_as_live_dirs() -> None:
    # Topics may contain '.', '-' and hex; the last '-' and a numeric tail decide.
    assert parse_dir_name(f"a-1.{HEX}-delete-0").tp == TopicPartition(f"a-1.{HEX}-delete", 0)
    assert parse_dir_name(f"a-1.{HEX}-7") == ParsedDir(
        DirKind.LIVE, TopicPartition(f"a-1.{HEX}", 7), None, False)
    # A '-' before the digits belongs to the topic, so no negative partition can be spelled.
    assert parse_dir_name("t--1").tp == TopicPartition("t-", 1)
    assert parse_dir_name(f"t--1.{HEX}-stray").tp == TopicPartition("t-", 1)


@given(topics, partitions, uuids, st.sampled_from(list(DirKind)))
def test_dir_names_round_trip(topic: str, partition: int, uid: Uuid, kind: DirKind) -> None:
    tp = TopicPartition(topic, partition)
    try:
        name = dir_name(kind, tp, uid)
    except KafkaError as e:
        # Only live and future names can be refused, and only for being too long.
        assert kind in (DirKind.LIVE, DirKind.FUTURE)
        assert e.error is Errors.INVALID_TOPIC_EXCEPTION
        tail = 1 + len(str(partition)) + (0 if kind is DirKind.LIVE else 33 + len(kind.value))
        assert len(topic) + tail > 255
        return
    assert len(name) <= 255
    parsed = parse_dir_name(name)
    assert parsed.kind is kind
    assert parsed.tp.partition == partition
    assert parsed.uid == (None if kind is DirKind.LIVE else uid.hex)
    if parsed.maybe_truncated:
        assert kind in (DirKind.DELETE, DirKind.STRAY) and len(name) == 255
        assert topic.startswith(parsed.tp.topic)
    else:
        assert parsed.tp.topic == topic


def test_future_name_at_255_is_allowed_and_at_256_refused() -> None:
    # "-0." + 32 hex + "-future" is 42 characters.
    assert len(future_dir_name(TopicPartition("x" * 213, 0), UID)) == 255
    with pytest.raises(KafkaError) as e:
        future_dir_name(TopicPartition("x" * 214, 0), UID)
    assert e.value.error is Errors.INVALID_TOPIC_EXCEPTION
    assert e.value.message == (f"cannot move {'x' * 214}-0 between log dirs: its future dir name "
                               "would be 256 characters, more than 255 (topic name is 214 "
                               "characters)")


def test_delete_and_stray_names_cut_the_topic_to_fit_255() -> None:
    tp = TopicPartition("y" * 249, 12345)
    for make, suffix, kind in ((delete_dir_name, "-delete", DirKind.DELETE),
                               (stray_dir_name, "-stray", DirKind.STRAY)):
        name = make(tp, UID)
        assert len(name) == 255
        assert name.endswith(f"-12345.{HEX}{suffix}")
        parsed = parse_dir_name(name)
        assert parsed.kind is kind and parsed.maybe_truncated
        assert parsed.tp == TopicPartition("y" * (255 - len(f"-12345.{HEX}{suffix}")), 12345)
    # A name that fits exactly is not cut, but is at the cap, so it is flagged as possibly cut.
    exact = delete_dir_name(TopicPartition("z" * 213, 0), UID)
    assert len(exact) == 255 and parse_dir_name(exact).tp.topic == "z" * 213
    assert parse_dir_name(exact).maybe_truncated
    short = delete_dir_name(TopicPartition("z" * 212, 0), UID)
    assert not parse_dir_name(short).maybe_truncated


def test_live_name_over_255_is_refused() -> None:
    assert len(live_dir_name(TopicPartition("x" * 249, 99999))) == 255
    with pytest.raises(KafkaError) as e:
        live_dir_name(TopicPartition("x" * 249, 100000))
    assert e.value.error is Errors.INVALID_TOPIC_EXCEPTION
    assert e.value.message.endswith("would be 256 characters, more than 255")


def test_dir_name_builders_reject_bad_input() -> None:
    with pytest.raises(KafkaError) as e:
        delete_dir_name(TopicPartition("bad topic", 0), UID)
    assert e.value.error is Errors.INVALID_TOPIC_EXCEPTION
    with pytest.raises(KafkaError) as e:
        stray_dir_name(TopicPartition("t", -1), UID)
    assert e.value.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ValueError, match="is neither a Uuid nor 32 lowercase hex digits"):
        future_dir_name(TopicPartition("t", 0), "abc")
    with pytest.raises(ValueError, match="a future dir name needs a unique id"):
        dir_name(DirKind.FUTURE, TopicPartition("t", 0))


@pytest.mark.parametrize(("name", "reason"), [
    ("", "the name is empty"),
    ("orders", "no '-' separates the topic from the partition in 'orders'"),
    ("orders-", "the partition after the last '-' in 'orders-' is empty"),
    ("orders-x1", "partition 'x1' is not a non-negative integer"),
    ("orders-\u0661", "partition '\u0661' is not a non-negative integer"),
    ("orders-01", "partition '01' has a leading zero (two names would then denote one partition)"),
    ("orders-2147483648", "partition 2147483648 is above the int32 maximum 2147483647"),
    ("-1", "topic name is empty"),
    (".-0", "topic name '.' is reserved ('.' and '..' are not allowed)"),
    ("a b-0", "topic name 'a b' contains ' '; only ASCII letters, digits, '.', '_' and '-' are "
              "allowed"),
    ("x" * 250 + "-0", "topic name is 250 characters long, more than the limit of 249"),
    ("orders-0-delete", "a -delete dir needs '.<32 hex digits>' before the suffix, found no '.' "
                        "in 'orders-0'"),
    (f"orders-0.{HEX[:31]}-future", f"unique id '{HEX[:31]}' before -future is not 32 lowercase "
                                    "hex digits"),
    (f"orders-0.{HEX.upper()}-stray", f"unique id '{HEX.upper()}' before -stray is not 32 "
                                      "lowercase hex digits"),
    (f"orders-0.{HEX}-move", "unknown suffix '-move' (expected -future, -delete or -stray)"),
    (f"orders-x.{HEX}-delete", "partition 'x' is not a non-negative integer"),
    (f"orders.{HEX}-delete", "no '-' separates the topic from the partition in 'orders'"),
])
def test_parse_dir_name_errors(name: str, reason: str) -> None:
    with pytest.raises(LogDirNameError) as e:
        parse_dir_name(name)
    assert str(e.value) == f"{name!r} is not a partition directory name: {reason}"


def test_parse_dir_name_rejects_names_over_255_characters() -> None:
    with pytest.raises(LogDirNameError) as e:
        parse_dir_name("x" * 252 + "-1234")
    assert str(e.value) == (f"{'x' * 64!r}... is not a partition directory name: the name is "
                            "257 characters, more than 255")


@pytest.mark.parametrize("name", [
    "lost+found", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
    "log-start-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown",
    "meta.properties", ".lock", "bootstrap.checkpoint", "replication-offset-checkpoint.tmp",
    "partition.metadata.tmp",
])
def test_ignored_entries(name: str) -> None:
    assert is_ignored_entry(name)


@pytest.mark.parametrize("name", ["orders-0", f"orders-0.{HEX}-delete", "tmp-0", "lost-0"])
def test_partition_dirs_are_not_ignored(name: str) -> None:
    assert not is_ignored_entry(name)
    parse_dir_name(name)


# ---- segment file names ---------------------------------------------------------------------


def test_segment_file_names() -> None:
    assert segment_file_name(0, ".log") == "00000000000000000000.log"
    assert segment_file_name(1234, ".index") == "00000000000000001234.index"
    assert segment_file_name(2**63 - 1, ".timeindex") == "09223372036854775807.timeindex"
    deleted = segment_file_name(5, ".log", SegmentFileKind.DELETED)
    assert deleted == "00000000000000000005.log.deleted"


@pytest.mark.parametrize(("name", "parsed"), [
    ("00000000000000000000.log", (0, ".log", SegmentFileKind.LIVE)),
    ("00000000000000001234.index", (1234, ".index", SegmentFileKind.LIVE)),
    ("00000000000000001234.timeindex", (1234, ".timeindex", SegmentFileKind.LIVE)),
    ("00000000000000001234.txnindex", (1234, ".txnindex", SegmentFileKind.LIVE)),
    ("00000000000000001234.snapshot", (1234, ".snapshot", SegmentFileKind.LIVE)),
    ("00000000000000000042.log.deleted", (42, ".log", SegmentFileKind.DELETED)),
    ("00000000000000000042.index.deleted", (42, ".index", SegmentFileKind.DELETED)),
    ("00000000000000000042.log.cleaned", (42, ".log", SegmentFileKind.CLEANED)),
    ("00000000000000000042.timeindex.swap", (42, ".timeindex", SegmentFileKind.SWAP)),
])
def test_parse_segment_file_names(name: str, parsed: tuple[int, str, SegmentFileKind]) -> None:
    assert parse_segment_file_name(name) == ParsedSegmentFile(*parsed)


@pytest.mark.parametrize("name", [
    "0000000000000000000.log",  # 19 digits
    "000000000000000000000.log",  # 21 digits
    "0000000000000000000a.log",
    "00000000000000000000.txt",
    "00000000000000000000",
    "00000000000000000000.log.bak",
    "00000000000000000000.deleted",
    "99999999999999999999.log",  # above int64
    "partition.metadata",
    "leader-epoch-checkpoint",
    "\u0660" * 20 + ".log",
])
def test_non_segment_names_parse_to_none(name: str) -> None:
    assert parse_segment_file_name(name) is None


def test_segment_file_name_rejects_bad_input() -> None:
    with pytest.raises(ValueError) as e:
        segment_file_name(-1, ".log")
    assert str(e.value) == "base offset -1 is outside [0, 9223372036854775807]"
    with pytest.raises(ValueError) as e:
        segment_file_name(0, ".idx")
    assert str(e.value) == ("unknown segment file suffix '.idx'; expected one of .log, .index, "
                            ".timeindex, .txnindex, .snapshot")
    with pytest.raises(ValueError) as e:
        segment_file_name(True, ".log")
    assert str(e.value) == "base offset must be an int, not bool"


@given(st.integers(min_value=0, max_value=2**63 - 1),
       st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot"]),
       st.sampled_from(list(SegmentFileKind)))
def test_segment_file_names_round_trip(offset: int, suffix: str, kind: SegmentFileKind) -> None:
    name = segment_file_name(offset, suffix, kind)
    assert parse_segment_file_name(name) == ParsedSegmentFile(offset, suffix, kind)


@given(st.lists(st.integers(min_value=0, max_value=2**63 - 1), min_size=2, max_size=10))
def test_segment_names_sort_in_offset_order(offsets: list[int]) -> None:
    names = sorted(segment_file_name(o, ".log") for o in offsets)
    assert [parse_segment_file_name(n).base_offset for n in names  # type: ignore[union-attr]
            ] == sorted(offsets)


segment_like_names = st.one_of(
    st.builds(lambda d, suffix, mark: d + suffix + mark,
              st.text(alphabet="0123456789" * 4 + "\u0660\u00b2a", min_size=18, max_size=22),
              st.sampled_from([".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".lg",
                               ""]),
              st.sampled_from(["", ".deleted", ".cleaned", ".swap", ".tmp", "x"])),
    st.sampled_from(["partition.metadata", "leader-epoch-checkpoint", "99999999999999999999.log",
                     "09223372036854775807.log", "09223372036854775808.index"]),
    st.text(max_size=30))


@given(st.lists(segment_like_names, max_size=12))
def test_parsing_a_listing_at_once_is_parsing_each_name(names: list[str]) -> None:
    """The start-up's one call per dir listing answers as a call per name."""
    one_by_one = [(n, *p) for n in names if (p := parse_segment_file_name(n)) is not None]
    assert parse_segment_file_names(names) == one_by_one


@given(st.text(alphabet=string.ascii_letters + string.digits + "-_+/=", min_size=20,
               max_size=24) | st.binary(min_size=16, max_size=16).map(lambda b: str(Uuid(b))))
def test_uuid_parse_decodes_as_the_base64_module(text: str) -> None:
    """``Uuid.parse`` decodes without the base64 module's layers, to the same bytes (or the
    same refusal)."""
    import base64
    try:
        got: object = Uuid.parse(text)
    except ValueError as exc:
        got = ValueError
        assert "22" in str(exc) or "alphabet" in str(exc) or "canonical" in str(exc)
    if got is not ValueError:
        assert isinstance(got, Uuid)
        assert got.value == base64.urlsafe_b64decode(text + "==")
        assert str(got) == text
