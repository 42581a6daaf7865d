"""Controller configuration, with Kafka's names and defaults (kafka-compatibility.md "Configs")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from logwright.configs import parse_broker_properties
from logwright.errors import InvalidConfig


@dataclass(frozen=True)
class ControllerConfig:
    """How the controller judges broker liveness, and how much it remembers.

    Kafka names: broker.session.timeout.ms (9000), broker.heartbeat.interval.ms (2000). The
    heartbeat interval is the brokers' setting; the controller only checks that a session can
    survive a few missed heartbeats.
    """

    broker_session_timeout_ms: int = 9_000
    broker_heartbeat_interval_ms: int = 2_000
    max_recorded_errors: int = 1_000  # per-partition errors from control responses, kept for tests
    # logwright's own: a control request without a response is sent again (rebuilt from the
    # current state) after this long, while its broker lives. Kafka's controller channel is TCP
    # and re-sends on reconnect; the simulated network drops messages instead. None: never.
    control_request_retry_ms: int | None = 1_000
    max_outstanding_requests: int = 10_000  # an explicit bound on requests awaiting a response
    # unclean.leader.election.enable: the default for topics without the override.
    unclean_leader_election_enable: bool = False
    # min.insync.replicas: the default for topics without the override. The controller reads it
    # for eligible leader replicas (KIP-966): a replica leaving an ISR smaller than this joins
    # the ELR, and an ISR that reaches it empties the ELR.
    min_insync_replicas: int = 1
    # logwright's own: while a reassignment's dir move (KIP-113) is not known to be done, the
    # controller asks the replica's broker where it is (DescribeLogDirs) this often, and waits
    # this long for an answer to it or to an AlterReplicaLogDirs.
    dir_move_poll_ms: int = 1_000
    # The principal the controller's requests carry (the brokers' authorizer checks
    # CLUSTER_ACTION for it). Kafka's is the controller listener's; a Cluster sets its own
    # internal principal, a super user, so that client ACLs never lock the controller out.
    principal: str = "User:ANONYMOUS"

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> ControllerConfig:
        """A controller config from Kafka properties: broker.session.timeout.ms,
        broker.heartbeat.interval.ms, unclean.leader.election.enable, min.insync.replicas
        (defaults otherwise).

        The same mapping as ``BrokerConfig.from_properties`` takes (a combined-mode
        ``server.properties``): broker-only properties are accepted and left to it, unknown
        ones refused with InvalidConfig naming the key.
        """
        values = parse_broker_properties(properties)
        fields = {"broker.session.timeout.ms": "broker_session_timeout_ms",
                  "broker.heartbeat.interval.ms": "broker_heartbeat_interval_ms",
                  "unclean.leader.election.enable": "unclean_leader_election_enable",
                  "min.insync.replicas": "min_insync_replicas"}
        changes = {attr: values[key] for key, attr in fields.items() if key in values}
        session = changes.get("broker_session_timeout_ms", 9_000)
        heartbeat = changes.get("broker_heartbeat_interval_ms", 2_000)
        assert isinstance(session, int) and isinstance(heartbeat, int)
        if session <= heartbeat:
            raise InvalidConfig("broker.session.timeout.ms", session,
                                f"must exceed broker.heartbeat.interval.ms ({heartbeat})")
        return replace(cls(), **changes)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        def integer(value: object) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        heartbeat, session = self.broker_heartbeat_interval_ms, self.broker_session_timeout_ms
        if not integer(heartbeat) or heartbeat <= 0:
            raise InvalidConfig("broker.heartbeat.interval.ms", heartbeat,
                                "must be a positive integer")
        if not integer(session) or session <= heartbeat:
            raise InvalidConfig("broker.session.timeout.ms", session,
                                f"must be an integer above broker.heartbeat.interval.ms "
                                f"({heartbeat})")
        if not integer(self.max_recorded_errors) or self.max_recorded_errors < 0:
            raise InvalidConfig("max_recorded_errors", self.max_recorded_errors,
                                "must be an integer >= 0")
        retry = self.control_request_retry_ms
        if retry is not None and (not integer(retry) or retry <= 0):
            raise InvalidConfig("control_request_retry_ms", retry,
                                "must be a positive integer or None")
        if not integer(self.min_insync_replicas) or self.min_insync_replicas < 1:
            raise InvalidConfig("min.insync.replicas", self.min_insync_replicas,
                                "must be an integer >= 1")
        if not integer(self.dir_move_poll_ms) or self.dir_move_poll_ms <= 0:
            raise InvalidConfig("dir_move_poll_ms", self.dir_move_poll_ms,
                                "must be a positive integer")
        if not integer(self.max_outstanding_requests) or self.max_outstanding_requests < 0:
            raise InvalidConfig("max_outstanding_requests", self.max_outstanding_requests,
                                "must be an integer >= 0")
