"""Broker settings, with Kafka's names and defaults (KAFKA-FACTS.md "Configs").

Invariant upheld: every limit the broker relies on (timeouts, sizes, queue bounds) is explicit,
positive and checked once here, so the rest of the broker may assume it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logwright.logmanager import LogManagerConfig

ANONYMOUS = "User:ANONYMOUS"
"""The principal of a session that did not authenticate (Kafka's ``KafkaPrincipal.ANONYMOUS``)."""


@dataclass(frozen=True)
class BrokerConfig:
    """What a broker needs besides its id, its dirs and its world. Kafka names in the comments."""

    num_replica_fetchers: int = 1  # num.replica.fetchers
    replica_fetch_max_bytes: int = 1_048_576  # replica.fetch.max.bytes (per partition)
    replica_fetch_response_max_bytes: int = 10_485_760  # replica.fetch.response.max.bytes
    replica_fetch_wait_max_ms: int = 500  # replica.fetch.wait.max.ms
    replica_fetch_min_bytes: int = 1  # replica.fetch.min.bytes
    replica_fetch_backoff_ms: int = 1_000  # replica.fetch.backoff.ms
    replica_socket_timeout_ms: int = 30_000  # replica.socket.timeout.ms
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms
    broker_heartbeat_interval_ms: int = 2_000  # broker.heartbeat.interval.ms
    # How long a registration waits for its answer before it is sent again. Kafka's KRaft broker
    # retries registration with a backoff too, under no public config name.
    broker_registration_retry_ms: int = 1_000
    controller_socket_timeout_ms: int = 30_000  # controller.socket.timeout.ms (AlterPartition)
    min_insync_replicas: int = 1  # min.insync.replicas (broker default for every topic)
    # Control requests that arrive before the registration is answered wait for it (they cannot
    # be fenced before the broker knows its own epoch). Bounded, oldest dropped first.
    max_deferred_control_requests: int = 1_024
    # Delayed produce and fetch operations waiting in a purgatory, per purgatory.
    max_purgatory_operations: int = 100_000
    # The principal this broker uses for its own requests (follower fetches).
    inter_broker_principal: str = ANONYMOUS
    log: LogManagerConfig = field(default_factory=LogManagerConfig)

    def __post_init__(self) -> None:
        positive = {
            "num.replica.fetchers": self.num_replica_fetchers,
            "replica.fetch.max.bytes": self.replica_fetch_max_bytes,
            "replica.fetch.response.max.bytes": self.replica_fetch_response_max_bytes,
            "replica.fetch.min.bytes": self.replica_fetch_min_bytes,
            "replica.fetch.backoff.ms": self.replica_fetch_backoff_ms,
            "replica.socket.timeout.ms": self.replica_socket_timeout_ms,
            "replica.lag.time.max.ms": self.replica_lag_time_max_ms,
            "broker.heartbeat.interval.ms": self.broker_heartbeat_interval_ms,
            "broker registration retry ms": self.broker_registration_retry_ms,
            "controller.socket.timeout.ms": self.controller_socket_timeout_ms,
            "min.insync.replicas": self.min_insync_replicas,
            "max deferred control requests": self.max_deferred_control_requests,
            "max purgatory operations": self.max_purgatory_operations,
        }
        for name, value in positive.items():
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.replica_fetch_wait_max_ms < 0:
            raise ValueError(
                f"replica.fetch.wait.max.ms must be >= 0, got {self.replica_fetch_wait_max_ms}")
        if self.replica_fetch_wait_max_ms >= self.replica_socket_timeout_ms:
            # Kafka enforces the same: a fetch parked on the leader must be answered before the
            # follower gives up on it.
            raise ValueError("replica.socket.timeout.ms must exceed replica.fetch.wait.max.ms")
