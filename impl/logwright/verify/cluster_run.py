"""One run of the simulated cluster driven by recorded steps, with the properties checked after
every step: the executor shared by the fuzzer's state machine (``stateful_cluster``), the
campaign (``fuzz``) and the tests that replay traces (``traces/cluster/``,
``traces/regressions/``).

A *trace* is JSON: ``{"cluster": {Cluster.simulated keyword arguments}, "steps": [step, ...]}``
plus free-form fields saying what it found. A *step* is a dict with an ``op`` and its arguments
(docs/verification.md lists them). The fuzzer records each step as it applies it, so the shrunk
failing example Hypothesis reports is replayed here step for step: the same seed and the same
steps give the same run, since nothing here draws a random number or reads a clock.

The properties (``ClusterRun.check`` after every step, ``repair_and_settle`` at settle points):

- acknowledged records survive: every record acknowledged with acks=all, of a topic's current
  incarnation, is held at its offset by the leader the controller elected (the fault model under
  which this is promised is the state machine's, see ``stateful_cluster``);
- 0 <= log start <= HW <= LEO on every replica of every running broker;
- no broker holds a controller epoch or a leader epoch the store never issued;
- topic identity: a leader serving a topic's current incarnation holds only records sent to that
  incarnation and that partition (no record of a deleted topic is ever served under its
  re-created name); a consumer's fetch returns only such records, and an acknowledged record at
  its offset;
- at settle points (network healed, dirs repaired, every broker restarted): every live replica
  catches up, every assigned replica is created on its broker with the topic's id, and a consumer
  reads every acknowledged record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from logwright.broker import BrokerConfig
from logwright.cluster import Cluster
from logwright.conformance.controller_fencing import ControllerFencingProjection
from logwright.conformance.fetcher_failure import FetcherFailureProjection
from logwright.conformance.leader_election import LeaderElectionProjection
from logwright.conformance.log_start_offset import ClusterProjection
from logwright.conformance.replica_move import ReplicaMoveProjection
from logwright.conformance.stray_cleanup import StrayCleanupProjection
from logwright.errors import KafkaError, KafkaStorageError
from logwright.identity import TopicPartition, Uuid
from logwright.world import Fault, SimulatedCrash

Step = dict[str, Any]
"""One recorded action: ``{"op": name, ...arguments}``."""

EventSink = Callable[[str], None]

#: The ops a step may name (documented in docs/verification.md, "The fuzzer").
OPS = ("create_topic", "delete_topic", "recreate_topic", "produce", "fetch", "list_offsets",
       "alter_configs", "reassign", "crash", "crash_during", "restart", "fail_dir",
       "fail_controller", "isolate", "cut", "heal", "network", "advance", "settle",
       "repair_and_settle", "delete_records", "alter_log_dir")


class PropertyViolated(AssertionError):
    """A promised property failed: the message says which, where and what was expected."""


def _ensure(condition: bool, message: str) -> None:
    if not condition:
        raise PropertyViolated(message)


@dataclass
class TopicBook:
    """What the run knows of one incarnation of a topic: its id, and every value sent to and
    acknowledged (acks=all) by each partition."""

    topic_id: Uuid | None
    partitions: int
    sent: dict[int, set[bytes]] = field(default_factory=dict)
    acked: dict[int, dict[int, bytes]] = field(default_factory=dict)
    #: Per partition, the highest low watermark a DeleteRecords acknowledged: nothing below it
    #: may ever be served or held again.
    deleted_below: dict[int, int] = field(default_factory=dict)
    #: Per partition, the highest offset a DeleteRecords asked, acknowledged or not (a leader
    #: may have raised its start offset before the answer was lost): records below it may be
    #: legitimately gone, acknowledged or not.
    maybe_deleted_below: dict[int, int] = field(default_factory=dict)
    #: Per partition and acknowledged offset, the brokers whose replica holds the record intact:
    #: those holding it when it was acknowledged, less those whose copy a fault may have
    #: destroyed since (a power loss, unless the copy was below its log's recovery point then;
    #: its dir failing), plus any seen holding it again. An
    #: acknowledged record may be lost only once this is empty (every replica that held it
    #: lost it), and then only with a recovery or unclean election reported.
    holders: dict[int, dict[int, set[int]]] = field(default_factory=dict)
    #: Per partition and acknowledged offset, the record's timestamp (the producer's clock when
    #: it built the batch): time retention deletes only segments whose newest record is older
    #: than its cutoff, and only a prefix of the log.
    acked_ms: dict[int, dict[int, int]] = field(default_factory=dict)
    #: The smallest finite retention.ms this incarnation has had (-1: never any), and the
    #: highest cutoff (now minus it) seen since. A revert is not trusted to stop retention: a
    #: broker that was down applies it only when it is back.
    retention_ms: int = -1
    retention_cutoff_ms: int = -1

    def __post_init__(self) -> None:
        for p in range(self.partitions):
            self.sent.setdefault(p, set())
            self.acked.setdefault(p, {})
            self.acked_ms.setdefault(p, {})
            self.holders.setdefault(p, {})
            self.deleted_below.setdefault(p, 0)
            self.maybe_deleted_below.setdefault(p, 0)

    def retained_at(self, now_ms: int) -> None:
        """Time has come to ``now_ms``: with a finite retention.ms, every acknowledged record
        below the first one (by offset) whose timestamp is at or after the cutoff may have been
        deleted by retention, which deletes only whole segments, in order, whose newest record
        is older than the cutoff. Booked as ``maybe_deleted_below``."""
        if self.retention_ms < 0:
            return
        self.retention_cutoff_ms = max(self.retention_cutoff_ms, now_ms - self.retention_ms)
        for p in range(self.partitions):
            kept = [o for o, ms in self.acked_ms[p].items() if ms >= self.retention_cutoff_ms]
            below = min(kept) if kept else max(self.acked[p], default=-1) + 1
            self.maybe_deleted_below[p] = max(self.maybe_deleted_below[p], below)

    def earliest_at_most(self, p: int) -> int | None:
        """The highest earliest offset partition ``p`` may have: ``maybe_deleted_below``, or
        None when retention may have deleted every record (no acknowledged record is young
        enough to stop it, and records whose send was not acknowledged, at offsets the run
        does not know, may follow the last acknowledged one)."""
        if self.retention_ms >= 0 and not any(
                ms >= self.retention_cutoff_ms for ms in self.acked_ms[p].values()):
            return None
        return self.maybe_deleted_below[p]

    def promised(self, p: int, losses_reported: bool = False) -> dict[int, bytes]:
        """The acknowledged records of partition ``p`` no DeleteRecords may have deleted and,
        once ``losses_reported`` (a controller reported a recovery or unclean election), that
        some replica still holds intact."""
        floor = self.maybe_deleted_below[p]
        return {o: v for o, v in self.acked[p].items()
                if o >= floor and (not losses_reported or self.holders[p].get(o))}


class ClusterRun:
    """A simulated cluster, the bookkeeping of what it was asked and promised, and the checks.

    ``apply(step)`` performs one step (recorded in ``steps`` first, so a step that raises is the
    last one recorded); ``check()`` asserts every per-step property, raising
    ``PropertyViolated``. ``event`` receives a short label for notable outcomes (Hypothesis'
    ``event`` in the state machine; ignored on replay)."""

    def __init__(self, cluster_args: Mapping[str, Any], event: EventSink | None = None, *,
                 check_strays: bool = True, per_event_models: bool = True,
                 cross_check: bool = False) -> None:
        self.cluster_args = dict(cluster_args)
        self.per_event_models = per_event_models
        # Two JSON-able extras beside Cluster.simulated's own arguments: broker configs by
        # Kafka name, and the topic configs every topic of the run is created with (an alter
        # that deletes one of them goes back to the run's value, not the broker default).
        args = dict(self.cluster_args)
        properties = args.pop("broker_properties", None)
        self.topic_configs: dict[str, Any] = dict(args.pop("topic_configs", None) or {})
        if properties:
            args["broker_config"] = BrokerConfig.from_properties(dict(properties))
        self.cluster = Cluster.simulated(**args)
        self.world = self.cluster.simulated_world
        self.event: EventSink = event if event is not None else (lambda _label: None)
        self.steps: list[Step] = []
        self.topics: dict[str, TopicBook] = {}
        # Values sent under an earlier incarnation of a name: never to be served under it again.
        self.retired: dict[str, set[bytes]] = {}
        self.faulted: set[tuple[int, int]] = set()  # (broker, dir number from 1)
        self._partitions_of: tuple[list[Any], list[TopicPartition]] = ([None], [])
        self.machine_crashes = 0
        # First: the durable points are read before the broker halts.
        self.world.crash_listeners.insert(0, self._machine_crashed)
        # Every partition's LogStartOffset state, its twin's invariants checked after every
        # event of the world (a RefinementViolation, an AssertionError, names the invariant).
        # These four are most of a run's cost: ``per_event_models=False`` (``logwright fuzz
        # --light``) leaves them out, for long campaigns after the durability properties.
        self.projection = ClusterProjection(self.cluster, follow=self.partitions)
        # The same for ControllerFencing (per partition, over every broker) and FetcherFailure
        # (per replica; its steps too), conformance/controller_fencing.py and fetcher_failure.py.
        self.fencing_projection = ControllerFencingProjection(self.cluster, self.partitions)
        self.fetcher_projection = FetcherFailureProjection(self.cluster, self.partitions)
        # StrayCleanup (per partition name, over every broker; its steps too, against the
        # control requests the controllers sent), conformance/stray_cleanup.py. On unless
        # ``check_strays=False`` (a caller measuring the other checks' cost alone).
        self.stray_projection: StrayCleanupProjection | None = None
        if check_strays:
            self.stray_projection = StrayCleanupProjection(self.cluster, self.partitions)
        # ``cross_check`` (tests): the four check every partition in full after every event,
        # and assert that each one skipped as unchanged (its inputs those of its last quiet
        # check) would have been quiet again: the shortcut checks exactly what a full check does.
        for observer in (self.projection, self.fencing_projection, self.fetcher_projection,
                         self.stray_projection):
            if observer is not None:
                observer.cross_check = cross_check
        if per_event_models:
            self.projection.attach()
            self.fencing_projection.attach()
            self.fetcher_projection.attach()
            if self.stray_projection is not None:
                self.stray_projection.attach()
        # ReplicaMove (every JBOD move of every broker, after each of its file-system
        # operations), conformance/replica_move.py.
        self.move_projection = ReplicaMoveProjection(self.cluster)
        self.move_projection.attach()
        # LeaderElection (per partition: the controller's state and each replica's log against
        # the acknowledged records, the twin's invariants after every step),
        # conformance/leader_election.py.
        self.election_projection = LeaderElectionProjection(self.cluster)

    # ---- the fault model's bookkeeping ---------------------------------------------------------

    def _machine_crashed(self, host: str) -> None:
        b = int(host.rsplit("-", 1)[1])
        self._damage_all(b, self._durable_points(b))
        self.machine_crashes += 1
        self.event("machine lost power in the middle of a task")

    def running(self, b: int) -> bool:
        """Whether broker ``b``'s process is up."""
        return self.cluster.broker(b).alive

    def reachable_from_controller(self, b: int) -> bool:
        """Whether broker ``b`` and the current controller are connected."""
        return self.world.network.connected(f"broker-{b}", self.cluster.controller.node_id)

    def partitions(self) -> list[TopicPartition]:
        """Every partition of every topic the controller knows (a new list each call; made
        again only when the controller's topic records are not the ones of the last call,
        records being immutable)."""
        records = self.cluster.controller.topics()
        if records != self._partitions_of[0]:
            out: list[TopicPartition] = []
            for record in records:
                out.extend(TopicPartition(record.name, p) for p in range(record.partition_count))
            self._partitions_of = (records, out)
        return list(self._partitions_of[1])

    def _durable_points(self, b: int) -> dict[tuple[str, int], int]:
        """Per partition of this run's topics that broker ``b`` holds a log of (of the topic's
        current generation, in a dir still serving), its recovery point: the offset below
        which the log says its records are flushed, which a power loss of ``b``'s machine must
        not take. Empty when ``b`` is down (what its logs flushed is not asked then)."""
        broker = self.cluster.broker(b)
        if not broker.alive:
            return {}
        out: dict[tuple[str, int], int] = {}
        for name, book in self.topics.items():
            for p in book.holders:
                log = broker.log_manager.get_log(TopicPartition(name, p))
                if (log is not None and not log.offline and book.topic_id is not None
                        and log.topic_id == book.topic_id):
                    out[name, p] = log.recovery_point
        return out

    def _damage_all(self, b: int, durable: Mapping[tuple[str, int], int]) -> None:
        """Broker ``b``'s machine lost power: none of its copies counts as intact now, but
        those below its log's recovery point (``durable``, read just before), which were
        flushed and must survive."""
        for name, book in self.topics.items():
            for p, by_offset in book.holders.items():
                kept = durable.get((name, p), 0)
                for offset, holders in by_offset.items():
                    if offset >= kept:
                        holders.discard(b)

    def _damage(self, b: int, topic: str, p: int) -> None:
        book = self.topics.get(topic)
        if book is not None and p in book.holders:
            for holders in book.holders[p].values():
                holders.discard(b)

    def losses_reported(self, topic: str, book: TopicBook, p: int) -> bool:
        """Whether a controller reported, for this partition of this generation of the topic,
        an election that may lose acknowledged records (a recovery election, where every
        replica may have lost some, or an unclean one)."""
        tp = TopicPartition(topic, p)
        return any(e[0] == tp and e[1] == book.topic_id and e[2] in ("recovery", "unclean")
                   for c in self.cluster.controllers for e in c.reported_elections)

    def _holding(self, book: TopicBook, p: int, offsets: Iterable[int]) -> dict[int, set[int]]:
        """Which live brokers' replicas of ``book``'s partition ``p`` hold the acknowledged
        record at each of ``offsets``."""
        out: dict[int, set[int]] = {o: set() for o in offsets}
        tp = TopicPartition(self._name_of(book), p)
        for b, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            part = broker.replica_manager.describe().get(tp)
            if part is None or part.offline or part.log.topic_id != book.topic_id:
                continue
            try:
                held = {o: r.value for o, r in part.log.read_records()}
            except KafkaStorageError:
                continue
            for o in out:
                if held.get(o) == book.acked[p][o]:
                    out[o].add(b)
        return out

    def _name_of(self, book: TopicBook) -> str:
        return next(name for name, b in self.topics.items() if b is book)

    def dir_faulted(self, b: int, tp: TopicPartition) -> bool:
        """Whether broker ``b``'s replica of ``tp`` is missing or offline."""
        part = self.cluster.broker(b).replica_manager.describe().get(tp)
        return part is None or part.offline

    # ---- steps ---------------------------------------------------------------------------------

    def apply(self, step: Step) -> None:
        """Record ``step`` and perform it."""
        self.steps.append(step)
        self._perform(step)

    def _perform(self, step: Step) -> None:
        op = step["op"]
        handler = getattr(self, f"_op_{op}", None)
        if op not in OPS or handler is None:
            raise ValueError(f"unknown trace op {op!r}")
        handler(step)

    def _book(self, topic: str) -> TopicBook:
        return self.topics[topic]

    def _op_create_topic(self, step: Step) -> None:
        name = step["topic"]
        try:
            configs = {**self.topic_configs, **(step.get("configs") or {})}
            topic_id: Uuid | None = self.cluster.create_topic(
                name, step["partitions"], step["replication_factor"], configs or None)
        except KafkaError as exc:
            self.event(f"create_topic failed: {exc.name}")
            record = self.cluster.store.topic(name)
            if record is None or (name in self.topics
                                  and self.topics[name].topic_id == record.topic_id):
                return
            topic_id = record.topic_id
        if name in self.topics:  # not expected: creating over a live name fails above
            return
        self.topics[name] = TopicBook(topic_id, step["partitions"])

    def _retire(self, name: str) -> None:
        book = self.topics.pop(name, None)
        if book is not None:
            gone = self.retired.setdefault(name, set())
            for values in book.sent.values():
                gone |= values

    def _op_delete_topic(self, step: Step) -> None:
        name = step["topic"]
        try:
            self.cluster.delete_topic(name)
        except KafkaError as exc:
            self.event(f"delete_topic failed: {exc.name}")
            if self.cluster.store.topic(name) is not None:
                return
        self._retire(name)

    def _op_recreate_topic(self, step: Step) -> None:
        """Delete a topic and create it again at once, with no time passing in between."""
        name = step["topic"]
        try:
            self.cluster.controller.delete_topic(name)
        except KafkaError as exc:
            self.event(f"delete_topic failed: {exc.name}")
            if self.cluster.store.topic(name) is not None:
                return
        self._retire(name)
        self._op_create_topic(step)

    def _op_produce(self, step: Step) -> None:
        topic = step.get("topic", "s")
        p = step["partition"]
        acks = step.get("acks", -1)
        values = [v.encode() for v in step["values"]]
        book = self.topics.get(topic)
        sent_ms = self.world.clock.now_ms()  # the batch's timestamp: the client builds it now
        if book is not None and p < book.partitions:
            book.sent[p].update(values)
        try:
            base = self.cluster.produce(topic, p, values, acks=acks, timeout_ms=5_000)
        except KafkaError as exc:
            self.event(f"produce failed: {exc.name}")
            return  # unknown outcome: only acknowledged records are promised
        self.event(f"produce acknowledged (acks={acks})")
        if acks in (-1, "all") and book is not None and self.topics.get(topic) is book:
            for i, v in enumerate(values):
                book.acked[p][base + i] = v
                book.acked_ms[p][base + i] = sent_ms
            book.holders[p].update(self._holding(book, p, range(base, base + len(values))))

    def _op_fetch(self, step: Step) -> None:
        topic, p = step.get("topic", "s"), step["partition"]
        book = self.topics.get(topic)
        try:
            records = self.cluster.fetch(topic, p, step.get("offset", 0), timeout_ms=5_000)
        except KafkaError as exc:
            self.event(f"fetch failed: {exc.name}")
            return
        self.event("fetch answered")
        if book is None or p >= book.partitions:
            return
        self._check_served(topic, p, book, {r.offset: r.value for r in records}, "a consumer")

    def _check_served(self, topic: str, p: int, book: TopicBook,
                      served: Mapping[int, bytes | None], who: str) -> None:
        book.retained_at(self.world.clock.now_ms())
        floor = book.deleted_below[p]
        below = [o for o in served if o < floor]
        _ensure(not below, f"{who} reads {topic}-{p} offset {min(below or [0])}, below the "
                f"low watermark {floor} a DeleteRecords acknowledged (NeverServeBelowLogStart)")
        for offset, value in served.items():
            if value is None or value in book.sent[p]:
                continue
            origin = ("a deleted incarnation of the topic"
                      if value in self.retired.get(topic, set()) else "no send to this partition")
            raise PropertyViolated(
                f"{who} reads {value!r} at {topic}-{p} offset {offset}, a record of {origin} "
                f"(topic id {book.topic_id})")
        for offset, value in book.promised(p, self.losses_reported(topic, book, p)).items():
            _ensure(offset not in served or served[offset] == value,
                    f"{who} reads {served.get(offset)!r} at {topic}-{p} offset {offset}, "
                    f"expected the acknowledged {value!r}")

    def _op_delete_records(self, step: Step) -> None:
        """DeleteRecords of one partition below ``offset``; an acknowledged low watermark is
        booked (never to be served again), an attempt too (its records may be gone)."""
        topic, p, offset = step.get("topic", "s"), step["partition"], step["offset"]
        book = self.topics.get(topic)
        if book is not None and p < book.partitions:
            book.maybe_deleted_below[p] = max(book.maybe_deleted_below[p], offset)
        result = self.cluster.delete_records({(topic, p): offset}, timeout_ms=5_000)[(topic, p)]
        if not result.ok:
            self.event(f"delete_records failed: {result.error.name}")
            return
        self.event("delete_records acknowledged")
        _ensure(result.low_watermark >= offset,
                f"{topic}-{p}: delete_records below {offset} acknowledged with low watermark "
                f"{result.low_watermark}")
        if book is not None and self.topics.get(topic) is book and p < book.partitions:
            self.projection.acknowledge(TopicPartition(topic, p), result.low_watermark)
            book.deleted_below[p] = max(book.deleted_below[p], result.low_watermark)
            book.maybe_deleted_below[p] = max(book.maybe_deleted_below[p],
                                              result.low_watermark)

    def _op_list_offsets(self, step: Step) -> None:
        topic, p = step.get("topic", "s"), step["partition"]
        which = cast(Literal["earliest", "latest"], step["which"])
        try:
            offset = self.cluster.list_offsets(topic, p, which, timeout_ms=5_000)
        except KafkaError as exc:
            self.event(f"list_offsets failed: {exc.name}")
            return
        self.event("list_offsets answered")
        # DeleteRecords and retention raise a log start offset: the earliest offset of a current
        # incarnation lies between the highest acknowledged low watermark and the highest
        # offset asked (or that retention may have deleted below).
        book = self.topics.get(topic)
        if book is not None:
            book.retained_at(self.world.clock.now_ms())
        if which == "earliest" and book is not None and p < book.partitions:
            low, high = book.deleted_below[p], book.earliest_at_most(p)
            _ensure(low <= offset and (high is None or offset <= high),
                    f"earliest offset of {topic}-{p} is {offset}, expected from {low} "
                    f"(acknowledged deletion) to {high}")
        _ensure(offset >= 0, f"list_offsets {which} of {topic}-{p} answered {offset}")

    def _op_alter_configs(self, step: Step) -> None:
        retention = (step.get("set") or {}).get("retention.ms")
        book = self.topics.get(step["topic"])
        if book is not None and isinstance(retention, int) and retention >= 0:
            # Booked before the change: it applies on the brokers while the call waits.
            book.retained_at(self.world.clock.now_ms())
            book.retention_ms = (retention if book.retention_ms < 0
                                 else min(book.retention_ms, retention))
            book.retained_at(self.world.clock.now_ms())
        try:
            deleted = step.get("delete", [])
            restored = {k: self.topic_configs[k] for k in deleted if k in self.topic_configs}
            self.cluster.alter_topic_configs(
                step["topic"], {**(step.get("set") or {}), **restored} or None,
                [k for k in deleted if k not in restored])
        except KafkaError as exc:
            self.event(f"alter_topic_configs failed: {exc.name}")

    def _op_reassign(self, step: Step) -> None:
        plan = json.dumps({"version": 1, "partitions": [
            {"topic": step.get("topic", "s"), "partition": step["partition"],
             "replicas": step["replicas"]}]})
        try:
            self.cluster.reassign(plan, wait=False)
        except KafkaError as exc:
            self.event(f"reassignment refused: {exc.name}")
            return
        self.event("reassignment started")

    def _op_alter_log_dir(self, step: Step) -> None:
        """Move broker ``broker``'s replica of a partition to its log dir ``dir`` (1 or 2;
        KIP-113, docs/jbod.md): the copy and the swap go on in the background, racing whatever
        comes next; a replica not hosted there yet takes the dir when it is created."""
        b, j = step["broker"], step["dir"]
        if not self.running(b):
            self.event("alter_log_dir: broker down")
            return
        key = (step.get("topic", "s"), step["partition"], b)
        try:
            error = self.cluster.alter_replica_log_dirs(
                {key: self.cluster.log_dirs[b][j - 1]})[key]
        except KafkaError as exc:
            self.event(f"alter_log_dir refused: {exc.name}")
            return
        self.event(f"alter_log_dir: {error.name}")

    def _op_crash(self, step: Step) -> None:
        b, power = step["broker"], step["power_loss"]
        durable = self._durable_points(b) if power else {}
        self.cluster.crash_broker(b, power_loss=power)
        if power:
            self._damage_all(b, durable)

    def _op_crash_during(self, step: Step) -> None:
        """Broker ``broker``'s machine loses power right after its ``after_ops``-th file system
        operation from now, if it makes that many during the nested ``step``; disarmed after."""
        b = step["broker"]
        fs = self.world.new_fs(f"broker-{b}")
        fs.crash_after(step["after_ops"])
        try:
            self._perform(step["step"])
        except SimulatedCrash as crash:  # outside any task: the facade's own start-up of b
            assert crash.fs is fs, "only the armed disk crashes"
            self.world.machine_crashed(f"broker-{b}")
        finally:
            fs.crash_after(None)

    def _op_restart(self, step: Step) -> None:
        b = step["broker"]
        if step.get("repair", False):
            fs = self.world.new_fs(f"broker-{b}")
            for broker, j in sorted(self.faulted):
                if broker == b:
                    fs.clear_fault(self.cluster.log_dirs[b][j - 1])
                    self.faulted.discard((broker, j))
        try:
            self.cluster.restart_broker(b)
        except KafkaError as exc:
            # Registration may wait behind a network partition; it retries on its own.
            self.event(f"restart: {exc.name}")

    def _op_fail_dir(self, step: Step) -> None:
        b, j = step["broker"], step["dir"]
        path = self.cluster.log_dirs[b][j - 1]
        self.world.new_fs(f"broker-{b}").inject_fault(path, Fault.EIO)
        self.faulted.add((b, j))
        broker = self.cluster.broker(b)
        for tp in self.partitions():
            held = broker.log_manager.dir_of(tp) if broker.alive else None
            if held is None or held.path == path:  # not located: counted as damaged
                self._damage(b, tp.topic, tp.partition)

    def _op_fail_controller(self, step: Step) -> None:
        self.cluster.fail_controller(zombie=step["zombie"])

    def _op_isolate(self, step: Step) -> None:
        self.cluster.partition_network(step["broker"], self.cluster.controller.node_id)

    def _node(self, name: int | str) -> int | str:
        """``"controller"`` is the active controller, ``"client"`` the facade's client."""
        if name == "controller":
            return self.cluster.controller.node_id
        return self.cluster.client.node.node_id if name == "client" else name

    def _op_cut(self, step: Step) -> None:
        a, b = self._node(step["a"]), self._node(step["b"])
        if "client" in (step["a"], step["b"]):  # the facade names brokers and controllers only
            ids = [f"broker-{n}" if isinstance(n, int) else n for n in (a, b)]
            self.world.network.partition(ids[0], ids[1])
        else:
            self.cluster.partition_network(a, b)

    def network_disturbed(self) -> bool:
        """Whether a link is cut or the network loses, duplicates or reorders more than the
        cluster was created with."""
        net = self.world.network
        return net.partitioned or (net.drop_rate, net.duplicate_rate, net.max_delay_ms) != (
            self.cluster_args.get("drop_rate", 0.0), self.cluster_args.get("duplicate_rate", 0.0),
            self.cluster_args.get("max_delay_ms", 5))

    def _op_heal(self, _step: Step) -> None:
        self.cluster.heal_network()
        self._calm_network()

    def _calm_network(self) -> None:
        net = self.world.network
        net.drop_rate = self.cluster_args.get("drop_rate", 0.0)
        net.duplicate_rate = self.cluster_args.get("duplicate_rate", 0.0)
        net.max_delay_ms = self.cluster_args.get("max_delay_ms", 5)

    def _op_network(self, step: Step) -> None:
        """Message loss, duplication and reordering (the spread of delays), drawn from the
        world's seeded generator until the next ``heal``."""
        net = self.world.network
        net.drop_rate = step["drop_rate"]
        net.duplicate_rate = step["duplicate_rate"]
        net.max_delay_ms = max(net.min_delay_ms, step["max_delay_ms"])

    def _op_advance(self, step: Step) -> None:
        self.cluster.advance_time(step["ms"])

    def _op_settle(self, _step: Step) -> None:
        """Heal the network and run until idle (no assertion: the traces of known limits)."""
        self.cluster.heal_network()
        self.cluster.run_until_idle(max_ms=60_000)

    def _op_repair_and_settle(self, _step: Step) -> None:
        """Heal the network, repair every dir, restart every broker that is down or had a failed
        dir: then every live replica catches up, every assigned replica exists, and a consumer
        reads every acknowledged record."""
        self._op_heal({})
        for b in sorted(self.cluster.brokers):
            if not self.running(b) or any(x == b for x, _ in self.faulted):
                if self.running(b):
                    self.cluster.crash_broker(b, power_loss=False)
                self._op_restart({"broker": b, "repair": True})
        _ensure(self.cluster.run_until_idle(max_ms=120_000),
                "after repair, the replicas did not catch up within 120 s")
        self._check_assigned_replicas_exist()
        self._check_consumer_view()

    # ---- properties ----------------------------------------------------------------------------

    def check(self) -> None:
        """Every per-step property; raises ``PropertyViolated``."""
        for book in self.topics.values():
            book.retained_at(self.world.clock.now_ms())
        self._logs_served_under_their_own_topic_id()
        self._offsets_ordered_on_every_replica()
        self._no_broker_is_ahead_of_the_controller()
        self._leaders_hold_acknowledged_records_of_their_topic_only()
        if self.per_event_models:
            self.projection.check("after a step")
            self.fencing_projection.check("after a step")
            self.fetcher_projection.check("after a step")
            if self.stray_projection is not None:
                self.stray_projection.check("after a step")
        for name, book in self.topics.items():
            for p in range(book.partitions):
                self.election_projection.check(
                    TopicPartition(name, p), book.topic_id, book.acked[p], book.holders[p],
                    book.maybe_deleted_below[p], "after a step")

    def _logs_served_under_their_own_topic_id(self) -> None:
        """Topic identity: every replica a running broker serves is of its log's own topic
        id, and the log holds no record sent to another generation of its topic or another
        partition (the records of each generation are tracked apart, by topic id)."""
        by_id = {book.topic_id: (name, book) for name, book in self.topics.items()}
        for b, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            for tp, part in broker.replica_manager.describe().items():
                held = part.log.topic_id
                _ensure(part.topic_id is None or held is None or part.topic_id == held,
                        f"broker {b} serves {tp} as topic id {part.topic_id} from a log of "
                        f"topic id {held}")
                found = by_id.get(part.topic_id)
                if found is None or found[0] != tp.topic or part.offline \
                        or tp.partition >= found[1].partitions:
                    continue
                try:
                    records = {o: r.value for o, r in part.log.read_records()}
                except KafkaStorageError:
                    continue
                self._check_unacked_origin(tp.topic, tp.partition, found[1], records,
                                           f"broker {b}'s replica")
                book = found[1]
                for offset, value in book.acked[tp.partition].items():
                    if records.get(offset) == value:  # a copy seen: intact (again)
                        book.holders[tp.partition].setdefault(offset, set()).add(b)

    def _check_unacked_origin(self, topic: str, p: int, book: TopicBook,
                              held: Mapping[int, bytes | None], who: str) -> None:
        for offset, value in held.items():
            if value is None or value in book.sent[p]:
                continue
            origin = ("a deleted incarnation of the topic"
                      if value in self.retired.get(topic, set()) else "no send to this partition")
            raise PropertyViolated(
                f"{who} holds {value!r} at {topic}-{p} offset {offset}, a record of {origin} "
                f"(topic id {book.topic_id})")

    def _offsets_ordered_on_every_replica(self) -> None:
        for b, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            for part in broker.replica_manager.describe().values():
                if part.offline:
                    continue
                lso, hw, leo = part.log_start_offset, part.high_watermark, part.log_end_offset
                _ensure(0 <= lso <= hw <= leo,
                        f"broker {b}: {part}: not 0 <= {lso} <= {hw} <= {leo}")

    def _no_broker_is_ahead_of_the_controller(self) -> None:
        store_epoch = self.cluster.store.controller_epoch()
        for b, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue
            _ensure(broker.controller_epoch <= store_epoch,
                    f"broker {b} accepted controller epoch {broker.controller_epoch}, the store "
                    f"only issued {store_epoch}")
            for tp, part in broker.replica_manager.describe().items():
                state = self.cluster.store.partition(tp)
                if state is None or part.topic_id != state.topic_id:
                    continue  # a replica of a deleted incarnation: epochs of another topic
                _ensure(part.leader_epoch <= state.leader_epoch,
                        f"broker {b} holds {tp} at leader epoch {part.leader_epoch}, the store "
                        f"only issued {state.leader_epoch}")

    def _leaders_hold_acknowledged_records_of_their_topic_only(self) -> None:
        """The leader the controller elected holds every acknowledged record at its offset, and
        nothing sent to another partition or another incarnation of the topic.

        Checked on the leader's own log: right after an election the new leader's high
        watermark may lag, so a consumer would briefly see less (Kafka behaves the same); the
        consumer view is checked at settle points."""
        for name, book in sorted(self.topics.items()):
            for p in range(book.partitions):
                tp = TopicPartition(name, p)
                state = self.cluster.store.partition(tp)
                if state is None or state.topic_id != book.topic_id:
                    continue
                leader = self.cluster.brokers.get(state.leader)
                if leader is None or not leader.alive:
                    continue
                part = leader.replica_manager.describe().get(tp)
                if part is None or part.offline or not part.is_leader \
                        or part.leader_epoch != state.leader_epoch:
                    continue
                if part.topic_id != book.topic_id:
                    # The elected leader has not heard of this generation yet: it still leads
                    # the deleted one (whose epochs may coincide), refusing this one's produce
                    # and fetch by its id; the generation's own replica comes with its
                    # LeaderAndIsr (checked at settle points).
                    continue
                try:
                    held = {offset: rec.value for offset, rec in part.log.read_records()}
                except KafkaStorageError:
                    continue  # the leader's dir failed just now
                self.event("leader's log checked")
                self._check_served(name, p, book, held, f"leader {state.leader}'s log")
                for offset, value in book.promised(p, self.losses_reported(name, book, p)).items():
                    _ensure(held.get(offset) == value,
                            f"{tp}: acknowledged record at {offset} is {held.get(offset)!r} on "
                            f"leader {state.leader} (epoch {state.leader_epoch}), expected "
                            f"{value!r}")

    def _check_assigned_replicas_exist(self) -> None:
        for tp in self.partitions():
            state = self.cluster.controller.partition_state(tp)
            for r in state.replicas:
                broker = self.cluster.brokers.get(r)
                if broker is None or not broker.alive:
                    continue
                part = broker.replica_manager.describe().get(tp)
                _ensure(part is not None and not part.offline,
                        f"after settling, broker {r} does not host its assigned replica of {tp}")
                assert part is not None
                _ensure(part.topic_id == state.topic_id,
                        f"after settling, broker {r} hosts {tp} with topic id {part.topic_id}, "
                        f"the topic's id is {state.topic_id}")

    def _consume(self, topic: str, p: int, max_fetches: int = 1_000) -> dict[int, bytes | None]:
        """Every committed record of ``topic``-``p`` from its earliest offset (0 unless a
        DeleteRecords raised it), as a consumer polling until an empty answer reads them (one
        fetch may stop at a segment's end, as in Kafka)."""
        got: dict[int, bytes | None] = {}
        offset = self.cluster.list_offsets(topic, p, "earliest", timeout_ms=10_000)
        for _ in range(max_fetches):
            records = self.cluster.fetch(topic, p, offset, timeout_ms=10_000)
            if not records:
                break
            got.update((r.offset, r.value) for r in records)
            offset = records[-1].offset + 1
        return got

    def _check_consumer_view(self) -> None:
        for name, book in sorted(self.topics.items()):
            for p in range(book.partitions):
                got = self._consume(name, p)
                self._check_served(name, p, book, got, "after settling, a consumer")
                for offset, value in book.promised(p, self.losses_reported(name, book, p)).items():
                    _ensure(got.get(offset) == value,
                            f"{name}-{p}: after settling, a consumer reads {got.get(offset)!r} "
                            f"at {offset}, expected the acknowledged {value!r}")


def replay(trace: Mapping[str, Any], check: bool = True) -> ClusterRun:
    """Run a trace's steps on a new simulated cluster, checking every property after every step
    (with ``check``); raises ``PropertyViolated`` (or what the cluster raised) where it fails."""
    run = ClusterRun(trace["cluster"])
    if check:
        run.check()
    for step in trace["steps"]:
        run.apply(step)
        if check:
            run.check()
    return run
