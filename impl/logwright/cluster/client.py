"""The embedded client: what a Kafka producer and consumer are to the cluster.

``ClientNode`` is the client's place on the network: it sends requests and keeps the one answer
to each request it still awaits, matched by correlation id and sender. ``Client`` is the logic of
Kafka's clients on top of it: a metadata cache filled only by Metadata requests to live brokers,
and a retry loop with Kafka's timing (``ClientConfig``).

Invariants upheld:
- An answer is taken only for the attempt that sent it: a duplicated or late response to an
  earlier attempt (an earlier correlation id, or another broker) is dropped, never read as the
  answer to a later attempt. The node keeps at most one response per awaited request, and a
  request stops being awaited when its attempt ends, so memory is bounded by the requests in
  flight whatever the network duplicates.
- Leaders are learnt from Metadata answers only. Partition information with an older leader
  epoch than the one held for the same topic id is ignored (KIP-320), so a broker with a
  stale cache cannot send the client back to a deposed leader.
- A call ends by its deadline: no attempt waits past it, and no backoff sleeps past it.
- A retriable error (Kafka's RetriableException family) is retried after a backoff until the
  deadline; any other error is raised at once, as its most specific ``KafkaError`` type.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from mypy_extensions import mypyc_attr

from logwright.errors import NO_ERROR, ClusterError, Errors, KafkaError
from logwright.identity import TopicPartition, Uuid
from logwright.protocol import (
    CONSUMER_REPLICA_ID,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_EPOCH,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    Message,
    MetadataPartition,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from logwright.records import build_simple_batch, decode_batches
from logwright.world.clock import Clock
from logwright.world.network import Network

Acks = Literal[0, 1, -1, "all"]

RETRIABLE = frozenset({
    Errors.CORRUPT_MESSAGE, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.REQUEST_TIMED_OUT, Errors.REPLICA_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    Errors.KAFKA_STORAGE_ERROR, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
    Errors.UNKNOWN_TOPIC_ID, Errors.INCONSISTENT_TOPIC_ID,
})
"""Errors Kafka's clients retry (their exceptions are RetriableException): every other error
fails the call at once."""

REFRESH_METADATA = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.REQUEST_TIMED_OUT, Errors.REPLICA_NOT_AVAILABLE,
    Errors.KAFKA_STORAGE_ERROR, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
    Errors.UNKNOWN_TOPIC_ID, Errors.INCONSISTENT_TOPIC_ID,
})
"""Errors after which the client asks for fresh metadata before retrying (Kafka's
InvalidMetadataException family, and a request that got no answer)."""

_JITTER = 0.2  # Kafka's ExponentialBackoff: each backoff is scaled by a factor in [0.8, 1.2)


@dataclass(frozen=True)
@mypyc_attr(native_class=False)  # compiled, still a Python class: __post_init__ validates any value
class ClientConfig:
    """The client's timing, with the Kafka client configs' names (dots as underscores) and
    defaults. Every value is a positive number of milliseconds.

    - ``request_timeout_ms`` (``request.timeout.ms``): how long one attempt waits for its answer.
    - ``delivery_timeout_ms`` (``delivery.timeout.ms``): a produce call's overall deadline.
    - ``default_api_timeout_ms`` (``default.api.timeout.ms``): the deadline of other calls.
    - ``retry_backoff_ms`` / ``retry_backoff_max_ms`` (``retry.backoff.ms``,
      ``retry.backoff.max.ms``): the wait before a retry doubles from the first to the second,
      with +-20% jitter.
    - ``metadata_max_age_ms`` (``metadata.max.age.ms``): metadata older than this is refreshed
      before it is used.
    """

    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    default_api_timeout_ms: int = 60_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    metadata_max_age_ms: int = 300_000

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ClusterError(f"ClientConfig.{f.name} must be a positive integer number "
                                   f"of milliseconds, not {value!r}")
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            raise ClusterError(f"ClientConfig.retry_backoff_max_ms ({self.retry_backoff_max_ms}) "
                               f"is below retry_backoff_ms ({self.retry_backoff_ms})")
        if self.delivery_timeout_ms < self.request_timeout_ms:
            # Kafka's producer: delivery.timeout.ms >= linger.ms + request.timeout.ms.
            raise ClusterError(f"ClientConfig.delivery_timeout_ms ({self.delivery_timeout_ms}) "
                               f"is below request_timeout_ms ({self.request_timeout_ms})")

    def backoff_ms(self, retries: int, rng: random.Random) -> int:
        """The wait before retry number ``retries`` (0 for the first): ``retry_backoff_ms``
        doubled per retry up to ``retry_backoff_max_ms``, scaled by a jitter drawn from ``rng``
        (Kafka's ExponentialBackoff, KIP-580)."""
        assert retries >= 0
        term = self.retry_backoff_ms * 2 ** min(retries, 32)
        jittered = int(term * rng.uniform(1 - _JITTER, 1 + _JITTER))
        return max(1, min(jittered, self.retry_backoff_max_ms))


@dataclass(frozen=True)
class ConsumerRecord:
    """One record as a consumer sees it."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


@dataclass(frozen=True)
class DeleteRecordsResult:
    """One partition's answer to ``Cluster.delete_records``.

    ``error`` is ``Errors.NONE`` when the deletion is acknowledged: then ``low_watermark`` is
    the partition's low watermark (every record below it is gone from every replica counted,
    durably) and is at least the offset asked (the high watermark for -1). Otherwise
    ``low_watermark`` is -1 and ``error`` says why (``message`` the detail); a deletion that
    timed out may still have raised the leader's start offset."""

    tp: TopicPartition
    low_watermark: int
    error: Errors = Errors.NONE
    message: str = ""

    @property
    def ok(self) -> bool:
        """Whether the deletion was acknowledged."""
        return self.error is Errors.NONE


class ClientRuntime(Protocol):
    """What the client needs of its world: the clock, and a way to let time pass."""

    @property
    def clock(self) -> Clock:
        """The injected clock."""
        ...

    def run_until(self, done: Callable[[], bool], timeout_ms: int) -> bool:
        """Run the world until ``done()`` or ``timeout_ms`` passed; returns ``done()``."""
        ...

    def run_for(self, delta_ms: int) -> None:
        """Let ``delta_ms`` pass."""
        ...


class ClientNode:
    """The client's node on the network: sends requests, keeps the answers it awaits."""

    def __init__(self, node_id: str, network: Network, max_in_flight: int = 1_024) -> None:
        assert max_in_flight > 0
        self.node_id = node_id
        self.network = network
        self.max_in_flight = max_in_flight
        self._next_id = 0
        self._awaiting: dict[int, str] = {}  # correlation id -> the node asked
        self.responses: dict[int, Message] = {}
        self.dropped_responses = 0  # late, duplicated or unasked-for answers
        network.register(self)
        network.keep_order_from(node_id)  # one connection per broker: sent in order, kept in order

    def next_correlation_id(self) -> int:
        """A correlation id never used by this node before."""
        self._next_id += 1
        return self._next_id

    def send(self, dst: str, request: Message) -> None:
        """Send ``request`` to ``dst`` expecting no answer (produce with acks=0)."""
        self.network.send(self.node_id, dst, request)

    def request(self, dst: str, request: Message) -> int:
        """Send ``request`` to ``dst`` and await its answer; returns its correlation id."""
        cid = request.correlation_id
        assert cid not in self._awaiting, f"correlation id {cid} already in flight"
        assert len(self._awaiting) < self.max_in_flight, "too many requests in flight"
        self._awaiting[cid] = dst
        self.network.send(self.node_id, dst, request)
        return cid

    def receive(self, src: str, message: object) -> None:
        """Keep the first answer to each awaited request from the node asked; drop the rest."""
        if (isinstance(message, Message) and self._awaiting.get(message.correlation_id) == src
                and message.correlation_id not in self.responses):
            self.responses[message.correlation_id] = message
        else:
            self.dropped_responses += 1
        assert len(self.responses) <= len(self._awaiting)

    def take(self, correlation_id: int) -> Message | None:
        """The answer to ``correlation_id`` if it arrived; either way the request is no longer
        awaited, so an answer arriving later is dropped."""
        self._awaiting.pop(correlation_id, None)
        return self.responses.pop(correlation_id, None)

    @property
    def in_flight(self) -> int:
        """Requests still awaited."""
        return len(self._awaiting)


@dataclass
class _TopicMetadata:
    topic_id: Uuid
    partitions: dict[int, MetadataPartition]
    updated_ms: int
    partition_count: int  # as the answer listed them, known leader or not


class ClientMetadata:
    """The client's metadata cache: topics, their partitions' leaders, and live brokers."""

    def __init__(self) -> None:
        self.topics: dict[str, _TopicMetadata] = {}
        self.brokers: dict[int, str] = {}  # live broker id -> node, from the last answer
        self._stale: set[str] = set()
        self._last_epochs: dict[TopicPartition, tuple[Uuid, int]] = {}
        self.updates = 0

    def partition(self, tp: TopicPartition, now_ms: int, max_age_ms: int
                  ) -> MetadataPartition | None:
        """What is known of ``tp``, or None if it must be (re)fetched first."""
        topic = self.topics.get(tp.topic)
        if topic is None or tp.topic in self._stale or now_ms - topic.updated_ms > max_age_ms:
            return None
        return topic.partitions.get(tp.partition)

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` had in the last answer that named it, or None."""
        known = self.topics.get(topic)
        return None if known is None else known.partition_count

    def request_update(self, topic: str) -> None:
        """Mark ``topic`` stale: the next call asks a broker before using it."""
        self._stale.add(topic)

    def update(self, response: MetadataResponse, now_ms: int) -> None:
        """Take in a Metadata answer. Per partition, information with an older leader epoch than
        the last one seen for the same topic id is ignored (KIP-320): what was held is kept, and
        if nothing is held the partition stays unknown until a better answer comes. The last
        epoch seen is remembered even while a topic is missing from answers."""
        self.updates += 1
        if response.brokers:
            self.brokers = {b.node_id: b.node for b in response.brokers}
        for topic in response.topics:
            self._stale.discard(topic.name)
            held = self.topics.pop(topic.name, None)
            if topic.error is not Errors.NONE:
                continue
            partitions: dict[int, MetadataPartition] = {}
            for p in topic.partitions:
                tp = TopicPartition(topic.name, p.partition)
                seen = self._last_epochs.get(tp)
                if seen is None or seen[0] != topic.topic_id or p.leader_epoch >= seen[1]:
                    self._last_epochs[tp] = (topic.topic_id, p.leader_epoch)
                    partitions[p.partition] = p
                elif held is not None and held.topic_id == topic.topic_id \
                        and p.partition in held.partitions:
                    partitions[p.partition] = held.partitions[p.partition]
            self.topics[topic.name] = _TopicMetadata(topic.topic_id, partitions, now_ms,
                                                     len(topic.partitions))


@dataclass(frozen=True)
class _Route:
    partition: MetadataPartition
    node: str  # the leader's node


class Client:
    """Kafka's client logic over a ``ClientNode``: produce, fetch and list_offsets, each retried
    like Kafka's clients until its deadline.

    ``bootstrap`` lists the nodes to ask for metadata first (Kafka's ``bootstrap.servers``);
    after an answer the live brokers it names are asked too. ``rng`` draws the backoff jitter.
    """

    def __init__(self, node: ClientNode, runtime: ClientRuntime, bootstrap: Sequence[str],
                 config: ClientConfig, rng: random.Random) -> None:
        if not bootstrap:
            raise ClusterError("the client needs at least one bootstrap node")
        self.node = node
        self.runtime = runtime
        self.bootstrap = tuple(bootstrap)
        self.config = config
        self.rng = rng
        self.metadata = ClientMetadata()
        self.closed = False
        self._rotation = 0
        self._failed_at: dict[str, int] = {}  # node -> when it last failed to answer
        # Counters, for tests and the curious.
        self.attempts = 0
        self.retries = 0
        self.metadata_requests = 0
        self.refused_connections = 0

    def close(self) -> None:
        """Refuse every later call (ClusterError)."""
        self.closed = True

    # ---- the calls -----------------------------------------------------------------------------

    def produce(self, tp: TopicPartition, values: Sequence[bytes | None],
                keys: Sequence[bytes | None] | None, acks: Acks | object,
                timeout_ms: int | None, topic_id: Uuid | None = None) -> int:
        """Append ``values`` as one batch; the base offset, or -1 for acks=0. With
        ``topic_id`` the request names the topic's id too (Produce v13+): a broker holding
        another generation of the topic refuses it (retried with fresh metadata). ``acks`` is
        whatever the caller was given (``Acks | object``): anything else is refused here."""
        self._require_open()
        # One branch per accepted form (mypy narrowed the one-condition form to "all" alone,
        # which compiled code then enforced, refusing 0, 1 and -1).
        wire_acks: int
        if acks == "all":
            wire_acks = -1
        elif type(acks) is int and acks in (0, 1, -1):
            wire_acks = acks
        else:
            raise KafkaError.of(Errors.INVALID_REQUEST,
                                f"acks must be 0, 1, -1 or \"all\", not {acks!r}")
        if not values:
            raise KafkaError.of(Errors.INVALID_REQUEST, "nothing to produce")
        ks = list(keys) if keys is not None else [None] * len(values)
        if len(ks) != len(values):
            raise KafkaError.of(Errors.INVALID_REQUEST, "keys and values differ in length")
        deadline = self._deadline(timeout_ms, self.config.delivery_timeout_ms)
        now = self.runtime.clock.now_ms()
        # The bytes of build_batch([Record(k, v, now) for k, v in zip(ks, values)]).
        batch = build_simple_batch(values, now, keys=None if keys is None else ks)
        result = -1
        ids = ((tp.topic, topic_id),) if topic_id is not None else ()

        def attempt(node: str, _meta: MetadataPartition, wait_ms: int) -> tuple[Errors, str]:
            nonlocal result
            request = ProduceRequest(self.node.next_correlation_id(), wire_acks, wait_ms,
                                     ((tp, batch),), topic_ids=ids)
            if wire_acks == 0:
                if not self._connect(node):
                    return Errors.REQUEST_TIMED_OUT, f"connection to {node} refused"
                self.node.send(node, request)
                return Errors.NONE, ""
            response = self._call(node, request, wait_ms)
            if not isinstance(response, ProduceResponse) or len(response.partitions) != 1:
                return Errors.REQUEST_TIMED_OUT, f"no answer from {node} in {wait_ms} ms"
            answer = response.partitions[0]
            if answer.error is NO_ERROR:
                assert answer.base_offset >= 0, "an acknowledged produce has an offset"
                result = answer.base_offset
            return answer.error, answer.error_message

        self._with_retries(tp, "produce", deadline, attempt)
        return result

    def fetch(self, tp: TopicPartition, offset: int, max_bytes: int,
              timeout_ms: int | None, topic_id: Uuid | None = None) -> list[ConsumerRecord]:
        """Committed records of ``tp`` from ``offset``, as a consumer reads them. With
        ``topic_id`` (Fetch v13+) a broker holding another generation of the topic refuses
        the fetch (retried with fresh metadata) instead of serving that generation's
        records."""
        self._require_open()
        deadline = self._deadline(timeout_ms, self.config.default_api_timeout_ms)
        out: list[ConsumerRecord] = []

        def attempt(node: str, meta: MetadataPartition, wait_ms: int) -> tuple[Errors, str]:
            # The leader epoch from metadata lets the leader tell a stale client (FENCED) from a
            # leader that has not heard of the epoch yet (UNKNOWN), as consumers do (KIP-320).
            wanted = FetchPartition(tp, meta.leader_epoch, offset, -1, max_bytes,
                                    topic_id=topic_id if topic_id is not None else Uuid.ZERO)
            request = FetchRequest(self.node.next_correlation_id(), CONSUMER_REPLICA_ID,
                                   NO_EPOCH, 0, 0, max_bytes, (wanted,))
            response = self._call(node, request, wait_ms)
            if not isinstance(response, FetchResponse):
                return Errors.REQUEST_TIMED_OUT, f"no answer from {node} in {wait_ms} ms"
            if response.error is not Errors.NONE:
                return response.error, f"fetch from {node}"
            data = response.partitions[0]
            if data.error is not Errors.NONE:
                return data.error, (f"fetch at offset {offset} (log start offset "
                                    f"{data.log_start_offset}, high watermark "
                                    f"{data.high_watermark})")
            out.clear()
            for record_offset, record in decode_batches(data.records):
                if record_offset >= offset:
                    out.append(ConsumerRecord(record_offset, record.key, record.value,
                                              record.timestamp_ms))
            return Errors.NONE, ""

        self._with_retries(tp, "fetch", deadline, attempt)
        return out

    def list_offsets(self, tp: TopicPartition, which: Literal["earliest", "latest"],
                     timeout_ms: int | None, topic_id: Uuid | None = None) -> int:
        """The log start offset ("earliest") or the high watermark ("latest") of ``tp``. With
        ``topic_id`` the request names it (a logwright extension, as for DeleteRecords): a
        broker holding another generation of the topic refuses it, and the client retries at
        the leader its new metadata names."""
        self._require_open()
        if which not in ("earliest", "latest"):
            raise KafkaError.of(Errors.INVALID_REQUEST,
                                f"which must be \"earliest\" or \"latest\", not {which!r}")
        deadline = self._deadline(timeout_ms, self.config.default_api_timeout_ms)
        timestamp = EARLIEST_TIMESTAMP if which == "earliest" else LATEST_TIMESTAMP
        ids = ((tp.topic, topic_id),) if topic_id is not None else ()
        result = -1

        def attempt(node: str, _meta: MetadataPartition, wait_ms: int) -> tuple[Errors, str]:
            nonlocal result
            request = ListOffsetsRequest(self.node.next_correlation_id(), CONSUMER_REPLICA_ID,
                                         ((tp, timestamp),), topic_ids=ids)
            response = self._call(node, request, wait_ms)
            if not isinstance(response, ListOffsetsResponse) or len(response.partitions) != 1:
                return Errors.REQUEST_TIMED_OUT, f"no answer from {node} in {wait_ms} ms"
            _, error, found = response.partitions[0]
            if error is Errors.NONE:
                result = found
            return error, f"list offsets {which}"

        self._with_retries(tp, f"list_offsets {which}", deadline, attempt)
        return result

    def delete_records(self, offsets: Sequence[tuple[TopicPartition, int]], timeout_ms: int,
                       topic_ids: Mapping[str, Uuid] | None = None
                       ) -> dict[TopicPartition, DeleteRecordsResult]:
        """DeleteRecords: for each (partition, offset), a request to the partition's leader,
        retried as Kafka's admin client does (new metadata after NOT_LEADER_OR_FOLLOWER and
        the like) until ``timeout_ms`` passes, which is also the time each leader waits for
        the low watermark. One result per partition, never raised: a partition's error is in
        its result. Partitions are asked one after the other, each with its own deadline.
        With ``topic_ids`` (topic -> id) each request names the id its topic is meant under: a
        broker still holding a deleted generation of the name refuses it
        (INCONSISTENT_TOPIC_ID, retried with fresh metadata) instead of deleting that
        generation's records and answering with its low watermark."""
        self._require_open()
        out: dict[TopicPartition, DeleteRecordsResult] = {}
        for tp, offset in offsets:
            if tp in out:
                continue
            deadline = self._deadline(timeout_ms, self.config.default_api_timeout_ms)
            found: list[int] = []

            def attempt(node: str, _meta: MetadataPartition, wait_ms: int,
                        tp: TopicPartition = tp, offset: int = offset,
                        found: list[int] = found) -> tuple[Errors, str]:
                tid = (topic_ids or {}).get(tp.topic)
                request = DeleteRecordsRequest(
                    self.node.next_correlation_id(),
                    (DeleteRecordsTopic(tp.topic, (DeleteRecordsPartition(tp.partition,
                                                                          offset),)),),
                    wait_ms, topic_ids=((tp.topic, tid),) if tid is not None else ())
                response = self._call(node, request, wait_ms)
                if (not isinstance(response, DeleteRecordsResponse) or len(response.topics) != 1
                        or len(response.topics[0].partitions) != 1):
                    return Errors.REQUEST_TIMED_OUT, f"no answer from {node} in {wait_ms} ms"
                answer = response.topics[0].partitions[0]
                if answer.error is Errors.NONE:
                    found.append(answer.low_watermark)
                return answer.error, f"delete records below {offset}"

            try:
                self._with_retries(tp, "delete_records", deadline, attempt)
            except KafkaError as exc:
                out[tp] = DeleteRecordsResult(tp, -1, exc.error, exc.message)
            else:
                out[tp] = DeleteRecordsResult(tp, found[-1])
        return out

    # ---- the retry loop ------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self.closed:
            raise ClusterError("the cluster is closed")

    def _deadline(self, timeout_ms: int | None, default_ms: int) -> int:
        if timeout_ms is None:
            timeout_ms = default_ms
        elif isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
            raise KafkaError.of(Errors.INVALID_REQUEST,
                                f"timeout_ms must be a positive integer, not {timeout_ms!r}")
        return self.runtime.clock.now_ms() + timeout_ms

    def _with_retries(self, tp: TopicPartition, what: str, deadline_ms: int,
                      attempt: Callable[[str, MetadataPartition, int], tuple[Errors, str]]
                      ) -> None:
        """Run ``attempt(leader node, partition metadata, wait_ms)`` until it answers NONE:
        a retriable error is retried after a backoff (with fresh metadata where Kafka's clients
        refresh it), another error is raised at once, and at ``deadline_ms`` the last error is
        raised."""
        retries = 0
        while True:
            now = self.runtime.clock.now_ms()
            if now >= deadline_ms:
                raise KafkaError.of(Errors.REQUEST_TIMED_OUT, f"{tp}: {what}: the deadline "
                                    "passed before an attempt could be made")
            wait_ms = min(self.config.request_timeout_ms, deadline_ms - now)
            found = self._leader(tp, wait_ms)
            if not isinstance(found, _Route):
                error, message = found
            elif (left_ms := deadline_ms - self.runtime.clock.now_ms()) <= 0:
                error, message = Errors.REQUEST_TIMED_OUT, "the deadline passed"
            else:
                meta, node = found.partition, found.node
                self.attempts += 1
                wait_ms = min(self.config.request_timeout_ms, left_ms)
                error, message = attempt(node, meta, wait_ms)
                if error is NO_ERROR:
                    return
                if error is Errors.REQUEST_TIMED_OUT:
                    self._failed_at[node] = self.runtime.clock.now_ms()
            if error not in RETRIABLE:
                raise KafkaError.of(error, f"{tp}: {what}: {message}")
            if error in REFRESH_METADATA:
                self.metadata.request_update(tp.topic)
            backoff = self.config.backoff_ms(retries, self.rng)
            if self.runtime.clock.now_ms() + backoff >= deadline_ms:
                raise KafkaError.of(error, f"{tp}: {what}: {message} (gave up at the deadline "
                                    f"after {retries + 1} attempts)")
            retries += 1
            self.retries += 1
            self.runtime.run_for(backoff)

    def _leader(self, tp: TopicPartition, wait_ms: int) -> _Route | tuple[Errors, str]:
        """The partition's metadata and its leader's node, from the cache or, when the cache
        has nothing fresh, from one Metadata request; else the error to retry or raise."""
        now = self.runtime.clock.now_ms()
        meta = self.metadata.partition(tp, now, self.config.metadata_max_age_ms)
        if meta is None:
            error, message = self._refresh(tp.topic, wait_ms)
            if error is not Errors.NONE:
                return error, message
            meta = self.metadata.partition(tp, self.runtime.clock.now_ms(),
                                           self.config.metadata_max_age_ms)
            if meta is None:
                count = self.metadata.partition_count(tp.topic)
                if count is not None and not 0 <= tp.partition < count:
                    # Kafka's producer fails such a record at once: the topic is known and the
                    # partition is outside it, so waiting cannot help.
                    raise KafkaError.of(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                        f"{tp}: topic {tp.topic!r} has {count} partitions "
                                        f"(0 to {count - 1}); partition {tp.partition} does not "
                                        "exist")
                return Errors.UNKNOWN_TOPIC_OR_PARTITION, "no such partition in the metadata"
        if meta.error is not NO_ERROR or meta.leader < 0:
            error = meta.error if meta.error is not Errors.NONE else Errors.LEADER_NOT_AVAILABLE
            return error, "the metadata names no leader"
        node = self.metadata.brokers.get(meta.leader)
        if node is None:
            return Errors.LEADER_NOT_AVAILABLE, f"leader {meta.leader} is not a live broker"
        return _Route(meta, node)

    def _refresh(self, topic: str, wait_ms: int) -> tuple[Errors, str]:
        """Ask one broker for ``topic``'s metadata; the topic's error if it has one."""
        node = self._metadata_node()
        self.metadata_requests += 1
        request = MetadataRequest(self.node.next_correlation_id(), (topic,))
        response = self._call(node, request, wait_ms)
        if not isinstance(response, MetadataResponse):
            self._failed_at[node] = self.runtime.clock.now_ms()
            return Errors.REQUEST_TIMED_OUT, f"no metadata from {node} in {wait_ms} ms"
        self._failed_at.pop(node, None)
        self.metadata.update(response, self.runtime.clock.now_ms())
        for answer in response.topics:
            if answer.name == topic and answer.error is not Errors.NONE:
                return answer.error, f"metadata from {node}"
        return Errors.NONE, ""

    def _metadata_node(self) -> str:
        """The node to ask for metadata: round robin over the live brokers last heard of and
        the bootstrap nodes, those that failed to answer least recently (or never) first."""
        candidates = list(dict.fromkeys([*self.metadata.brokers.values(), *self.bootstrap]))
        self._rotation = (self._rotation + 1) % len(candidates)
        rotated = candidates[self._rotation:] + candidates[:self._rotation]
        return min(rotated, key=lambda n: self._failed_at.get(n, -1))

    def _connect(self, node: str) -> bool:
        """Whether ``node`` accepts a connection; a refused one counts as a failed node, so the
        next metadata request goes elsewhere (Kafka's clients move on after a refusal at once,
        not after a request timeout)."""
        if self.node.network.listening(node):
            return True
        self._failed_at[node] = self.runtime.clock.now_ms()
        self.refused_connections += 1
        return False

    def _call(self, node: str, request: Message, wait_ms: int) -> Message | None:
        """Send ``request`` and wait up to ``wait_ms`` for its answer (None if none came, or at
        once if ``node`` refused the connection)."""
        assert wait_ms > 0
        if not self._connect(node):
            return None
        cid = self.node.request(node, request)
        self.runtime.run_until(lambda: cid in self.node.responses, wait_ms)
        return self.node.take(cid)
