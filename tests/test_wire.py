"""Kafka's wire protocol (docs/wire.md): real Kafka clients drive ``logwright serve``.

kafka-python and confluent-kafka (librdkafka) talk to a real 3-broker cluster served on
loopback ports, through their own code: produce and consume at every acks level, with and
without compression; the admin calls that exist in each client; DeleteRecords and the low
watermark a consumer then sees; a leader crash in the middle of a produce stream. The bad-input
tests send what a broken or hostile client would, and check that only its own connection is
closed while others are served.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logwright.cluster import Cluster
from logwright.wire import WireServer, serving
from logwright.wire.codec import SUPPORTED, WireError, decode_request

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer  # noqa: E402
from confluent_kafka import TopicPartition as CTopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from confluent_kafka.admin import ConfigResource as CConfigResource  # noqa: E402
from confluent_kafka.admin import NewPartitions as CNewPartitions  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka import TopicPartition as KTopicPartition  # noqa: E402
from kafka.admin import (  # noqa: E402
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
)
from kafka.admin import NewTopic as KNewTopic  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, WireServer]]:
    path = tmp_path_factory.mktemp("wire")
    # A short broker session, so that the leader-crash test's failover takes seconds.
    with (Cluster.real(str(path / "data"), brokers=3, log_dirs_per_broker=2,
                       broker_properties={"broker.session.timeout.ms": 3_000,
                                          "broker.heartbeat.interval.ms": 500}) as cluster,
          serving(cluster) as server):
        yield cluster, server


def _bootstrap(server: WireServer) -> str:
    return server.bootstrap_servers


def _create(server: WireServer, name: str, partitions: int = 1, rf: int = 3) -> None:
    admin = KafkaAdminClient(bootstrap_servers=_bootstrap(server), request_timeout_ms=20_000)
    try:
        admin.create_topics([KNewTopic(name, partitions, rf)])
    finally:
        admin.close()


def _consume_all(server: WireServer, topic: str, partition: int, expect: int,
                 offset: int | None = None) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=_bootstrap(server), group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             consumer_timeout_ms=2_000)
    try:
        tp = KTopicPartition(topic, partition)
        consumer.assign([tp])
        if offset is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, offset)
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 20
        while len(out) < expect and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.value) for r in records)
        return out
    finally:
        consumer.close()


# ---- kafka-python ----------------------------------------------------------------------------


@pytest.mark.parametrize("acks,compression", [(0, None), (1, None), ("all", None),
                                              ("all", "gzip")])
def test_kafka_python_produce_and_consume(served: tuple[Cluster, WireServer], acks: object,
                                         compression: str | None) -> None:
    _, server = served
    topic = f"kp-{acks}-{compression}"
    _create(server, topic)
    producer = KafkaProducer(bootstrap_servers=_bootstrap(server), acks=acks,
                             enable_idempotence=False, compression_type=compression,
                             linger_ms=2)
    values = [f"value-{i}".encode() * (1 + i % 7) for i in range(60)]
    futures = [producer.send(topic, value=v, key=str(i).encode(), partition=0)
               for i, v in enumerate(values)]
    producer.flush(timeout=20)
    offsets = [f.get(timeout=20).offset for f in futures]
    producer.close()
    if acks != 0:
        assert offsets == list(range(60))  # acknowledged in order, each once
    got = _consume_all(server, topic, 0, len(values))
    assert [v for _, v in got] == values
    assert [o for o, _ in got] == list(range(60))


def test_kafka_python_admin_delete_records_and_log_dirs(
        served: tuple[Cluster, WireServer]) -> None:
    _, server = served
    bootstrap = _bootstrap(server)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    try:
        admin.create_topics([KNewTopic("kp-admin", 2, 3)])
        with pytest.raises(kafka.errors.TopicAlreadyExistsError):
            admin.create_topics([KNewTopic("kp-admin", 2, 3)])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                                 enable_idempotence=False)
        for i in range(10):
            producer.send("kp-admin", value=b"r%d" % i, partition=0)
        producer.flush(timeout=20)
        producer.close()
        tp = KTopicPartition("kp-admin", 0)
        result = admin.delete_records({tp: 4})
        assert result[tp]["low_watermark"] == 4
        assert result[tp]["error_code"] == 0
        # The new log start offset is what ListOffsets(earliest) and a consumer see.
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
        assert consumer.beginning_offsets([tp]) == {tp: 4}
        assert consumer.end_offsets([tp]) == {tp: 10}
        consumer.close()
        # A consumer asking below the start offset is reset (OFFSET_OUT_OF_RANGE, then
        # auto_offset_reset=earliest), never served the deleted records.
        got = _consume_all(server, "kp-admin", 0, 6, offset=1)
        assert [o for o, _ in got] == list(range(4, 10))
        dirs = admin.describe_log_dirs()
        hosted = {(d["log_dir"], t["name"], p["partition_index"])
                  for broker in dirs for d in broker["log_dirs"] for t in d["topics"]
                  for p in t["partitions"] if t["name"] == "kp-admin"}
        assert len(hosted) == 6  # 2 partitions x 3 replicas, each in one dir
        admin.delete_topics(["kp-admin"])
    finally:
        admin.close()


def _eventually(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _replicas_in_dirs(admin: KafkaAdminClient, topic: str, broker: int) -> dict[int, str]:
    out = {}
    for entry in admin.describe_log_dirs():
        if entry["broker"] != broker:
            continue
        for d in entry["log_dirs"]:
            for t in d["topics"]:
                if t["name"] == topic:
                    for p in t["partitions"]:
                        if not p["is_future_key"]:
                            out[p["partition_index"]] = d["log_dir"]
    return out


def test_kafka_python_admin_configs_partitions_reassignments_and_dir_moves(
        served: tuple[Cluster, WireServer]) -> None:
    _, server = served
    admin = KafkaAdminClient(bootstrap_servers=_bootstrap(server), request_timeout_ms=20_000)
    try:
        admin.create_topics([KNewTopic("kp-ops", 1, 2)])
        # Configs: set one override, see it described as the topic's; a bad value is refused.
        resource = ConfigResource(ConfigResourceType.TOPIC, "kp-ops",
                                  configs={"retention.ms": "123456"})
        admin.alter_configs([resource])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-ops")])
        entry = described["topic"]["kp-ops"]["retention.ms"]
        assert entry["value"] == "123456" and entry["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        bad = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-ops",
                                                  configs={"retention.ms": "soon"})])
        assert bad["topic"]["kp-ops"] != "OK"
        # More partitions: the new one is served at once; fewer is refused.
        admin.create_partitions({"kp-ops": NewPartitions(3)})
        topic = admin.describe_topics(["kp-ops"])[0]
        assert sorted(p["partition_index"] for p in topic["partitions"]) == [0, 1, 2]
        with pytest.raises(kafka.errors.InvalidPartitionsError):
            admin.create_partitions({"kp-ops": NewPartitions(2)})
        # A reassignment to three replicas is listed while it runs and completes.
        tp = KTopicPartition("kp-ops", 0)
        assert admin.alter_partition_reassignments({tp: [1, 2, 3]}) == {tp: None}
        _eventually(lambda: admin.list_partition_reassignments() == {}, "the reassignment")
        topic = admin.describe_topics(["kp-ops"])[0]
        assert sorted(topic["partitions"][0]["replica_nodes"]) == [1, 2, 3]
        # AlterReplicaLogDirs: broker 1's replica of partition 0 moves to its other dir.
        before = _replicas_in_dirs(admin, "kp-ops", 1)[0]
        other = next(d["log_dir"] for e in admin.describe_log_dirs() if e["broker"] == 1
                     for d in e["log_dirs"] if d["log_dir"] != before)
        errors = admin.alter_replica_log_dirs({("kp-ops", 0, 1): other})
        assert all(e is kafka.errors.NoError for e in errors.values())
        _eventually(lambda: _replicas_in_dirs(admin, "kp-ops", 1).get(0) == other,
                    "the move between log dirs")
    finally:
        admin.close()


# ---- confluent-kafka (librdkafka) ------------------------------------------------------------


@pytest.mark.parametrize("acks,compression", [("0", "none"), ("1", "none"), ("all", "gzip"),
                                              ("all", "snappy"), ("all", "lz4"),
                                              ("all", "zstd")])
def test_confluent_produce_and_consume(served: tuple[Cluster, WireServer], acks: str,
                                       compression: str) -> None:
    _, server = served
    topic = f"ck-{acks}-{compression}"
    admin = AdminClient({"bootstrap.servers": _bootstrap(server)})
    for future in admin.create_topics([NewTopic(topic, 2, 3)]).values():
        future.result(timeout=20)
    producer = Producer({"bootstrap.servers": _bootstrap(server), "acks": acks,
                         "compression.type": compression, "linger.ms": 5})
    delivered: list[tuple[int, int]] = []
    errors: list[object] = []

    def report(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    for i in range(100):
        producer.produce(topic, value=b"m%d" % i, partition=i % 2, on_delivery=report)
    assert producer.flush(20) == 0
    assert errors == []
    if acks != "0":  # with acks=0 the client never learns an offset
        assert sorted(delivered) == sorted((p, o) for p in (0, 1) for o in range(50))
    consumer = Consumer({"bootstrap.servers": _bootstrap(server), "group.id": "wire-test",
                         "enable.auto.commit": False})
    consumer.assign([CTopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
    seen: dict[int, list[bytes]] = {0: [], 1: []}
    deadline = time.monotonic() + 20
    while sum(map(len, seen.values())) < 100 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen[msg.partition()].append(msg.value())
    assert consumer.get_watermark_offsets(CTopicPartition(topic, 0), timeout=10) == (0, 50)
    consumer.close()
    assert seen[0] == [b"m%d" % i for i in range(0, 100, 2)]
    assert seen[1] == [b"m%d" % i for i in range(1, 100, 2)]


def test_confluent_admin_calls(served: tuple[Cluster, WireServer]) -> None:
    _, server = served
    admin = AdminClient({"bootstrap.servers": _bootstrap(server)})
    for future in admin.create_topics([NewTopic("ck-admin", 1, 3)]).values():
        future.result(timeout=20)
    producer = Producer({"bootstrap.servers": _bootstrap(server), "acks": "all"})
    for i in range(8):
        producer.produce("ck-admin", value=b"%d" % i, partition=0)
    assert producer.flush(20) == 0
    tp = CTopicPartition("ck-admin", 0, 5)
    (deleted,) = admin.delete_records([tp]).values()
    assert deleted.result(timeout=20).low_watermark == 5
    offsets = admin.list_offsets({CTopicPartition("ck-admin", 0): OffsetSpec.earliest()})
    assert next(iter(offsets.values())).result(timeout=20).offset == 5
    resource = CConfigResource(ResourceType.TOPIC, "ck-admin", incremental_configs=[
        ConfigEntry("retention.bytes", "1048576",
                    incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=20)
    (described,) = admin.describe_configs(
        [CConfigResource(ResourceType.TOPIC, "ck-admin")]).values()
    assert described.result(timeout=20)["retention.bytes"].value == "1048576"
    for future in admin.create_partitions([CNewPartitions("ck-admin", 2)]).values():
        future.result(timeout=20)
    metadata = admin.list_topics("ck-admin", timeout=10)
    assert sorted(metadata.topics["ck-admin"].partitions) == [0, 1]
    cluster_info = admin.describe_cluster().result(timeout=20)
    assert sorted(n.id for n in cluster_info.nodes) == [1, 2, 3]
    for future in admin.delete_topics(["ck-admin"]).values():
        future.result(timeout=20)
    assert "ck-admin" not in admin.list_topics(timeout=10).topics


def test_leader_crash_mid_stream_loses_no_acknowledged_record(
        served: tuple[Cluster, WireServer]) -> None:
    """The client's own retries carry the stream across a leader's crash: every record it was
    told is written is in the log afterwards, at the offset it was told, exactly once."""
    cluster, server = served
    _create(server, "crash")
    leader = server.run_in_loop(
        lambda: cluster.partition_state("crash", 0).leader).result(timeout=10)
    producer = Producer({"bootstrap.servers": _bootstrap(server), "acks": "all",
                         "enable.idempotence": False, "retries": 1_000,
                         "retry.backoff.ms": 50, "message.timeout.ms": 60_000,
                         "max.in.flight.requests.per.connection": 1})
    acked: dict[bytes, int] = {}

    def report(err: object, msg: object) -> None:
        if err is None:
            acked[msg.value()] = msg.offset()  # type: ignore[attr-defined]

    for i in range(200):
        producer.produce("crash", value=b"c%d" % i, partition=0, on_delivery=report)
        producer.poll(0)
        if i == 80:
            producer.flush(20)
            server.run_in_loop(lambda: cluster.crash_broker(leader)).result(timeout=10)
    assert producer.flush(60) == 0
    new_leader = server.run_in_loop(
        lambda: cluster.partition_state("crash", 0).leader).result(timeout=10)
    assert new_leader not in (leader, -1), "the crash moved leadership"
    try:
        assert len(acked) == 200
        got = _consume_all(server, "crash", 0, 200)
        offsets_of = {}
        for offset, value in got:
            offsets_of.setdefault(value, []).append(offset)
        for value, offset in acked.items():
            assert offset in offsets_of.get(value, []), (value, offset)
    finally:
        server.run_in_loop(lambda: cluster.restart_broker(leader)).result(timeout=60)


# ---- the protocol itself ---------------------------------------------------------------------


def _frame(api_key: int, version: int, correlation_id: int, body: bytes = b"",
           client_id: bytes = b"t") -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if version >= 3 and api_key == 18:
        header += b"\0"  # flexible request header: empty tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def _connect(server: WireServer) -> socket.socket:
    listener = server.listeners[0]
    sock = socket.create_connection((listener.host, listener.port), timeout=10)
    return sock


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _api_versions_works(server: WireServer) -> None:
    with _connect(server) as sock:
        sock.sendall(_frame(18, 3, 99, b"\x02t\x021\x00"))
        answer = _read_frame(sock)
        assert struct.unpack(">ih", answer[:6]) == (99, 0)


def test_api_versions_lists_what_is_served_and_answers_an_unknown_version_at_v0(
        served: tuple[Cluster, WireServer]) -> None:
    _, server = served
    with _connect(server) as sock:
        sock.sendall(_frame(18, 0, 7))
        answer = _read_frame(sock)
        correlation_id, error, count = struct.unpack(">ihi", answer[:10])
        assert (correlation_id, error, count) == (7, 0, len(SUPPORTED))
        listed = {struct.unpack(">hhh", answer[10 + 6 * i:16 + 6 * i])[0]: struct.unpack(
            ">hhh", answer[10 + 6 * i:16 + 6 * i])[1:] for i in range(count)}
        assert listed == dict(SUPPORTED)
        # Too new a version: the v0 answer, UNSUPPORTED_VERSION, and the connection stays.
        sock.sendall(_frame(18, 99, 8, b"garbage"))
        answer = _read_frame(sock)
        assert struct.unpack(">ih", answer[:6]) == (8, 35)
        sock.sendall(_frame(18, 0, 9))
        assert struct.unpack(">ih", _read_frame(sock)[:6]) == (9, 0)


@pytest.mark.parametrize("raw", [
    struct.pack(">i", 200_000_000),                 # beyond socket.request.max.bytes
    struct.pack(">i", -5),                          # a negative size
    _frame(9999, 0, 1),                             # an unknown API key
    _frame(0, 99, 1),                               # Produce at a version not served
    _frame(3, 1, 1, b"\xff\xff\xff\x05abc"),        # Metadata with a malformed body
    struct.pack(">i", 3) + b"abc",                  # a header cut short
], ids=["too-large", "negative", "unknown-key", "unknown-version", "malformed", "short"])
def test_bad_frames_close_only_their_connection(served: tuple[Cluster, WireServer],
                                                raw: bytes) -> None:
    _, server = served
    with _connect(server) as bystander, _connect(server) as bad:
        host, port = bad.getsockname()[:2]
        peer = f"{host}:{port}"
        bad.sendall(raw)
        assert _closed_by_peer(bad)
        bystander.sendall(_frame(18, 0, 5))
        assert struct.unpack(">ih", _read_frame(bystander)[:6]) == (5, 0)
    # The server says why it closed this very connection.
    assert any(why.startswith(f"{peer}: ") for why in server.refused)


def test_idle_connections_are_closed_and_floods_refused(tmp_path: Path) -> None:
    with Cluster.real(str(tmp_path / "data"), brokers=1, log_dirs_per_broker=1) as cluster:
        with serving(cluster, idle_ms=300) as server:
            idle = _connect(server)
            half_open = _connect(server)  # half a frame, then silence
            half_open.sendall(struct.pack(">i", 1_000) + b"\0\x12")
            time.sleep(1.0)
            assert _closed_by_peer(idle) and _closed_by_peer(half_open)
            idle.close()
            half_open.close()
            assert any("connections.max.idle.ms" in why for why in server.refused)
        with serving(cluster, max_connections_per_ip=3) as server:
            held = [_connect(server) for _ in range(3)]
            for sock in held:  # each is served, so each was accepted
                sock.sendall(_frame(18, 0, 1))
                _read_frame(sock)
            extra = _connect(server)
            assert _closed_by_peer(extra)
            extra.close()
            assert any("max.connections.per.ip" in why for why in server.refused)
            for sock in held:
                sock.close()
            deadline = time.monotonic() + 10
            while server.connections and time.monotonic() < deadline:
                time.sleep(0.01)  # the server notices the closes at its next turn
            _api_versions_works(server)  # a closed connection frees its place


def test_bytes_after_a_body_are_ignored_as_kafka_ignores_them() -> None:
    """Regression: librdkafka's every-topic Metadata v12 carries three bytes after the body;
    refusing them closed its connection after each metadata refresh."""
    frame = bytes.fromhex("0003000c00000005000772646b61666b610000000000010000")
    decoded = decode_request(frame)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (3, 12, 5)
    assert decoded.client_id == "rdkafka" and decoded.body.topics is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(SUPPORTED)), st.integers(-1, 20), st.binary(max_size=200))
def test_decoder_never_fails_but_with_a_wire_error(api_key: int, version: int,
                                                  body: bytes) -> None:
    frame = struct.pack(">hhih", api_key, version, 1, 1) + b"x" + body
    try:
        decoded = decode_request(frame)
    except WireError:
        return
    assert decoded.api_key == api_key and decoded.api_version == version


@settings(max_examples=40, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(min_size=0, max_size=64), min_size=1, max_size=4))
def test_generated_bytes_never_stop_the_server(served: tuple[Cluster, WireServer],
                                               chunks: list[bytes]) -> None:
    _, server = served
    with _connect(server) as sock:
        for chunk in chunks:
            try:
                sock.sendall(struct.pack(">i", len(chunk)) + chunk)
            except OSError:
                break  # closed by the server for a bad frame: as it should
    _api_versions_works(server)


def test_serve_prints_the_bootstrap_list_and_shuts_down_cleanly_on_sigterm(
        tmp_path: Path) -> None:
    """The command a user runs: it serves, and SIGTERM ends it with exit 0 and every log dir's
    clean-shutdown marker written (the next start skips recovery)."""
    import os
    import signal
    import subprocess
    import sys

    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-m", "logwright.cli", "serve", "--data-dir",
                             str(data), "--brokers", "2", "--log-dirs-per-broker", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("bootstrap.servers=127.0.0.1:"), first
        bootstrap = first.strip().split("=", 1)[1]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
        admin.create_topics([KNewTopic("kept", 1, 2)])
        admin.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "shut down cleanly" in err
    for broker in (1, 2):
        assert (data / f"broker-{broker}" / "d1" / ".kafka_cleanshutdown").exists()
    assert any((data / f"broker-{b}" / "d1" / "kept-0").is_dir() for b in (1, 2))
