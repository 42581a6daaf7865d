"""Identities every layer names: topic partitions, topic ids (Kafka's Uuid), node ids.

The ground floor, beside ``errors`` and ``world``: protocol/, controller/, broker/, storage/ and
the client all import these from here, so that naming a partition never pulls in a layer above.
Invariant upheld: a TopicPartition or Uuid that exists is one Kafka could have (a legal topic name
is checked where one enters the system, ``validate_topic``; a Uuid is always 16 bytes with one
canonical text form).
"""

from __future__ import annotations

import base64
import binascii
import random
import re
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from logwright.errors import Errors, KafkaError

#: Kafka's topic name limit: 255 minus room for "-" and a 5-digit partition number.
TOPIC_NAME_MAX_CHARS = 249
#: Partitions are int32 on the wire.
PARTITION_MAX = 2**31 - 1
#: Length of the unique id in future/delete/stray dir names (a UUID without dashes).
UID_HEX_CHARS = 32

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_UID_HEX = re.compile(r"[0-9a-f]{32}")
_BASE64URL_22 = re.compile(r"[A-Za-z0-9_-]{22}")
_CANONICAL_LAST = frozenset("AQgw")  # the URL-safe base64 digits 0, 16, 32 and 48
#: URL-safe base64 to the standard alphabet, as ``base64.urlsafe_b64decode`` translates it.
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


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
        # What base64.urlsafe_b64decode(text + "==") does, without its layers of calls (start-up
        # parses a topic id per partition): the text is known to be ASCII of the alphabet.
        raw = binascii.a2b_base64(text.encode("ascii").translate(_FROM_URLSAFE) + b"==")
        uid = cls(raw)
        # 22 characters carry 132 bits, 128 of them the id: the canonical spelling is the one
        # whose last character's 4 low bits are zero (A, Q, g, w), what encoding it gives back.
        if text[21] not in _CANONICAL_LAST:
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


# ---- node ids -------------------------------------------------------------------------------


def broker_node_id(broker_id: int) -> str:
    """The network node id of broker ``broker_id``."""
    return f"broker-{broker_id}"


def controller_node_id(controller_id: int) -> str:
    """The network node id of controller ``controller_id``."""
    return f"controller-{controller_id}"
