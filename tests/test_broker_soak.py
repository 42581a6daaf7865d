"""A seeded soak of real brokers under a small, correct controller played by the test: produce,
leader changes (clean, from the ISR), broker crashes and restarts, network cuts, time passing.

Checked after every step: 0 <= log start offset <= high watermark <= log end offset on every
replica; every record acknowledged with acks=all is on the current leader at its offset; two
replicas agree on every offset below both their high watermarks. At the end, healed, every
replica converges to the leader's log.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from logwright.errors import Errors
from logwright.protocol import AlterPartitionRequest, AlterPartitionResponse, ProduceResponse
from logwright.storage.naming import TopicPartition
from tests.test_broker_harness import World, fast_config, state

BROKERS = (1, 2, 3)
TPS = (TopicPartition("s", 0), TopicPartition("s", 1))


@dataclass
class PartitionView:
    """The controller's view of one partition."""

    leader: int
    leader_epoch: int = 1
    partition_epoch: int = 1
    isr: list[int] = field(default_factory=lambda: list(BROKERS))


class Soak:
    def __init__(self, seed: int, lossy: bool = False) -> None:
        self.rng = random.Random(seed)
        # On a lossy network every lost request costs a socket timeout; shorter ones keep the
        # run short (Kafka's are 30 s).
        config = fast_config(replica_socket_timeout_ms=3_000, controller_socket_timeout_ms=3_000)
        self.w = World(broker_ids=BROKERS, seed=seed, config=config,
                       drop_rate=0.02 if lossy else 0.0, duplicate_rate=0.02 if lossy else 0.0)
        self.unanswered: dict[tuple[int, TopicPartition], tuple[int, int]] = {}
        self.w.controller.answer_alter_partition = False
        self.view = {tp: PartitionView(leader=1 + n) for n, tp in enumerate(TPS)}
        self.committed: dict[TopicPartition, dict[int, bytes]] = {tp: {} for tp in TPS}
        self.pending: dict[int, tuple[TopicPartition, list[bytes]]] = {}
        self.cut: set[frozenset[str]] = set()
        self.handled_alters = 0
        self.counter = 0
        for tp in TPS:
            self.send_state(tp)

    # ---- the controller's side ------------------------------------------------------------------

    def send_state(self, tp: TopicPartition, only: int | None = None) -> None:
        v = self.view[tp]
        st = state(tp, v.leader, v.leader_epoch, v.isr, BROKERS,
                   partition_epoch=v.partition_epoch)
        for broker_id in BROKERS:
            if broker_id in self.w.brokers and (only is None or only == broker_id):
                cid = self.w.controller.leader_and_isr(broker_id, [st])
                self.unanswered[broker_id, tp] = (cid, self.w.clock.now_ms())

    def resend_unanswered(self) -> None:
        """A controller sends a control request again until it is answered (the network may
        lose it); only the latest state of each partition matters."""
        for (broker_id, tp), (cid, sent_ms) in list(self.unanswered.items()):
            if cid in self.w.controller.responses or broker_id not in self.w.brokers:
                del self.unanswered[broker_id, tp]
            elif self.w.clock.now_ms() - sent_ms >= 500:
                self.send_state(tp, only=broker_id)

    def handle_alter_partitions(self) -> None:
        requests = [m for _, m in self.w.controller.received[self.handled_alters:]]
        self.handled_alters = len(self.w.controller.received)
        for m in requests:
            if not isinstance(m, AlterPartitionRequest):
                continue
            v = self.view[m.tp]
            same_term = m.broker_id == v.leader and m.leader_epoch == v.leader_epoch
            # Already applied (its answer was lost): answer with the current state.
            repeat = same_term and list(m.new_isr) == v.isr
            ok = repeat or (same_term and m.partition_epoch == v.partition_epoch
                            and all(b in self.w.brokers for b in m.new_isr if b not in v.isr))
            if ok and not repeat:
                v.partition_epoch += 1
                v.isr = list(m.new_isr)
            self.w.network.send(self.w.controller.node_id, f"broker-{m.broker_id}",
                                AlterPartitionResponse(
                                    m.correlation_id, m.tp,
                                    Errors.NONE if ok else Errors.FENCED_LEADER_EPOCH,
                                    v.leader_epoch, v.partition_epoch, tuple(v.isr)))

    def elect(self, tp: TopicPartition, exclude: int | None = None) -> None:
        v = self.view[tp]
        if exclude is not None and exclude in v.isr:
            v.isr.remove(exclude)
        candidates = [b for b in v.isr if b in self.w.brokers and b != exclude]
        assert candidates, "the soak never loses the last ISR member"
        if v.leader not in candidates:
            v.leader = self.rng.choice(candidates)
        v.leader_epoch += 1
        v.partition_epoch += 1
        self.send_state(tp)

    # ---- steps --------------------------------------------------------------------------------

    def produce(self, acks: int) -> None:
        tp = self.rng.choice(TPS)
        self.counter += 1
        values = [b"v%d.%d" % (self.counter, i) for i in range(self.rng.randint(1, 3))]
        cid = self.w.produce_async(self.view[tp].leader, tp, values, acks=acks,
                                   timeout_ms=self.rng.choice([500, 5_000, 30_000]))
        if acks == -1:
            self.pending[cid] = (tp, values)

    def collect_acks(self) -> None:
        for cid, (tp, values) in list(self.pending.items()):
            response = self.w.client.responses.get(cid)
            if response is None:
                continue
            del self.pending[cid]
            assert isinstance(response, ProduceResponse)
            result = response.partitions[0]
            if result.error is Errors.NONE:
                for i, value in enumerate(values):
                    self.committed[tp][result.base_offset + i] = value

    def crash_and_restart(self) -> None:
        # Never the last ISR member of a partition (clean election needs one).
        choices = [b for b in self.w.brokers
                   if all(len([x for x in v.isr if x in self.w.brokers and x != b]) >= 1
                          for v in self.view.values())]
        if not choices:
            return
        victim = self.rng.choice(choices)
        self.w.crash_broker(victim)
        for tp in TPS:
            self.elect(tp, exclude=victim)
        self.run(self.rng.randint(10, 3_000))
        self.w.start_broker(victim)
        for tp in TPS:
            self.send_state(tp, only=victim)

    def move_leader(self) -> None:
        tp = self.rng.choice(TPS)
        v = self.view[tp]
        live_isr = [b for b in v.isr if b in self.w.brokers]
        v.leader = self.rng.choice(live_isr)
        self.elect(tp)

    def cut_or_heal(self) -> None:
        a, b = self.rng.sample([f"broker-{n}" for n in BROKERS], 2)
        pair = frozenset((a, b))
        if pair in self.cut:
            self.w.network.heal(a, b)
            self.cut.discard(pair)
        elif len(self.cut) < 1:
            self.w.network.partition(a, b)
            self.cut.add(pair)

    def run(self, ms: int) -> None:
        end = self.w.clock.now_ms() + ms
        while self.w.clock.now_ms() < end:
            self.w.run_until(lambda: False, min(1_000, end - self.w.clock.now_ms()))
            self.handle_alter_partitions()
            self.resend_unanswered()
            self.collect_acks()
            self.check()

    # ---- invariants ---------------------------------------------------------------------------

    def check(self) -> None:
        self.w.check_offsets()
        values: dict[tuple[int, TopicPartition], list[tuple[int, bytes | None]]] = {}

        def read(broker_id: int, tp: TopicPartition) -> list[tuple[int, bytes | None]]:
            if (broker_id, tp) not in values:
                values[broker_id, tp] = self.w.values(broker_id, tp)
            return values[broker_id, tp]

        for tp in TPS:
            v = self.view[tp]
            leader = self.w.brokers.get(v.leader)
            if leader is None or tp not in leader.replica_manager.partitions:
                continue
            p = self.w.partition(v.leader, tp)
            if not p.is_leader:
                continue  # the LeaderAndIsr is still on its way
            have = dict(read(v.leader, tp))
            for offset, value in self.committed[tp].items():
                assert have.get(offset) == value, f"{tp}: committed offset {offset} lost"
            replicas = [b for b in self.w.brokers
                        if tp in self.w.brokers[b].replica_manager.partitions]
            for i, a in enumerate(replicas):
                for b in replicas[i + 1:]:
                    pa, pb = self.w.partition(a, tp), self.w.partition(b, tp)
                    below = min(pa.high_watermark, pb.high_watermark)
                    va = [(o, x) for o, x in read(a, tp) if o < below]
                    vb = [(o, x) for o, x in read(b, tp) if o < below]
                    assert va == vb, f"{tp}: brokers {a} and {b} disagree below {below}"

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.45:
            self.produce(-1)
        elif roll < 0.6:
            self.produce(1)
        elif roll < 0.7:
            self.move_leader()
        elif roll < 0.78:
            self.crash_and_restart()
        elif roll < 0.86:
            self.cut_or_heal()
        self.run(self.rng.choice([5, 50, 500, 3_000]))


@pytest.mark.parametrize(("seed", "lossy"), [(1, False), (2, False), (3, True), (4, True)])
def test_soak_committed_records_survive_and_replicas_agree(seed: int, lossy: bool) -> None:
    soak = Soak(seed, lossy)
    for _ in range(100):
        soak.step()
    soak.w.network.heal()
    soak.cut.clear()
    soak.run(45_000)  # lost fetches time out (replica.socket.timeout.ms), everyone catches up
    assert sum(len(c) for c in soak.committed.values()) > 10, "the soak committed records"
    for tp in TPS:
        leader = soak.view[tp].leader
        expected = soak.w.values(leader, tp)
        for broker_id in soak.w.brokers:
            assert soak.w.values(broker_id, tp) == expected, f"{tp} on {broker_id} diverged"
        assert sorted(soak.w.partition(leader, tp).isr) == sorted(soak.w.brokers)
