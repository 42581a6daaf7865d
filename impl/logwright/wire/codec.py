"""Kafka's wire format: frames, request headers, version negotiation, response encoding.

Invariant upheld: every byte read from a connection or written to it goes through the message
classes ``kio`` generates from Kafka's own JSON schemas; nothing here hand-writes a message
body. A request is decoded only if its API key and version are in :data:`SUPPORTED` (what
ApiVersions advertises); anything else is a :class:`WireError`, which the server answers as
Kafka does (an ApiVersions at an unknown version gets the v0 answer with UNSUPPORTED_VERSION,
everything else closes the connection).
"""

from __future__ import annotations

import dataclasses
import io
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from logwright.errors import LogwrightError

__all__ = [
    "API_VERSIONS",
    "SUPPORTED",
    "DecodedRequest",
    "WireError",
    "build",
    "decode_request",
    "encode_response",
    "error_code",
    "frame_size",
    "nested",
]

API_VERSIONS = 18

#: API key -> (lowest, highest) version served. The ranges are those of current clients
#: (kafka-python 2.x/3.x, librdkafka 2.x) that logwright answers exactly; ApiVersions
#: advertises them and version negotiation picks the highest both sides know.
SUPPORTED: Mapping[int, tuple[int, int]] = {
    0: (3, 12),    # Produce (v13 names topics by id only)
    1: (4, 12),    # Fetch (v13+ names topics by id only)
    2: (1, 7),     # ListOffsets
    3: (1, 12),    # Metadata
    17: (0, 1),    # SaslHandshake (after v0 the tokens travel unframed)
    18: (0, 4),    # ApiVersions
    19: (2, 7),    # CreateTopics
    20: (1, 6),    # DeleteTopics
    21: (0, 2),    # DeleteRecords
    29: (1, 3),    # DescribeAcls
    30: (1, 3),    # CreateAcls
    31: (1, 3),    # DeleteAcls
    32: (1, 4),    # DescribeConfigs
    34: (1, 2),    # AlterReplicaLogDirs
    35: (1, 4),    # DescribeLogDirs
    36: (0, 2),    # SaslAuthenticate
    37: (0, 3),    # CreatePartitions
    44: (0, 1),    # IncrementalAlterConfigs
    45: (0, 0),    # AlterPartitionReassignments
    46: (0, 0),    # ListPartitionReassignments
    60: (0, 1),    # DescribeCluster
}

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")


class WireError(LogwrightError):
    """A request logwright cannot decode: malformed bytes, an unknown API key or version."""

    def __init__(self, reason: str, api_key: int = -1, api_version: int = -1,
                 correlation_id: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True)
class DecodedRequest:
    """One request: its header fields and its body (a kio request dataclass)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


def frame_size(buffer: bytes | bytearray | memoryview, max_bytes: int) -> int | None:
    """The size of the frame at the start of ``buffer`` (the bytes after its 4-byte length),
    or None if the length itself has not arrived. A negative size or one above ``max_bytes``
    (Kafka's ``socket.request.max.bytes``) is a WireError: the connection is closed."""
    if len(buffer) < 4:
        return None
    (size,) = _SIZE.unpack_from(buffer, 0)
    if size < 0:
        raise WireError(f"negative frame size {size}")
    if size > max_bytes:
        raise WireError(f"frame of {size} bytes is larger than socket.request.max.bytes "
                        f"({max_bytes})")
    return int(size)


@cache
def _request_class(api_key: int, version: int) -> Any:
    return load_request_schema(api_key, version)


@cache
def _response_class(api_key: int, version: int) -> Any:
    return load_response_schema(api_key, version)


def decode_request(frame: bytes) -> DecodedRequest:
    """Decode one frame (without its length). Raises WireError for anything logwright does not
    serve or cannot parse; its ``api_key``, ``api_version`` and ``correlation_id`` say how far
    decoding got."""
    if len(frame) < 8:
        raise WireError(f"a request header needs at least 8 bytes, this frame has {len(frame)}")
    api_key, version = _KEY_VERSION.unpack_from(frame, 0)
    (correlation_id,) = _SIZE.unpack_from(frame, 4)
    served = SUPPORTED.get(api_key)
    if served is None:
        raise WireError(f"unknown or unserved API key {api_key}", api_key, version,
                        correlation_id)
    if not served[0] <= version <= served[1]:
        raise WireError(f"API key {api_key} version {version} is not served "
                        f"(versions {served[0]} to {served[1]})", api_key, version,
                        correlation_id)
    body_class = _request_class(api_key, version)
    header_class = RequestHeaderV2 if body_class.__flexible__ else RequestHeaderV1
    try:
        header, used = entity_reader(header_class)(frame, 0)
        body, _ = entity_reader(body_class)(frame, used)
    except Exception as exc:  # kio raises several types for malformed bytes
        raise WireError(f"malformed {body_class.__name__} v{version}: {exc}", api_key, version,
                        correlation_id) from None
    # Bytes after the body are ignored, as Kafka's broker ignores them: librdkafka sends three
    # more than Metadata v12 defines when it refreshes every topic.
    return DecodedRequest(api_key, version, correlation_id, getattr(header, "client_id", None),
                          body)


def response_class(api_key: int, version: int) -> Any:
    """The kio response class of ``api_key`` at ``version``."""
    return _response_class(api_key, version)


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """One response frame (length, header, body). ApiVersions' answer always has the v0
    header, so that a client that asked at a version the broker does not know can read it."""
    flexible = type(body).__flexible__ and api_key != API_VERSIONS
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    if flexible:
        entity_writer(ResponseHeaderV1)(out, ResponseHeaderV1(correlation_id=i32(correlation_id)))
    else:
        entity_writer(ResponseHeaderV0)(out, ResponseHeaderV0(correlation_id=i32(correlation_id)))
    entity_writer(type(body))(out, body)
    data = out.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: Any, **values: Any) -> Any:
    """An instance of the kio class ``cls`` from ``values``, keeping only the fields this
    version has: one handler fills the union of all versions' fields."""
    names = _field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


def nested(cls: Any, name: str) -> Any:
    """The nested class ``name`` of the same API version as ``cls``."""
    return getattr(sys.modules[cls.__module__], name)


def has_field(cls: Any, name: str) -> bool:
    """Whether the kio class ``cls`` has a field ``name`` (at its version)."""
    return name in _field_names(cls)


def error_code(code: int) -> ErrorCode:
    """Kafka's error code ``code`` as kio's enum."""
    return ErrorCode(int(code))
