"""kcat, the command-line Kafka client, against ``logwright serve`` (docs/wire.md).

kcat runs as its own process with its own librdkafka, on a real 3-broker cluster served on
loopback ports: its metadata listing names every broker and the topic, lines it produces with
acks=all are consumed back in order at consecutive offsets, and after DeleteRecords its offset
query and its consumer both start at the new low watermark. Skipped where kcat is not
installed (Debian: ``apt-get install kcat``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.cluster import Cluster
from logwright.wire import WireServer, serving

KCAT = shutil.which("kcat")
if KCAT is None:
    pytest.skip("kcat is not installed: apt-get install kcat", allow_module_level=True)

kafka = pytest.importorskip("kafka")

from kafka import TopicPartition as KTopicPartition  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic as KNewTopic  # noqa: E402

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, WireServer]]:
    path: Path = tmp_path_factory.mktemp("wire-kcat")
    with (Cluster.real(str(path / "data"), brokers=3, log_dirs_per_broker=1) as cluster,
          serving(cluster) as server):
        yield cluster, server


@pytest.fixture(scope="module")
def admin(served: tuple[Cluster, WireServer]) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=served[1].bootstrap_servers,
                              request_timeout_ms=20_000)
    try:
        yield client
    finally:
        client.close()


def kcat(server: WireServer, *args: str, stdin: str | None = None) -> str:
    """Run ``kcat -b BOOTSTRAP ARGS``; its stdout. A non-zero exit fails the test with
    kcat's stderr."""
    assert KCAT is not None
    argv = [KCAT, "-b", server.bootstrap_servers, *args]
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}"
    return proc.stdout


def produce_lines(server: WireServer, topic: str, lines: list[str]) -> None:
    """``kcat -P`` with acks=all: one record per line, ``key:value``, to partition 0."""
    kcat(server, "-P", "-t", topic, "-p", "0", "-K", ":", "-X", "acks=all",
         stdin="".join(f"{line}\n" for line in lines))


def consume(server: WireServer, topic: str, *options: str) -> list[tuple[int, str, str]]:
    """``kcat -C -e`` of partition 0 (from the beginning unless ``options`` say otherwise):
    (offset, key, value) of each record until the end of the partition."""
    out = kcat(server, "-C", "-t", topic, "-p", "0", "-e", "-f", "%o\t%k\t%s\n",
               *(options or ("-o", "beginning")))
    records = []
    for line in out.splitlines():
        offset, key, value = line.split("\t")
        records.append((int(offset), key, value))
    return records


def query_offset(server: WireServer, topic: str, which: int) -> int:
    """``kcat -Q -t topic:0:which``: -2 asks for the earliest offset (the log start offset),
    -1 for the latest (the high watermark)."""
    out = kcat(server, "-Q", "-t", f"{topic}:0:{which}").strip()
    assert out.startswith(f"{topic} [0] offset "), out
    return int(out.rsplit(" ", 1)[1])


def test_metadata_lists_every_broker_and_the_topic(
        served: tuple[Cluster, WireServer], admin: KafkaAdminClient) -> None:
    _, server = served
    admin.create_topics([KNewTopic("kc-meta", 2, 3)])
    listed = json.loads(kcat(server, "-L", "-J", "-t", "kc-meta"))
    brokers = {b["id"]: b["name"] for b in listed["brokers"]}
    assert brokers == {x.broker_id: f"{x.host}:{x.port}" for x in server.listeners}
    (topic,) = listed["topics"]
    assert topic["topic"] == "kc-meta" and "error" not in topic, topic
    partitions = sorted(topic["partitions"], key=lambda p: p["partition"])
    assert [p["partition"] for p in partitions] == [0, 1]
    for p in partitions:
        replicas = sorted(r["id"] for r in p["replicas"])
        assert replicas == [1, 2, 3] and p["leader"] in replicas, p
        assert sorted(r["id"] for r in p["isrs"]) == replicas, p
    text = kcat(server, "-L")  # the listing an operator reads
    assert " 3 brokers:" in text and 'topic "kc-meta" with 2 partitions:' in text, text


def test_lines_produced_with_acks_all_are_consumed_back_in_order(
        served: tuple[Cluster, WireServer], admin: KafkaAdminClient) -> None:
    _, server = served
    admin.create_topics([KNewTopic("kc-lines", 1, 3)])
    lines = [(f"key-{i}", f"line {i}: " + "x" * i) for i in range(25)]
    produce_lines(server, "kc-lines", [f"{k}:{v}" for k, v in lines])
    got = consume(server, "kc-lines")
    assert got == [(i, k, v) for i, (k, v) in enumerate(lines)]
    assert query_offset(server, "kc-lines", -2) == 0
    assert query_offset(server, "kc-lines", -1) == len(lines)
    # A second run appends after the first, at the next offsets.
    produce_lines(server, "kc-lines", ["key-more:one more"])
    assert consume(server, "kc-lines", "-o", str(len(lines))) == [
        (len(lines), "key-more", "one more")]


def test_after_delete_records_kcat_starts_at_the_new_low_watermark(
        served: tuple[Cluster, WireServer], admin: KafkaAdminClient) -> None:
    _, server = served
    admin.create_topics([KNewTopic("kc-trim", 1, 3)])
    produce_lines(server, "kc-trim", [f"k{i}:record {i}" for i in range(10)])
    tp = KTopicPartition("kc-trim", 0)
    result = admin.delete_records({tp: 6})
    assert result[tp]["error_code"] == 0 and result[tp]["low_watermark"] == 6
    assert query_offset(server, "kc-trim", -2) == 6
    assert query_offset(server, "kc-trim", -1) == 10
    expected = [(i, f"k{i}", f"record {i}") for i in range(6, 10)]
    assert consume(server, "kc-trim", "-o", "beginning") == expected
    # Asked for a deleted offset, the consumer is told OFFSET_OUT_OF_RANGE and resets to the
    # earliest offset it may read: never a deleted record.
    assert consume(server, "kc-trim", "-o", "2", "-X", "auto.offset.reset=earliest") == expected
