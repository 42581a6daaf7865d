"""Per-log-dir offset checkpoint files, and the framing every versioned metadata file shares.

Invariant upheld (hazard 11): a checkpoint on disk is always either the previous complete
content or the new complete content, never a mix, because it is only ever replaced through
``write_file_atomic`` (``<file>.tmp``, fsync, rename, directory fsync). A file that is not
exactly what a writer produces is rejected with a ``CheckpointError`` naming the file, the
1-based line and what is wrong; the caller takes that one log dir offline. Nothing is guessed.

Format (Kafka's, kafka-compatibility.md "On-disk layout")::

    0                      <- version
    2                      <- entry count N
    topic-a 0 1234         <- N lines, single spaces, sorted by (topic, partition)
    topic-b 3 0

Every line, the last included, ends with ``\\n``; a missing final newline means the file was
cut short and is an error.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from functools import partial

from logwright.errors import CheckpointError
from logwright.storage.naming import (
    OFFSET_MAX,
    PARTITION_MAX,
    TopicPartition,
    partition_problem,
    topic_name_problem,
    validate_topic,
    validate_topic_partition,
)
from logwright.world.fs import FileSystem, write_file_atomic

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

#: The four per-log-dir offset checkpoint files.
OFFSET_CHECKPOINT_FILES = (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)

CHECKPOINT_VERSION = 0
#: Line number of the first entry: line 1 is the version, line 2 the count.
FIRST_ENTRY_LINE = 3


def checkpoint_error(path: str, line: int, what: str) -> CheckpointError:
    """The error for a malformed metadata file: ``<path>:<line>: <what>``."""
    return CheckpointError(f"{path}:{line}: {what}")


def decode_lines(path: str, data: bytes, expected: str = "the version") -> list[str]:
    """The lines of a small ASCII metadata file, without their newlines; ``CheckpointError``
    naming ``path`` and the line for a non-ASCII byte, an empty file (``expected`` says what it
    should hold) or a last line cut short. Every metadata file of a log dir is read through it."""
    if not data.isascii():
        position = next(i for i, b in enumerate(data) if b >= 0x80)
        raise checkpoint_error(path, data.count(b"\n", 0, position) + 1,
                               f"byte {position} is 0x{data[position]:02x}, not ASCII text")
    text = data.decode("ascii")
    if not text:
        raise checkpoint_error(path, 1, f"the file is empty (expected {expected})")
    if not text.endswith("\n"):
        raise checkpoint_error(path, text.count("\n") + 1,
                               "the last line has no newline: the file was cut short")
    lines = text.split("\n")
    lines.pop()  # the empty string after the final newline
    return lines


def _is_decimal(text: str) -> bool:
    # str.isdigit alone accepts digits of other scripts; the file is ASCII-checked, but the
    # helpers are also used on strings that were not.
    return text.isascii() and text.isdigit()


def parse_non_negative(path: str, line: int, field: str, text: str, maximum: int) -> int:
    """``text`` as an integer in [0, maximum], else a CheckpointError naming ``field``."""
    if not _is_decimal(text):
        if text[:1] == "-" and _is_decimal(text[1:]):
            raise checkpoint_error(path, line, f"{field} {text} is negative")
        raise checkpoint_error(path, line, f"{field} {text!r} is not a non-negative integer")
    value = int(text)
    if value > maximum:
        raise checkpoint_error(path, line, f"{field} {value} is above the maximum {maximum}")
    return value


def decode_versioned_entries(path: str, data: bytes, version: int, fields: int,
                             layout: str) -> list[list[str]]:
    """Check the version/count framing and split each entry line into ``fields`` fields.

    Entry ``i`` (0-based) of the result is on line ``FIRST_ENTRY_LINE + i``. ``layout`` names
    the fields for messages, e.g. ``"topic partition offset"``.
    """
    lines = decode_lines(path, data)
    if not _is_decimal(lines[0]):
        raise checkpoint_error(path, 1, f"version {lines[0]!r} is not a non-negative integer")
    if int(lines[0]) != version:
        raise checkpoint_error(path, 1, f"unsupported version {int(lines[0])} "
                               f"(expected {version})")
    if len(lines) < 2:
        raise checkpoint_error(path, 2, "the entry count is missing")
    count_text = lines[1]
    if not _is_decimal(count_text):
        if count_text[:1] == "-" and _is_decimal(count_text[1:]):
            raise checkpoint_error(path, 2, f"entry count {count_text} is negative")
        raise checkpoint_error(path, 2, f"entry count {count_text!r} is not an integer")
    count = int(count_text)
    body = lines[2:]
    # Split in one pass; only a line with the wrong number of fields is looked for again.
    entries = [line.split(" ") for line in body[:count]]
    if any(len(parts) != fields for parts in entries):
        i, parts = next((i, parts) for i, parts in enumerate(entries) if len(parts) != fields)
        raise checkpoint_error(path, FIRST_ENTRY_LINE + i,
                               f"expected {fields} fields '{layout}' separated by single "
                               f"spaces, found {len(parts)} in {body[i]!r}")
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


def encode_versioned_entries(version: int, lines: Sequence[str]) -> bytes:
    """The bytes of a versioned file holding ``lines`` as its entries."""
    out = [str(version), str(len(lines)), *lines]
    return ("\n".join(out) + "\n").encode("ascii")


class OffsetCheckpointFile:
    """One ``topic partition offset`` checkpoint file of a log dir.

    Reads and writes whole files; the caller serialises writers of one file (Kafka holds a lock
    per file; here the single-threaded core does).
    """

    def __init__(self, fs: FileSystem, path: str) -> None:
        self.fs = fs
        self.path = path

    def __repr__(self) -> str:
        return f"OffsetCheckpointFile({self.path!r})"

    def write(self, entries: Mapping[TopicPartition, int]) -> None:
        """Replace the file with ``entries``, durably and atomically.

        Raises KafkaError for an invalid topic or partition and ValueError for an offset outside
        [0, 2**63 - 1], before touching the disk. OSError from the file system propagates.
        """
        valid_topics: set[str] = set()
        lines = []
        for tp, offset in sorted(entries.items()):
            if tp.topic not in valid_topics:
                validate_topic(tp.topic)
                valid_topics.add(tp.topic)
            if partition_problem(tp.partition) is not None:
                validate_topic_partition(tp)
            if not isinstance(offset, int) or isinstance(offset, bool):
                raise ValueError(f"offset for {tp} must be an int, not {type(offset).__name__}")
            if not 0 <= offset <= OFFSET_MAX:
                raise ValueError(f"offset {offset} for {tp} is outside [0, {OFFSET_MAX}]")
            lines.append(f"{tp.topic} {tp.partition} {offset}")
        write_file_atomic(self.fs, self.path, encode_versioned_entries(CHECKPOINT_VERSION, lines))

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; {} when the file does not exist.

        Raises CheckpointError (file, line, reason) for any malformed content; OSError from the
        file system propagates (both mean: take this log dir offline).
        """
        if not self.fs.exists(self.path):
            return {}
        return parse_offset_checkpoint(self.path, self.fs.read_file(self.path))


def parse_offset_checkpoint(path: str, data: bytes) -> dict[TopicPartition, int]:
    """Parse the bytes of an offset checkpoint file; ``path`` is used in error messages."""
    entries = decode_versioned_entries(path, data, CHECKPOINT_VERSION, 3,
                                       "topic partition offset")
    found = _well_formed_entries(entries)
    return found if found is not None else _parse_entries(path, entries)


def _parse_entries(path: str, entries: list[list[str]]) -> dict[TopicPartition, int]:
    """The offsets of ``entries`` (split lines of an ASCII file, three fields each), in order;
    CheckpointError for the first line that is not well formed."""
    # The loop keeps to one pass with no calls on the good path (the file is known to be ASCII,
    # so str.isdigit means 0-9), and each topic name is validated once, not once per partition.
    result: dict[TopicPartition, int] = {}
    valid_topics: set[str] = set()
    make_tp = tuple.__new__
    line = FIRST_ENTRY_LINE - 1
    for topic, partition_text, offset_text in entries:
        line += 1
        if topic not in valid_topics:
            problem = topic_name_problem(topic)
            if problem is not None:
                raise checkpoint_error(path, line, problem)
            valid_topics.add(topic)
        if partition_text.isdigit() and len(partition_text) <= 9:  # 9 digits < 2**31
            partition = int(partition_text)
        else:
            partition = parse_non_negative(path, line, "partition", partition_text,
                                           PARTITION_MAX)
        if offset_text.isdigit() and len(offset_text) <= 18:  # 18 digits < 2**63
            offset = int(offset_text)
        else:
            offset = parse_non_negative(path, line, "offset", offset_text, OFFSET_MAX)
        tp: TopicPartition = make_tp(TopicPartition, (topic, partition))
        count = len(result)
        result[tp] = offset
        if len(result) == count:
            first = next(FIRST_ENTRY_LINE + j for j, e in enumerate(entries)
                         if e[0] == topic and int(e[1]) == partition)
            raise checkpoint_error(path, line, f"duplicate entry for partition {tp} "
                                   f"(first on line {first})")
    return result


_make_tp = partial(tuple.__new__, TopicPartition)


def _well_formed_entries(entries: list[list[str]]) -> dict[TopicPartition, int] | None:
    """What ``_parse_entries`` makes of ``entries`` (split lines of an ASCII
    file, three fields each) when every one of them is well formed: legal topics, partitions of
    1 to 9 digits, offsets of 1 to 18 digits, no partition twice. None when any is not (or
    could be, by these checks): the loop then finds the first problem and says what it is.

    Each check runs over a whole column at once, and the entries are built in C loops: start-up
    reads three such files per log dir, an entry per partition in each."""
    if not entries:
        return {}
    topics, partitions, offsets = zip(*entries, strict=True)
    if not (min(map(len, partitions)) > 0 and max(map(len, partitions)) <= 9
            and min(map(len, offsets)) > 0 and max(map(len, offsets)) <= 18
            and "".join(partitions).isdigit() and "".join(offsets).isdigit()):
        return None  # (the file is ASCII: isdigit means 0-9)
    global _last_keys
    last_topics, last_partitions, tps = _last_keys
    if topics != last_topics or partitions != last_partitions:
        for topic in set(topics):
            if topic_name_problem(topic) is not None:
                return None
        tps = tuple(map(_make_tp, zip(topics, map(int, partitions), strict=True)))
        _last_keys = (topics, partitions, tps)
    result = dict(zip(tps, map(int, offsets), strict=True))
    return result if len(result) == len(entries) else None


_NO_KEYS: tuple[tuple[str, ...], tuple[str, ...], tuple[TopicPartition, ...]] = ((), (), ())
#: The key columns of the last file ``_well_formed_entries`` took, and its partitions for them:
#: a log dir's offset checkpoint files list the same partitions in the same order, so the second
#: and third files of a dir take the first one's (a pure function of the columns, kept in one
#: tuple so that a reader in another thread sees one whole value). ``forget_last_keys`` lets
#: go of them.
_last_keys = _NO_KEYS


def forget_last_keys() -> None:
    """Let go of the partitions the last offset checkpoint file parsed was keyed by (kept for
    the next file of the same dir). Start-up calls it once every dir is read, so that a broker
    does not hold a dir's worth of them for nothing; a later parse works either way."""
    global _last_keys
    _last_keys = _NO_KEYS


def checkpoint_path(log_dir: str, name: str) -> str:
    """The path of checkpoint ``name`` in ``log_dir``."""
    return posixpath.join(log_dir, name)


def offset_checkpoint_files(fs: FileSystem, log_dir: str) -> dict[str, OffsetCheckpointFile]:
    """The four offset checkpoint files of ``log_dir``, keyed by file name."""
    return {name: OffsetCheckpointFile(fs, checkpoint_path(log_dir, name))
            for name in OFFSET_CHECKPOINT_FILES}


__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN_FILE",
    "FIRST_ENTRY_LINE",
    "LOG_START_OFFSET_CHECKPOINT",
    "OFFSET_CHECKPOINT_FILES",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "OffsetCheckpointFile",
    "checkpoint_error",
    "checkpoint_path",
    "decode_lines",
    "decode_versioned_entries",
    "encode_versioned_entries",
    "forget_last_keys",
    "offset_checkpoint_files",
    "parse_non_negative",
    "parse_offset_checkpoint",
]
