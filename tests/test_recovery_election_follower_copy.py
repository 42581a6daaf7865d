"""The LeaderElection model's RecoveryPicksDivergentLogOverACopy on the simulated cluster
(spec/README.md, LeaderElection): a follower that copied back a committed record of an older
epoch used to report that older epoch, and a recovery election ranked a divergent log of a later
epoch above it. A follower now records its leader's epoch once its log reaches the offset that
epoch began at (the leader sends it with each fetch answer, a logwright extension), so it reports
the epoch it followed."""

from __future__ import annotations

import pytest

from logwright import Cluster
from logwright.controller.metrics import RECOVERY_ELECTIONS, UNCLEAN_ELECTIONS

SESSION_MS = 9_000 + 2_000  # broker.session.timeout.ms and one heartbeat


def test_recovery_keeps_a_committed_record_a_follower_copied_back() -> None:
    """A, B, C the replicas in assignment order, A leading. As
    test_recovery_keeps_a_committed_record_of_an_older_epoch: X (epoch 0) reaches A and C, not
    B; A loses it at a power loss and B leads (epoch 1) and writes Y at offset 0; B shuts down
    cleanly and C leads (epoch 2) with X, A copies it and X is committed. A loses it again at a
    power loss. Then A restarts (out of the ISR and the ELR) and copies X back from C; C loses
    power with X unflushed. A's cache holds X's epoch 0 and C's epoch, which began at offset 1:
    the recovery election compares A's (C's epoch, 1), B's (1, 1) and C's (0, 0) and picks A.
    (Before, A's cache held epoch 0 only: B won, and offset 0 read Y, the committed X lost with
    no unclean election.)"""
    c = Cluster.simulated(brokers=3, seed=7)
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    assert c.run_until_idle()
    a, b, other = c.partition_state("t", 0).replicas
    assert c.partition_state("t", 0).leader == a
    c.partition_network(a, b)
    c.produce("t", 0, [b"X"], acks=1)
    c.advance_time(300)
    c.partition_network(other, b)  # C keeps X: it never fetches from B
    c.crash_broker(a, power_loss=True)
    c.restart_broker(a)
    c.advance_time(300)
    assert c.partition_state("t", 0).leader == b
    assert c.produce("t", 0, [b"Y"], acks=1) == 0
    c.advance_time(300)
    c.broker(b).shutdown()
    c.advance_time(SESSION_MS + 2_000)
    state = c.partition_state("t", 0)
    assert state.leader == other and set(state.isr) == {a, other}
    assert [(r.offset, r.value) for r in c.fetch("t", 0, 0)] == [(0, b"X")], "committed"
    c.crash_broker(a, power_loss=True)
    c.advance_time(SESSION_MS)
    c.restart_broker(a)
    tp = state.tp
    for _ in range(400):  # until A's log holds X again, copied from C
        c.advance_time(1)
        part = c.broker(a).replica_manager.describe().get(tp)
        if part is not None and [r.value for _, r in part.log.read_records()] == [b"X"]:
            break
    else:
        pytest.fail("A never copied X back")
    leading = c.partition_state("t", 0)
    assert leading.isr == (other,) and leading.leader == other
    assert part.log.latest_epoch == leading.leader_epoch, "A follows C's epoch, begun at 1"
    c.crash_broker(other, power_loss=True)
    c.advance_time(SESSION_MS)
    c.restart_broker(other)
    c.heal_network()
    c.restart_broker(b)
    assert c.run_until_idle()
    assert c.metrics()[RECOVERY_ELECTIONS] == 1 and c.metrics()[UNCLEAN_ELECTIONS] == 0
    assert [(r.offset, r.value) for r in c.fetch("t", 0, 0)] == [(0, b"X")]
