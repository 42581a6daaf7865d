"""``meta.properties``: which cluster, which node and which directory a log dir belongs to.

Kafka's KRaft format (version 1): a Java properties file with ``version=1``, ``cluster.id``,
``node.id`` and ``directory.id`` (a Kafka Uuid, 22 characters of URL-safe base64), after an
optional ``#`` comment header. logwright writes the keys sorted under a fixed comment (Kafka's
header carries a date; logwright's carries none, so one seed writes the same bytes)::

    #
    #logwright
    cluster.id=<22-character Kafka Uuid>
    directory.id=<22-character Kafka Uuid>
    node.id=1
    version=1

Invariants upheld here:
- The file is replaced only through ``write_file_atomic`` (tmp + fsync + rename + dir fsync), so
  after any crash it holds the whole old content or the whole new one.
- Reading is strict: anything but a well-formed version 1 file (unknown version, a missing or
  repeated key, a bad id, a non-ASCII byte, a line cut short) raises ``CheckpointError`` naming
  the file and the 1-based line, and is never guessed at; the caller takes that dir offline, as
  for any other corrupt metadata file (hazard 11). Unknown extra keys are kept and ignored, as
  Kafka ignores them.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from logwright.storage.checkpoint import checkpoint_error, decode_lines
from logwright.storage.naming import Uuid
from logwright.world.fs import FileSystem, write_file_atomic

META_PROPERTIES_FILE = "meta.properties"
LOCK_FILE = ".lock"
META_PROPERTIES_VERSION = 1
_HEADER = "#\n#logwright\n"
_REQUIRED = ("version", "cluster.id", "node.id", "directory.id")
#: Directory ids Kafka reserves (UNASSIGNED, LOST, MIGRATING): never a real dir's id.
RESERVED_DIRECTORY_IDS = frozenset(Uuid(bytes(15) + bytes([i])) for i in range(100))


@dataclass(frozen=True)
class MetaProperties:
    """The identity recorded in one log dir."""

    cluster_id: str
    node_id: int
    directory_id: Uuid
    version: int = META_PROPERTIES_VERSION

    def __post_init__(self) -> None:
        if self.version != META_PROPERTIES_VERSION:
            raise ValueError(f"only meta.properties version {META_PROPERTIES_VERSION} is "
                             f"written, not {self.version}")
        Uuid.parse(self.cluster_id)  # a KRaft cluster id is a Kafka Uuid (ValueError if not)
        if not 0 <= self.node_id <= 2**31 - 1:
            raise ValueError(f"node id {self.node_id} is outside [0, 2**31 - 1]")
        if self.directory_id in RESERVED_DIRECTORY_IDS:
            raise ValueError(f"directory id {self.directory_id} is reserved")

    def encode(self) -> bytes:
        """The file's bytes: the comment header, then the keys sorted."""
        return (f"{_HEADER}cluster.id={self.cluster_id}\ndirectory.id={self.directory_id}\n"
                f"node.id={self.node_id}\nversion={self.version}\n").encode("ascii")


def parse_meta_properties(path: str, data: bytes) -> MetaProperties:
    """Parse the bytes of a ``meta.properties``; ``CheckpointError`` naming ``path`` and the
    line if they are not a well-formed version 1 file."""
    lines = decode_lines(path, data, "version=1 and the ids")
    values: dict[str, tuple[int, str]] = {}
    for line_no, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise checkpoint_error(path, line_no, f"expected 'key=value', found {raw!r}")
        key, value = key.strip(), value.strip()
        if key in values:
            raise checkpoint_error(path, line_no, f"{key} is set twice (first on line "
                                   f"{values[key][0]})")
        values[key] = (line_no, value)
    for key in _REQUIRED:
        if key not in values:
            raise checkpoint_error(path, len(lines), f"{key} is missing")
    line_no, version = values["version"]
    if version != str(META_PROPERTIES_VERSION):
        raise checkpoint_error(path, line_no, f"unsupported version {version!r} (expected "
                               f"{META_PROPERTIES_VERSION}, Kafka's KRaft format)")
    line_no, node = values["node.id"]
    if not node.isdigit() or int(node) > 2**31 - 1:
        raise checkpoint_error(path, line_no, f"node.id {node!r} is not an int32 >= 0")
    ids: dict[str, Uuid] = {}
    for key in ("cluster.id", "directory.id"):
        line_no, text_id = values[key]
        try:
            ids[key] = Uuid.parse(text_id)
        except ValueError as e:
            raise checkpoint_error(path, line_no, f"bad {key}: {e}") from None
    if ids["directory.id"] in RESERVED_DIRECTORY_IDS:
        raise checkpoint_error(path, values["directory.id"][0],
                               f"directory.id {ids['directory.id']} is a reserved id")
    return MetaProperties(values["cluster.id"][1], int(node), ids["directory.id"])


def identity_mismatch(path: str, meta: MetaProperties, cluster_id: str, node_id: int
                      ) -> str | None:
    """Why log dir ``path``, whose meta.properties is ``meta``, is not a dir of node
    ``node_id`` of cluster ``cluster_id``; None when it is."""
    if meta.cluster_id == cluster_id and meta.node_id == node_id:
        return None
    return (f"log dir {path} belongs to cluster {meta.cluster_id}, node {meta.node_id} (its "
            f"meta.properties), but this is node {node_id} of cluster {cluster_id}: refusing "
            "to start; point the broker at its own dirs, or empty this one")


def duplicate_directory_id(path: str, meta: MetaProperties, seen: dict[str, MetaProperties]
                           ) -> str | None:
    """Why ``path`` cannot join the dirs ``seen`` (path -> meta.properties): one of them has
    the same directory.id, so one is a copy of the other; None otherwise."""
    twin = next((p for p, m in seen.items() if m.directory_id == meta.directory_id), None)
    if twin is None:
        return None
    return (f"log dirs {twin} and {path} have the same directory.id {meta.directory_id} (one is "
            "a copy of the other): refusing to start")


class MetaPropertiesFile:
    """The ``meta.properties`` of the log dir ``dir_path``."""

    def __init__(self, fs: FileSystem, dir_path: str) -> None:
        self.fs = fs
        self.path = posixpath.join(dir_path, META_PROPERTIES_FILE)

    def __repr__(self) -> str:
        return f"MetaPropertiesFile({self.path!r})"

    def read(self) -> MetaProperties | None:
        """The recorded identity; None if there is no file; CheckpointError if malformed."""
        if not self.fs.exists(self.path):
            return None
        return parse_meta_properties(self.path, self.fs.read_file(self.path))

    def write(self, meta: MetaProperties) -> None:
        """Record ``meta`` durably and atomically."""
        write_file_atomic(self.fs, self.path, meta.encode())
