"""docs/hazards.md, 13: a broker restarting with an unreadable log dir must not create an empty
replica elsewhere for a partition that dir may hold, be elected, and have its followers truncate
to it.

Found while checking the hazards one by one: before the fix the restarted last in-sync replica
created an empty log on its healthy dir, led, and every acknowledged record was gone from every
replica. Also: restarting a broker whose log dir cannot even be listed raised a raw OSError from
``Cluster.restart_broker``.
"""

from __future__ import annotations

import posixpath

import pytest

from logwright import Cluster
from logwright.world import Fault

ACKED = [b"v%d" % i for i in range(5)]


@pytest.mark.parametrize("seed", range(4))
def test_restart_with_an_offline_dir_loses_no_acknowledged_record(seed: int) -> None:
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    for value in ACKED:
        cluster.produce("t", 0, [value], acks=-1)
    assert cluster.run_until_idle()
    state = cluster.partition_state("t", 0)
    others = [b for b in state.replicas if b != state.leader]
    for b in others:
        cluster.crash_broker(b, power_loss=False)
    cluster.advance_time(20_000)  # the leader is now the last in-sync replica
    last = state.leader
    held_in = posixpath.dirname(
        cluster.broker(last).replica_manager.describe()[state.tp].log.dir_path)
    cluster.crash_broker(last, power_loss=False)
    cluster.advance_time(20_000)
    disk = cluster.simulated_world.new_fs(f"broker-{last}")
    disk.inject_fault(held_in, Fault.EIO)
    cluster.restart_broker(last)  # no raw OSError: the dir is taken offline at start-up
    assert held_in in cluster.broker(last).log_manager.offline_dirs
    cluster.advance_time(5_000)
    assert state.tp not in cluster.broker(last).replica_manager.describe(), (
        "no empty stand-in replica on the healthy dir")
    for b in others:
        cluster.restart_broker(b)
    cluster.advance_time(20_000)
    assert cluster.partition_state("t", 0).leader == -1, "unavailable rather than empty"
    # The dir comes back: the data is there, and nothing was lost anywhere.
    disk.clear_fault(held_in)
    cluster.restart_broker(last)
    assert cluster.run_until_idle()
    assert [r.value for r in cluster.fetch("t", 0, 0)] == ACKED
