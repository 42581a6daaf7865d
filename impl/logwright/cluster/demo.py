"""A small demo cluster: what the embedded API does, narrated (``logwright demo``)."""

from __future__ import annotations

from collections.abc import Callable

from logwright.cluster.cluster import Cluster
from logwright.errors import ClusterError, KafkaError
from logwright.world import RealFileSystem


def run_demo(say: Callable[[str], None], seed: int, real_path: str | None = None,
             trace: str | None = None) -> Cluster:
    """Create a 3-broker cluster, produce, crash the leader, fail the controller over, and show
    that every acknowledged record is still there. Returns the cluster.

    ``real_path`` must be a new or empty directory: one that already holds anything (a previous
    demo's cluster, say) is refused with a ClusterError before anything is written, so two runs'
    data never mix.
    """
    fs = RealFileSystem()
    if real_path is not None and fs.is_dir(real_path) and fs.listdir(real_path):
        raise ClusterError(f"{real_path} is not empty (a previous run's data?); the demo needs "
                           "a new or empty directory: remove it or pass another --real DIR")
    if real_path is None:
        cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed, trace=trace)
        say(f"A simulated 3-broker cluster, seed {seed} (virtual time; one seed, one run).")
    else:
        cluster = Cluster.real(real_path, brokers=3, log_dirs_per_broker=2, seed=seed,
                               trace=trace)
        say(f"A 3-broker cluster on the real file system under {real_path}.")
    cluster.create_topic("orders", partitions=2, replication_factor=3)
    state = cluster.partition_state("orders", 0)
    say(f"Topic orders: partition 0 led by broker {state.leader}, replicas "
        f"{list(state.replicas)}, in-sync {list(state.isr)}, leader epoch {state.leader_epoch}.")
    for i in range(3):
        offset = cluster.produce("orders", 0, [b"order-%d" % i], acks=-1)
        say(f"Produced order-{i} with acks=all at offset {offset}.")
    say(f"The leader, broker {state.leader}, crashes.")
    cluster.crash_broker(state.leader)
    cluster.advance_time(15_000)
    after = cluster.partition_state("orders", 0)
    say(f"The controller elected broker {after.leader} from the in-sync replicas (leader epoch "
        f"{after.leader_epoch}); in-sync now {list(after.isr)}.")
    cluster.produce("orders", 0, [b"order-3"])
    say(f"Broker {state.leader} restarts as a new incarnation and catches up.")
    cluster.restart_broker(state.leader)
    cluster.run_until_idle()
    old = cluster.controller
    cluster.fail_controller(zombie=True)
    say(f"Controller failover: epoch {old.epoch} -> {cluster.controller.epoch}; the old "
        "controller keeps running as a zombie.")
    try:
        old.create_topic("ghost", 1, 1)
    except KafkaError as exc:
        say(f"The zombie tries to create a topic: {exc.name} ({exc.code}); nothing changed.")
    records = cluster.fetch("orders", 0, 0)
    say("A consumer reads: " + ", ".join(f"{r.offset}:{(r.value or b'').decode()}"
                                         for r in records))
    say(f"Log start offset {cluster.list_offsets('orders', 0, 'earliest')}, high watermark "
        f"{cluster.list_offsets('orders', 0, 'latest')}.")
    metrics = cluster.metrics()
    for name in ("UnderReplicatedPartitions", "FailedPartitionsCount", "OfflineLogDirectoryCount"):
        total = sum(v for k, v in metrics.items() if f"name={name}" in k)
        say(f"{name}: {total:g}")
    return cluster
