"""The Hypothesis state machine of the simulated cluster: produce, fetch, crashes (with and
without power loss), restarts, controller failover (with zombies), network partitions, log dir
faults. model_tests/ runs it as a test and bench/ measures its steps per second; it needs
hypothesis (the ``dev`` extra).

Invariants after every step:
- committed records (acknowledged with acks=all) survive any crash that leaves one in-sync
  replica's disk: a power loss is only injected while another in-sync replica of every partition
  the broker is in sync for is running, and then every acknowledged record must still be readable,
  at its offset, with its value. The fault model: a fault that destroys data (power loss, a failed
  log dir) strikes only while another in-sync replica of each affected partition is running and
  reachable by the controller, and until the controller has dropped the damaged replica from the
  ISR no further fault (crash, partition, dir failure) may strike and no reassignment may start.
  Faults that keep data (process kills, network partitions) are otherwise free. Outside this
  model acknowledged records can be lost, here as in Kafka before KIP-966 (see docs/cluster.md,
  "Limits");
- 0 <= logStart <= HW <= LEO on every replica of every running broker;
- a failed partition never stops the others: once the network heals and faults are repaired, every
  partition's live replicas catch up;
- the LogStartOffset twin's invariants on every partition's abstract state, after every event of
  the simulated world and after every step (``logwright.conformance.log_start_offset.
  ClusterProjection``: NoNewDataDeleted, NeverServeBelowLogStart and CommittedDataOnIsr, every
  in-sync replica holding every committed offset).
"""

from __future__ import annotations

import json

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from logwright import Cluster, KafkaError
from logwright.conformance.log_start_offset import ClusterProjection
from logwright.errors import KafkaStorageError
from logwright.identity import TopicPartition
from logwright.world import Fault

BROKERS = (1, 2, 3)
PARTITIONS = 3
TOPIC = "s"


class ClusterMachine(RuleBasedStateMachine):
    """Random client traffic and faults against three brokers and one topic of three partitions."""

    cluster: Cluster

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed,
                                         max_delay_ms=10)
        self.cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
        self.projection = ClusterProjection(self.cluster, TOPIC, PARTITIONS)
        self.projection.attach()
        self.acked: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
        self.counter = 0
        self.faulted: set[tuple[int, str]] = set()
        self.partitioned = False
        self.lost_power: set[int] = set()  # brokers whose lost data is not yet detected
        self.isolated: set[int] = set()

    # ---- helpers -----------------------------------------------------------------------------

    def _running(self, b: int) -> bool:
        return self.cluster.broker(b).alive

    def _detection_pending(self) -> bool:
        """Whether a broker whose data was destroyed is still an in-sync replica in the
        controller's view (the controller drops it when it notices the failure, or when the
        broker registers again as a new incarnation)."""
        self.lost_power = {b for b in self.lost_power if any(
            b in self.cluster.partition_state(TOPIC, p).isr for p in range(PARTITIONS))}
        return bool(self.lost_power)

    def _may_lose_disk(self, b: int) -> bool:
        """Whether losing ``b``'s unsynced data keeps another in-sync replica's disk everywhere."""
        for p in range(PARTITIONS):
            isr = self.cluster.partition_state(TOPIC, p).isr
            if b in isr and not any(r != b and self._running(r) and r not in self.isolated
                                    and not self._dir_faulted(r, p) for r in isr):
                return False
        return True

    def _dir_faulted(self, b: int, p: int) -> bool:
        part = self.cluster.broker(b).replica_manager.describe().get(TopicPartition(TOPIC, p))
        return part is None or part.offline

    # ---- rules ---------------------------------------------------------------------------------

    @rule(p=st.integers(0, PARTITIONS - 1), n=st.integers(1, 3))
    def produce(self, p: int, n: int) -> None:
        vals = [b"m%d" % (self.counter + i) for i in range(n)]
        self.counter += n
        try:
            base = self.cluster.produce(TOPIC, p, vals, acks=-1, timeout_ms=5_000)
        except KafkaError as exc:
            event(f"produce failed: {exc.name}")
            return  # unknown outcome: only acknowledged records are promised
        event("produce acknowledged")
        for i, v in enumerate(vals):
            self.acked[p][base + i] = v

    @rule(b=st.sampled_from(BROKERS), data=st.data())
    def crash(self, b: int, data: st.DataObject) -> None:
        if not self._running(b) or self._detection_pending():
            return
        power = self._may_lose_disk(b) and data.draw(st.booleans(), label="power_loss")
        event("crash with power loss" if power else "crash, page cache kept")
        self.cluster.crash_broker(b, power_loss=power)
        if power:
            self.lost_power.add(b)

    @rule(b=st.sampled_from(BROKERS))
    def restart(self, b: int) -> None:
        if self._running(b):
            return
        fs = self.cluster.simulated_world.new_fs(f"broker-{b}")
        for broker, d in list(self.faulted):
            if broker == b:
                fs.clear_fault(d)
                self.faulted.discard((broker, d))
        try:
            self.cluster.restart_broker(b)
        except KafkaError:
            pass  # registration may wait behind a network partition; it retries on its own

    @rule(zombie=st.booleans())
    def fail_controller(self, zombie: bool) -> None:
        if len(self.cluster.controllers) < 4:
            self.cluster.fail_controller(zombie=zombie)

    @rule(b=st.sampled_from(BROKERS))
    def isolate_from_controller(self, b: int) -> None:
        if self._detection_pending():
            return
        self.cluster.partition_network(b, self.cluster.controller.node_id)
        self.isolated.add(b)
        self.partitioned = True

    @rule()
    def heal(self) -> None:
        self.cluster.heal_network()
        self.isolated.clear()
        self.partitioned = False

    @rule(b=st.sampled_from(BROKERS), j=st.integers(1, 2))
    def fail_dir(self, b: int, j: int) -> None:
        if not self._running(b) or not self._may_lose_disk(b) or self._detection_pending():
            return
        d = self.cluster.log_dirs[b][j - 1]
        self.cluster.simulated_world.new_fs(f"broker-{b}").inject_fault(d, Fault.EIO)
        self.faulted.add((b, d))
        self.lost_power.add(b)

    @rule(p=st.integers(0, PARTITIONS - 1),
          replicas=st.permutations(BROKERS).flatmap(
              lambda order: st.integers(2, 3).map(lambda n: list(order[:n]))))
    def reassign(self, p: int, replicas: list[int]) -> None:
        """Move partition ``p`` to ``replicas`` (shrinking to two or reordering three); not
        while a damaged replica is still counted in sync (it could drop the intact one)."""
        if self._detection_pending():
            return
        plan = json.dumps({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": p, "replicas": replicas}]})
        try:
            self.cluster.reassign(plan, wait=False)
        except KafkaError as exc:
            event(f"reassignment refused: {exc.name}")
            return
        event("reassignment started")

    @rule(ms=st.sampled_from([100, 2_000, 12_000]))
    def advance(self, ms: int) -> None:
        self.cluster.advance_time(ms)

    @precondition(lambda self: hasattr(self, "cluster"))
    @rule()
    def repair_everything_and_settle(self) -> None:
        """Heal the network, repair disks, restart every broker: then every live replica of
        every partition catches up (a failed partition never stopped the others)."""
        self.heal()
        for b in BROKERS:
            if not self._running(b) or any(x == b for x, _ in self.faulted):
                if self._running(b):
                    self.cluster.crash_broker(b, power_loss=False)
                self.restart(b)
        assert self.cluster.run_until_idle(max_ms=120_000), "replicas did not catch up"
        self._check_consumer_view()

    # ---- invariants ----------------------------------------------------------------------------

    @invariant()
    def offsets_ordered_on_every_replica(self) -> None:
        if not hasattr(self, "cluster"):
            return
        for b in BROKERS:
            broker = self.cluster.broker(b)
            if not broker.alive:
                continue
            for part in broker.replica_manager.describe().values():
                if part.offline:
                    continue
                lso, hw, leo = part.log_start_offset, part.high_watermark, part.log_end_offset
                assert 0 <= lso <= hw <= leo, f"broker {b} {part}"

    @invariant()
    def refines_the_log_start_offset_model(self) -> None:
        """The twin's invariants hold on every partition (also checked after every event)."""
        if hasattr(self, "projection"):
            self.projection.check("after a step")

    @invariant()
    def no_broker_is_ahead_of_the_controller(self) -> None:
        """A fenced request never changed state: no replica holds a leader epoch the
        authoritative store has not issued, and no broker accepted a controller epoch that was
        never claimed."""
        if not hasattr(self, "cluster"):
            return
        store_epoch = self.cluster.store.controller_epoch()
        for b in BROKERS:
            broker = self.cluster.broker(b)
            if not broker.alive:
                continue
            assert broker.controller_epoch <= store_epoch, f"broker {b}"
            for tp, part in broker.replica_manager.describe().items():
                state = self.cluster.controller.partition_state(tp)
                assert part.leader_epoch <= state.leader_epoch, (
                    f"broker {b} holds {tp} at leader epoch {part.leader_epoch}, the store only "
                    f"issued {state.leader_epoch}")

    @invariant()
    def acknowledged_records_survive(self) -> None:
        """The leader the controller elected holds every acknowledged record, at its offset.

        Checked on the leader's own log: right after an election the new leader's high
        watermark may lag, so a consumer would briefly see less (Kafka behaves the same); the
        consumer view is checked at settled points (``repair_everything_and_settle``).
        """
        if not hasattr(self, "cluster"):
            return
        for p, records in self.acked.items():
            if not records:
                continue
            tp = TopicPartition(TOPIC, p)
            state = self.cluster.partition_state(TOPIC, p)
            leader = self.cluster.brokers.get(state.leader)
            if leader is None or not leader.alive:
                event("no live leader to check")
                continue
            part = leader.replica_manager.describe().get(tp)
            if part is None or part.offline or not part.is_leader \
                    or part.leader_epoch != state.leader_epoch:
                event("leader not serving yet")
                continue
            try:
                held = {offset: rec.value for offset, rec in part.log.read_records()}
            except KafkaStorageError:
                event("leader's dir failed just now")
                continue
            event("acknowledged records checked on the leader")
            for offset, value in records.items():
                assert held.get(offset) == value, (
                    f"partition {p}: acknowledged record at {offset} is {held.get(offset)!r} on "
                    f"leader {state.leader} (epoch {state.leader_epoch}), expected {value!r}")

    def _check_consumer_view(self) -> None:
        for p, records in self.acked.items():
            got = {r.offset: r.value for r in self.cluster.fetch(TOPIC, p, 0, timeout_ms=10_000)}
            for offset, value in records.items():
                assert got.get(offset) == value, (
                    f"partition {p}: a consumer reads {got.get(offset)!r} at {offset}, "
                    f"expected the acknowledged {value!r}")

