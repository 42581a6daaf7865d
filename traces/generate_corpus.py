"""Regenerate traces/corpus/: seeded simulated runs recorded with ``Cluster.simulated(trace=...)``.

    .venv/bin/python traces/generate_corpus.py [OUT_DIR]

Each scenario is one seeded run (one seed, one trace, byte for byte the same each time); together
they cover every action of LogStartOffset, ControllerFencing and FetcherFailure that the
implementation performs today. ``tests/test_traces.py`` checks the corpus with
``logwright traces check traces/corpus/``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from logwright.broker import BrokerConfig
from logwright.cluster import Cluster
from logwright.cluster.demo import run_demo
from logwright.errors import KafkaError
from logwright.identity import TopicPartition
from logwright.world import Fault

HERE = Path(__file__).resolve().parent


def _config(durable: bool = True) -> BrokerConfig:
    base = BrokerConfig()
    # Retention and the periodic checkpoints every second or two of virtual time, not minutes.
    log = replace(base.log, initial_task_delay_ms=1_000, retention_check_interval_ms=2_000,
                  recovery_point_checkpoint_interval_ms=1_000,
                  durable_log_start_offset=durable)
    return replace(base, log=log, replica_lag_time_max_ms=2_000)


def _produce(c: Cluster, topic: str, n: int, tag: str) -> None:
    for i in range(n):
        c.produce(topic, 0, [f"{tag}-{i:02d}".encode() * 6])
        c.advance_time(100)


def retention_and_restart(out: Path) -> None:
    """Append, replicate, advance the HW; DeleteRecords on the leader; retention deletes whole
    segments (by the start offset, then by size); a follower's process is killed (the ISR
    shrinks), restarts with its log intact (CrashRestart) and catches up (the ISR expands)."""
    c = Cluster.simulated(seed=11, broker_config=_config(), trace=out)
    c.create_topic("r", 1, 3, configs={"segment.bytes": 200, "retention.bytes": 300})
    _produce(c, "r", 6, "record")
    leader = c.partition_state("r", 0).leader
    c.broker(leader).replica_manager.delete_records(TopicPartition("r", 0), 1)
    c.advance_time(5_000)
    follower = next(r for r in c.partition_state("r", 0).replicas if r != leader)
    c.crash_broker(follower, power_loss=False)
    _produce(c, "r", 3, "while-down")
    c.advance_time(5_000)
    c.restart_broker(follower)
    c.advance_time(5_000)
    c.close()


def retention_while_the_hw_lags(out: Path) -> None:
    """The leader is cut off from its followers: acks=1 appends go on, the HW stays, and
    retention by size, running meanwhile, may delete only segments wholly below the HW
    (NoNewDataDeleted); once the network heals the followers catch up."""
    config = replace(_config(), replica_lag_time_max_ms=60_000)
    c = Cluster.simulated(seed=15, broker_config=config, trace=out)
    c.create_topic("h", 1, 3, configs={"segment.bytes": 200, "retention.bytes": 300})
    _produce(c, "h", 2, "replicated")
    c.advance_time(1_000)
    leader = c.partition_state("h", 0).leader
    for follower in (b for b in (1, 2, 3) if b != leader):
        c.partition_network(leader, follower)
    for i in range(6):
        c.produce("h", 0, [f"unreplicated-{i:02d}".encode() * 6], acks=1)
        c.advance_time(100)
    c.advance_time(5_000)
    c.heal_network()
    c.advance_time(5_000)
    c.close()


def lazy_checkpoint(out: Path) -> None:
    """Kafka's own behaviour (``durable_log_start_offset=False``): a raised start offset is
    written by the periodic checkpoint (CheckpointStartOffset), which the model calls the bug
    StartOffsetCheckpointLazy; the checker takes that configuration from the trace's header."""
    c = Cluster.simulated(seed=14, broker_config=_config(durable=False), trace=out)
    c.create_topic("k", 1, 2)
    _produce(c, "k", 4, "lazy")
    leader = c.partition_state("k", 0).leader
    c.broker(leader).replica_manager.delete_records(TopicPartition("k", 0), 2)
    c.advance_time(3_000)
    c.close()


def zombie_controller(out: Path) -> None:
    """A controller failover with the old controller left running (hazard 4). Cut off from
    one broker, the old controller's LeaderAndIsr for a new topic stays unanswered; the new
    controller reaches that broker first; once the network heals, the old one's resend (epoch
    1) is rejected with STALE_CONTROLLER_EPOCH, and its store write is refused."""
    c = Cluster.simulated(seed=12, trace=out)
    c.create_topic("z", 1, 3)
    c.produce("z", 0, [b"before"])
    old = c.controller
    victim = next(b for b in (1, 2, 3) if b != c.partition_state("z", 0).leader)
    c.partition_network(victim, old.node_id)
    old.create_topic("y", 1, 3)
    c.advance_time(100)
    c.fail_controller(zombie=True)
    c.advance_time(500)
    c.heal_network()
    c.advance_time(3_000)
    try:
        old.create_topic("ghost", 1, 1)
    except KafkaError:
        pass  # STALE_CONTROLLER_EPOCH: the store refuses the deposed controller's write
    c.advance_time(1_000)
    c.close()


def fetcher_failure(out: Path) -> None:
    """A reassignment moves a partition (StopReplica at its leader epoch to the replica it
    leaves); a follower's log dir fails under its fetcher (StorageError: that partition
    alone); a topic deletion stops the replicas (StopReplica during deletion)."""
    c = Cluster.simulated(seed=16, log_dirs_per_broker=1, trace=out)
    c.create_topic("g", 1, 2)
    c.produce("g", 0, [b"moving"])
    target = sorted({1, 2, 3} - {c.partition_state("g", 0).leader})
    c.reassign(json.dumps({"version": 1, "partitions": [
        {"topic": "g", "partition": 0, "replicas": target}]}))
    c.advance_time(3_000)
    c.create_topic("f", 2, 2)
    c.produce("f", 0, [b"a"])
    c.produce("f", 1, [b"b"])
    state = c.partition_state("f", 0)
    follower = next(r for r in state.replicas if r != state.leader)
    c.simulated_world.new_fs(f"broker-{follower}").inject_fault(
        c.log_dirs[follower][0], Fault.EIO)
    c.produce("f", 0, [b"c"])
    c.advance_time(3_000)
    c.delete_topic("f")
    c.advance_time(3_000)
    c.close()


def demo(out: Path) -> None:
    """``logwright demo --seed 1 --trace``: produce, the leader crashes (a new leader epoch:
    a follower's fetch at the old epoch is fenced), the controller fails over."""
    run_demo(lambda line: None, 1, trace=str(out)).close()


def jbod_moves(out: Path) -> None:
    """JBOD moves (KIP-113) with a throttled copier: the leader's replica of j-0 moves while
    producers append and a DeleteRecords raises its start offset (the copier follows it); a
    follower's move is cancelled and asked again; a move is cut by its broker's crash and
    resumed after the restart; a move whose destination dir fails stops; each finished move
    swaps in its future log."""
    base = _config()
    cfg = replace(base, replica_alter_log_dirs_io_max_bytes_per_second=400)
    c = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=13, broker_config=cfg,
                          trace=out)
    c.create_topic("j", 2, 3, configs={"segment.bytes": 300})
    for i in range(12):
        for p in (0, 1):
            c.produce("j", p, [f"before-{i:02d}".encode() * 3])
    tp0, tp1 = TopicPartition("j", 0), TopicPartition("j", 1)

    def other_dir(b: int, tp: TopicPartition) -> str:
        lm = c.broker(b).log_manager
        here = lm.dir_of(tp)
        assert here is not None
        return next(d for d in sorted(lm.dirs) if d != here.path)

    leader = c.partition_state("j", 0).leader
    c.alter_replica_log_dirs({("j", 0, leader): other_dir(leader, tp0)})
    for i in range(6):
        c.produce("j", 0, [f"during-{i:02d}".encode() * 3])
        c.advance_time(200)
    c.delete_records({("j", 0): 4})
    c.advance_time(20_000)
    # A follower's move of j-1, cancelled (asked back to its own dir), then asked again.
    follower = next(r for r in c.partition_state("j", 1).replicas
                    if r != c.partition_state("j", 1).leader)
    target = other_dir(follower, tp1)
    c.alter_replica_log_dirs({("j", 1, follower): target})
    c.advance_time(100)
    here = c.broker(follower).log_manager.dir_of(tp1)
    assert here is not None
    c.alter_replica_log_dirs({("j", 1, follower): here.path})
    c.alter_replica_log_dirs({("j", 1, follower): target})
    c.advance_time(300)
    # Its broker crashes mid-move; after the restart the move resumes (R3) and finishes.
    c.crash_broker(follower, power_loss=False)
    c.advance_time(1_000)
    c.restart_broker(follower)
    c.advance_time(20_000)
    # A move whose destination dir fails: it stops, the partition stays where it was.
    b = next(r for r in c.partition_state("j", 0).replicas if r != leader)
    dest = other_dir(b, tp0)
    c.alter_replica_log_dirs({("j", 0, b): dest})
    c.advance_time(100)
    c.simulated_world.new_fs(f"broker-{b}").inject_fault(dest, Fault.EIO)
    for i in range(4):
        c.produce("j", 0, [f"after-{i:02d}".encode() * 3])
        c.advance_time(500)
    c.advance_time(5_000)
    c.close()


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "retention-and-restart": retention_and_restart,
    "retention-while-the-hw-lags": retention_while_the_hw_lags,
    "lazy-checkpoint": lazy_checkpoint,
    "zombie-controller": zombie_controller,
    "fetcher-failure": fetcher_failure,
    "demo": demo,
    "jbod-moves": jbod_moves,
}


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, run in SCENARIOS.items():
        run(out_dir / f"{name}.jsonl")
        print(f"wrote {out_dir / name}.jsonl")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus")
