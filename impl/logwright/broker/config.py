"""Broker settings, with Kafka's names and defaults (kafka-compatibility.md "Configs").

Invariant upheld: every limit the broker relies on (timeouts, sizes, queue bounds) is explicit,
positive and checked once here, so the rest of the broker may assume it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from logwright.configs import ConfigValue, parse_broker_properties
from logwright.errors import InvalidConfig
from logwright.logmanager import LogManagerConfig
from logwright.storage.config import LogConfig

log = logging.getLogger(__name__)

ANONYMOUS = "User:ANONYMOUS"
"""The principal of a session that did not authenticate (Kafka's ``KafkaPrincipal.ANONYMOUS``)."""

INTERNAL_PRINCIPAL = "User:logwright-internal"
"""The principal a ``Cluster``'s own controller and brokers speak as: a super user of its
authorizer, never given to a client (the wire server refuses the name)."""


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
    # replica.alter.log.dirs.io.max.bytes.per.second: the JBOD move copier's rate (virtual
    # time); Kafka's default, Long.MAX_VALUE, is unthrottled.
    replica_alter_log_dirs_io_max_bytes_per_second: int = 2**63 - 1
    # Control requests that arrive before the registration is answered wait for it (they cannot
    # be fenced before the broker knows its own epoch). Bounded, oldest dropped first.
    max_deferred_control_requests: int = 1_024
    # Delayed produce and fetch operations waiting in a purgatory, per purgatory.
    max_purgatory_operations: int = 100_000
    # The principal this broker uses for its own requests (follower fetches).
    inter_broker_principal: str = ANONYMOUS
    log: LogManagerConfig = field(default_factory=LogManagerConfig)

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> BrokerConfig:
        """A broker config from Kafka broker properties (``server.properties`` names; string
        values as Kafka parses them, or Python values of the right type); anything not given
        keeps Kafka's default.

        Precedence as in Kafka: log.retention.ms over .minutes over .hours, log.roll.ms over
        log.roll.hours, log.segment.delete.delay.ms over its synonym file.delete.delay.ms; a
        negative retention time means "forever" (-1). Errors, all InvalidConfig naming the key:
        an unknown property, a value of the wrong type or out of range, or a combination Kafka
        refuses. Properties Kafka has but logwright does not use (listeners, threads, log.dirs
        ...; ``logwright.configs.IGNORED_BROKER_PROPERTIES``) are logged as warnings and
        ignored; controller properties (broker.session.timeout.ms,
        unclean.leader.election.enable) are accepted for ``ControllerConfig.from_properties``.
        """
        values = parse_broker_properties(properties, warn=log.warning)
        return broker_config_from_values(values)

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
            "replica.alter.log.dirs.io.max.bytes.per.second":
                self.replica_alter_log_dirs_io_max_bytes_per_second,
            "max deferred control requests": self.max_deferred_control_requests,
            "max purgatory operations": self.max_purgatory_operations,
        }
        for name, value in positive.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InvalidConfig(name, value, "must be a positive integer")
        if not isinstance(self.replica_fetch_wait_max_ms, int) or \
                self.replica_fetch_wait_max_ms < 0:
            raise InvalidConfig("replica.fetch.wait.max.ms", self.replica_fetch_wait_max_ms,
                                "must be an integer >= 0")
        if self.replica_fetch_wait_max_ms >= self.replica_socket_timeout_ms:
            # Kafka enforces the same: a fetch parked on the leader must be answered before the
            # follower gives up on it.
            raise InvalidConfig("replica.socket.timeout.ms", self.replica_socket_timeout_ms,
                                "must exceed replica.fetch.wait.max.ms "
                                f"({self.replica_fetch_wait_max_ms})")


_BROKER_FIELDS = {
    "num.replica.fetchers": "num_replica_fetchers",
    "replica.fetch.max.bytes": "replica_fetch_max_bytes",
    "replica.fetch.response.max.bytes": "replica_fetch_response_max_bytes",
    "replica.fetch.wait.max.ms": "replica_fetch_wait_max_ms",
    "replica.fetch.min.bytes": "replica_fetch_min_bytes",
    "replica.fetch.backoff.ms": "replica_fetch_backoff_ms",
    "replica.socket.timeout.ms": "replica_socket_timeout_ms",
    "replica.lag.time.max.ms": "replica_lag_time_max_ms",
    "broker.heartbeat.interval.ms": "broker_heartbeat_interval_ms",
    "controller.socket.timeout.ms": "controller_socket_timeout_ms",
    "min.insync.replicas": "min_insync_replicas",
    "replica.alter.log.dirs.io.max.bytes.per.second":
        "replica_alter_log_dirs_io_max_bytes_per_second",
}
_LOG_MANAGER_FIELDS = {
    "log.retention.check.interval.ms": "retention_check_interval_ms",
    "log.initial.task.delay.ms": "initial_task_delay_ms",
    "log.flush.offset.checkpoint.interval.ms": "recovery_point_checkpoint_interval_ms",
    "replica.high.watermark.checkpoint.interval.ms": "high_watermark_checkpoint_interval_ms",
    "log.flush.interval.ms": "flush_interval_ms",
    "orphan.partition.removal.delay.ms": "orphan_partition_removal_delay_ms",
}
_LOG_FIELDS = {
    "log.segment.bytes": "segment_bytes",
    "log.index.size.max.bytes": "segment_index_bytes",
    "log.index.interval.bytes": "index_interval_bytes",
    "log.retention.bytes": "retention_bytes",
    "message.max.bytes": "max_message_bytes",
    "log.flush.interval.messages": "flush_messages",
}
_HOUR_MS = 3_600_000


def _pick(values: Mapping[str, ConfigValue], *keys_and_factors: tuple[str, int]) -> int | None:
    """The first of ``keys`` that is set, times its factor (Kafka's ms > minutes > hours)."""
    for key, factor in keys_and_factors:
        value = values.get(key)
        if isinstance(value, int):
            return value * factor
    return None


def broker_config_from_values(values: Mapping[str, ConfigValue]) -> BrokerConfig:
    """A broker config from parsed broker properties (see ``BrokerConfig.from_properties``)."""
    log_changes: dict[str, object] = {
        attr: values[key] for key, attr in _LOG_FIELDS.items() if key in values}
    if "log.cleanup.policy" in values:
        policy = values["log.cleanup.policy"]
        assert isinstance(policy, tuple)
        log_changes["cleanup_policy"] = ",".join(policy)
    retention_ms = _pick(values, ("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                         ("log.retention.hours", _HOUR_MS))
    if retention_ms is not None:
        log_changes["retention_ms"] = -1 if retention_ms < 0 else retention_ms
    roll_ms = _pick(values, ("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS))
    if roll_ms is not None:
        log_changes["segment_ms"] = roll_ms
    delete_delay = _pick(values, ("log.segment.delete.delay.ms", 1), ("file.delete.delay.ms", 1))
    manager_changes: dict[str, object] = {
        attr: values[key] for key, attr in _LOG_MANAGER_FIELDS.items() if key in values}
    if delete_delay is not None:
        log_changes["file_delete_delay_ms"] = delete_delay
        manager_changes["file_delete_delay_ms"] = delete_delay
    broker_changes: dict[str, object] = {
        attr: values[key] for key, attr in _BROKER_FIELDS.items() if key in values}
    wait_ms = broker_changes.get("replica_fetch_wait_max_ms", 500)
    socket_ms = broker_changes.get("replica_socket_timeout_ms", 30_000)
    assert isinstance(wait_ms, int) and isinstance(socket_ms, int)
    if socket_ms <= wait_ms:
        raise InvalidConfig("replica.socket.timeout.ms", socket_ms,
                            f"must be larger than replica.fetch.wait.max.ms ({wait_ms}), as in "
                            "Kafka: a fetch parked on the leader is answered before it times out")
    log_config = replace(LogConfig(), **log_changes)  # type: ignore[arg-type]
    manager = replace(LogManagerConfig(), log=log_config,
                      **manager_changes)  # type: ignore[arg-type]
    return replace(BrokerConfig(), log=manager, **broker_changes)  # type: ignore[arg-type]
