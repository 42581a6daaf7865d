"""Per-log configuration, with Kafka's names and defaults (KAFKA-FACTS.md "Configs")."""

from __future__ import annotations

from dataclasses import dataclass, replace

HOUR_MS = 3_600_000


@dataclass(frozen=True)
class LogConfig:
    """How one partition log rolls, indexes and retains its segments.

    Kafka names: segment.bytes, segment.ms, index.interval.bytes, retention.ms, retention.bytes,
    cleanup.policy, file.delete.delay.ms.
    """

    segment_bytes: int = 1 << 30
    segment_ms: int = 168 * HOUR_MS
    index_interval_bytes: int = 4096
    retention_ms: int = 168 * HOUR_MS  # -1: keep forever
    retention_bytes: int = -1  # -1: no size limit
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    file_delete_delay_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.segment_bytes < 64:
            raise ValueError(f"segment.bytes must be at least 64, got {self.segment_bytes}")
        if self.segment_ms <= 0:
            raise ValueError(f"segment.ms must be positive, got {self.segment_ms}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ValueError("retention.ms and retention.bytes must be >= -1")
        if not set(self.cleanup_policy.split(",")) <= {"delete", "compact"}:
            raise ValueError(f"cleanup.policy must be delete and/or compact: {self.cleanup_policy}")

    @property
    def deletes(self) -> bool:
        """Whether cleanup.policy includes ``delete`` (size and time retention apply)."""
        return "delete" in self.cleanup_policy.split(",")

    def with_(self, **changes: object) -> LogConfig:
        """A copy with some settings changed."""
        return replace(self, **changes)  # type: ignore[arg-type]
