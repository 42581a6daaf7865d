"""The LeaderElection model's RecoveryPicksDivergentLogOverACopy on the simulated cluster
(spec/README.md, LeaderElection): a follower that copied back a committed record of an older
epoch used to report that older epoch, and a recovery election ranked a divergent log of a later
epoch above it. A follower now records its leader's epoch once its log reaches the offset that
epoch began at (the leader sends it with each fetch answer, a logwright extension), so it reports
the epoch it followed."""

from __future__ import annotations

import pytest

from logwright import Cluster
from tests.recovery_scenarios import SESSION_MS, diverge, recover_and_read_x


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
    a, b, other = diverge(c, a_power_loss=True)
    state = c.partition_state("t", 0)
    assert set(state.isr) == {a, other}
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
    recover_and_read_x(c, other, b)
