"""Kafka clients over the wire (``logwright serve``, docs/wire.md): what a librdkafka client
gets from a served ``Cluster.real``, beside the in-process API on the same cluster.

Invariant upheld: every figure is judged beside a reference measured in the same run, on the
same cluster (3 brokers, one log dir each, a topic of 1 partition with replication factor 3,
records of 100 bytes), with no server running while the reference is measured. Each timed run
checks that it did all its work (every record acknowledged at its offset, or read back at its
offset), so a fast wrong answer cannot pass for a fast right one.

- Produce throughput: records/s of confluent-kafka (librdkafka) producing records to the
  served cluster on loopback, acks=all, ``linger.ms`` 5 and ``batch.num.messages`` 1,000, from
  the first ``produce()`` until ``flush()`` returns with every record acknowledged.
  Reference: ``Cluster.produce`` in process, acks=all, the same records in batches of the
  sizes the client sent in the latest wire run (read back from the log; at most 1,000).
- Consume throughput: records/s of a confluent-kafka consumer assigned the partition at
  offset 0 and polling one record at a time until it has read them all.
  Reference: a ``Cluster.fetch`` loop in process reading the same records, 1 MiB a fetch
  (librdkafka's default ``max.partition.fetch.bytes``).
- Produce latency, p50 and p99: wall ms of one record produced with acks=all and flushed
  (``linger.ms`` 0), one after another. Reference: ``Cluster.produce`` of one record, acks=all,
  in process; p50 and p99 of as many.

The issue sets no target for these figures: each is reported beside its reference, not
judged (target "none"). The figure by CPU time counts every thread of this process: the
client's librdkafka threads and the server's loop as well as the caller.

    python bench/wire.py [--quick]    # or: python bench/run.py (every module)
"""

from __future__ import annotations

import glob
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from common import Result, Samples, Target, Timing, Verdict, interleaved, scratch_dir, timed
from logwright import Cluster
from logwright.records.scan import iter_batches
from logwright.wire import WireServer, serving

RECORD = b"x" * 100
BATCH = 1_000  # librdkafka's batch.num.messages: the most records it puts in one batch
LINGER_MS = 5
FETCH_BYTES = 1 << 20  # librdkafka's default max.partition.fetch.bytes
DEADLINE_S = 120.0  # a run that has not finished by then failed


@dataclass(frozen=True)
class Sizes:
    records: int  # per throughput run (plus one untimed warm-up record)
    repeats: int  # throughput runs of each kind
    latency_records: int  # per latency round, each way
    latency_rounds: int


FULL = Sizes(records=30_000, repeats=5, latency_records=200, latency_rounds=5)
QUICK = Sizes(records=2_000, repeats=1, latency_records=20, latency_rounds=1)


class Reported(Result):
    """A figure the issue sets no target for: shown beside its reference, never judged."""

    @property
    def headroom(self) -> float:
        return float("nan")

    @property
    def verdict(self) -> Verdict:
        return Verdict.ERROR if self.error is not None else Verdict.REPORTED

    def target_text(self) -> str:
        return "none (reported)"


NO_TARGET = Target("figure", ">=", 0.0)  # never consulted: Reported judges nothing


def _percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class _Bench:
    """One cluster, and a fresh topic for each run, deleted after it: each run has the cluster
    to itself with one topic. (Idle partitions are not free: every follower fetch reads each
    partition it follows, so an acks=all produce slows as topics accumulate.)"""

    def __init__(self, cluster: Cluster, path: str) -> None:
        self.cluster = cluster
        self.path = path
        self._topics = 0
        self.wire_batches: list[int] = []  # records per batch of the last wire produce run
        self.all_wire_batches: list[int] = []  # ... of every wire produce run

    def new_topic(self, kind: str) -> str:
        """A new topic of 1 partition, replication factor 3 (created with no server running)."""
        self._topics += 1
        name = f"{kind}-{self._topics}"
        self.cluster.create_topic(name, partitions=1, replication_factor=3)
        return name

    def drop(self, topic: str) -> None:
        """Delete ``topic`` (with no server running)."""
        self.cluster.delete_topic(topic)

    def batch_sizes(self, topic: str) -> list[int]:
        """Records per batch in one replica's log of ``topic``'s partition 0."""
        dirs = sorted({os.path.dirname(f) for f in glob.glob(
            os.path.join(self.path, "broker-*", "*", f"{topic}-0", "*.log"))})
        if not dirs:
            return []
        sizes = []
        for segment in sorted(glob.glob(os.path.join(dirs[0], "*.log"))):
            with open(segment, "rb") as f:
                data = f.read()
            sizes += [h.last_offset_delta + 1 for _, h in iter_batches(data)]
        return sizes

    # ---- produce throughput --------------------------------------------------------------------

    def wire_produce(self, records: int, keep: bool = False) -> tuple[float, float, str]:
        """confluent-kafka produces ``records`` records, acks=all, to a new topic: records/s by
        wall and by CPU time, and the topic (deleted unless ``keep``)."""
        topic = self.new_topic("wire")
        with serving(self.cluster) as server:
            t, delivered, errors = _produce_stream(server, topic, records)
        if errors or sorted(delivered) != list(range(1, records + 1)):
            raise RuntimeError(f"wire produce: {len(delivered)} of {records} acknowledged at "
                               f"offsets 1..{records}; errors {errors[:3]}")
        self.wire_batches = self.batch_sizes(topic)[1:]  # the warm-up record's batch left out
        self.all_wire_batches += self.wire_batches
        if not keep:
            self.drop(topic)
        return records / t.wall_s, records / max(t.cpu_s, 1e-9), topic

    def inprocess_produce(self, records: int) -> float:
        """``Cluster.produce`` of the same records, acks=all, in batches of the sizes the client
        sent in the last wire run (in its log), else of BATCH: records/s."""
        topic = self.new_topic("local")
        assert self.cluster.produce(topic, 0, [RECORD], acks=-1) == 0  # the same warm-up record
        sizes = self.wire_batches
        if sum(sizes) != records:
            sizes = [min(BATCH, records - i) for i in range(0, records, BATCH)]
        batches = [[RECORD] * size for size in sizes]
        offsets: list[int] = []
        t = timed(lambda: offsets.extend(self.cluster.produce(topic, 0, b, acks=-1)
                                         for b in batches))
        expected = [1 + before for before in itertools.accumulate(sizes[:-1], initial=0)]
        if offsets != expected:
            raise RuntimeError(f"in-process produce: base offsets {offsets[:3]}..., "
                               f"not {expected[:3]}...")
        self.drop(topic)
        return records / t.wall_s

    # ---- consume throughput --------------------------------------------------------------------

    def wire_consume(self, topic: str, total: int) -> tuple[float, float]:
        """A confluent-kafka consumer reads ``topic``'s ``total`` records from offset 0."""
        with serving(self.cluster) as server:
            consumer = Consumer({"bootstrap.servers": server.bootstrap_servers,
                                 "group.id": "bench-wire", "enable.auto.commit": False,
                                 "enable.auto.offset.store": False})
            try:
                tp = CTopicPartition(topic, 0)
                # The leader's connection, untimed (as the producer's warm-up record).
                watermarks = consumer.get_watermark_offsets(tp, timeout=30)
                if watermarks != (0, total):
                    raise RuntimeError(f"watermarks of {topic}: {watermarks}, not (0, {total})")
                read = [0]

                def work() -> None:
                    consumer.assign([CTopicPartition(topic, 0, 0)])
                    deadline = time.monotonic() + DEADLINE_S
                    expected = 0
                    while expected < total:
                        msg = consumer.poll(1.0)
                        if msg is None:
                            if time.monotonic() > deadline:
                                raise RuntimeError(f"wire consume: {expected} of {total} "
                                                   f"records in {DEADLINE_S} s")
                            continue
                        if msg.error() is not None:
                            raise RuntimeError(f"wire consume: {msg.error()}")
                        if msg.offset() != expected or msg.value() != RECORD:
                            raise RuntimeError(f"wire consume: offset {msg.offset()} where "
                                               f"{expected} was due")
                        expected += 1
                    read[0] = expected

                t = timed(work)
            finally:
                consumer.close()
        assert read[0] == total
        return total / t.wall_s, total / max(t.cpu_s, 1e-9)

    def inprocess_consume(self, topic: str, total: int) -> float:
        """A ``Cluster.fetch`` loop reads ``topic``'s ``total`` records from offset 0."""
        def work() -> None:
            offset = 0
            while offset < total:
                records = self.cluster.fetch(topic, 0, offset, max_bytes=FETCH_BYTES)
                if not records:
                    raise RuntimeError(f"in-process fetch: nothing at offset {offset} of {total}")
                for record in records:
                    if record.offset != offset or record.value != RECORD:
                        raise RuntimeError(f"in-process fetch: offset {record.offset} where "
                                           f"{offset} was due")
                    offset += 1

        return total / timed(work).wall_s

    # ---- produce latency -----------------------------------------------------------------------

    def wire_latencies(self, count: int) -> list[float]:
        """ms of each of ``count`` one-record produces with acks=all, each flushed."""
        topic = self.new_topic("wire-latency")
        with serving(self.cluster) as server:
            out = _produce_one_at_a_time(server, topic, count)
        self.drop(topic)
        return out

    def inprocess_latencies(self, count: int) -> list[float]:
        """ms of each of ``count`` one-record ``Cluster.produce`` calls, acks=all."""
        topic = self.new_topic("local-latency")
        self.cluster.produce(topic, 0, [RECORD], acks=-1)
        out = []
        for i in range(count):
            start = time.perf_counter()
            offset = self.cluster.produce(topic, 0, [RECORD], acks=-1)
            out.append((time.perf_counter() - start) * 1_000)
            if offset != i + 1:
                raise RuntimeError(f"in-process produce at offset {offset}, not {i + 1}")
        self.drop(topic)
        return out


def _producer(server: WireServer, linger_ms: int) -> Producer:
    return Producer({"bootstrap.servers": server.bootstrap_servers, "acks": "all",
                     "linger.ms": linger_ms, "batch.num.messages": BATCH,
                     "enable.idempotence": False, "compression.type": "none"})


def _warm_up(producer: Producer, topic: str) -> None:
    """One record produced and flushed, untimed: the client has its metadata and its
    connection to the leader before the clock starts."""
    errors: list[object] = []
    producer.produce(topic, RECORD, partition=0,
                     on_delivery=lambda err, _msg: errors.append(err) if err else None)
    if producer.flush(30) or errors:
        raise RuntimeError(f"warm-up record to {topic} not acknowledged: {errors[:1]}")


def _produce_stream(server: WireServer, topic: str, records: int
                    ) -> tuple[Timing, list[int], list[object]]:
    """Produce ``records`` records through one client, timed from the first ``produce()`` to
    ``flush()``'s return: the timing, the offsets acknowledged, the errors reported. The
    client is gone when this returns (before the server stops)."""
    producer = _producer(server, linger_ms=LINGER_MS)
    _warm_up(producer, topic)
    delivered: list[int] = []
    errors: list[object] = []

    def report(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append(msg.offset())  # type: ignore[attr-defined]

    def work() -> None:
        for _ in range(records):
            while True:
                try:
                    producer.produce(topic, RECORD, partition=0, on_delivery=report)
                    break
                except BufferError:  # the client's queue is full: let it drain
                    producer.poll(0.001)
            producer.poll(0)
        left = producer.flush(DEADLINE_S)
        if left:
            raise RuntimeError(f"{left} records not acknowledged in {DEADLINE_S} s")

    return timed(work), delivered, errors


def _produce_one_at_a_time(server: WireServer, topic: str, count: int) -> list[float]:
    """ms of each of ``count`` one-record produces, each flushed before the next."""
    producer = _producer(server, linger_ms=0)
    _warm_up(producer, topic)
    failed: list[object] = []

    def report(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(err)

    out: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        producer.produce(topic, RECORD, partition=0, on_delivery=report)
        left = producer.flush(DEADLINE_S)
        out.append((time.perf_counter() - start) * 1_000)
        if left or failed:
            raise RuntimeError(f"wire produce not acknowledged: {failed[:1]}")
    return out


def _latency_rounds(bench: _Bench, sizes: Sizes) -> tuple[Samples, Samples, int]:
    """p50 and p99 per round (wire as figure, in process as reference), rounds alternating
    which goes first; the number of produces each way."""
    p50, p99 = Samples(), Samples()
    for i in range(sizes.latency_rounds):
        runs: dict[str, list[float]] = {}
        order: list[tuple[str, Callable[[int], list[float]]]] = [
            ("wire", bench.wire_latencies), ("local", bench.inprocess_latencies)]
        for name, fn in order if i % 2 == 0 else order[::-1]:
            runs[name] = fn(sizes.latency_records)
        p50.figures.append(_percentile(runs["wire"], 0.50))
        p50.references.append(_percentile(runs["local"], 0.50))
        p99.figures.append(_percentile(runs["wire"], 0.99))
        p99.references.append(_percentile(runs["local"], 0.99))
    return p50, p99, sizes.latency_rounds * sizes.latency_records


def run(quick: bool = False) -> list[Result]:
    sizes = QUICK if quick else FULL
    with scratch_dir("wire") as root:
        path = os.path.join(root, "cluster")
        with Cluster.real(path, brokers=3, log_dirs_per_broker=1) as cluster:
            bench = _Bench(cluster, path)
            n = sizes.records
            produce = interleaved(lambda: bench.wire_produce(n)[:2],
                                  lambda: bench.inprocess_produce(n), sizes.repeats)
            batch_sizes = bench.all_wire_batches
            consumed = bench.wire_produce(n, keep=True)[2]  # written by the client, untimed
            consume = interleaved(lambda: bench.wire_consume(consumed, n + 1),
                                  lambda: bench.inprocess_consume(consumed, n + 1),
                                  sizes.repeats)
            bench.drop(consumed)
            p50, p99, latency_count = _latency_rounds(bench, sizes)
    shape = ("Cluster.real, 3 brokers, one log dir each; topic of 1 partition, replication "
             "factor 3; 100-byte records; loopback")
    mean_batch = (f"{sum(batch_sizes) / len(batch_sizes):,.0f} records per batch on average "
                  f"in the log" if batch_sizes else "batch sizes not read")
    runs = f"medians of {sizes.repeats} interleaved runs of {n:,} records"
    return [
        Reported.measured(
            "wire produce throughput, confluent-kafka, acks=all (wall)", "records/s",
            "records/s", "Cluster.produce in process, acks=all, the same records in batches of the "
            "sizes the client sent, no server running (same run)", NO_TARGET, produce,
            note=f"{shape}; linger.ms {LINGER_MS}, batch.num.messages {BATCH:,} "
            f"({mean_batch}); {runs}; no target in the issue"),
        Reported.measured(
            "wire consume throughput, confluent-kafka, assign + poll (wall)", "records/s",
            "records/s", "Cluster.fetch loop in process, 1 MiB fetches, the same records, "
            "no server running (same run)", NO_TARGET, consume,
            note=f"{shape}; from offset 0 until all {n + 1:,} records are read; {runs}; "
            "no target in the issue"),
        Reported.measured(
            "wire produce latency p50, confluent-kafka, acks=all, one record (wall)", "ms",
            "ms", "Cluster.produce of one record in process, acks=all, p50 (same run)",
            NO_TARGET, p50,
            note=f"{shape}; produce + flush, linger.ms 0; median over "
            f"{sizes.latency_rounds} rounds of each round's p50 ({latency_count:,} produces "
            "each way); no target in the issue"),
        Reported.measured(
            "wire produce latency p99, confluent-kafka, acks=all, one record (wall)", "ms",
            "ms", "Cluster.produce of one record in process, acks=all, p99 (same run)",
            NO_TARGET, p99,
            note=f"{shape}; produce + flush, linger.ms 0; median over "
            f"{sizes.latency_rounds} rounds of each round's p99 ({latency_count:,} produces "
            "each way); no target in the issue"),
    ]


if __name__ == "__main__":
    results = run(quick="--quick" in sys.argv)
    print(json.dumps([r.to_json() for r in results], indent=1))
