"""Names on disk: topic partitions, topic ids, partition directories and segment files.

Invariant upheld: every name logwright creates in a log dir is one it can parse back to exactly
the partition it came from, is at most 255 characters (the limit of common file systems), and
matches the name Kafka would use, so a Kafka log dir can be read and a logwright one read by Kafka.
Parsing is total: a name is either classified (live, future, delete, stray partition dir; a
segment file and its state; an ignored broker file) or rejected with a precise reason, never
guessed at (HAZARDS.md 2: a dir that cannot be classified is set aside by the caller, not deleted).

Layout (KAFKA-FACTS.md, "On-disk layout"):

- live dir ``<topic>-<partition>``;
- future dir ``<topic>-<partition>.<uid32hex>-future`` (a JBOD move target);
- delete dir ``<topic>-<partition>.<uid32hex>-delete`` (waiting for delayed deletion);
- stray dir ``<topic>-<partition>.<uid32hex>-stray`` (set aside, never deleted unasked);
- segment files ``<base offset, 20 digits>.log|.index|.timeindex|.txnindex``, producer snapshots
  ``<offset, 20 digits>.snapshot``, each optionally followed by ``.deleted``, ``.cleaned`` or
  ``.swap`` while a deletion, a compaction or a swap is in progress.
"""

from __future__ import annotations

import base64
import binascii
import enum
import random
import re
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from logwright.errors import Errors, KafkaError, LogDirNameError

#: The longest file name common file systems accept (ext4, xfs: NAME_MAX).
DIR_NAME_MAX_CHARS = 255
#: Kafka's topic name limit: 255 minus room for "-" and a 5-digit partition number.
TOPIC_NAME_MAX_CHARS = 249
#: Partitions are int32 on the wire.
PARTITION_MAX = 2**31 - 1
#: Offsets are int64 on the wire.
OFFSET_MAX = 2**63 - 1
#: Length of the unique id in future/delete/stray dir names (a UUID without dashes).
UID_HEX_CHARS = 32

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_UID_HEX = re.compile(r"[0-9a-f]{32}")
_BASE64URL_22 = re.compile(r"[A-Za-z0-9_-]{22}")


# ---- topic partitions -----------------------------------------------------------------------


class TopicPartition(NamedTuple):
    """A partition of a topic; ``str(tp)`` is Kafka's ``topic-partition`` form."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def topic_name_problem(topic: str) -> str | None:
    """Why ``topic`` is not a legal Kafka topic name, or None when it is legal."""
    if not isinstance(topic, str):
        return f"topic name must be a string, not {type(topic).__name__}"
    if not topic:
        return "topic name is empty"
    if topic in (".", ".."):
        return f"topic name {topic!r} is reserved ('.' and '..' are not allowed)"
    if len(topic) > TOPIC_NAME_MAX_CHARS:
        return (f"topic name is {len(topic)} characters long, "
                f"more than the limit of {TOPIC_NAME_MAX_CHARS}")
    if _LEGAL_TOPIC.fullmatch(topic) is None:
        bad = next(c for c in topic if _LEGAL_TOPIC.fullmatch(c) is None)
        return (f"topic name {topic!r} contains {bad!r}; only ASCII letters, digits, "
                "'.', '_' and '-' are allowed")
    return None


def validate_topic(topic: str) -> None:
    """Raise INVALID_TOPIC_EXCEPTION unless ``topic`` is a legal Kafka topic name.

    Legal: 1 to 249 characters from ``[a-zA-Z0-9._-]``, and neither ``.`` nor ``..``.
    """
    problem = topic_name_problem(topic)
    if problem is not None:
        raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, problem)


def partition_problem(partition: int) -> str | None:
    """Why ``partition`` is not a valid partition number, or None when it is valid."""
    if not isinstance(partition, int) or isinstance(partition, bool):
        return f"partition must be an int, not {type(partition).__name__}"
    if partition < 0:
        return f"partition {partition} is negative"
    if partition > PARTITION_MAX:
        return f"partition {partition} is above the int32 maximum {PARTITION_MAX}"
    return None


def validate_topic_partition(tp: TopicPartition) -> None:
    """Raise unless ``tp`` names a partition that can exist.

    A bad topic raises INVALID_TOPIC_EXCEPTION; a negative or out-of-range partition raises
    UNKNOWN_TOPIC_OR_PARTITION, which is what a Kafka client gets for a partition that does not
    exist.
    """
    validate_topic(tp.topic)
    problem = partition_problem(tp.partition)
    if problem is not None:
        raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{problem} (topic {tp.topic!r})")


# ---- Uuid -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Uuid:
    """A 128-bit id in Kafka's text form: URL-safe base64 without padding, 22 characters.

    Topic ids use this type. The unique part of future/delete/stray dir names is the same 16
    bytes written as 32 lowercase hex digits (``uuid.hex``), as Kafka writes a Java UUID there.
    """

    value: bytes

    ZERO: ClassVar[Uuid]
    """The all-zero id, which Kafka uses to mean "no topic id"."""
    METADATA_TOPIC_ID: ClassVar[Uuid]
    """The id Kafka reserves for the KRaft metadata topic (0, 1)."""

    def __post_init__(self) -> None:
        if not isinstance(self.value, bytes) or len(self.value) != 16:
            raise ValueError(f"a Uuid is 16 bytes, got {self.value!r}")

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self.value).rstrip(b"=").decode("ascii")

    def __repr__(self) -> str:
        return f"Uuid('{self}')"

    @property
    def hex(self) -> str:
        """The 32 lowercase hex digits used in future/delete/stray dir names."""
        return self.value.hex()

    @classmethod
    def parse(cls, text: str) -> Uuid:
        """The Uuid whose Kafka text form is ``text``; ValueError naming the problem otherwise.

        Only the canonical form is accepted (22 characters of the URL-safe alphabet whose
        unused low bits are zero), so every id has exactly one spelling.
        """
        if not isinstance(text, str):
            raise ValueError(f"a Uuid string must be a str, not {type(text).__name__}")
        if len(text) != 22:
            raise ValueError(f"Uuid {text!r} has {len(text)} characters, expected 22 "
                             "(URL-safe base64 without padding)")
        if _BASE64URL_22.fullmatch(text) is None:
            bad = next(c for c in text if not (c.isascii() and (c.isalnum() or c in "-_")))
            raise ValueError(f"Uuid {text!r} contains {bad!r}, which is not in the URL-safe "
                             "base64 alphabet")
        raw = base64.urlsafe_b64decode(text + "==")
        uid = cls(raw)
        if str(uid) != text:
            raise ValueError(f"Uuid {text!r} is not canonical: its last character carries "
                             f"non-zero padding bits (canonical form {str(uid)!r})")
        return uid

    @classmethod
    def from_hex(cls, text: str) -> Uuid:
        """The Uuid whose 32-hex-digit dir-name form is ``text`` (lowercase only)."""
        if not isinstance(text, str) or _UID_HEX.fullmatch(text) is None:
            raise ValueError(f"{text!r} is not {UID_HEX_CHARS} lowercase hex digits")
        return cls(binascii.unhexlify(text))

    @classmethod
    def from_random(cls, rng: random.Random) -> Uuid:
        """A new random (version 4) id drawn from ``rng``, so a seed reproduces it.

        Like Kafka, never returns ZERO, METADATA_TOPIC_ID, or an id whose text starts with '-'
        (it would read as an option on a command line).
        """
        while True:
            raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
            raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
            uid = cls(bytes(raw))
            if uid not in (cls.ZERO, cls.METADATA_TOPIC_ID) and not str(uid).startswith("-"):
                return uid


Uuid.ZERO = Uuid(bytes(16))
Uuid.METADATA_TOPIC_ID = Uuid(bytes(15) + b"\x01")
ZERO_UUID = Uuid.ZERO


# ---- partition directories ------------------------------------------------------------------


class DirKind(enum.Enum):
    """What a partition directory in a log dir is for; the value is its name suffix."""

    LIVE = ""
    FUTURE = "-future"
    DELETE = "-delete"
    STRAY = "-stray"


_SUFFIXED_KINDS = (DirKind.FUTURE, DirKind.DELETE, DirKind.STRAY)


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
    for kind in _SUFFIXED_KINDS:
        if name.endswith(kind.value):
            body = name[: -len(kind.value)]
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
    unknown = _UNKNOWN_SUFFIX.search(name)
    # "<topic>.<32 hex>-<digits>" is a live dir (a topic may look like that); only a non-numeric
    # tail after a dir unique id is an unknown kind of partition dir.
    if unknown is not None and not unknown.group(1)[1:].isdigit():
        raise _name_error(name, f"unknown suffix {unknown.group(1)!r} (expected -future, "
                          "-delete or -stray)")
    tp = _parse_topic_partition(name, name)
    return ParsedDir(DirKind.LIVE, tp, None, False)


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


def segment_file_name(base_offset: int, suffix: str,
                      kind: SegmentFileKind = SegmentFileKind.LIVE) -> str:
    """The 20-digit zero-padded base offset followed by ``suffix`` (``.log``, ``.index``...)."""
    if not isinstance(base_offset, int) or isinstance(base_offset, bool):
        raise ValueError(f"base offset must be an int, not {type(base_offset).__name__}")
    if not 0 <= base_offset <= OFFSET_MAX:
        raise ValueError(f"base offset {base_offset} is outside [0, {OFFSET_MAX}]")
    if suffix not in SEGMENT_SUFFIXES:
        raise ValueError(f"unknown segment file suffix {suffix!r}; expected one of "
                         f"{', '.join(SEGMENT_SUFFIXES)}")
    return f"{base_offset:020d}{suffix}{kind.value}"


_KIND_BY_SUFFIX: dict[str, SegmentFileKind] = {
    k.value: k for k in SegmentFileKind if k is not SegmentFileKind.LIVE
}


def parse_segment_file_name(name: str) -> ParsedSegmentFile | None:
    """``(base_offset, suffix, kind)`` for a segment file name, None for any other name."""
    stem, dot, last = name.rpartition(".")
    if not dot:
        return None
    marked = _KIND_BY_SUFFIX.get("." + last)
    kind = SegmentFileKind.LIVE if marked is None else marked
    if marked is not None:
        name = stem
    digits, dot, ext = name.partition(".")
    suffix = "." + ext
    if not dot or suffix not in SEGMENT_SUFFIXES:
        return None
    if len(digits) != _OFFSET_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    base_offset = int(digits)
    if base_offset > OFFSET_MAX:
        return None
    return ParsedSegmentFile(base_offset, suffix, kind)
