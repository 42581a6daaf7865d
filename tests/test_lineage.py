"""The partition's lineage (docs/cluster.md, "Recovery elections and the lineage"): what a
recovery election ranks logs by, how the controller records it, and the leader's gate.

``lineage_prefix`` is checked against the LeaderElection model's ``LineagePrefix`` read
literally (the epoch of every offset on both sides, compared one offset at a time); the
controller's handling and the gate on the simulated cluster, with the RecordLineage messages
held back or dropped by the network.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from logwright import Cluster
from logwright.controller.election import lineage_prefix
from logwright.errors import Errors
from logwright.protocol.messages import RecordLineageRequest, RecordLineageResponse

Entries = tuple[tuple[int, int], ...]


def _epochs_by_offset(entries: Entries, upto: int) -> list[int | None]:
    """The epoch of every offset below ``upto`` as ``entries`` give it (None: none)."""
    out: list[int | None] = []
    for offset in range(upto):
        found = None
        for epoch, start in entries:
            if start <= offset:
                found = epoch
        out.append(found)
    return out


def _literal(lineage: Entries, epochs: Entries, log_start: int, log_end: int) -> int:
    """LineagePrefix read literally: the first offset from the log's start whose epoch differs
    from the lineage's (offsets the lineage has no epoch for are not compared)."""
    if not lineage:
        return 0
    theirs = _epochs_by_offset(lineage, log_end)
    mine = _epochs_by_offset(epochs, log_end)
    for offset in range(log_start, log_end):
        if theirs[offset] is not None and mine[offset] != theirs[offset]:
            return offset
    return log_end


@st.composite
def _cache(draw: st.DrawFn, top: int = 12) -> Entries:
    """A leader epoch cache's entries: epochs rising, starts not falling."""
    epochs = sorted(draw(st.sets(st.integers(0, 8), max_size=5)))
    starts = sorted(draw(st.lists(st.integers(0, top), min_size=len(epochs),
                                  max_size=len(epochs))))
    return tuple(zip(epochs, starts, strict=True))


@given(_cache(), _cache(), st.integers(0, 12), st.integers(0, 12))
def test_lineage_prefix_is_the_model_s_offset_by_offset_comparison(
        lineage: Entries, epochs: Entries, a: int, b: int) -> None:
    log_start, log_end = min(a, b), max(a, b)
    assert lineage_prefix(lineage, epochs, log_start, log_end) == _literal(
        lineage, epochs, log_start, log_end)


def test_lineage_prefix_examples() -> None:
    lineage = ((0, 0), (3, 1), (4, 2))  # X in epoch 0, Y in epoch 3, epoch 4 from offset 2
    assert lineage_prefix(lineage, ((0, 0),), 0, 1) == 1, "a short copy of X agrees to its end"
    assert lineage_prefix(lineage, ((2, 0),), 0, 1) == 0, "a divergent D at X's offset"
    assert lineage_prefix(lineage, ((0, 0), (3, 1)), 0, 2) == 2
    assert lineage_prefix(lineage, ((0, 0), (3, 1), (4, 2)), 0, 3) == 3, "epoch 4's records"
    assert lineage_prefix(lineage, ((0, 0), (4, 2)), 0, 3) == 1, "offset 1 of epoch 0: not Y"
    assert lineage_prefix(lineage, ((0, 0), (2, 1)), 0, 3) == 1, "diverges at Y"
    assert lineage_prefix(lineage, (), 0, 0) == 0, "an empty log"
    assert lineage_prefix(lineage, (), 5, 5) == 5, "an empty log starting at 5"
    assert lineage_prefix(((4, 10),), ((1, 0), (4, 10)), 0, 12) == 12, \
        "below the lineage's first entry nothing is compared"
    assert lineage_prefix((), ((1, 0),), 0, 4) == 0, "no lineage recorded: every log equal"


def test_a_new_leader_records_its_lineage_before_its_high_watermark_moves() -> None:
    c = Cluster.simulated(brokers=3, seed=11)
    held: list[tuple[str, str, object]] = []
    stop = c.simulated_world.network.intercept(
        lambda src, dst, m: isinstance(m, RecordLineageRequest),
        lambda src, dst, m: held.append((src, dst, m)))
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    c.advance_time(2_000)
    state = c.partition_state("t", 0)
    assert held and state.lineage == ()
    leader = c.broker(state.leader).replica_manager.describe()[state.tp]
    assert leader.lineage_epoch == -1
    c.produce("t", 0, [b"a"], acks=1)
    c.advance_time(2_000)
    assert leader.log_end_offset == 1 and leader.high_watermark == 0, \
        "no high watermark before the controller recorded the epoch's lineage"
    stop()
    network = c.simulated_world.network
    for src, dst, message in held:
        network.send(src, dst, message)
    c.advance_time(2_000)
    state = c.partition_state("t", 0)
    assert state.lineage == ((state.leader_epoch, 0),)
    assert leader.lineage_epoch == state.leader_epoch and leader.high_watermark == 1


def test_a_lost_record_lineage_is_sent_again() -> None:
    c = Cluster.simulated(brokers=3, seed=12)
    c.simulated_world.network.drop_next(lambda src, dst, m: isinstance(m, RecordLineageRequest))
    c.create_topic("t", 1, 3)
    c.advance_time(2_000)
    state = c.partition_state("t", 0)
    assert state.lineage == ()
    c.advance_time(c.broker(state.leader).config.controller_socket_timeout_ms + 1_000)
    state = c.partition_state("t", 0)
    assert state.lineage_epoch == state.leader_epoch
    assert c.produce("t", 0, [b"a"], acks="all") == 0


def test_the_controller_refuses_a_lineage_that_is_not_the_leader_s() -> None:
    c = Cluster.simulated(brokers=3, seed=13)
    c.create_topic("t", 1, 3)
    assert c.run_until_idle()
    state = c.partition_state("t", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    network = c.simulated_world.network
    answers: list[RecordLineageResponse] = []
    network.intercept(lambda src, dst, m: isinstance(m, RecordLineageResponse),
                      lambda src, dst, m: answers.append(m))  # type: ignore[arg-type]
    epoch = state.leader_epoch

    def ask(broker: int, leader_epoch: int, lineage: tuple[tuple[int, int], ...]) -> Errors:
        registration = c.controller.store.broker(broker)
        assert registration is not None
        network.send(f"broker-{broker}", c.controller.node_id, RecordLineageRequest(
            10_000 + len(answers), broker, registration.broker_epoch, state.tp,
            state.topic_id, leader_epoch, lineage))
        c.advance_time(100)
        return answers[-1].error

    assert ask(follower, epoch, ((epoch, 0),)) is Errors.NOT_LEADER_OR_FOLLOWER
    assert ask(state.leader, epoch + 1, ((epoch + 1, 0),)) is Errors.FENCED_LEADER_EPOCH
    assert ask(state.leader, epoch, ((epoch, 3), (epoch - 1, 4))) is Errors.INVALID_REQUEST
    assert ask(state.leader, epoch, ((epoch - 1, 0),)) is Errors.INVALID_REQUEST
    assert ask(state.leader, epoch, ()) is Errors.INVALID_REQUEST
    before = c.partition_state("t", 0)
    assert ask(state.leader, epoch, ((epoch, 5),)) is Errors.NONE, "already recorded"
    assert c.partition_state("t", 0) == before, "the first lineage told for an epoch stays"
