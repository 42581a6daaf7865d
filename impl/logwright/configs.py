"""Kafka's topic and broker config definitions: names, types, defaults, valid values, parsing.

A ground-floor module: of logwright it imports only ``logwright.errors`` (and the
``javaproperties`` library for files), so every layer (storage, broker, controller, cluster) may
use it. It upholds one invariant: a config value that reaches any other
layer has been parsed and range-checked here, exactly once, against Kafka's definition; an
unknown name or a bad value is refused with INVALID_CONFIG naming the key and the reason, so a
typo can never silently fall back to a default.

Values are parsed the way Kafka's ``ConfigDef`` parses strings: ``int``/``long`` as decimal
integers within their bit width and range, ``boolean`` as ``true``/``false`` (any case), ``list``
as comma-separated items with whitespace trimmed. Python values of the right kind (an ``int`` for
an int, a ``bool`` for a boolean, a list of strings for a list) are accepted as well; a value of
any other kind gets the same error as a bad string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import javaproperties

from logwright.errors import InvalidConfig

__all__ = [
    "BROKER_CONFIGS",
    "IGNORED_BROKER_PROPERTIES",
    "TOPIC_CONFIGS",
    "ConfigDef",
    "ConfigEntry",
    "ConfigFileError",
    "ConfigValue",
    "PropertiesFile",
    "canonical_string",
    "describe_topic_configs",
    "parse_broker_properties",
    "parse_topic_configs",
    "read_properties_file",
]

ConfigType = Literal["int", "long", "boolean", "list", "string"]
ConfigValue: TypeAlias = int | bool | str | tuple[str, ...]

_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class ConfigDef:
    """One config as Kafka defines it.

    ``minimum``/``maximum`` bound ints and longs (None: only the type's width); ``valid_items``
    lists what each item of a list may be; ``broker_property`` names the broker property whose
    value is the default of a topic config (the topic's "synonym" in Kafka's terms).
    """

    name: str
    type: ConfigType
    default: ConfigValue | None
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    valid_items: tuple[str, ...] = ()
    broker_property: str | None = None

    def parse(self, value: object) -> ConfigValue:
        """``value`` (a string, or a Python value of this config's type) parsed and checked."""
        if self.type in ("int", "long"):
            return self._parse_integer(value)
        if self.type == "boolean":
            return self._parse_boolean(value)
        if self.type == "list":
            return self._parse_list(value)
        if not isinstance(value, str):
            raise self._invalid(value, "expected a string")
        return value.strip()

    def _invalid(self, value: object, reason: str) -> InvalidConfig:
        return InvalidConfig(self.name, value, reason)

    def _parse_integer(self, value: object) -> int:
        kind = "an int" if self.type == "int" else "a long"
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise self._invalid(value, f"expected {kind}")
        if isinstance(value, str):
            text = value.strip()
            body = text[1:] if text[:1] in "+-" else text
            if not body.isascii() or not body.isdigit():
                raise self._invalid(value, f"expected {kind}")
            number = int(text)
        else:
            number = value
        low, high = _INT_RANGE if self.type == "int" else _LONG_RANGE
        if not low <= number <= high:
            raise self._invalid(value, f"does not fit in {kind} ({low}..{high})")
        if self.minimum is not None and number < self.minimum:
            raise self._invalid(value, f"must be at least {self.minimum}")
        if self.maximum is not None and number > self.maximum:
            raise self._invalid(value, f"must be at most {self.maximum}")
        return number

    def _parse_boolean(self, value: object) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise self._invalid(value, "expected a boolean: true or false")

    def _parse_list(self, value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            items = tuple(item.strip() for item in value.split(",")) if value.strip() else ()
        elif isinstance(value, list | tuple) and all(isinstance(i, str) for i in value):
            items = tuple(i.strip() for i in value)
        else:
            raise self._invalid(value, "expected a comma-separated list")
        if any(not item for item in items):
            raise self._invalid(value, "a list item is empty")
        if self.valid_items:
            if not items:
                raise self._invalid(value, f"must name at least one of {list(self.valid_items)}")
            bad = [item for item in items if item not in self.valid_items]
            if bad:
                raise self._invalid(value, f"{bad[0]!r} is not one of {list(self.valid_items)}")
            if len(set(items)) != len(items):
                raise self._invalid(value, "an item is repeated")
        return items

    @property
    def valid_values(self) -> str:
        """The valid values in Kafka's documentation style, e.g. ``[14,...]``."""
        if self.valid_items:
            return "[" + ", ".join(self.valid_items) + "]"
        if self.type in ("int", "long"):
            if self.minimum is None and self.maximum is None:
                return ""
            low = "..." if self.minimum is None else str(self.minimum)
            high = "..." if self.maximum is None else str(self.maximum)
            return f"[{low},{high}]"
        return ""


def canonical_string(value: ConfigValue) -> str:
    """How a parsed value is stored and shown: Kafka's string form (``true``, ``a,b``, ``42``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


_DAY_MS = 24 * 3_600_000
_NEVER = (1 << 63) - 1  # Kafka's Long.MAX_VALUE: flush.messages' "never by count"

TOPIC_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in (
    ConfigDef("cleanup.policy", "list", ("delete",),
              "delete: old segments go by time (retention.ms) and size (retention.bytes); "
              "compact: kept for a compacting cleaner, so no time or size retention applies. "
              "Segments below the log start offset go whatever the policy.",
              valid_items=("compact", "delete"), broker_property="log.cleanup.policy"),
    ConfigDef("retention.ms", "long", 7 * _DAY_MS,
              "A closed segment whose newest record is older than this is deleted; -1 keeps "
              "segments forever.", minimum=-1, broker_property="log.retention.ms"),
    ConfigDef("retention.bytes", "long", -1,
              "Oldest segments are deleted while the partition is larger than this; a negative "
              "value means no size limit.", broker_property="log.retention.bytes"),
    ConfigDef("segment.bytes", "int", 1 << 30,
              "The active segment rolls before an append would take it past this size.",
              minimum=14, broker_property="log.segment.bytes"),
    ConfigDef("segment.ms", "long", 7 * _DAY_MS,
              "The active segment rolls once its first record is older than this.",
              minimum=1, broker_property="log.roll.ms"),
    ConfigDef("segment.index.bytes", "int", 10 * (1 << 20),
              "The largest size of a segment's offset index (8-byte entries) and time index "
              "(12-byte entries); the segment rolls when either is full.",
              minimum=4, broker_property="log.index.size.max.bytes"),
    ConfigDef("index.interval.bytes", "int", 4096,
              "How many bytes of batches lie between two offset index entries.",
              minimum=0, broker_property="log.index.interval.bytes"),
    ConfigDef("file.delete.delay.ms", "long", 60_000,
              "How long a deleted partition directory (renamed to -delete) waits before its "
              "files are removed.", minimum=0, broker_property="log.segment.delete.delay.ms"),
    ConfigDef("min.insync.replicas", "int", 1,
              "A produce with acks=all is refused with NOT_ENOUGH_REPLICAS while the ISR is "
              "smaller than this.", minimum=1, broker_property="min.insync.replicas"),
    ConfigDef("max.message.bytes", "int", (1 << 20) + 12,
              "The largest record batch a producer may append, in bytes; a larger one is refused "
              "with MESSAGE_TOO_LARGE.", minimum=0, broker_property="message.max.bytes"),
    ConfigDef("flush.messages", "long", _NEVER,
              "The log is flushed (fsync) once this many records are unflushed; 1 makes every "
              "append durable before it is acknowledged, on the leader and on each follower "
              "before it fetches again, so acks=all waits for fsync on the ISR.",
              minimum=1, broker_property="log.flush.interval.messages"),
    ConfigDef("unclean.leader.election.enable", "boolean", False,
              "When no ISR member is alive, let the controller elect a live replica outside the "
              "ISR (committed records may be lost) instead of leaving the partition offline.",
              broker_property="unclean.leader.election.enable"),
)}
"""The topic configs logwright implements, by Kafka name (Kafka's TopicConfig names)."""


def _def(name: str, type_: ConfigType, default: ConfigValue | None, doc: str,
         minimum: int | None = None, valid_items: tuple[str, ...] = ()) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, minimum=minimum, valid_items=valid_items)


BROKER_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in (
    _def("num.replica.fetchers", "int", 1, "Fetcher threads per source broker.", 1),
    _def("replica.fetch.max.bytes", "int", 1_048_576, "Bytes fetched per partition.", 0),
    _def("replica.alter.log.dirs.io.max.bytes.per.second", "long", 2**63 - 1,
         "Bytes per second the JBOD move copier may copy (default: unthrottled).", 1),
    _def("replica.fetch.response.max.bytes", "int", 10_485_760, "Bytes per fetch response.", 0),
    _def("replica.fetch.wait.max.ms", "int", 500, "How long a follower fetch may wait.", 0),
    _def("replica.fetch.min.bytes", "int", 1, "Bytes a follower fetch waits for.", 1),
    _def("replica.fetch.backoff.ms", "int", 1_000, "Pause after a failed fetch.", 0),
    _def("replica.socket.timeout.ms", "int", 30_000, "Timeout of a follower fetch.", 1),
    _def("replica.lag.time.max.ms", "long", 30_000,
         "A follower that has not caught up for this long leaves the ISR.", 1),
    _def("broker.heartbeat.interval.ms", "int", 2_000, "Heartbeat period.", 1),
    _def("broker.session.timeout.ms", "int", 9_000,
         "A broker silent for this long is declared dead (a controller setting).", 1),
    _def("controller.socket.timeout.ms", "int", 30_000,
         "Timeout of AlterPartition and RecordLineage.", 1),
    _def("min.insync.replicas", "int", 1, "Default of min.insync.replicas.", 1),
    _def("unclean.leader.election.enable", "boolean", False,
         "Default of unclean.leader.election.enable (a controller setting)."),
    _def("message.max.bytes", "int", (1 << 20) + 12, "Default of max.message.bytes.", 0),
    _def("log.retention.ms", "long", None,
         "Default of retention.ms; wins over log.retention.minutes and .hours.", -1),
    _def("log.retention.minutes", "int", None, "Used when log.retention.ms is not set.", -1),
    _def("log.retention.hours", "int", 168, "Used when neither .ms nor .minutes is set.", -1),
    _def("log.retention.bytes", "long", -1, "Default of retention.bytes."),
    _def("log.segment.bytes", "int", 1 << 30, "Default of segment.bytes.", 14),
    _def("log.roll.ms", "long", None, "Default of segment.ms; wins over log.roll.hours.", 1),
    _def("log.roll.hours", "int", 168, "Used when log.roll.ms is not set.", 1),
    _def("log.index.size.max.bytes", "int", 10 * (1 << 20), "Default of segment.index.bytes.",
         4),
    _def("log.index.interval.bytes", "int", 4096, "Default of index.interval.bytes.", 0),
    _def("log.cleanup.policy", "list", ("delete",), "Default of cleanup.policy.",
         valid_items=("compact", "delete")),
    _def("log.segment.delete.delay.ms", "long", 60_000, "Default of file.delete.delay.ms.", 0),
    _def("file.delete.delay.ms", "long", None,
         "Accepted as a synonym of log.segment.delete.delay.ms.", 0),
    _def("log.retention.check.interval.ms", "long", 300_000, "Period of the retention task.", 1),
    _def("log.initial.task.delay.ms", "long", 30_000, "Delay before the periodic log tasks.", 0),
    _def("log.flush.interval.messages", "long", _NEVER,
         "Default of flush.messages (default: never by count).", 1),
    _def("log.flush.interval.ms", "long", None,
         "Period of the flush task; unset leaves flushing to the OS.", 1),
    _def("log.flush.offset.checkpoint.interval.ms", "int", 60_000,
         "Period of the recovery point checkpoint.", 1),
    _def("replica.high.watermark.checkpoint.interval.ms", "long", 5_000,
         "Period of the high watermark checkpoint.", 1),
    _def("orphan.partition.removal.delay.ms", "long", 7_200_000,
         "How long a stray partition waits before orphan removal may delete it (KIP-370).", 0),
)}
"""The broker properties logwright uses, by Kafka name (Kafka's KafkaConfig names)."""

IGNORED_BROKER_PROPERTIES: frozenset[str] = frozenset({
    "broker.id", "node.id", "process.roles", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "controller.listener.names", "listeners",
    "advertised.listeners", "inter.broker.listener.name", "listener.security.protocol.map",
    "log.dirs", "log.dir", "metadata.log.dir", "num.network.threads", "num.io.threads",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "socket.request.max.bytes",
    "num.partitions", "default.replication.factor", "num.recovery.threads.per.data.dir",
    "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr", "group.initial.rebalance.delay.ms",
    "zookeeper.connect", "zookeeper.connection.timeout.ms", "auto.create.topics.enable",
    "delete.topic.enable", "cluster.id",
})
"""Kafka broker properties a ``server.properties`` commonly holds that logwright has no use for
(listeners, threads, internal topics): accepted with a warning, never an error, so Kafka's own
sample file loads. Any other unknown name is refused."""


def _parse_all(defs: Mapping[str, ConfigDef], values: Mapping[str, object],
               what: str, ignored: frozenset[str] = frozenset(),
               warn: Callable[[str], None] | None = None) -> dict[str, ConfigValue]:
    if not isinstance(values, Mapping):
        raise InvalidConfig(f"the {what} list", values, "must be a mapping of names to values")
    parsed: dict[str, ConfigValue] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise InvalidConfig(repr(key), value, f"{what} names are strings")
        name = key.strip()
        definition = defs.get(name)
        if definition is None:
            if name in ignored:
                if warn is not None:
                    warn(f"{what} {name} is a Kafka setting logwright does not use; ignored")
                continue
            raise InvalidConfig(name, value, f"unknown {what}")
        parsed[name] = definition.parse(value)
    return parsed


def parse_topic_configs(configs: Mapping[str, object] | None) -> dict[str, ConfigValue]:
    """Every topic config in ``configs`` parsed and checked; INVALID_CONFIG for the first bad one
    (an unknown name, a value of the wrong type, or one out of range)."""
    return _parse_all(TOPIC_CONFIGS, configs or {}, "topic config")


def parse_broker_properties(properties: Mapping[str, object],
                            warn: Callable[[str], None] | None = None
                            ) -> dict[str, ConfigValue]:
    """Every broker property parsed and checked; INVALID_CONFIG for an unknown name (other than
    the ignored ones, reported through ``warn``) or a bad value."""
    return _parse_all(BROKER_CONFIGS, properties, "broker property",
                      IGNORED_BROKER_PROPERTIES, warn)


@dataclass(frozen=True)
class ConfigEntry:
    """One topic config as ``kafka-configs.sh --describe --all`` shows it: its effective value
    (Kafka's string form) and where it comes from, with Kafka's source names:
    ``DYNAMIC_TOPIC_CONFIG`` (the topic's override), ``STATIC_BROKER_CONFIG`` (the broker's
    setting differs from Kafka's default) or ``DEFAULT_CONFIG``."""

    name: str
    value: str
    source: str

    @property
    def is_default(self) -> bool:
        """Whether no topic override is set (the broker's value applies)."""
        return self.source != "DYNAMIC_TOPIC_CONFIG"


def describe_topic_configs(overrides: Mapping[str, str],
                           broker_defaults: Mapping[str, ConfigValue]) -> dict[str, ConfigEntry]:
    """Every topic config's effective value: ``overrides`` (stored canonical strings) over
    ``broker_defaults`` (by topic config name; a missing one is Kafka's default)."""
    out: dict[str, ConfigEntry] = {}
    for name, definition in TOPIC_CONFIGS.items():
        if name in overrides:
            out[name] = ConfigEntry(name, overrides[name], "DYNAMIC_TOPIC_CONFIG")
            continue
        kafka_default = definition.default
        assert kafka_default is not None
        value = broker_defaults.get(name, kafka_default)
        source = "DEFAULT_CONFIG" if value == kafka_default else "STATIC_BROKER_CONFIG"
        out[name] = ConfigEntry(name, canonical_string(value), source)
    return out


# ---- server.properties files --------------------------------------------------------------------


class ConfigFileError(InvalidConfig):
    """A bad properties file: INVALID_CONFIG naming the file, the line and the key."""

    def __init__(self, path: str, line: int, key: str, value: object, reason: str) -> None:
        super().__init__(key, value, reason, where=f"{path}, line {line}" if line else path)
        self.path = path
        self.line = line


@dataclass(frozen=True)
class PropertiesFile:
    """A Java properties file read: ``values`` by key (the last one wins, as in Java), and
    ``lines``, the line each key was last set on."""

    path: str
    values: dict[str, str]
    lines: dict[str, int]

    def error_for(self, exc: InvalidConfig) -> ConfigFileError:
        """``exc`` (about one of this file's keys) as an error naming the file and line."""
        return ConfigFileError(self.path, self.lines.get(exc.key, 0), exc.key, exc.value,
                               exc.reason)


def parse_properties_text(text: str, path: str = "<properties>") -> PropertiesFile:
    """Parse Java properties text (``key=value``, ``key: value``, ``key value``, ``#``/``!``
    comments, backslash continuations and escapes) as ``java.util.Properties.load`` does."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    line = 1
    for element in javaproperties.parse(text):
        if isinstance(element, javaproperties.KeyValue):
            values[element.key] = element.value
            lines[element.key] = line
        line += len(element.source.splitlines()) or 1
    return PropertiesFile(path, values, lines)


def read_properties_file(path: str) -> PropertiesFile:
    """Read a ``server.properties``-style file (UTF-8). An unreadable file or one that is not
    UTF-8 raises ConfigFileError naming the file (and the line, for bad bytes)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigFileError(path, 0, "(file)", path, f"cannot be read: {exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigFileError(path, line, "(file)", path, "is not UTF-8 text") from exc
    return parse_properties_text(text, path)
