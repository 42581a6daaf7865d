"""The LeaderElection model's IsrExpandBeforeFollowLeaderEpoch on the simulated cluster: a
follower that held the leader's log up to the leader's epoch start offset before that epoch began
rejoined the ISR on its first fetch, and the record was committed before the follower read the
fetch's answer, which carries the epoch it records (``_follow_epoch``). Losing power then, it
reported the older epoch of its records, and a recovery election ranked a divergent log of a
later epoch above it. The leader now takes a follower into the ISR only once its fetch says it
has recorded the leader's epoch (``FetchPartition.last_fetched_epoch``,
``Partition.replicas_to_add_to_isr``)."""

from __future__ import annotations

import pytest

from logwright import Cluster
from tests.recovery_scenarios import SESSION_MS, diverge, recover_and_read_x


def test_recovery_keeps_a_record_committed_before_the_follower_recorded_the_epoch() -> None:
    """A, B, C the replicas in assignment order, A leading. X (epoch 0) reaches A and C, not B.
    A shuts down cleanly (keeping X) and B, first in the ISR, leads (epoch 1) with an empty log
    and writes Y at offset 0; C never fetches from B. B shuts down cleanly and C leads (epoch 2),
    its epoch starting at offset 1, after X. A restarts with X: its first fetch from C, at offset
    1, reaches the epoch start; C takes it into the ISR, and commits X, only once A's next fetch
    says it recorded C's epoch. Then A and C lose power (A keeps X, flushed at its clean
    shutdown; C loses it), and every replica restarts: the ISR and the ELR are empty, one
    recovery election compares A's (2, 1), B's (1, 1) and C's log end, and picks A: offset 0
    reads X. (Before, X was committed while A's cache still said epoch 0, and B won: the
    committed X lost with no unclean election, the model's 16-state behaviour.)"""
    c = Cluster.simulated(brokers=3, seed=7)
    a, b, other = diverge(c, a_power_loss=False)
    state = c.partition_state("t", 0)
    assert state.isr == (other,)
    c.restart_broker(a)
    for _ in range(2_000):  # until C's HW passes X, with A back in the ISR
        c.advance_time(1)
        leading = c.broker(other).replica_manager.describe().get(state.tp)
        if leading is not None and leading.high_watermark >= 1:
            break
    else:
        pytest.fail("X was never committed")
    assert set(c.partition_state("t", 0).isr) == {a, other}
    copy = c.broker(a).replica_manager.describe()[state.tp]
    assert [r.value for _, r in copy.log.read_records()] == [b"X"]
    assert copy.log.latest_epoch == leading.leader_epoch, "in the ISR once it recorded C's epoch"
    c.crash_broker(a, power_loss=True)
    c.crash_broker(other, power_loss=True)
    c.advance_time(SESSION_MS)
    recover_and_read_x(c, a, other, b)
