"""Eligible leader replicas, unclean-shutdown detection, recovery elections, strict
min.insync.replicas and flush.messages, on the simulated cluster (docs/cluster.md, "Eligible
leader replicas and unclean-shutdown detection").

Each test drives the public facade and reads the controller's stored partition state; none
asserts a time.
"""

from __future__ import annotations

import random

import pytest

from logwright import Cluster
from logwright.controller.metrics import (
    ELR_COUNT,
    ELR_ELECTIONS,
    OFFLINE_PARTITIONS,
    RECOVERY_ELECTIONS,
    UNCLEAN_ELECTIONS,
)
from logwright.controller.store import NO_LEADER
from logwright.errors import KafkaError
from logwright.identity import TopicPartition, Uuid
from logwright.protocol.messages import ReplicaReport, replica_reports_by_partition
from tests.recovery_scenarios import diverge, recover_and_read_x

SESSION_MS = 9_000 + 2_000  # broker.session.timeout.ms and one heartbeat


def cluster(seed: int = 7) -> Cluster:
    return Cluster.simulated(brokers=3, seed=seed)


def values(c: Cluster, topic: str, partition: int = 0) -> dict[int, bytes | None]:
    state = c.partition_state(topic, partition)
    log = c.broker(state.leader).replica_manager.describe()[state.tp].log
    return {o: r.value for o, r in log.read_records()}


def test_high_watermark_waits_for_min_insync_replicas() -> None:
    """Strict min ISR: with the ISR below min.insync.replicas an acks=1 append stays above
    the high watermark (no consumer reads it) until a follower is back in sync."""
    c = cluster()
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    state = c.partition_state("t", 0)
    followers = [r for r in state.replicas if r != state.leader]
    for b in followers:
        c.crash_broker(b, power_loss=False)
    c.advance_time(SESSION_MS)
    assert c.partition_state("t", 0).isr == (state.leader,)
    assert c.produce("t", 0, [b"a"], acks=1) == 0
    c.advance_time(1_000)
    part = c.broker(state.leader).replica_manager.describe()[state.tp]
    assert (part.log_end_offset, part.high_watermark) == (1, 0)
    with pytest.raises(KafkaError) as refused:
        c.produce("t", 0, [b"b"], acks=-1, timeout_ms=2_000)
    assert refused.value.error.name == "NOT_ENOUGH_REPLICAS"
    c.restart_broker(followers[0])
    assert c.run_until_idle()
    part = c.broker(state.leader).replica_manager.describe()[state.tp]
    assert part.high_watermark == part.log_end_offset == 1


def test_replicas_leaving_a_small_isr_join_the_elr_and_one_of_them_leads() -> None:
    """min.insync.replicas 2 on three replicas: the second replica to die leaves an ISR of
    one, so it joins the ELR; so does the last. A clean restart of an ELR member lets it lead,
    alone in the ISR, counted as an election from the ELR."""
    c = cluster()
    c.create_topic("t", 1, 3, configs={"min.insync.replicas": 2})
    c.produce("t", 0, [b"a", b"b"])
    order = list(c.partition_state("t", 0).replicas)
    c.crash_broker(order[2], power_loss=False)
    c.advance_time(SESSION_MS)
    state = c.partition_state("t", 0)
    assert order[2] not in state.isr and state.elr == ()  # ISR of two: enough
    c.crash_broker(order[1], power_loss=False)
    c.advance_time(SESSION_MS)
    assert c.partition_state("t", 0).elr == (order[1],)
    c.broker(order[0]).shutdown()  # a clean shutdown: the dirs get their markers
    c.advance_time(SESSION_MS)
    offline = c.partition_state("t", 0)
    assert (offline.leader, offline.isr) == (NO_LEADER, ())
    assert set(offline.elr) == {order[0], order[1]}
    assert c.metrics()[OFFLINE_PARTITIONS] == 1 and c.metrics()[ELR_COUNT] == 2
    c.restart_broker(order[0])
    c.advance_time(1_000)
    back = c.partition_state("t", 0)
    assert (back.leader, back.isr) == (order[0], (order[0],))
    assert back.elr == (order[1],), "the ISR is still below min.insync.replicas"
    assert values(c, "t") == {0: b"a", 1: b"b"}
    assert c.metrics()[ELR_ELECTIONS] == 1 and c.metrics()[OFFLINE_PARTITIONS] == 0


def test_an_unclean_restart_leaves_the_isr_at_once() -> None:
    """A replica killed and restarted before its session expired left no clean-shutdown
    marker: it leaves the ISR when it registers, not a session timeout later, and rejoins by
    catching up."""
    c = cluster()
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"a"])
    state = c.partition_state("t", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    c.crash_broker(follower, power_loss=True)
    c.restart_broker(follower)
    assert follower not in c.partition_state("t", 0).isr
    assert c.run_until_idle()
    assert follower in c.partition_state("t", 0).isr


def test_recovery_election_picks_the_longest_log_after_a_whole_cluster_crash() -> None:
    """Every broker killed (page cache kept) and restarted: every replica registers
    uncleanly, so none is eligible; once all have reported their logs, the one that ends
    highest leads and nothing acknowledged is lost."""
    c = cluster()
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"a", b"b", b"c"])
    for b in (1, 2, 3):
        c.crash_broker(b, power_loss=False)
    for b in (1, 2, 3):
        c.restart_broker(b)
    assert c.partition_state("t", 0).leader == NO_LEADER
    assert c.run_until_idle()
    state = c.partition_state("t", 0)
    assert state.leader != NO_LEADER and state.recovery_log_ends == ()
    assert values(c, "t") == {0: b"a", 1: b"b", 2: b"c"}
    assert c.metrics()[RECOVERY_ELECTIONS] >= 1 and c.metrics()[UNCLEAN_ELECTIONS] == 0


def test_recovery_waits_for_every_replica() -> None:
    """With one replica still down, no recovery election: it could hold the longest log."""
    c = cluster()
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"a"])
    for b in (1, 2, 3):
        c.crash_broker(b, power_loss=False)
    c.advance_time(SESSION_MS)  # all fenced: the last ISR member is in the ELR
    last = c.partition_state("t", 0).elr
    assert len(last) == 1
    for b in sorted({1, 2, 3} - set(last)):
        c.restart_broker(b)
    c.advance_time(10_000)
    assert c.partition_state("t", 0).leader == NO_LEADER
    c.restart_broker(last[0])
    assert c.run_until_idle()
    assert values(c, "t") == {0: b"a"}


def test_unclean_election_is_counted() -> None:
    c = cluster()
    c.create_topic("t", 1, 3, configs={"unclean.leader.election.enable": True})
    c.produce("t", 0, [b"a"])
    for b in (1, 2, 3):
        c.crash_broker(b, power_loss=False)
    c.advance_time(SESSION_MS)
    out = next(b for b in (1, 2, 3) if b not in c.partition_state("t", 0).elr)
    c.restart_broker(out)  # neither in the ISR nor in the ELR: only unclean election
    c.advance_time(1_000)
    assert c.partition_state("t", 0).leader == out
    assert c.metrics()[UNCLEAN_ELECTIONS] == 1


@pytest.mark.parametrize("flush_messages", [1, None])
def test_flush_messages_1_keeps_acknowledged_records_through_a_power_loss_of_every_replica(
        flush_messages: int | None) -> None:
    """flush.messages=1: an acknowledged acks=all record is on disk on every ISR member, so
    it survives all of them losing power at once. Without it the page cache holds it, and a
    power loss of every replica loses it (the recovery election reports that it may have)."""
    c = cluster()
    configs = {} if flush_messages is None else {"flush.messages": flush_messages}
    c.create_topic("t", 1, 3, configs=configs)
    c.produce("t", 0, [b"a"])
    for b in (1, 2, 3):
        c.crash_broker(b, power_loss=True)
    for b in (1, 2, 3):
        c.restart_broker(b)
    assert c.run_until_idle()
    held = values(c, "t")
    if flush_messages == 1:
        assert held == {0: b"a"}
    else:
        assert held == {}
        assert c.metrics()[RECOVERY_ELECTIONS] >= 1


def test_the_controller_keeps_the_report_of_the_current_topic_id() -> None:
    """A broker that found copies of one partition under two topic ids reports both (docs/jbod.md,
    R7); the controller counts the one of the partition's current id, in either order, and a
    partition it does not know is left out."""
    tp, other = TopicPartition("t", 0), TopicPartition("gone", 0)
    old, new = Uuid.from_random(random.Random(1)), Uuid.from_random(random.Random(2))
    stale = ReplicaReport(tp, old, 3, 90, True)
    current = ReplicaReport(tp, new, 1, 4, False)
    unknown = ReplicaReport(other, old, 0, 1, True)
    for reports in ([stale, current, unknown], [current, stale, unknown]):
        assert replica_reports_by_partition(reports, {tp: new}) == {tp: current}
    assert replica_reports_by_partition([stale], {tp: new}) == {}
    no_id = ReplicaReport(tp, None, 0, 0, True)
    assert replica_reports_by_partition([no_id], {tp: new}) == {tp: no_id}


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_a_recovery_election_never_brings_back_records_an_acknowledged_delete_removed(
        seed: int) -> None:
    """traces/regressions/0031: a follower crashes (page cache kept) holding records that a
    DeleteRecords then removes, acknowledged by the other two; those two lose power (their
    start offsets are durable) and every replica restarts uncleanly. The crashed follower's log
    ends highest and leads the recovery election, but its log starts at the highest start
    offset any replica reported: the deleted records are not served again."""
    c = cluster(seed)
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [b"a", b"b", b"c"])
    assert c.run_until_idle()
    state = c.partition_state("t", 0)
    behind = next(r for r in state.replicas if r != state.leader)
    c.crash_broker(behind, power_loss=False)
    c.advance_time(SESSION_MS)  # out of the ISR: the deletion needs only the other two
    assert behind not in c.partition_state("t", 0).isr
    assert c.delete_records({("t", 0): 2})[("t", 0)].low_watermark == 2
    for b in state.replicas:
        if b != behind:
            c.crash_broker(b, power_loss=True)
    for b in state.replicas:
        c.restart_broker(b)
    assert c.run_until_idle()
    after = c.partition_state("t", 0)
    assert after.leader == behind and after.leader_log_start_offset == 2
    assert c.metrics()[RECOVERY_ELECTIONS] >= 1
    assert values(c, "t") == {2: b"c"}
    assert c.list_offsets("t", 0, "earliest") == 2
    with pytest.raises(KafkaError, match="OFFSET_OUT_OF_RANGE"):
        c.fetch("t", 0, 0)


def test_recovery_keeps_a_committed_record_of_an_older_epoch() -> None:
    """The LeaderElection model's RecoveryPicksDivergentLog on the cluster (A, B, C the
    replicas in assignment order, A leading). X (epoch 0) reaches A and C, not B; A loses it at
    a power loss and B leads (epoch 1) and writes Y at offset 0; B shuts down cleanly and C
    leads (epoch 2) with X, A copies it and X is committed (a consumer reads it). A loses it
    again, C is killed (it keeps X, but did not shut down cleanly): A and C register uncleanly,
    the ISR and the ELR are empty, and the recovery election compares (latest epoch, end
    offset). C led epoch 2 from its log end: start-up keeps that epoch (it begins exactly at
    the log's end), so C reports (2, 1) above B's (1, 1) and leads, with X. When start-up
    dropped it, C reported (0, 1), B led, and offset 0 read Y: a committed record lost to a
    recovery election (the model found it first, beyond its .cfg's epoch bound)."""
    c = cluster()
    a, b, other = diverge(c, a_power_loss=True)
    state = c.partition_state("t", 0)
    assert set(state.isr) == {a, other}
    assert [(r.offset, r.value) for r in c.fetch("t", 0, 0)] == [(0, b"X")], "committed"
    c.crash_broker(a, power_loss=True)
    c.advance_time(SESSION_MS)
    c.crash_broker(other, power_loss=False)
    c.advance_time(SESSION_MS)
    recover_and_read_x(c, a, other, b)
    assert c.partition_state("t", 0).leader == other
    assert [(r.offset, r.value) for r in c.fetch("t", 0, 0)] == [(0, b"X")]
