"""Security on the wire (docs/wire.md "Security"): SASL/PLAIN, SASL/SCRAM-SHA-256 and TLS
from real clients, principals feeding the cluster's ACLs, and the ACL APIs.

One cluster serves four listeners at once (PLAINTEXT, SASL_PLAINTEXT, SSL with client
certificates, SASL_SSL), with certificates made for the test by trustme. kafka-python and
confluent-kafka connect with their own SASL and TLS code.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.cluster import Cluster
from logwright.wire import WireServer, serving
from logwright.wire.security import Protocol, SecurityConfig, Users, server_ssl_context
from logwright.wire.server import ListenerConfig

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")
trustme = pytest.importorskip("trustme")

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka import TopicPartition as CTopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

USERS = {"alice": "alice-secret", "bob": "bob-secret", "admin": "admin-secret"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[Cluster, WireServer, dict[str, str]]]:
    path = tmp_path_factory.mktemp("wire-security")
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    client_cert = ca.issue_cert("client.example", common_name="carol")
    files = {"ca": str(path / "ca.pem"), "server": str(path / "server.pem"),
             "client": str(path / "client.pem")}
    ca.cert_pem.write_to_path(files["ca"])
    server_cert.private_key_and_cert_chain_pem.write_to_path(files["server"])
    client_cert.private_key_and_cert_chain_pem.write_to_path(files["client"])
    context = server_ssl_context(files["server"], cafile=files["ca"])
    context.verify_mode = __import__("ssl").CERT_OPTIONAL  # SSL: a certificate if given
    security = SecurityConfig(Users(USERS), context, ("User:admin",))
    listeners = [ListenerConfig(p) for p in Protocol]
    with (Cluster.real(str(path / "data"), brokers=3, log_dirs_per_broker=1) as cluster,
          serving(cluster, listeners=listeners, security=security) as server):
        yield cluster, server, files


def _confluent(server: WireServer, protocol: Protocol, files: dict[str, str],
               user: str | None = None, mechanism: str = "PLAIN",
               client_cert: bool = False) -> dict[str, object]:
    conf: dict[str, object] = {"bootstrap.servers": server.bootstrap_for(protocol),
                               "security.protocol": protocol.value}
    if protocol.sasl:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                     "sasl.password": USERS.get(user or "", "wrong")})
    if protocol.tls:
        conf["ssl.ca.location"] = files["ca"]
        if client_cert:
            conf.update({"ssl.certificate.location": files["client"],
                         "ssl.key.location": files["client"]})
    return conf


def _round_trip(conf: dict[str, object], topic: str) -> list[bytes]:
    producer = Producer({**conf, "acks": "all", "message.timeout.ms": 20_000})
    errors: list[object] = []
    for i in range(5):
        producer.produce(topic, value=b"%d" % i, partition=0,
                         on_delivery=lambda err, _m: err and errors.append(err))
    producer.flush(20)
    assert errors == []
    consumer = Consumer({**conf, "group.id": "sec", "enable.auto.commit": False})
    consumer.assign([CTopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 5 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


@pytest.mark.parametrize("protocol,mechanism,client_cert", [
    (Protocol.SASL_PLAINTEXT, "PLAIN", False),
    (Protocol.SASL_PLAINTEXT, "SCRAM-SHA-256", False),
    (Protocol.SSL, None, True),
    (Protocol.SASL_SSL, "SCRAM-SHA-256", False),
])
def test_confluent_authenticates_and_round_trips(
        secured: tuple[Cluster, WireServer, dict[str, str]], protocol: Protocol,
        mechanism: str | None, client_cert: bool) -> None:
    _, server, files = secured
    topic = f"sec-{protocol.value}-{mechanism}".lower()
    conf = _confluent(server, protocol, files, "admin", mechanism or "PLAIN", client_cert)
    admin = AdminClient(conf)
    for future in admin.create_topics([NewTopic(topic, 1, 3)]).values():
        future.result(timeout=20)
    assert _round_trip(conf, topic) == [b"%d" % i for i in range(5)]


def test_kafka_python_sasl_plain_and_scram_over_tls(
        secured: tuple[Cluster, WireServer, dict[str, str]]) -> None:
    _, server, files = secured
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        admin = KafkaAdminClient(
            bootstrap_servers=server.bootstrap_for(Protocol.SASL_SSL),
            security_protocol="SASL_SSL", ssl_cafile=files["ca"], sasl_mechanism=mechanism,
            sasl_plain_username="admin", sasl_plain_password=USERS["admin"],
            request_timeout_ms=20_000)
        try:
            assert {b["broker_id"] for b in admin.describe_cluster()["brokers"]} == {1, 2, 3}
        finally:
            admin.close()


def test_a_wrong_password_fails_authentication(
        secured: tuple[Cluster, WireServer, dict[str, str]]) -> None:
    _, server, files = secured
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        errors: list[confluent_kafka.KafkaError] = []
        conf = _confluent(server, Protocol.SASL_PLAINTEXT, files, "alice", mechanism)
        producer = Producer({**conf, "sasl.password": "guess", "log_level": 0,
                             "error_cb": errors.append})
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        assert errors and errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
        assert "Authentication failed" in errors[0].str()
    failures = [why for why in server.refused if "authentication failed" in why]
    assert failures and not any("guess" in why or "secret" in why for why in server.refused)


def test_requests_before_sasl_authentication_close_the_connection(
        secured: tuple[Cluster, WireServer, dict[str, str]]) -> None:
    _, server, _ = secured
    listener = next(x for x in server.listeners if x.protocol is Protocol.SASL_PLAINTEXT)
    with socket.create_connection((listener.host, listener.port), timeout=10) as sock:
        header = struct.pack(">hhih", 3, 1, 1, 1) + b"x"
        body = struct.pack(">i", -1)  # Metadata v1: every topic
        sock.sendall(struct.pack(">i", len(header + body)) + header + body)
        assert sock.recv(1) == b""
    assert any("before SASL authentication" in why for why in server.refused)


def test_acls_from_the_wire_are_enforced_for_principals_and_survive(
        secured: tuple[Cluster, WireServer, dict[str, str]]) -> None:
    cluster, server, files = secured
    admin_conf = _confluent(server, Protocol.SASL_PLAINTEXT, files, "admin")
    admin = AdminClient(admin_conf)
    for future in admin.create_topics([NewTopic("guarded", 1, 3)]).values():
        future.result(timeout=20)
    alice_writes = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL,
                              "User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for future in admin.create_acls([alice_writes]).values():
        future.result(timeout=20)
    try:
        described = admin.describe_acls(AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)).result(timeout=20)
        assert [(b.name, b.principal, b.operation) for b in described] == [
            ("guarded", "User:alice", AclOperation.WRITE)]
        # alice may write; bob (authenticated, no ACL) is told TOPIC_AUTHORIZATION_FAILED.
        for user, allowed in (("alice", True), ("bob", False)):
            producer = Producer({**_confluent(server, Protocol.SASL_PLAINTEXT, files, user),
                                 "acks": "all", "message.timeout.ms": 10_000})
            outcome: list[object] = []
            producer.produce("guarded", value=b"x", partition=0,
                             on_delivery=lambda err, _m, out=outcome: out.append(err))
            producer.flush(15)
            assert len(outcome) == 1
            if allowed:
                assert outcome[0] is None
            else:
                assert outcome[0] is not None
                assert outcome[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        # bob may not manage ACLs: CLUSTER_AUTHORIZATION_FAILED.
        bob = AdminClient(_confluent(server, Protocol.SASL_PLAINTEXT, files, "bob"))
        with pytest.raises(confluent_kafka.KafkaException):
            for future in bob.create_acls([alice_writes]).values():
                future.result(timeout=20)
        # kafka-python sees the same denial with its own error class.
        producer = KafkaProducer(
            bootstrap_servers=server.bootstrap_for(Protocol.SASL_PLAINTEXT),
            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
            sasl_plain_username="bob", sasl_plain_password=USERS["bob"],
            enable_idempotence=False, acks="all", retries=0, max_block_ms=10_000)
        with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
            producer.send("guarded", b"no", partition=0).get(timeout=15)
        producer.close()
        assert (Path(cluster.root) / "acls.json").exists()
    finally:
        deleted = admin.delete_acls([AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
            AclPermissionType.ANY)])
        for future in deleted.values():
            future.result(timeout=20)
    assert cluster.authorizer.acls == ()


@pytest.mark.parametrize("protocol,mechanism", [
    (Protocol.SASL_PLAINTEXT, "PLAIN"),
    (Protocol.SASL_SSL, "PLAIN"),
    (Protocol.SSL, None),
    # Debian's kcat 1.7.1 bundles librdkafka 2.0.2, whose SCRAM client-final message repeats
    # its own nonce before the server's ("r=<client><client><server>"), which RFC 5802 (and
    # so scramp) refuses; confluent-kafka's librdkafka 2.16 and kafka-python authenticate with
    # SCRAM above. Kept as a strict xfail so that a fixed kcat shows up.
    pytest.param(Protocol.SASL_PLAINTEXT, "SCRAM-SHA-256",
                 marks=pytest.mark.xfail(strict=True, reason="kcat 1.7.1's SCRAM nonce")),
])
def test_kcat_over_sasl_and_tls(secured: tuple[Cluster, WireServer, dict[str, str]],
                                protocol: Protocol, mechanism: str | None) -> None:
    """kcat (its own librdkafka, its own process) produces and consumes on secured listeners.
    Skipped where kcat is not installed (Debian: apt-get install kcat)."""
    import shutil
    import subprocess

    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed: apt-get install kcat")
    _, server, files = secured
    topic = f"kcat-{protocol.value}".lower()
    admin = AdminClient(_confluent(server, Protocol.SASL_PLAINTEXT, files, "admin"))
    for future in admin.create_topics([NewTopic(topic, 1, 3)]).values():
        future.result(timeout=20)
    options = ["-b", server.bootstrap_for(protocol), "-X",
               f"security.protocol={protocol.value}"]
    if mechanism is not None:
        options += ["-X", f"sasl.mechanism={mechanism}", "-X", "sasl.username=admin",
                    "-X", f"sasl.password={USERS['admin']}"]
    if protocol.tls:
        options += ["-X", f"ssl.ca.location={files['ca']}"]
        if protocol is Protocol.SSL:
            options += ["-X", f"ssl.certificate.location={files['client']}",
                        "-X", f"ssl.key.location={files['client']}"]

    def run(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run([kcat, *options, *args], input=stdin, capture_output=True,
                              text=True, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    run("-P", "-t", topic, "-p", "0", "-X", "acks=all", stdin="one\ntwo\nthree\n")
    assert run("-C", "-t", topic, "-p", "0", "-o", "beginning", "-e").split() == [
        "one", "two", "three"]
