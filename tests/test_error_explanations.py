"""A refused request tells the user what was wrong, in the error's own text.

The errors a user reads (``str(error)``: Kafka's name and code, then the explanation): a
reassignment names the JSON path of the problem and the JSON type it found, a log dir the
broker did not register lists the ones it did, an assignment names the partition and the rule;
NOT_CONTROLLER and TOPIC_ALREADY_EXISTS carry their explanation. Also the edges of the values
these checks accept: an ACL needs a principal ``Type:name`` and a resource name, removing an ACL
that is not there says so, and a session timeout just above a small heartbeat interval is valid.
"""

from __future__ import annotations

import json

import pytest

from logwright import Cluster
from logwright.broker.authorizer import (
    CLUSTER_NAME,
    AclAuthorizer,
    AclBinding,
    Operation,
    ResourceType,
)
from logwright.controller import (
    ControllerConfig,
    NotController,
    ReassignmentError,
    StaleControllerEpoch,
    TopicAlreadyExists,
    parse_reassignment,
)
from logwright.controller.errors import InvalidReplicaAssignment
from logwright.errors import Errors, InvalidConfig
from tests.test_controller import HEARTBEAT_MS, SESSION_MS, SETTLE_MS, Harness


def doc(partitions: object, version: object = 1) -> str:
    return json.dumps({"version": version, "partitions": partitions})


def entry(**fields: object) -> dict[str, object]:
    return {"topic": "t", "partition": 0, "replicas": [1, 2], **fields}


@pytest.mark.parametrize(("text", "expected"), [
    (doc(None), "partitions: must be a list, not null"),
    (doc("x"), "partitions: must be a list, not a string"),
    (doc({"a": 1}), "partitions: must be a list, not an object"),
    (doc([entry()], version=True), "version: must be an integer, not a boolean"),
    (doc([entry()], version=1.5), "version: must be an integer, not a number"),
    (doc([entry()], version=[1]), "version: must be an integer, not a list"),
    (doc([[1]]), "partitions[0]: must be an object, not a list"),
    (doc([entry(topic=3)]), "partitions[0].topic: must be a string, not an integer"),
])
def test_a_reassignment_error_names_the_json_path_and_the_type_found(text: str,
                                                                      expected: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment(text)
    assert str(info.value) == f"INVALID_REQUEST (42): {expected}"


@pytest.mark.parametrize(("text", "expected"), [
    (doc([entry(log_dirs="x")]),
     'INVALID_REQUEST (42): partitions[0].log_dirs: must be a list of paths or "any", not a '
     'string'),
    (doc([entry(log_dirs=["any"])]),
     "INVALID_REQUEST (42): partitions[0].log_dirs: has 1 entries but replicas has 2; log_dirs "
     "must parallel replicas"),
    (doc([{"topic": "t", "partition": 0}]),
     "INVALID_REQUEST (42): partitions[0].replicas: missing"),
    (doc([entry(replicas="x")]),
     "INVALID_REQUEST (42): partitions[0].replicas: must be a list of broker ids, not a string"),
    (doc([entry(replicas=[])]),
     "INVALID_REQUEST (42): partitions[0].replicas: is empty: a partition needs at least one "
     "replica"),
    (doc([entry(replicas=list(range(1001)))]),
     "INVALID_REQUEST (42): partitions[0].replicas: 1001 replicas, more than the limit of 1000"),
    (doc([entry(replicas=[-1, 1])]),
     "INVALID_REQUEST (42): partitions[0].replicas[0]: broker id -1 is negative"),
    (doc([entry(partition=2**31)]),
     "UNKNOWN_TOPIC_OR_PARTITION (3): partitions[0].partition: partition 2147483648 of topic "
     "'t' cannot exist (valid: 0 to 2147483647)"),
])
def test_a_malformed_move_is_refused_saying_where_and_why(text: str, expected: str) -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment(text)
    assert str(info.value) == expected


def test_a_move_at_the_limits_is_accepted() -> None:
    (move,) = parse_reassignment(doc([entry(partition=2**31 - 1,
                                            replicas=list(range(1000)))])).moves
    assert move.tp.partition == 2**31 - 1 and move.replicas == tuple(range(1000))
    (move,) = parse_reassignment(doc([entry(replicas=[0, 1])])).moves
    assert move.replicas == (0, 1), "broker id 0 is a broker id"


def test_a_reassignment_error_without_a_path_is_the_problem_alone() -> None:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment("[1]")
    assert info.value.path == ""
    assert str(info.value) == "INVALID_REQUEST (42): the top level must be an object, not a list"


@pytest.fixture
def h() -> Harness:
    harness = Harness(brokers=(1, 2, 3, 4))
    harness.start()
    harness.controller.create_topic("t", 1, 2, assignment=[[1, 2]])
    harness.run(SETTLE_MS)
    return harness


def test_an_unknown_log_dir_is_refused_listing_the_brokers_dirs(h: Harness) -> None:
    with pytest.raises(ReassignmentError) as info:
        h.controller.reassign(doc([entry(replicas=[3, 4], log_dirs=["/nope", "any"])]))
    assert info.value.error is Errors.LOG_DIR_NOT_FOUND
    assert info.value.problem == ("broker 3 has no log dir '/nope' "
                                  "(its log dirs: /data/3/d1, /data/3/d2)")


def test_an_assignment_error_names_the_partition_and_the_rule(h: Harness) -> None:
    with pytest.raises(InvalidReplicaAssignment) as info:
        h.controller.create_topic("u", 2, 2, assignment=[[1, 2], [3]])
    assert info.value.message == ("topic 'u' partition 1: 1 replicas, expected the replication "
                                  "factor 2")
    h.stop_heartbeats(4)
    h.stop_heartbeats(3)
    h.run(SESSION_MS + HEARTBEAT_MS)
    with pytest.raises(InvalidReplicaAssignment) as info:
        h.controller.create_topic("u", 2, 2, assignment=[[1, 2], [3, 4]])
    assert info.value.message == ("topic 'u' partition 1: none of the replicas [3, 4] is "
                                  "alive, so no leader can be elected")


@pytest.mark.parametrize("error", [NotController, TopicAlreadyExists])
@pytest.mark.parametrize("message", ["controller 2 is active now", "x"])
def test_a_controller_error_carries_its_explanation(error: type[NotController],
                                                    message: str) -> None:
    raised = error(message)
    assert raised.message == message
    assert str(raised) == f"{raised.error.name} ({int(raised.error)}): {message}"


def test_an_acl_needs_a_typed_principal_and_a_resource_name() -> None:
    with pytest.raises(ValueError, match=r"principal 'alice' must look like 'User:<name>'"):
        AclBinding("alice", ResourceType.TOPIC, "t", Operation.READ)
    with pytest.raises(ValueError, match=r"^an ACL needs a resource name \(or '\*'\)$"):
        AclBinding("User:alice", ResourceType.TOPIC, "", Operation.READ)


def test_removing_an_acl_says_whether_it_was_there() -> None:
    acl = AclBinding("User:admin", ResourceType.CLUSTER, CLUSTER_NAME, Operation.DESCRIBE)
    other = AclBinding("User:bob", ResourceType.CLUSTER, CLUSTER_NAME, Operation.DESCRIBE)
    authorizer = AclAuthorizer([acl])
    assert authorizer.remove_acl(other) is False
    assert authorizer.remove_acl(acl) is True
    assert authorizer.remove_acl(acl) is False


@pytest.mark.parametrize(("session", "heartbeat"), [(1_500, 1_000), (2, 1), (9_000, 8_999)])
def test_a_session_timeout_just_above_the_heartbeat_interval_is_valid(session: int,
                                                                      heartbeat: int) -> None:
    config = ControllerConfig.from_properties({"broker.session.timeout.ms": str(session),
                                               "broker.heartbeat.interval.ms": str(heartbeat)})
    assert (config.broker_session_timeout_ms, config.broker_heartbeat_interval_ms) == (
        session, heartbeat)
    with pytest.raises(InvalidConfig):
        ControllerConfig.from_properties({"broker.session.timeout.ms": str(heartbeat),
                                          "broker.heartbeat.interval.ms": str(heartbeat)})


def test_a_deposed_controllers_write_is_refused_naming_both_epochs() -> None:
    c = Cluster.simulated(seed=4)
    old = c.controller
    c.fail_controller(zombie=True)
    c.advance_time(1_000)
    new_epoch = c.controller.epoch
    with pytest.raises(StaleControllerEpoch) as info:
        old.create_topic("ghost", 1, 1)
    e = info.value
    assert (e.writer_epoch, e.current_epoch) == (old.epoch, new_epoch) and old.epoch < new_epoch
    assert e.error is Errors.STALE_CONTROLLER_EPOCH
    assert e.message == (f"controller epoch {old.epoch} is not the current one ({new_epoch}); "
                         "the write was rejected")
    c.close()


def test_a_plan_the_cluster_cannot_follow_is_refused_saying_why(h: Harness) -> None:
    for text, expected in [
        (doc([entry(topic="nope")]),
         "UNKNOWN_TOPIC_OR_PARTITION (3): partitions[0].topic: topic 'nope' does not exist"),
        (doc([entry(replicas=[1, 9])]),
         "INVALID_REQUEST (42): partitions[0].replicas[1]: unknown broker id 9: no such broker "
         "is registered (INVALID_REPLICA_ASSIGNMENT)"),
    ]:
        with pytest.raises(ReassignmentError) as info:
            h.controller.reassign(text)
        assert str(info.value) == expected
    h.controller.reassign(doc([entry(replicas=[3, 4], log_dirs=["/data/3/./d2/", "any"])]))
    (pending,) = h.store.reassignments()
    assert pending.target_log_dirs == ("/data/3/d2", "any"), "the broker's own spelling"
    with pytest.raises(ReassignmentError) as info:
        h.controller.reassign(doc([entry(replicas=[1, 2])]))
    assert str(info.value) == ("INVALID_REQUEST (42): partitions[0]: t-0 is already being "
                               "reassigned (REASSIGNMENT_IN_PROGRESS)")
