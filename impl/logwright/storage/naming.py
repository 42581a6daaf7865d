"""Names on disk: topic partitions, topic ids, partition directories and segment files.

Invariant upheld: every name logwright creates in a log dir is one it can parse back to exactly
the partition it came from, is at most 255 characters (the limit of common file systems), and
matches the name Kafka would use, so a Kafka log dir can be read and a logwright one read by Kafka.
Parsing is total: a name is either classified (live, future, delete, stray partition dir; a
segment file and its state; an ignored broker file) or rejected with a precise reason, never
guessed at (hazard 2: a dir that cannot be classified is set aside by the caller, not deleted).

Layout (kafka-compatibility.md "On-disk layout"):

- live dir ``<topic>-<partition>``;
- future dir ``<topic>-<partition>.<uid32hex>-future`` (a JBOD move target);
- delete dir ``<topic>-<partition>.<uid32hex>-delete`` (waiting for delayed deletion);
- stray dir ``<topic>-<partition>.<uid32hex>-stray`` (set aside, never deleted unasked);
- segment files ``<base offset, 20 digits>.log|.index|.timeindex|.txnindex``, producer snapshots
  ``<offset, 20 digits>.snapshot``, each optionally followed by ``.deleted``, ``.cleaned`` or
  ``.swap`` while a deletion, a compaction or a swap is in progress.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from typing import NamedTuple

from logwright.errors import Errors, KafkaError, LogDirNameError

# The identities live on the ground floor (logwright.identity); storage code and older callers
# still name them from here.
from logwright.identity import PARTITION_MAX as PARTITION_MAX
from logwright.identity import TOPIC_NAME_MAX_CHARS as TOPIC_NAME_MAX_CHARS
from logwright.identity import UID_HEX_CHARS as UID_HEX_CHARS
from logwright.identity import ZERO_UUID as ZERO_UUID
from logwright.identity import TopicPartition as TopicPartition
from logwright.identity import Uuid as Uuid
from logwright.identity import partition_problem as partition_problem
from logwright.identity import topic_name_problem as topic_name_problem
from logwright.identity import validate_topic as validate_topic
from logwright.identity import validate_topic_partition as validate_topic_partition

#: The longest file name common file systems accept (ext4, xfs: NAME_MAX).
DIR_NAME_MAX_CHARS = 255
_UID_HEX = re.compile(r"[0-9a-f]{32}")

#: Offsets are int64 on the wire.
OFFSET_MAX = 2**63 - 1



# ---- partition directories ------------------------------------------------------------------


class DirKind(enum.Enum):
    """What a partition directory in a log dir is for; the value is its name suffix."""

    LIVE = ""
    FUTURE = "-future"
    DELETE = "-delete"
    STRAY = "-stray"


_SUFFIXED_KINDS = (DirKind.FUTURE, DirKind.DELETE, DirKind.STRAY)
#: (suffix, kind), read without the enum's ``value`` descriptor (start-up parses every name).
_SUFFIX_OF_KIND = tuple((kind.value, kind) for kind in _SUFFIXED_KINDS)


class ParsedDir(NamedTuple):
    """A parsed partition directory name.

    ``uid`` is the 32-hex unique part (None for a live dir). ``maybe_truncated`` is True for a
    delete or stray name exactly 255 characters long: such a name may have had its topic cut to
    fit (Kafka does the same), and the name alone cannot tell a cut topic from one that fitted
    exactly, so ``tp.topic`` is then only known to be a prefix of the real topic.
    """

    kind: DirKind
    tp: TopicPartition
    uid: str | None
    maybe_truncated: bool = False


def _uid_hex(uid: Uuid | str) -> str:
    if isinstance(uid, Uuid):
        return uid.hex
    if isinstance(uid, str) and _UID_HEX.fullmatch(uid) is not None:
        return uid
    raise ValueError(f"dir unique id {uid!r} is neither a Uuid nor {UID_HEX_CHARS} lowercase "
                     "hex digits")


def live_dir_name(tp: TopicPartition) -> str:
    """``<topic>-<partition>``; INVALID_TOPIC_EXCEPTION if that exceeds 255 characters.

    With Kafka's 249-character topic limit this only happens for partition numbers of 6 or more
    digits on a near-limit topic; the file system would refuse the name anyway.
    """
    validate_topic_partition(tp)
    name = f"{tp.topic}-{tp.partition}"
    if len(name) > DIR_NAME_MAX_CHARS:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION,
                         f"the log dir name for {tp} would be {len(name)} characters, more than "
                         f"{DIR_NAME_MAX_CHARS}")
    return name


def future_dir_name(tp: TopicPartition, uid: Uuid | str) -> str:
    """``<topic>-<partition>.<uid32hex>-future``.

    Raises KafkaError(INVALID_TOPIC_EXCEPTION) if the name would exceed 255 characters: like
    Kafka, logwright refuses to move such a partition between log dirs rather than truncate the
    name, because a future dir must be renamed back to the live name and so must carry the
    whole topic.
    """
    validate_topic_partition(tp)
    name = f"{tp.topic}-{tp.partition}.{_uid_hex(uid)}{DirKind.FUTURE.value}"
    if len(name) > DIR_NAME_MAX_CHARS:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION,
                         f"cannot move {tp} between log dirs: its future dir name would be "
                         f"{len(name)} characters, more than {DIR_NAME_MAX_CHARS} (topic name is "
                         f"{len(tp.topic)} characters)")
    return name


def _capped_dir_name(tp: TopicPartition, uid: Uuid | str, kind: DirKind) -> str:
    validate_topic_partition(tp)
    tail = f"-{tp.partition}.{_uid_hex(uid)}{kind.value}"
    # Only the topic is cut: the partition, uid and suffix are what make the name unique and
    # classifiable, the topic prefix is there for a human reading the dir.
    name = tp.topic[: DIR_NAME_MAX_CHARS - len(tail)] + tail
    assert len(name) <= DIR_NAME_MAX_CHARS, name
    return name


def delete_dir_name(tp: TopicPartition, uid: Uuid | str) -> str:
    """``<topic>-<partition>.<uid32hex>-delete``, the topic cut so the name is <= 255 chars."""
    return _capped_dir_name(tp, uid, DirKind.DELETE)


def stray_dir_name(tp: TopicPartition, uid: Uuid | str) -> str:
    """``<topic>-<partition>.<uid32hex>-stray``, the topic cut so the name is <= 255 chars."""
    return _capped_dir_name(tp, uid, DirKind.STRAY)


def dir_name(kind: DirKind, tp: TopicPartition, uid: Uuid | str | None = None) -> str:
    """The dir name of ``kind`` for ``tp`` (``uid`` is required for all but LIVE)."""
    if kind is DirKind.LIVE:
        return live_dir_name(tp)
    if uid is None:
        raise ValueError(f"a {kind.name.lower()} dir name needs a unique id")
    if kind is DirKind.FUTURE:
        return future_dir_name(tp, uid)
    return _capped_dir_name(tp, uid, kind)


def _name_error(name: str, reason: str) -> LogDirNameError:
    shown = repr(name) if len(name) <= DIR_NAME_MAX_CHARS else f"{name[:64]!r}..."
    return LogDirNameError(f"{shown} is not a partition directory name: {reason}")


_UNKNOWN_SUFFIX = re.compile(r"\.[0-9a-f]{32}(-[^-.]*)\Z")


def _parse_topic_partition(name: str, body: str) -> TopicPartition:
    topic, dash, partition_text = body.rpartition("-")
    if not dash:
        raise _name_error(name, f"no '-' separates the topic from the partition in {body!r}")
    if not partition_text:
        raise _name_error(name, f"the partition after the last '-' in {body!r} is empty")
    # A '-' before the digits lands in the topic (a topic may end with '-'), so "t--1" is topic
    # "t-" partition 1, as Kafka reads it too; a negative number cannot be spelled here.
    if not (partition_text.isascii() and partition_text.isdigit()):
        raise _name_error(name, f"partition {partition_text!r} is not a non-negative integer")
    if len(partition_text) > 1 and partition_text[0] == "0":
        raise _name_error(name, f"partition {partition_text!r} has a leading zero (two names "
                          "would then denote one partition)")
    partition = int(partition_text)
    if partition > PARTITION_MAX:
        raise _name_error(name, f"partition {partition} is above the int32 maximum {PARTITION_MAX}")
    problem = topic_name_problem(topic)
    if problem is not None:
        raise _name_error(name, problem)
    return TopicPartition(topic, partition)


def parse_dir_name(name: str) -> ParsedDir:
    """Classify a partition dir name; LogDirNameError with the precise reason otherwise.

    Parsing is the inverse of the ``*_dir_name`` functions: for every valid ``tp`` and ``uid``,
    ``parse_dir_name(future_dir_name(tp, uid)) == ParsedDir(FUTURE, tp, uid.hex)``, and the same
    for live, delete and stray names whose topic was not cut.
    """
    if not name:
        raise _name_error(name, "the name is empty")
    if len(name) > DIR_NAME_MAX_CHARS:
        raise _name_error(name, f"the name is {len(name)} characters, more than "
                          f"{DIR_NAME_MAX_CHARS}")
    for suffix, kind in _SUFFIX_OF_KIND:
        if name.endswith(suffix):
            body = name[: -len(suffix)]
            tp_text, dot, uid = body.rpartition(".")
            if not dot:
                raise _name_error(name, f"a {kind.value} dir needs '.<{UID_HEX_CHARS} hex "
                                  f"digits>' before the suffix, found no '.' in {body!r}")
            if _UID_HEX.fullmatch(uid) is None:
                raise _name_error(name, f"unique id {uid!r} before {kind.value} is not "
                                  f"{UID_HEX_CHARS} lowercase hex digits")
            tp = _parse_topic_partition(name, tp_text)
            truncated = kind is not DirKind.FUTURE and len(name) == DIR_NAME_MAX_CHARS
            return ParsedDir(kind, tp, uid, truncated)
    unknown = _UNKNOWN_SUFFIX.search(name) if "." in name else None
    # "<topic>.<32 hex>-<digits>" is a live dir (a topic may look like that); only a non-numeric
    # tail after a dir unique id is an unknown kind of partition dir.
    if unknown is not None and not unknown.group(1)[1:].isdigit():
        raise _name_error(name, f"unknown suffix {unknown.group(1)!r} (expected -future, "
                          "-delete or -stray)")
    tp = _parse_topic_partition(name, name)
    return ParsedDir(DirKind.LIVE, tp, None, False)


_SUFFIXES = tuple(suffix for suffix, _ in _SUFFIX_OF_KIND)
_LIVE_DIR = DirKind.LIVE


def parse_dir_names(names: Iterable[str]) -> list[tuple[str, ParsedDir]]:
    """``(name, parse_dir_name(name))`` for each of ``names`` that parses, in order; a name
    that does not is left out (``parse_dir_name`` says why). A whole log dir listing in one
    call: a live name (``<topic>-<partition>``, the common one) is read in a few steps, each
    topic validated once; any other name, or one these steps do not settle, goes through
    ``parse_dir_name`` itself."""
    found: list[tuple[str, ParsedDir]] = []
    legal: dict[str, bool] = {}  # topic -> whether it is a legal name
    make = tuple.__new__
    for name in names:
        # What parse_dir_name does with a live name, in its order, each check that it would
        # reject on sending the name the long way instead.
        if (0 < len(name) <= DIR_NAME_MAX_CHARS and not name.endswith(_SUFFIXES)
                and ("." not in name or _UNKNOWN_SUFFIX.search(name) is None)):
            topic, dash, partition_text = name.rpartition("-")
            if (dash and partition_text.isascii() and partition_text.isdigit()
                    and (partition_text[0] != "0" or len(partition_text) == 1)):
                partition = int(partition_text)
                ok = legal.get(topic)
                if ok is None:
                    ok = legal[topic] = topic_name_problem(topic) is None
                if ok and partition <= PARTITION_MAX:
                    tp: TopicPartition = make(TopicPartition, (topic, partition))
                    found.append((name, make(ParsedDir, (_LIVE_DIR, tp, None, False))))
                    continue
        try:
            found.append((name, parse_dir_name(name)))
        except LogDirNameError:
            pass
    return found


#: Broker files that live at the top of a log dir beside the partition dirs.
IGNORED_LOG_DIR_ENTRIES = frozenset({
    "lost+found",  # made by mkfs on ext* volumes mounted as a log dir
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    ".kafka_cleanshutdown",
    "meta.properties",  # Kafka's broker/cluster/dir ids
    "bootstrap.checkpoint",  # KRaft bootstrap metadata
    ".lock",  # Kafka's per-dir lock file
})


def is_ignored_entry(name: str) -> bool:
    """Whether ``name`` at the top of a log dir is a known broker file, not a partition dir.

    Also true for ``*.tmp`` (a metadata file whose atomic replace was cut short by a crash;
    the file it was to replace is still intact).
    """
    return name in IGNORED_LOG_DIR_ENTRIES or name.endswith(".tmp")


# ---- segment files --------------------------------------------------------------------------


LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX)
_OFFSET_DIGITS = 20


class SegmentFileKind(enum.Enum):
    """The state a segment file is in; the value is the extra suffix that marks it."""

    LIVE = ""
    DELETED = ".deleted"  # scheduled for asynchronous deletion
    CLEANED = ".cleaned"  # a compaction's output, not yet swapped in
    SWAP = ".swap"  # a compaction's output being swapped in


class ParsedSegmentFile(NamedTuple):
    """A parsed segment file name: ``<base_offset><suffix><kind.value>``."""

    base_offset: int
    suffix: str
    kind: SegmentFileKind


def segment_file_stem(base_offset: int) -> str:
    """The 20-digit zero-padded base offset that every file of a segment's name begins with."""
    if type(base_offset) is int and 0 <= base_offset <= OFFSET_MAX:
        return f"{base_offset:020d}"  # (the common case, checked in one step)
    if not isinstance(base_offset, int) or isinstance(base_offset, bool):
        raise ValueError(f"base offset must be an int, not {type(base_offset).__name__}")
    if not 0 <= base_offset <= OFFSET_MAX:
        raise ValueError(f"base offset {base_offset} is outside [0, {OFFSET_MAX}]")
    return f"{base_offset:020d}"


def segment_file_name(base_offset: int, suffix: str,
                      kind: SegmentFileKind = SegmentFileKind.LIVE) -> str:
    """The 20-digit zero-padded base offset followed by ``suffix`` (``.log``, ``.index``...)."""
    if suffix not in SEGMENT_SUFFIXES:
        raise ValueError(f"unknown segment file suffix {suffix!r}; expected one of "
                         f"{', '.join(SEGMENT_SUFFIXES)}")
    return f"{segment_file_stem(base_offset)}{suffix}{_MARK_OF_KIND[kind]}"


#: Each kind's mark, read without the enum's ``value`` descriptor (start-up names thousands).
_MARK_OF_KIND: dict[SegmentFileKind, str] = {k: k.value for k in SegmentFileKind}
_LIVE = SegmentFileKind.LIVE


_KIND_BY_SUFFIX: dict[str, SegmentFileKind] = {
    k.value: k for k in SegmentFileKind if k is not SegmentFileKind.LIVE
}


#: ``<20 digits><suffix>[<mark>]``: the digits, the suffix, and the mark of a kind (or None).
_SEGMENT_FILE = re.compile(
    f"([0-9]{{{_OFFSET_DIGITS}}})({'|'.join(re.escape(x) for x in SEGMENT_SUFFIXES)})"
    f"({'|'.join(re.escape(x) for x in _KIND_BY_SUFFIX)})?")
_KIND_OF_MARK: dict[str | None, SegmentFileKind] = {None: _LIVE}
_KIND_OF_MARK.update(_KIND_BY_SUFFIX)
#: Every ending ``<suffix>[<mark>]`` a segment file name may have after its digits.
_SEGMENT_FILE_ENDINGS: dict[str, tuple[str, SegmentFileKind]] = {
    suffix + _MARK_OF_KIND[kind]: (suffix, kind)
    for suffix in SEGMENT_SUFFIXES for kind in SegmentFileKind}


def parse_segment_file_name(name: str) -> ParsedSegmentFile | None:
    """``(base_offset, suffix, kind)`` for a segment file name, None for any other name."""
    match = _SEGMENT_FILE.fullmatch(name)
    if match is None:
        return None
    digits, suffix, mark = match.groups()
    base_offset = int(digits)
    if base_offset > OFFSET_MAX:
        return None
    return ParsedSegmentFile(base_offset, suffix, _KIND_OF_MARK[mark])


def parse_segment_file_names(names: Iterable[str]
                             ) -> list[tuple[str, int, str, SegmentFileKind]]:
    """``(name, *parse_segment_file_name(name))`` for each of ``names`` that is a segment file
    name, in order: a whole dir listing parsed in one call, in plain tuples (start-up parses
    a few names per partition)."""
    # What _SEGMENT_FILE matches, told apart without it: 20 ASCII digits, then one of the
    # known endings (a suffix and a kind's mark), looked up whole.
    found: list[tuple[str, int, str, SegmentFileKind]] = []
    ending_of = _SEGMENT_FILE_ENDINGS.get
    for name in names:
        ending = ending_of(name[_OFFSET_DIGITS:])
        if ending is None:
            continue
        digits = name[:_OFFSET_DIGITS]
        if digits.isdigit() and digits.isascii():
            base_offset = int(digits)
            if base_offset <= OFFSET_MAX:
                found.append((name, base_offset, ending[0], ending[1]))
    return found
