"""Per-partition metadata files: the topic id (``partition.metadata``), the leader epoch
cache (``leader-epoch-checkpoint``) and, in a dir set aside as a stray, the start offset it had
(``stray-log-start-offset``).

Invariant upheld: like the per-dir checkpoints, each file is replaced only through
``write_file_atomic``, so after any crash it holds the old or the new content; anything else on
disk is rejected with a ``CheckpointError`` naming the file and the 1-based line, never guessed
at. A missing file is not an error (the caller decides: hazard 2, a partition dir without its
topic id after an unclean shutdown must not stop the broker). The leader epoch entries are kept
ordered: epochs strictly increasing, start offsets non-decreasing, on write and on read.

``partition.metadata``::

    version: 0
    topic_id: <22-character Kafka Uuid>
    log_generation: <n>          (logwright, only when n > 0)

The log generation (a JBOD move's step G, docs/jbod.md) tells two live dirs of one partition
apart at start-up: a future log gets its source's generation + 1. A file without the line (every
Kafka file, every log never moved) is generation 0, and a generation-0 file is written without
it, byte for byte as Kafka writes it; Kafka reads the first two lines only.

``leader-epoch-checkpoint``: version 0, the entry count, then ``epoch start_offset`` lines.

``stray-log-start-offset``: version 0, the count 1, then the start offset. A log set aside as a
stray leaves the dir's ``log-start-offset-checkpoint``; this file keeps its start offset so that
a stray revived later never serves below it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from functools import lru_cache

from logwright.storage.checkpoint import (
    CHECKPOINT_VERSION,
    FIRST_ENTRY_LINE,
    checkpoint_error,
    decode_lines,
    decode_versioned_entries,
    encode_versioned_entries,
    parse_non_negative,
)
from logwright.storage.naming import OFFSET_MAX, Uuid
from logwright.world.fs import FileSystem, child_path, write_file_atomic

PARTITION_METADATA_FILE = "partition.metadata"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
STRAY_START_OFFSET_FILE = "stray-log-start-offset"
PARTITION_METADATA_VERSION = 0
LOG_GENERATION_KEY = "log_generation"
#: Leader epochs are int32 on the wire.
LEADER_EPOCH_MAX = 2**31 - 1


class PartitionMetadataFile:
    """The topic id of the partition whose dir is ``dir_path``."""

    def __init__(self, fs: FileSystem, dir_path: str) -> None:
        self.fs = fs
        self.path = child_path(dir_path, PARTITION_METADATA_FILE)

    def __repr__(self) -> str:
        return f"PartitionMetadataFile({self.path!r})"

    def write(self, topic_id: Uuid, generation: int = 0) -> None:
        """Record ``topic_id`` (and the log ``generation``, when above 0) durably and
        atomically. The zero id ("no id") is refused."""
        if not isinstance(topic_id, Uuid):
            raise TypeError(f"topic id must be a Uuid, not {type(topic_id).__name__}")
        if topic_id == Uuid.ZERO:
            raise ValueError(f"refusing to write the zero Uuid as the topic id to {self.path}")
        if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
            raise ValueError(f"log generation {generation!r} is not an integer >= 0")
        text = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {topic_id}\n"
        if generation > 0:
            text += f"{LOG_GENERATION_KEY}: {generation}\n"
        write_file_atomic(self.fs, self.path, text.encode("ascii"))

    def read_with_generation(self, *, exists: bool | None = None) -> tuple[Uuid | None, int]:
        """The recorded topic id (None without the file) and log generation (0 without the
        file or its line); CheckpointError if malformed."""
        if not (self.fs.exists(self.path) if exists is None else exists):
            return None, 0
        return parse_partition_metadata_generation(self.path, self.fs.read_file(self.path))

    def read_generation(self) -> int:
        """The log generation recorded (0 when the file or its line is missing);
        CheckpointError if the file is malformed."""
        if not self.fs.exists(self.path):
            return 0
        return parse_partition_metadata_generation(self.path, self.fs.read_file(self.path))[1]

    def read(self, *, exists: bool | None = None) -> Uuid | None:
        """The recorded topic id; None if the file does not exist; CheckpointError if malformed.
        ``exists``: whether the file is there, when the caller just listed the dir (no stat)."""
        if not (self.fs.exists(self.path) if exists is None else exists):
            return None
        return parse_partition_metadata(self.path, self.fs.read_file(self.path))


def _key_value(path: str, line_no: int, line: str, key: str) -> str:
    name, colon, value = line.partition(":")
    if not colon or name != key or not value.startswith(" ") or not value.strip(" "):
        raise checkpoint_error(path, line_no, f"expected '{key}: <value>', found {line!r}")
    return value.strip(" ")


def parse_partition_metadata(path: str, data: bytes) -> Uuid:
    """Parse the bytes of a ``partition.metadata`` file; ``path`` is used in error messages."""
    return parse_partition_metadata_generation(path, data)[0]


#: Every ``partition.metadata`` of a generation-0 log (as Kafka writes it) is this prefix, the
#: 22-character topic id and a newline: start-up parses thousands of them.
_PLAIN_PREFIX = f"version: {PARTITION_METADATA_VERSION}\ntopic_id: ".encode("ascii")
_PLAIN_SIZE = len(_PLAIN_PREFIX) + 22 + 1
_ZERO_ID_BYTES = Uuid.ZERO.value


@lru_cache(maxsize=256)
def _plain_topic_id(data: bytes) -> Uuid | None:
    """The topic id of the common ``partition.metadata`` bytes ``data`` (checked by the
    caller: the plain prefix, 22 characters, a newline); None for any other, the zero id among
    them. Every partition of a topic holds the same bytes, and start-up lists a log dir's
    partitions in name order, so those of one topic come one after another: remembered, the
    bytes are parsed once per topic (the ids are immutable, so its logs share one)."""
    try:
        topic_id = Uuid.parse(data[len(_PLAIN_PREFIX):-1].decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
    return topic_id if topic_id.value != _ZERO_ID_BYTES else None


def parse_partition_metadata_generation(path: str, data: bytes) -> tuple[Uuid, int]:
    """The topic id and the log generation (0 without its line) of a ``partition.metadata``
    file's bytes; ``path`` is used in error messages."""
    if len(data) == _PLAIN_SIZE and data.startswith(_PLAIN_PREFIX) and data[-1] == 0x0A:
        # The common file, read in one step; anything this does not accept (a bad id among
        # them) goes the long way below, which says what is wrong with it.
        topic_id = _plain_topic_id(data)
        if topic_id is not None:
            return topic_id, 0
    return _parse_partition_metadata_lines(path, data)


def _parse_partition_metadata_lines(path: str, data: bytes) -> tuple[Uuid, int]:
    """``parse_partition_metadata_generation`` line by line: any file, the first problem
    named."""
    lines = decode_lines(path, data, "'version: 0'")
    version = _key_value(path, 1, lines[0], "version")
    version_no = parse_non_negative(path, 1, "version", version, 2**31 - 1)
    if version_no != PARTITION_METADATA_VERSION:
        raise checkpoint_error(path, 1, f"unsupported version {version_no} "
                               f"(expected {PARTITION_METADATA_VERSION})")
    if len(lines) < 2:
        raise checkpoint_error(path, 2, "the topic_id line is missing")
    try:
        topic_id = Uuid.parse(_key_value(path, 2, lines[1], "topic_id"))
    except ValueError as e:
        raise checkpoint_error(path, 2, f"bad topic_id: {e}") from None
    if topic_id == Uuid.ZERO:
        raise checkpoint_error(path, 2, "topic_id is the zero Uuid, which means 'no topic id'")
    generation = 0
    if len(lines) > 2:
        if not lines[2].startswith(f"{LOG_GENERATION_KEY}:"):
            raise checkpoint_error(path, 3, f"trailing garbage after the topic_id: {lines[2]!r}")
        generation = parse_non_negative(path, 3, LOG_GENERATION_KEY,
                                        _key_value(path, 3, lines[2], LOG_GENERATION_KEY),
                                        2**31 - 1)
    if len(lines) > 3:
        raise checkpoint_error(path, 4, f"trailing garbage after the log generation: "
                               f"{lines[3]!r}")
    return topic_id, generation


class LeaderEpochCheckpointFile:
    """The leader epoch cache of the partition whose dir is ``dir_path``.

    Each entry ``(epoch, start_offset)`` says the leader of ``epoch`` wrote its first record at
    ``start_offset``.
    """

    def __init__(self, fs: FileSystem, dir_path: str) -> None:
        self.fs = fs
        self.path = child_path(dir_path, LEADER_EPOCH_CHECKPOINT_FILE)

    def __repr__(self) -> str:
        return f"LeaderEpochCheckpointFile({self.path!r})"

    def write(self, entries: Sequence[tuple[int, int]]) -> None:
        """Replace the file with ``entries``, durably and atomically.

        ValueError, before touching the disk, unless epochs are strictly increasing within
        [0, 2**31 - 1] and start offsets non-decreasing within [0, 2**63 - 1].
        """
        lines = []
        previous: tuple[int, int] | None = None
        for epoch, start_offset in entries:
            for label, value, maximum in (("epoch", epoch, LEADER_EPOCH_MAX),
                                          ("start offset", start_offset, OFFSET_MAX)):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError(f"{label} must be an int, not {type(value).__name__}")
                if not 0 <= value <= maximum:
                    raise ValueError(f"{label} {value} is outside [0, {maximum}]")
            if previous is not None:
                if epoch <= previous[0]:
                    raise ValueError(f"epoch {epoch} after epoch {previous[0]}: epochs must be "
                                     "strictly increasing")
                if start_offset < previous[1]:
                    raise ValueError(f"start offset {start_offset} of epoch {epoch} is below "
                                     f"{previous[1]} of epoch {previous[0]}: start offsets must "
                                     "not decrease")
            previous = (epoch, start_offset)
            lines.append(f"{epoch} {start_offset}")
        write_file_atomic(self.fs, self.path, encode_versioned_entries(CHECKPOINT_VERSION, lines))

    def read(self, *, exists: bool | None = None) -> list[tuple[int, int]]:
        """The ``(epoch, start_offset)`` entries; [] if the file does not exist. ``exists``:
        whether the file is there, when the caller just listed the dir (no stat)."""
        if not (self.fs.exists(self.path) if exists is None else exists):
            return []
        return parse_leader_epoch_checkpoint(self.path, self.fs.read_file(self.path))


def parse_leader_epoch_checkpoint(path: str, data: bytes) -> list[tuple[int, int]]:
    """Parse the bytes of a ``leader-epoch-checkpoint``; ``path`` is used in error messages."""
    entries = decode_versioned_entries(path, data, CHECKPOINT_VERSION, 2, "epoch start_offset")
    result: list[tuple[int, int]] = []
    for i, (epoch_text, offset_text) in enumerate(entries):
        line = FIRST_ENTRY_LINE + i
        epoch = parse_non_negative(path, line, "epoch", epoch_text, LEADER_EPOCH_MAX)
        start_offset = parse_non_negative(path, line, "start offset", offset_text, OFFSET_MAX)
        if result:
            prev_epoch, prev_offset = result[-1]
            if epoch <= prev_epoch:
                raise checkpoint_error(path, line, f"epoch {epoch} is not above epoch "
                                       f"{prev_epoch} on line {line - 1}: epochs must be "
                                       "strictly increasing")
            if start_offset < prev_offset:
                raise checkpoint_error(path, line, f"start offset {start_offset} is below "
                                       f"{prev_offset} on line {line - 1}: start offsets must "
                                       "not decrease")
        result.append((epoch, start_offset))
    return result


class StrayStartOffsetFile:
    """The start offset a log had when it was set aside as a stray (in its own dir)."""

    def __init__(self, fs: FileSystem, dir_path: str) -> None:
        self.fs = fs
        self.path = posixpath.join(dir_path, STRAY_START_OFFSET_FILE)

    def __repr__(self) -> str:
        return f"StrayStartOffsetFile({self.path!r})"

    def write(self, start_offset: int) -> None:
        """Record ``start_offset`` durably and atomically."""
        if not 0 <= start_offset <= OFFSET_MAX:
            raise ValueError(f"start offset {start_offset} is outside [0, {OFFSET_MAX}]")
        write_file_atomic(self.fs, self.path,
                          encode_versioned_entries(CHECKPOINT_VERSION, [str(start_offset)]))

    def read(self) -> int | None:
        """The recorded start offset; None if the file does not exist; CheckpointError if
        malformed."""
        if not self.fs.exists(self.path):
            return None
        entries = decode_versioned_entries(self.path, self.fs.read_file(self.path),
                                           CHECKPOINT_VERSION, 1, "start_offset")
        if len(entries) != 1:
            raise checkpoint_error(self.path, FIRST_ENTRY_LINE,
                                   f"expected one start offset, found {len(entries)}")
        return parse_non_negative(self.path, FIRST_ENTRY_LINE, "start offset", entries[0][0],
                                  OFFSET_MAX)
