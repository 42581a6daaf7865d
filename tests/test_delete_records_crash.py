"""Hazard 12, beyond Kafka: an acknowledged DeleteRecords is durable on every replica counted.

A simulated 3-broker cluster runs one DeleteRecords while the disks of a set of brokers (the
leader, one follower, every broker) crash right after their k-th file system operation from the
request on, for every k up to the number the deletion makes; then every broker loses power
once more and restarts. Whatever the crash point: no record below an acknowledged low watermark
is readable again (consumers, and every replica's log), and no replica's start offset ever
goes backwards (watched after every event of the world). docs/delete-records.md.
"""

from __future__ import annotations

import pytest

from logwright import Cluster
from logwright.errors import Errors, OffsetOutOfRange
from logwright.identity import TopicPartition

TP = TopicPartition("t", 0)
DELETE_BELOW = 13


def _cluster(seed: int) -> Cluster:
    c = Cluster.simulated(brokers=3, seed=seed)
    c.create_topic("t", partitions=1, replication_factor=3, configs={"segment.bytes": 150})
    for i in range(8):
        c.produce("t", 0, [b"v%02d-%d" % (i, j) for j in range(3)])
    c.run_until_idle()
    return c


def _replicas(c: Cluster) -> dict[int, int]:
    """Each live broker's start offset of the partition."""
    out = {}
    for b, broker in c.brokers.items():
        part = broker.replica_manager.partitions.get(TP) if broker.alive else None
        if part is not None and not part.offline:
            out[b] = part.log_start_offset
    return out


def _ops_of_a_deletion(seed: int) -> dict[int, int]:
    """How many file system operations each broker makes during the deletion, undisturbed."""
    c = _cluster(seed)
    world = c.simulated_world
    before = {b: world.new_fs(f"broker-{b}").ops for b in c.brokers}
    result = c.delete_records({("t", 0): DELETE_BELOW}, timeout_ms=3_000)[("t", 0)]
    assert result.ok and result.low_watermark >= DELETE_BELOW
    return {b: world.new_fs(f"broker-{b}").ops - before[b] for b in c.brokers}


def _leader(c: Cluster) -> int:
    return c.controller.partition_state(TP).leader


@pytest.mark.parametrize("who", ["leader", "follower", "all"])
def test_no_acknowledged_deletion_comes_back_whatever_crashes_at_any_fs_operation(
        who: str) -> None:
    seed = 3
    ops = _ops_of_a_deletion(seed)
    assert max(ops.values()) > 0
    acknowledged = crashed_runs = 0
    for k in range(1, max(ops.values()) + 2):
        c = _cluster(seed)
        world = c.simulated_world
        leader = _leader(c)
        followers = sorted(b for b in c.brokers if b != leader)
        chosen = {"leader": [leader], "follower": followers[:1], "all": sorted(c.brokers)}[who]
        highest: dict[int, int] = {}

        def watch(c: Cluster = c, highest: dict[int, int] = highest) -> None:
            for b, lso in _replicas(c).items():
                assert lso >= highest.get(b, 0), f"broker {b}: start offset went back to {lso}"
                highest[b] = lso
        stop = world.observe(watch)
        for b in chosen:
            world.new_fs(f"broker-{b}").crash_after(k)
        result = c.delete_records({("t", 0): DELETE_BELOW}, timeout_ms=2_000)[("t", 0)]
        for b in chosen:
            world.new_fs(f"broker-{b}").crash_after(None)
        crashed_runs += any(not c.brokers[b].alive for b in chosen)
        if result.ok:
            acknowledged += 1
            assert result.low_watermark >= DELETE_BELOW
        else:
            assert result.error in (Errors.REQUEST_TIMED_OUT, Errors.NOT_LEADER_OR_FOLLOWER,
                                    Errors.KAFKA_STORAGE_ERROR, Errors.LEADER_NOT_AVAILABLE)
        # Then every broker loses power (a crash of any set: the rest) and comes back.
        for b in sorted(c.brokers):
            if c.brokers[b].alive:
                c.crash_broker(b, power_loss=True)
        for b in sorted(c.brokers):
            c.restart_broker(b)
        c.run_until_idle()
        watch()
        stop()
        floor = result.low_watermark if result.ok else 0
        earliest = c.list_offsets("t", 0, "earliest", timeout_ms=10_000)
        assert earliest >= floor, f"k={k}: earliest {earliest} below the acknowledged {floor}"
        if floor:
            with pytest.raises(OffsetOutOfRange):
                c.fetch("t", 0, floor - 1, timeout_ms=10_000)
        records = c.fetch("t", 0, earliest, timeout_ms=10_000)
        assert not records or records[0].offset >= floor  # unflushed records may be lost
        for b, broker in c.brokers.items():
            part = broker.replica_manager.partitions.get(TP)
            if part is None or part.offline:
                continue
            held = [o for o, _ in part.log.read_records()]
            assert not held or held[0] >= floor, f"k={k}: broker {b} holds {held[0]}"
            assert part.high_watermark >= part.log_start_offset >= floor
        c.close()
    assert crashed_runs > 0
    assert acknowledged > 0
