"""The operator tools over the protocol (docs/cli.md): ``--bootstrap-server`` and
``--command-config`` on ``topics``, ``configs``, ``log-dirs``, ``delete-records`` and
``reassign-partitions``, against a served cluster, with Kafka's output formats."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from logwright.cli import EXIT_FAILED, EXIT_USAGE, main
from logwright.cluster import Cluster
from logwright.wire import WireServer, serving
from logwright.wire.security import Protocol, SecurityConfig, Users, server_ssl_context
from logwright.wire.server import ListenerConfig

pytest.importorskip("kafka")
trustme = pytest.importorskip("trustme")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Cluster, WireServer, Path]]:
    path = tmp_path_factory.mktemp("wire-tools")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(path / "ca.pem"))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(
        str(path / "server.pem"))
    (path / "client.properties").write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="ops" password="ops-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={path / 'ca.pem'}\n")
    security = SecurityConfig(Users({"ops": "ops-secret"}),
                              server_ssl_context(str(path / "server.pem")))
    listeners = [ListenerConfig(Protocol.PLAINTEXT), ListenerConfig(Protocol.SASL_SSL)]
    with (Cluster.real(str(path / "data"), brokers=3, log_dirs_per_broker=2) as cluster,
          serving(cluster, listeners=listeners, security=security) as server):
        yield cluster, server, path


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_topics_create_list_describe_alter_delete(
        served: tuple[Cluster, WireServer, Path]) -> None:
    _, server, _ = served
    bs = ["--bootstrap-server", server.bootstrap_servers]
    result = run("topics", *bs, "--create", "--topic", "ops", "--partitions", "2",
                 "--replication-factor", "2", "--config", "retention.ms=100000")
    assert result.exit_code == 0 and result.stdout == "Created topic ops.\n"
    again = run("topics", *bs, "--create", "--topic", "ops")
    assert again.exit_code == EXIT_FAILED
    assert again.stderr == "error: TOPIC_ALREADY_EXISTS (36): topic 'ops' already exists\n"
    assert "ops" in run("topics", *bs, "--list").stdout.splitlines()
    assert run("topics", *bs, "--alter", "--topic", "ops", "--partitions", "3").exit_code == 0
    lines = run("topics", *bs, "--describe", "--topic", "ops").stdout.splitlines()
    head = lines[0].split("\t")
    assert head[0] == "Topic: ops" and head[2:] == [
        "PartitionCount: 3", "ReplicationFactor: 2", "Configs: retention.ms=100000"]
    assert [line.split("\t")[2] for line in lines[1:]] == [
        "Partition: 0", "Partition: 1", "Partition: 2"]
    assert run("topics", *bs, "--delete", "--topic", "ops").exit_code == 0
    gone = run("topics", *bs, "--describe", "--topic", "ops")
    assert gone.exit_code == EXIT_FAILED and "UNKNOWN_TOPIC_OR_PARTITION" in gone.stderr


def test_configs_alter_and_describe(served: tuple[Cluster, WireServer, Path]) -> None:
    _, server, _ = served
    bs = ["--bootstrap-server", server.bootstrap_servers]
    assert run("topics", *bs, "--create", "--topic", "cfg").exit_code == 0
    target = ["--entity-type", "topics", "--entity-name", "cfg"]
    done = run("configs", *bs, *target, "--alter", "--add-config",
               "retention.bytes=1000000,segment.ms=3600000")
    assert done.stdout == "Completed updating config for topic cfg.\n"
    assert run("configs", *bs, *target, "--alter", "--delete-config",
               "segment.ms").exit_code == 0
    described = run("configs", *bs, *target, "--describe")
    assert described.stdout == (
        "Dynamic configs for topic cfg are:\n"
        "  retention.bytes=1000000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=1000000}\n")
    bad = run("configs", *bs, *target, "--alter", "--add-config", "retention.ms=soon")
    assert bad.exit_code == EXIT_FAILED and "retention.ms" in bad.stderr


def test_delete_records_log_dirs_and_reassignment_with_a_dir(
        served: tuple[Cluster, WireServer, Path]) -> None:
    cluster, server, path = served
    bs = ["--bootstrap-server", server.bootstrap_servers]
    assert run("topics", *bs, "--create", "--topic", "moves", "--replication-factor",
               "2").exit_code == 0
    server.run_in_loop(lambda: cluster.produce("moves", 0, [b"a", b"b", b"c"])).result(30)
    offsets = path / "offsets.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moves", "partition": 0, "offset": 2}]}))
    deleted = run("delete-records", *bs, "--offset-json-file", str(offsets))
    assert deleted.stdout == "partition: moves-0\tlow_watermark: 2\n"
    described = run("log-dirs", "--describe", *bs, "--topic-list", "moves")
    doc = json.loads(described.stdout)
    hosted = [(b["broker"], d["logDir"]) for b in doc["brokers"] for d in b["logDirs"]
              if d["partitions"]]
    assert len(hosted) == 2 and described.stderr.startswith("Querying brokers")
    # Reassign to all three brokers, broker 1's replica into its second dir.
    target_dir = str(path / "data" / "broker-1" / "d2")
    plan = path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moves", "partition": 0, "replicas": [1, 2, 3],
         "log_dirs": [target_dir, "any", "any"]}]}))
    executed = run("reassign-partitions", *bs, "--execute", "--reassignment-json-file",
                   str(plan))
    assert executed.exit_code == 0, executed.output
    assert "Successfully started partition reassignment for moves-0" in executed.stdout
    assert "Successfully started log directory move for: moves-0-1" in executed.stdout
    verified = run("reassign-partitions", *bs, "--verify", "--reassignment-json-file",
                   str(plan))
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition moves-0 is completed.",
        "Reassignment of replica moves-0-1 completed successfully."]


def test_command_config_with_sasl_scram_over_tls(
        served: tuple[Cluster, WireServer, Path]) -> None:
    _, server, path = served
    secured = ["--bootstrap-server", server.bootstrap_for(Protocol.SASL_SSL),
               "--command-config", str(path / "client.properties")]
    assert run("topics", *secured, "--create", "--topic", "sec").exit_code == 0
    assert "sec" in run("topics", *secured, "--list").stdout.splitlines()
    wrong = path / "wrong.properties"
    wrong.write_text((path / "client.properties").read_text().replace("ops-secret", "nope")
                     + "request.timeout.ms=3000\n")
    failed = run("topics", "--bootstrap-server", server.bootstrap_for(Protocol.SASL_SSL),
                 "--command-config", str(wrong), "--list")
    assert failed.exit_code == EXIT_FAILED and "nope" not in failed.output
    unknown = path / "unknown.properties"
    unknown.write_text("security.protocol=SSL\nssl.truststore.type=JKS\n"
                       "ssl.truststore.location=/x.jks\n")
    refused = run("topics", *secured[:2], "--command-config", str(unknown), "--list")
    assert refused.exit_code == EXIT_FAILED and "only PEM" in refused.stderr


def test_a_tool_takes_data_path_or_bootstrap_server_not_both(tmp_path: Path) -> None:
    offsets = tmp_path / "o.json"
    offsets.write_text('{"version": 1, "partitions": []}')
    for args in (["delete-records", str(tmp_path), "--bootstrap-server", "h:1",
                  "--offset-json-file", str(offsets)],
                 ["delete-records", "--offset-json-file", str(offsets)],
                 ["delete-records", str(tmp_path), "--command-config", str(offsets),
                  "--offset-json-file", str(offsets)]):
        assert run(*args).exit_code == EXIT_USAGE
