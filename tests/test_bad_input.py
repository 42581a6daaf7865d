"""Bad input everywhere: every public Cluster call and every CLI command answers generated bad
input with ONE typed error, changes nothing, and loses nothing.

``BAD`` holds, for every public name of ``Cluster`` (found with inspect, so a new public method
fails ``test_every_public_name_has_bad_input_coverage`` until it gets an entry), a valid call and,
per argument, a strategy of values that make it bad. Each example corrupts one argument of the
valid call and checks: the call raises a ``LogwrightError`` subclass (nothing else), the observable
state is unchanged (topics, partition states, every replica's start offset / HW / LEO and
records, broker and controller liveness and epochs, network cuts, the virtual clock), and every
record acknowledged before is still fetchable.

To cover a new method: add ``BAD["name"] = Bad(valid_kwargs, {arg: strategy, ...})``, or put the
name in ``NO_ARGUMENTS`` with the reason it takes none.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from logwright import Cluster, KafkaError, LogwrightError, UnknownTopicOrPartition
from logwright.broker.authorizer import AclBinding, Operation, ResourceType
from logwright.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE, LogwrightGroup, main
from logwright.cluster import ClusterError, InvalidArgument
from logwright.cluster.demo import run_demo
from logwright.controller.reassignment import MAX_JSON_CHARS, MAX_JSON_DEPTH
from logwright.storage.naming import TopicPartition

INT32_MAX = 2**31 - 1

# ---- strategies of bad values -------------------------------------------------------------------


def hashable(value: object) -> bool:
    """Whether ``value`` can be part of a mapping's key."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


#: Values that are not ints (a bool is not an int for these calls), never None.
not_int = st.one_of(st.booleans(), st.floats(allow_nan=True), st.text(max_size=4),
                    st.binary(max_size=3), st.lists(st.integers(), max_size=2),
                    st.just(object()), st.decimals(allow_nan=False).map(str))
not_bool = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.floats())
bad_timeout = st.one_of(st.integers(max_value=0), st.integers(min_value=INT32_MAX + 1), not_int)
bad_optional_timeout = bad_timeout  # None is the valid default there
illegal_topic = st.one_of(
    st.sampled_from(["", ".", ".."]),
    st.text(alphabet="ab._-", min_size=250, max_size=400),
    st.text(min_size=1, max_size=20).filter(lambda s: any(
        not (c.isascii() and (c.isalnum() or c in "._-")) for c in s)),
)
bad_topic = st.one_of(illegal_topic, st.none(), st.integers(), st.binary(max_size=4),
                      st.lists(st.text(max_size=2), max_size=2))
unknown_topic = st.text(alphabet="xyz", min_size=1, max_size=8)  # the fixture's topic is "t"
bad_partition = st.one_of(st.integers(max_value=-1), st.integers(min_value=2, max_value=INT32_MAX),
                          st.integers(min_value=INT32_MAX + 1), not_int, st.none())
bad_broker_id = st.one_of(st.integers().filter(lambda b: b not in (1, 2, 3)), not_int, st.none())
bad_node = st.one_of(bad_broker_id, st.sampled_from(["controller-9", "broker-7", "", "client-1"]),
                     st.text(alphabet="abc", max_size=5))
not_a_value = st.one_of(st.text(max_size=3), st.integers(), st.floats(), st.booleans(),
                        st.lists(st.integers(), max_size=1))
bad_values = st.one_of(
    st.just([]), st.just(()), st.text(max_size=5), st.binary(max_size=5), st.integers(),
    st.none(), st.dictionaries(st.text(max_size=2), st.binary(max_size=2), max_size=2),
    st.lists(not_a_value, min_size=1, max_size=3),
    st.tuples(st.binary(max_size=2), not_a_value).map(list),
)
bad_keys = st.one_of(st.lists(st.binary(max_size=2), min_size=2, max_size=3),  # wrong length
                     st.just([]), st.text(max_size=3), st.integers(),
                     st.lists(not_a_value, min_size=1, max_size=1))
bad_acks = st.one_of(st.integers().filter(lambda a: a not in (0, 1, -1)), st.booleans(),
                     st.sampled_from(["1", "-1", "leader", None, 1.0, [1]]))
bad_configs = st.one_of(st.text(max_size=3), st.integers(), st.lists(st.text(), max_size=2),
                        st.dictionaries(st.text(max_size=4), st.integers(), min_size=1,
                                        max_size=2),
                        st.dictionaries(st.integers(), st.text(max_size=2), min_size=1,
                                        max_size=2))
bad_rate = st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0),
                     st.just(float("nan")), st.booleans(), st.text(max_size=3), st.none())
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                           max_leaves=10)
bad_reassignment = st.one_of(
    json_values.map(json.dumps),                                           # wrong structure
    st.text(max_size=30),                                                  # mostly not JSON
    st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=200_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1, max_value=3).map(
        lambda n: " " * (MAX_JSON_CHARS + n)),                             # too long
    st.integers(min_value=5_000, max_value=20_000).map(lambda n: "1" * n),  # too many digits
    st.sampled_from([                                                      # refused by the plan
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,9]}]}',
        '{"version":1,"partitions":[{"topic":"zz","partition":0,"replicas":[1,2]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":7,"replicas":[1,2]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}',
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],'
        '"log_dirs":["/nowhere","any"]}]}',
        '{"version":2,"partitions":[]}', "NaN", '{"version":1e999}',
    ]),
    st.one_of(st.none(), st.integers(), st.binary(max_size=4), json_values.filter(
        lambda v: not isinstance(v, str))),                                # not text at all
)
not_a_client_config = st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                                st.integers(), st.text(max_size=3))
bad_port = st.one_of(st.integers(max_value=-1), st.integers(min_value=65_536), not_int)
bad_host = st.one_of(st.just(""), st.integers(), st.binary(max_size=3), st.lists(st.text(),
                                                                                max_size=1))
not_a_config = st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                         st.text(max_size=3), st.integers(min_value=1))


@dataclass
class Bad:
    """A valid call and, per argument, a strategy of values that make it bad."""

    valid: dict[str, Any]
    bad: dict[str, st.SearchStrategy[Any]]
    classmethod_: bool = False
    extra: list[Callable[[Cluster], None]] = field(default_factory=list)


BAD: dict[str, Bad] = {
    "simulated": Bad(
        dict(brokers=1, log_dirs_per_broker=1, seed=0, drop_rate=0.0, duplicate_rate=0.0,
             min_delay_ms=1, max_delay_ms=5, broker_config=None, controller_config=None,
             client_config=None, trace=None, trace_id=None),
        dict(brokers=st.one_of(st.integers(max_value=0), not_int, st.none()),
             log_dirs_per_broker=st.one_of(st.integers(max_value=0), not_int, st.none()),
             seed=st.one_of(not_int, st.none()), drop_rate=bad_rate, duplicate_rate=bad_rate,
             min_delay_ms=st.one_of(st.integers(max_value=-1), not_int),
             max_delay_ms=st.one_of(st.integers(max_value=0), not_int),
             broker_config=not_a_config, controller_config=not_a_config,
             client_config=not_a_client_config,
             trace=st.one_of(st.integers(), st.binary(max_size=3), st.lists(st.text(), max_size=1),
                             st.sampled_from(["", "x\0y", ".", "/", "no-such-dir/run.jsonl"])),
             # A trace id is refused when not a one-line string, and without a trace at all.
             trace_id=st.one_of(st.integers(), st.sampled_from(["", "a\nb", "run-1"]))),
        classmethod_=True),
    "real": Bad(  # "{...}" paths are filled in by the test; see also test_real_data_path_problems
        dict(path="{fresh}", brokers=1, log_dirs_per_broker=1, seed=0, broker_config=None,
             controller_config=None, config_file=None, broker_properties=None,
             client_config=None, metrics_port=None, metrics_host="127.0.0.1", trace=None),
        dict(path=st.one_of(st.sampled_from(["{file}", "{below_file}", "", "x\0y"]),
                            st.integers(), st.none(), st.lists(st.text(max_size=2), max_size=2),
                            st.binary(max_size=3)),
             brokers=st.one_of(st.integers(max_value=0), not_int, st.none()),
             log_dirs_per_broker=st.one_of(st.integers(max_value=0), not_int),
             seed=st.one_of(not_int, st.none()), broker_config=not_a_config,
             controller_config=not_a_config,
             config_file=st.one_of(st.sampled_from(["{missing}", "{file}", "{bad_props}"]),
                                   st.integers(), st.lists(st.text(max_size=2), max_size=1)),
             broker_properties=st.one_of(
                 bad_configs, st.just({"no.such.property": "1"}),
                 st.just({"num.replica.fetchers": "zero"}),
                 st.just({"log.retention.ms": -5})),
             client_config=not_a_client_config, metrics_port=bad_port, metrics_host=bad_host,
             trace=st.one_of(st.integers(), st.binary(max_size=3), st.lists(st.text(), max_size=1),
                             st.sampled_from(["", "x\0y", ".", "/", "no-such-dir/run.jsonl"]))),
        classmethod_=True),
    "partition_state": Bad(dict(topic="t", partition=0),
                           dict(topic=st.one_of(bad_topic, unknown_topic),
                                partition=bad_partition)),
    "broker": Bad(dict(broker_id=1), dict(broker_id=bad_broker_id)),
    "create_topic": Bad(
        dict(name="fresh", partitions=1, replication_factor=1, configs=None),
        dict(name=st.one_of(bad_topic, st.just("t")),
             partitions=st.one_of(st.integers(max_value=0), st.integers(min_value=INT32_MAX + 1),
                                  not_int, st.none()),
             replication_factor=st.one_of(st.integers(max_value=0), st.integers(min_value=4),
                                          not_int),
             configs=bad_configs)),
    "create_partitions": Bad(
        dict(name="t", total=4),
        dict(name=st.one_of(bad_topic, unknown_topic),
             total=st.one_of(st.integers(max_value=2), st.integers(min_value=INT32_MAX + 1),
                             not_int, st.none()))),
    "delete_topic": Bad(dict(name="t"), dict(name=st.one_of(bad_topic, unknown_topic))),
    "produce": Bad(
        dict(topic="t", partition=0, values=[b"v"], keys=None, acks=-1, timeout_ms=None),
        dict(topic=st.one_of(bad_topic, unknown_topic), partition=bad_partition,
             values=bad_values, keys=bad_keys, acks=bad_acks, timeout_ms=bad_optional_timeout)),
    "fetch": Bad(
        dict(topic="t", partition=0, offset=0, max_bytes=1 << 20, timeout_ms=None),
        dict(topic=st.one_of(bad_topic, unknown_topic), partition=bad_partition,
             offset=st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63), not_int,
                              st.none()),
             max_bytes=st.one_of(st.integers(max_value=0), st.integers(min_value=INT32_MAX + 1),
                                 not_int, st.none()),
             timeout_ms=bad_optional_timeout)),
    "list_offsets": Bad(
        dict(topic="t", partition=0, which="latest", timeout_ms=None),
        dict(topic=st.one_of(bad_topic, unknown_topic), partition=bad_partition,
             which=st.one_of(st.text(max_size=8).filter(lambda w: w not in ("earliest",
                                                                             "latest")),
                             st.integers(), st.none(), st.just(["latest"])),
             timeout_ms=bad_optional_timeout)),
    "delete_records": Bad(
        dict(offsets={("t", 0): 0}, timeout_ms=30_000),
        dict(offsets=st.one_of(
            st.just({}), st.integers(), st.text(max_size=3), st.none(),
            st.lists(st.tuples(st.just("t"), st.just(0)), min_size=1, max_size=2),
            st.sampled_from(["t", ("t",), ("t", 0, 1), 5, None]).map(lambda k: {k: 0}),
            st.one_of(illegal_topic, st.none(), st.integers(), st.binary(max_size=4))
            .map(lambda t: {(t, 0): 0}),
            st.one_of(st.integers(max_value=-1), st.integers(min_value=INT32_MAX + 1),
                      st.booleans(), st.floats(), st.text(max_size=2), st.none())
            .map(lambda p: {("t", p): 0}),
            st.one_of(st.integers(max_value=-2), st.integers(min_value=2**63), st.booleans(),
                      st.floats(), st.text(max_size=2), st.none())
            .map(lambda o: {("t", 0): o})),
             timeout_ms=bad_timeout)),
    "alter_topic_configs": Bad(
        dict(topic="t", set={"retention.ms": "60000"}, delete=()),
        dict(topic=st.one_of(bad_topic, unknown_topic),
             set=st.one_of(bad_configs, st.just({"retention.ms": "soon"}),
                           st.just({"segment.bytes": 1}), st.just({"cleanup.policy": "shred"}),
                           st.just({"min.insync.replicas": 0})),
             delete=st.one_of(st.just(["no.such.config"]), st.just(["retention.ms", 5]),
                              st.integers(), st.text(min_size=1, max_size=3)))),
    "begin_alter_topic_configs": Bad(
        dict(topic="t", set={"retention.ms": "60000"}, delete=()),
        dict(topic=st.one_of(bad_topic, unknown_topic),
             set=st.one_of(bad_configs, st.just({"retention.ms": "soon"}),
                           st.just({"segment.bytes": 1}), st.just({"cleanup.policy": "shred"})),
             delete=st.one_of(st.just(["no.such.config"]), st.just(["retention.ms", 5]),
                              st.integers(), st.text(min_size=1, max_size=3)))),
    "add_acls": Bad(
        dict(acls=[AclBinding("User:a", ResourceType.TOPIC, "t", Operation.READ)]),
        dict(acls=st.one_of(st.integers(), st.text(max_size=3), st.just([("User:a", "t")]),
                            st.just([None])))),
    "remove_acls": Bad(
        dict(acls=[AclBinding("User:a", ResourceType.TOPIC, "t", Operation.READ)]),
        dict(acls=st.one_of(st.integers(), st.text(max_size=3), st.just([{"principal": 1}])))),
    "leaders_ready": Bad(
        dict(tps=[TopicPartition("t", 0)]),
        dict(tps=st.one_of(st.integers(), st.text(max_size=3), st.just([("t", 0)]),
                           st.just([TopicPartition("a/b", 0)]),
                           st.just([TopicPartition("t", -1)])))),
    "describe_topic_configs": Bad(dict(topic="t"),
                                  dict(topic=st.one_of(bad_topic, unknown_topic))),
    "serve_metrics": Bad(dict(port=0, host="127.0.0.1"),  # simulated: refused whatever the port
                         dict(port=bad_port, host=bad_host)),
    "crash_broker": Bad(dict(broker_id=1, power_loss=True),
                        dict(broker_id=bad_broker_id, power_loss=not_bool)),
    "restart_broker": Bad(dict(broker_id=1, wait=True),
                          dict(broker_id=bad_broker_id, wait=not_bool)),
    "fail_controller": Bad(dict(zombie=False), dict(zombie=not_bool)),
    "partition_network": Bad(dict(a=1, b=2), dict(a=bad_node, b=st.one_of(bad_node, st.just(1)))),
    "advance_time": Bad(dict(delta_ms=10),
                        dict(delta_ms=st.one_of(st.integers(max_value=-1),
                                                st.integers(min_value=INT32_MAX + 1), not_int,
                                                st.none()))),
    "run_until_idle": Bad(dict(max_ms=1_000), dict(max_ms=bad_timeout)),
    "reassign": Bad(
        dict(json_text='{"version":1,"partitions":[{"topic":"t","partition":0,'
                       '"replicas":[1,2]}]}', wait=True, timeout_ms=10_000),
        dict(json_text=bad_reassignment, wait=not_bool, timeout_ms=bad_timeout)),
    "metrics": Bad(dict(broker_id=1),
                   dict(broker_id=bad_broker_id.filter(lambda b: b is not None))),
    "describe_log_dirs": Bad(dict(broker_id=1),
                             dict(broker_id=bad_broker_id.filter(lambda b: b is not None))),
    "alter_replica_log_dirs": Bad(
        dict(moves={("t", 0, 1): "/nowhere"}),
        dict(moves=st.one_of(
            st.just({}), st.none(), st.integers(), st.text(max_size=3),
            st.builds(lambda t: {(t, 0, 1): "/d"}, bad_topic.filter(hashable)),
            st.builds(lambda p: {("t", p, 1): "/d"}, bad_partition.filter(hashable).filter(
                lambda p: not (isinstance(p, int) and 0 <= p <= INT32_MAX))),
            st.builds(lambda b: {("t", 0, b): "/d"}, bad_broker_id.filter(hashable)),
            st.builds(lambda d: {("t", 0, 1): d}, not_a_value.filter(
                lambda d: not isinstance(d, str))),
            st.builds(lambda k: {k: "/d"}, st.one_of(st.tuples(st.just("t"), st.just(0)),
                                                      st.text(max_size=3), st.integers()))))),
}

#: Public names that take no arguments, so there is no bad input to give them.
NO_ARGUMENTS = {
    "close": "no arguments",
    "metrics_exposition": "no arguments",
    "controller": "a property",
    "heal_network": "no arguments (on a real cluster: ClusterError, see test_real_only_refusals)",
    "simulated_world": "a property (on a real cluster: ClusterError, see test_real_only_refusals)",
}


def public_names() -> set[str]:
    return {name for name, _ in inspect.getmembers(Cluster) if not name.startswith("_")}


def test_every_public_name_has_bad_input_coverage() -> None:
    missing = public_names() - set(BAD) - set(NO_ARGUMENTS)
    assert not missing, (f"public Cluster names without bad-input coverage: {sorted(missing)}; "
                         "add them to BAD (or NO_ARGUMENTS) in tests/test_bad_input.py")
    assert not (set(BAD) | set(NO_ARGUMENTS)) - public_names(), "stale entries"
    for name, entry in BAD.items():
        params = set(inspect.signature(getattr(Cluster, name)).parameters) - {"self", "cls"}
        assert set(entry.bad) <= params and set(entry.valid) <= params, name
        assert set(entry.bad) == params, f"{name}: every argument needs a strategy of bad values"


# ---- the cluster and its observable state -------------------------------------------------------

ACKED = {("t", 0): [b"a", b"b", b"c"], ("t", 1): [b"d"]}


def small_cluster() -> Cluster:
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=3)
    cluster.create_topic("t", partitions=2, replication_factor=3)
    for (topic, p), values in ACKED.items():
        cluster.produce(topic, p, values, acks=-1)
    assert cluster.run_until_idle()
    cluster.advance_time(2_000)  # the followers learn the last high watermark too: at rest
    return cluster


def snapshot(cluster: Cluster) -> dict[str, Any]:
    """Everything a call could change that a user can observe."""
    controller = cluster.controller
    topics = sorted((t.name, str(t.topic_id), t.partition_count, t.replication_factor, t.configs)
                    for t in controller.topics())
    parts = {}
    for name, _, count, _, _ in topics:
        for p in range(count):
            parts[f"{name}-{p}"] = controller.partition_state(TopicPartition(name, p))
    logs = {}
    for b, broker in sorted(cluster.brokers.items()):
        for tp, part in sorted(broker.replica_manager.describe().items()):
            records = () if part.offline else tuple(
                (offset, rec.key, rec.value) for offset, rec in part.log.read_records())
            logs[f"{b}:{tp}"] = (part.log_start_offset, part.high_watermark,
                                 part.log_end_offset, records)
    return {
        "clock": cluster.runtime.clock.now_ms(),
        "topics": topics, "partitions": parts, "logs": logs,
        "brokers": [(b, x.alive, x.broker_epoch) for b, x in sorted(cluster.brokers.items())],
        "controllers": [(c.node_id, c.epoch, c.active) for c in cluster.controllers],
        "cuts": sorted(sorted(c) for c in cluster.simulated_world.network._cut),
    }


def assert_nothing_lost(cluster: Cluster) -> None:
    for (topic, p), values in ACKED.items():
        assert [r.value for r in cluster.fetch(topic, p, 0)] == values


def bad_call(data: st.DataObject, name: str) -> tuple[str, dict[str, Any]]:
    """The valid call for ``name`` with one argument made bad."""
    entry = BAD[name]
    arg = data.draw(st.sampled_from(sorted(entry.bad)), label="argument")
    kwargs = dict(entry.valid)
    kwargs[arg] = data.draw(entry.bad[arg], label=arg)
    return arg, kwargs


INSTANCE_METHODS = sorted(n for n, e in BAD.items() if not e.classmethod_)


@pytest.mark.parametrize("name", INSTANCE_METHODS)
@given(data=st.data())
def test_bad_input_is_one_typed_error_and_changes_nothing(name: str, data: st.DataObject) -> None:
    cluster = small_cluster()
    before = snapshot(cluster)
    arg, kwargs = bad_call(data, name)
    with pytest.raises(LogwrightError) as caught:
        getattr(cluster, name)(**kwargs)
    assert str(caught.value), "the error says what is wrong"
    assert type(caught.value) is not LogwrightError, "a specific subclass"
    after = snapshot(cluster)
    if isinstance(caught.value, UnknownTopicOrPartition):
        # Only asking the cluster tells a client that a topic or partition does not exist (a
        # Metadata request, retried until the deadline for an unknown topic, as Kafka's
        # clients wait for one to appear): time passes, nothing else may change.
        assert after["clock"] >= before["clock"]
        after["clock"] = before["clock"]
    assert after == before, f"{name}({arg}=...) changed the cluster"
    assert_nothing_lost(cluster)


@given(data=st.data())
def test_bad_construction_is_one_typed_error(data: st.DataObject) -> None:
    _, kwargs = bad_call(data, "simulated")
    with pytest.raises(InvalidArgument):
        Cluster.simulated(**kwargs)


@given(data=st.data())
def test_bad_real_arguments_create_nothing(data: st.DataObject) -> None:
    parent = tempfile.mkdtemp(prefix="lw-bad-")
    try:
        places = {"fresh": os.path.join(parent, "data"), "file": os.path.join(parent, "file"),
                  "below_file": os.path.join(parent, "file", "data"),
                  "missing": os.path.join(parent, "missing.properties"),
                  "bad_props": os.path.join(parent, "file")}
        Path(places["file"]).write_text("keep")
        arg, kwargs = bad_call(data, "real")
        for key in ("path", "config_file"):
            if isinstance(kwargs[key], str):
                kwargs[key] = kwargs[key].format(**places)
        with pytest.raises(LogwrightError) as caught:
            Cluster.real(**kwargs)
        assert type(caught.value) is not LogwrightError, "a specific subclass"
        assert sorted(os.listdir(parent)) == ["file"], f"real({arg}=...) created something"
        assert Path(places["file"]).read_text() == "keep"
    finally:
        shutil.rmtree(parent)


# ---- specific bad inputs, each once -------------------------------------------------------------


def test_kafka_codes_where_kafka_has_one() -> None:
    cluster = small_cluster()
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: cluster.create_topic("t"), "TOPIC_ALREADY_EXISTS"),
        (lambda: cluster.create_topic("a/b"), "INVALID_TOPIC_EXCEPTION"),
        (lambda: cluster.create_topic("x" * 250), "INVALID_TOPIC_EXCEPTION"),
        (lambda: cluster.create_topic(".."), "INVALID_TOPIC_EXCEPTION"),
        (lambda: cluster.create_topic("n", partitions=0), "INVALID_PARTITIONS"),
        (lambda: cluster.create_topic("n", replication_factor=4), "INVALID_REPLICATION_FACTOR"),
        (lambda: cluster.create_topic("n", replication_factor=0), "INVALID_REPLICATION_FACTOR"),
        (lambda: cluster.produce("t", 0, []), "INVALID_REQUEST"),
        (lambda: cluster.produce("t", 0, [b"x"], acks=2), "INVALID_REQUEST"),  # type: ignore[arg-type]
        (lambda: cluster.produce("nope", 0, [b"x"]), "UNKNOWN_TOPIC_OR_PARTITION"),
        (lambda: cluster.produce("t", 9, [b"x"]), "UNKNOWN_TOPIC_OR_PARTITION"),
        (lambda: cluster.fetch("t", 0, -1), "OFFSET_OUT_OF_RANGE"),
        (lambda: cluster.delete_topic("nope"), "UNKNOWN_TOPIC_OR_PARTITION"),
        (lambda: cluster.reassign("[" * 100_000), "INVALID_REQUEST"),
        (lambda: cluster.reassign(" " * (MAX_JSON_CHARS + 1)), "INVALID_REQUEST"),
        (lambda: cluster.reassign("9" * 5000), "INVALID_REQUEST"),
    ]
    for call, name in cases:
        with pytest.raises(KafkaError) as caught:
            call()
        assert caught.value.name == name, caught.value


def test_json_limits_are_named_in_the_message() -> None:
    cluster = small_cluster()
    with pytest.raises(KafkaError, match=f"more than {MAX_JSON_DEPTH} deep"):
        cluster.reassign('{"a":' * 50 + "1" + "}" * 50)
    with pytest.raises(KafkaError, match=f"limit of {MAX_JSON_CHARS}"):
        cluster.reassign("[" + "1," * MAX_JSON_CHARS + "1]")
    # brackets inside strings do not count towards the depth: this document is refused for its
    # content (no such field), not for its nesting
    with pytest.raises(KafkaError, match="unknown"):
        cluster.reassign(json.dumps({"x": "[" * 100}))


def test_wrong_types_name_the_argument() -> None:
    cluster = small_cluster()
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: cluster.produce("t", "0", [b"x"]), "partition must be an int"),  # type: ignore[arg-type]
        (lambda: cluster.produce("t", 0, ["x"]), r"values\[0\] must be bytes"),  # type: ignore[list-item]
        (lambda: cluster.produce("t", 0, "abc"), "values must be a list"),  # type: ignore[arg-type]
        (lambda: cluster.produce("t", True, [b"x"]), "partition must be an int"),
        (lambda: cluster.produce("t", 0, [b"x"], timeout_ms=0), "timeout_ms must be at least 1"),
        (lambda: cluster.advance_time(-1), "delta_ms must be at least 0"),
        (lambda: cluster.crash_broker(9), "no broker 9"),
        (lambda: cluster.metrics(9), "no broker 9"),
        (lambda: cluster.partition_network(1, "controller-9"), "no node"),
        (lambda: cluster.partition_network(1, "broker-1"), "same node"),
        (lambda: cluster.run_until_idle(0), "max_ms must be at least 1"),
    ]
    for call, pattern in cases:
        with pytest.raises(InvalidArgument, match=pattern):
            call()


# ---- the real cluster's data directory ----------------------------------------------------------


def test_real_data_path_problems(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("keep me")
    with pytest.raises(InvalidArgument, match="not a directory"):
        Cluster.real(str(a_file))
    with pytest.raises(InvalidArgument, match="cannot be created"):
        Cluster.real(str(a_file / "below"))
    for wrong in (None, 3, b"bytes", ["x"], ""):
        with pytest.raises(InvalidArgument):
            Cluster.real(wrong)  # type: ignore[arg-type]
    assert a_file.read_text() == "keep me"
    blocked = tmp_path / "blocked"
    (blocked / "broker-1").mkdir(parents=True)
    (blocked / "broker-1" / "d1").write_text("")
    with pytest.raises(InvalidArgument, match="cannot be a log dir"):
        Cluster.real(str(blocked), brokers=1)
    assert sorted(p.name for p in blocked.iterdir()) == ["broker-1"], "nothing created"


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b"SQLite format 3\x00" +
                                     b"\xff" * 200])
def test_corrupt_metadata_db_is_named_and_left_alone(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "metadata.db").write_bytes(content)
    with pytest.raises(ClusterError, match=r"metadata\.db") as caught:
        Cluster.real(str(tmp_path), brokers=1)
    assert not isinstance(caught.value, InvalidArgument) or "metadata" in str(caught.value)
    assert (tmp_path / "metadata.db").read_bytes() == content, "nothing overwritten"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.db"], "nothing created"


def test_metadata_db_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "metadata.db").mkdir()
    with pytest.raises(ClusterError, match=r"metadata\.db"):
        Cluster.real(str(tmp_path), brokers=1)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_metadata_db(tmp_path: Path) -> None:
    db = tmp_path / "metadata.db"
    db.write_bytes(b"")
    db.chmod(0)
    try:
        with pytest.raises(ClusterError, match=r"metadata\.db"):
            Cluster.real(str(tmp_path), brokers=1)
    finally:
        db.chmod(0o600)


def test_real_only_refusals(tmp_path: Path) -> None:
    cluster = Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1)
    try:
        for call in (lambda: cluster.simulated_world, cluster.heal_network,
                     lambda: cluster.partition_network(1, "controller-1")):
            with pytest.raises(ClusterError):
                call()
        with pytest.raises(InvalidArgument):
            cluster.advance_time(-5)
    finally:
        cluster.close()


def test_demo_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "metadata.db").write_bytes(b"a previous run")
    with pytest.raises(ClusterError, match="not empty"):
        run_demo(lambda line: None, 1, str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.db"]
    assert (tmp_path / "metadata.db").read_bytes() == b"a previous run"


# ---- the command line ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def places() -> Iterator[dict[str, str]]:
    root = Path(tempfile.mkdtemp(prefix="lw-cli-"))
    (root / "file").write_text("x")
    (root / "full").mkdir()
    (root / "full" / "metadata.db").write_text("x")
    yield {"file": str(root / "file"), "below_file": str(root / "file" / "d"),
           "full": str(root / "full")}
    shutil.rmtree(root)


#: Per CLI command: strategies of bad argument lists (the places fixture fills in paths).
CLI_BAD: dict[str, st.SearchStrategy[list[str]]] = {
    "demo": st.one_of(
        st.tuples(st.just("--seed"), st.text(alphabet="abc.-x ", min_size=1, max_size=5)
                  .filter(lambda s: s.strip("-") != "" and not s.strip().lstrip("-").isdigit()))
        .map(list),
        st.sampled_from(["file", "below_file", "full"]).map(lambda p: ["--real", "{" + p + "}"]),
        st.sampled_from([["--nope"], ["--seed"], ["--real"], ["extra"]]),
    ),
    "check": st.one_of(
        st.text(alphabet="xyzLog", min_size=1, max_size=8).map(lambda s: [s]),
        st.tuples(st.sampled_from(["ReplicaMove", "StrayCleanup"]), st.just("--cfg"),
                  st.sampled_from(["{file}", "{below_file}", "{full}"])).map(list),
        st.tuples(st.just("ReplicaMove"),
                  st.sampled_from(["--workers", "--max-states"]),
                  st.sampled_from(["0", "-1", "x", "1.5", ""])).map(list),
        st.sampled_from([[], ["--nope"], ["ReplicaMove", "--engine", "fast"],
                         ["StrayCleanup", "--engine", "packed"], ["ReplicaMove", "extra"]]),
    ),
    "native": st.one_of(
        st.text(alphabet="abuildx", min_size=1, max_size=6)
        .filter(lambda s: s not in ("build", "clean", "status")).map(lambda s: [s]),
        st.tuples(st.sampled_from(["build", "status"]), st.just("--jobs"),
                  st.sampled_from(["0", "-1", "x", "1.5", "", "65"])).map(list),
        st.sampled_from([["--nope"], ["status", "extra"], ["build", "--jobs"],
                         ["clean", "--nope"]]),
    ),
    "serve": st.one_of(
        st.sampled_from(["file", "below_file", "full"]).map(lambda p: ["--data-dir",
                                                                       "{" + p + "}"]),
        st.tuples(st.just("--data-dir"), st.sampled_from(["{below_file}", "{file}"]),
                  st.just("--listeners"),
                  st.sampled_from(["x", "1.2.3.4", "h:99999", "h:1,h:2", "h:1,h:2,h:3,h:4",
                                   "SASL_SSL://h:1,h:2,h:3", "a:1,b:2,c:3", "h:x,h:2,h:3"]))
        .map(list),
        st.tuples(st.just("--data-dir"), st.just("{full}"),
                  st.sampled_from(["--brokers", "--log-dirs-per-broker", "--max-request-bytes"]),
                  st.sampled_from(["0", "-1", "x", "", "1.5"])).map(list),
        st.sampled_from([[], ["--nope"], ["extra"], ["--data-dir"]]),
    ),
    "topics": st.one_of(
        st.sampled_from([["--list"], ["--bootstrap-server", "127.0.0.1:1"],
                         ["--bootstrap-server", "127.0.0.1:1", "--create"],
                         ["--bootstrap-server", "127.0.0.1:1", "--create", "--list"],
                         ["--bootstrap-server", "127.0.0.1:1", "--alter", "--topic", "t"],
                         ["--bootstrap-server", "127.0.0.1:1", "--list", "--command-config",
                          "{file}"],
                         ["--bootstrap-server", "127.0.0.1:1", "--list", "--command-config",
                          "{below_file}"]]),
        st.tuples(st.just("--bootstrap-server"), st.just("127.0.0.1:1"), st.just("--create"),
                  st.just("--topic"), st.just("t"),
                  st.sampled_from(["--partitions", "--replication-factor"]),
                  st.sampled_from(["0", "-1", "x", ""])).map(list),
    ),
    "configs": st.one_of(
        st.sampled_from([["--bootstrap-server", "127.0.0.1:1", "--entity-type", "topics",
                          "--entity-name", "t"],
                         ["--bootstrap-server", "127.0.0.1:1", "--entity-type", "brokers",
                          "--entity-name", "1", "--describe"],
                         ["--bootstrap-server", "127.0.0.1:1", "--entity-type", "topics",
                          "--entity-name", "t", "--alter"],
                         ["--bootstrap-server", "127.0.0.1:1", "--entity-type", "topics",
                          "--entity-name", "t", "--describe", "--add-config", "a=b"],
                         ["--entity-type", "topics", "--entity-name", "t", "--describe"]]),
        st.tuples(st.just("--bootstrap-server"), st.just("127.0.0.1:1"),
                  st.just("--entity-type"), st.just("topics"), st.just("--entity-name"),
                  st.just("t"), st.just("--alter"), st.just("--add-config"),
                  st.sampled_from(["=x", "novalue", ",="])).map(list),
    ),
    "verify": st.one_of(
        st.text(alphabet="xyz", min_size=1, max_size=6).map(lambda s: ["--suite", s]),
        st.sampled_from([["--nope"], ["--suite"], ["extra"]]),
    ),
    "traces": st.one_of(
        st.sampled_from(["file", "below_file", "full"]).map(lambda p: ["check", "{" + p + "}"]),
        st.sampled_from([["check"], ["check", "--nope", "{file}"], ["nope"]]),
    ),
    "fuzz": st.one_of(
        st.tuples(st.sampled_from(["--max-examples", "--steps"]),
                  st.sampled_from(["0", "-3", "x", "1.5", ""])).map(list),
        st.tuples(st.sampled_from(["--duration", "--seed"]),
                  st.sampled_from(["x", "-1x", ""])).map(list),
        st.just(["--out", "{file}"]),
        st.sampled_from([["--nope"], ["--seed"], ["extra"]]),
    ),
    "delete-records": st.one_of(
        st.tuples(st.sampled_from(["{file}", "{below_file}", "{full}"]),
                  st.just("--offset-json-file"),
                  st.sampled_from(["{file}", "{below_file}", "{full}"])).map(list),
        st.tuples(st.just("{full}"), st.just("--offset-json-file"), st.just("{file}"),
                  st.just("--timeout-ms"), st.sampled_from(["0", "-1", "x", "1.5", ""]))
        .map(list),
        st.sampled_from([["{full}"], ["--nope"], [], ["{full}", "--offset-json-file"]]),
    ),
    "log-dirs": st.one_of(
        st.sampled_from(["file", "below_file", "full"]).map(lambda p: ["describe",
                                                                       "{" + p + "}"]),
        st.tuples(st.just("describe"), st.just("--broker"),
                  st.sampled_from(["x", "1.5", ""]), st.just("{full}")).map(list),
        st.sampled_from([["describe"], ["describe", "--nope", "{file}"], ["nope"]]),
        st.sampled_from(["file", "below_file", "full"]).map(lambda p: ["--describe",
                                                                       "{" + p + "}"]),
        st.tuples(st.just("--describe"), st.just("{full}"),
                  st.sampled_from(["--broker-list", "--topic-list"]),
                  st.sampled_from(["x", "1,,2", "", "-1", ","])).map(list),
        st.sampled_from([["--describe"], ["--broker-list", "1"],
                         ["--topic-list", "t", "describe", "{full}"]]),
    ),
    "reassign-partitions": st.one_of(
        st.tuples(st.sampled_from(["{file}", "{below_file}", "{full}"]),
                  st.sampled_from(["--execute", "--verify"]),
                  st.just("--reassignment-json-file"),
                  st.sampled_from(["{file}", "{below_file}", "{full}"])).map(list),
        st.tuples(st.just("{full}"), st.just("--verify"), st.just("--reassignment-json-file"),
                  st.just("{file}"), st.just("--timeout-ms"),
                  st.sampled_from(["-1", "x", "1.5", ""])).map(list),
        st.sampled_from([["{full}"], ["--nope"], [], ["{full}", "--execute"],
                         ["{full}", "--reassignment-json-file", "{file}"]]),
    ),
}


def test_every_cli_command_has_bad_input_coverage() -> None:
    assert set(main.commands) == set(CLI_BAD)


def check_failure(code: int, stderr: str, stdout: str) -> None:
    assert code in (EXIT_FAILED, EXIT_USAGE), (code, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    lines = stderr.strip().splitlines()
    if code == EXIT_FAILED:
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    else:
        assert lines[-1].startswith("Error: "), stderr


@pytest.mark.parametrize("command", sorted(CLI_BAD))
@given(data=st.data())
def test_cli_bad_input(command: str, data: st.DataObject, places: dict[str, str]) -> None:
    args = [a.format(**places) for a in data.draw(CLI_BAD[command])]
    before = {p: sorted(os.listdir(p)) if os.path.isdir(p) else None for p in places.values()}
    result = CliRunner().invoke(main, [command, *args])
    check_failure(result.exit_code, result.stderr, result.stdout)
    assert {p: sorted(os.listdir(p)) if os.path.isdir(p) else None
            for p in places.values()} == before, "a refused command changed nothing"


def test_cli_real_process_one_line_and_debug(places: dict[str, str]) -> None:
    cmd = [sys.executable, "-m", "logwright.cli"]
    plain = subprocess.run([*cmd, "demo", "--real", places["file"]], capture_output=True,
                           text=True, timeout=120)
    check_failure(plain.returncode, plain.stderr, plain.stdout)
    assert plain.returncode == EXIT_FAILED
    debug = subprocess.run([*cmd, "--debug", "demo", "--real", places["full"]],
                           capture_output=True, text=True, timeout=120)
    assert debug.returncode == EXIT_FAILED
    assert "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1].startswith("error: ")
    usage = subprocess.run([*cmd, "demo", "--seed", "x"], capture_output=True, text=True,
                           timeout=120)
    check_failure(usage.returncode, usage.stderr, usage.stdout)
    assert usage.returncode == EXIT_USAGE


def test_unexpected_errors_are_one_line_exit_5() -> None:
    @click.group(cls=LogwrightGroup)
    @click.option("--debug", is_flag=True)
    def group(debug: bool) -> None:
        """A group like logwright's."""

    @group.command()
    def boom() -> None:
        raise RuntimeError("something nobody expected")

    result = CliRunner().invoke(group, ["boom"])
    assert result.exit_code == EXIT_INTERNAL
    assert result.stderr.strip().splitlines() == [
        "error: internal error (RuntimeError: something nobody expected); rerun with --debug "
        "for the traceback"]
    debug = CliRunner().invoke(group, ["--debug", "boom"])
    assert debug.exit_code == EXIT_INTERNAL and "Traceback" in debug.stderr


def test_help_documents_the_exit_codes() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    for code in range(7):
        assert re.search(rf"^\s+{code}  \S", out, re.M), code


def test_the_controllers_create_topic_refuses_wrong_types() -> None:
    """The controller is public too (``cluster.controller``): wrong types were raw TypeErrors."""
    cluster = small_cluster()
    before = snapshot(cluster)
    for partitions, rf, name in [("2", 1, "INVALID_PARTITIONS"), (True, 1, "INVALID_PARTITIONS"),
                                 (1, 1.0, "INVALID_REPLICATION_FACTOR"),
                                 (1, None, "INVALID_REPLICATION_FACTOR")]:
        with pytest.raises(KafkaError) as caught:
            cluster.controller.create_topic("n", partitions, rf)  # type: ignore[arg-type]
        assert caught.value.name == name
    assert snapshot(cluster) == before


@pytest.mark.parametrize("real", [False, True])
def test_calls_after_close_are_refused(real: bool, tmp_path: Path) -> None:
    """A real cluster's calls after close() used to fail with a raw sqlite3 error."""
    cluster = (Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1) if real
               else Cluster.simulated(brokers=1, log_dirs_per_broker=1))
    cluster.create_topic("t", replication_factor=1)
    cluster.close()
    for call in (lambda: cluster.partition_state("t", 0), lambda: cluster.produce("t", 0, [b"x"]),
                 lambda: cluster.fetch("t", 0, 0), lambda: cluster.list_offsets("t", 0, "latest"),
                 lambda: cluster.create_topic("u"), lambda: cluster.delete_topic("t"),
                 lambda: cluster.crash_broker(1), lambda: cluster.restart_broker(1),
                 cluster.fail_controller, lambda: cluster.advance_time(1),
                 cluster.run_until_idle, lambda: cluster.metrics(1),
                 lambda: cluster.reassign("{}")):
        with pytest.raises(ClusterError, match="closed"):
            call()
    cluster.close()  # twice is fine
    if real:
        again = Cluster.real(str(tmp_path), brokers=1, log_dirs_per_broker=1)
        assert again.partition_state("t", 0).leader == 1
        again.close()
