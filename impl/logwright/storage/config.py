"""Per-log configuration, with Kafka's names and defaults (see ``logwright.configs``).

A ``LogConfig`` is immutable; a topic config change replaces a log's config object, and the log
reads its config at each decision (roll, retention, append checks), so a change takes effect at
the next decision without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from logwright.configs import TOPIC_CONFIGS, ConfigValue, canonical_string

HOUR_MS = 3_600_000

LOG_CONFIG_FIELDS: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "cleanup.policy": "cleanup_policy",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "max.message.bytes": "max_message_bytes",
    "flush.messages": "flush_messages",
}
"""Topic config name -> LogConfig field, for the topic configs a log itself applies."""


@dataclass(frozen=True)
class LogConfig:
    """How one partition log rolls, indexes, validates and retains its segments.

    Kafka names: segment.bytes, segment.ms, segment.index.bytes, index.interval.bytes,
    retention.ms, retention.bytes, cleanup.policy, file.delete.delay.ms, max.message.bytes,
    flush.messages.
    """

    segment_bytes: int = 1 << 30
    segment_ms: int = 168 * HOUR_MS
    segment_index_bytes: int = 10 * (1 << 20)
    index_interval_bytes: int = 4096
    retention_ms: int = 168 * HOUR_MS  # -1: keep forever
    retention_bytes: int = -1  # negative: no size limit
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    file_delete_delay_ms: int = 60_000
    max_message_bytes: int = (1 << 20) + 12
    flush_messages: int = (1 << 63) - 1  # flush once this many records are unflushed

    def __post_init__(self) -> None:
        # The same checks as the topic configs (one definition, logwright.configs), so a
        # LogConfig built in code cannot hold what a topic config would refuse.
        for name, attr in LOG_CONFIG_FIELDS.items():
            value: object = getattr(self, attr)
            if name == "cleanup.policy":
                assert isinstance(value, str)
                value = value.replace(" ", "")
            TOPIC_CONFIGS[name].parse(value)

    @property
    def deletes(self) -> bool:
        """Whether cleanup.policy includes ``delete`` (size and time retention apply)."""
        return "delete" in self.cleanup_policy.split(",")

    def with_(self, **changes: object) -> LogConfig:
        """A copy with some settings changed."""
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_topic_overrides(self, overrides: Mapping[str, ConfigValue]) -> LogConfig:
        """A copy with the parsed topic configs ``overrides`` (Kafka names) applied; configs a
        log does not apply itself (min.insync.replicas, unclean.leader.election.enable) are
        skipped."""
        changes: dict[str, object] = {}
        for name, value in overrides.items():
            attr = LOG_CONFIG_FIELDS.get(name)
            if attr is not None:
                changes[attr] = canonical_string(value) if name == "cleanup.policy" else value
        return replace(self, **changes) if changes else self  # type: ignore[arg-type]

    def topic_config_values(self) -> dict[str, ConfigValue]:
        """This config as topic config values, by Kafka name."""
        out: dict[str, ConfigValue] = {}
        for name, attr in LOG_CONFIG_FIELDS.items():
            value = getattr(self, attr)
            out[name] = tuple(value.split(",")) if name == "cleanup.policy" else value
        return out
