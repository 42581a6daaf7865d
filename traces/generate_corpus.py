"""Regenerate traces/corpus/: seeded simulated runs recorded with ``Cluster.simulated(trace=...)``.

    .venv/bin/python traces/generate_corpus.py [OUT_DIR]

Each scenario is one seeded run (one seed, one trace, byte for byte the same each time); together
they cover every action of LogStartOffset, ControllerFencing and FetcherFailure that the
implementation performs today. ``tests/test_traces.py`` checks the corpus with
``logwright traces check traces/corpus/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from logwright.broker import BrokerConfig
from logwright.cluster import Cluster
from logwright.identity import TopicPartition
from logwright.world import Fault

HERE = Path(__file__).resolve().parent


def _config() -> BrokerConfig:
    base = BrokerConfig()
    # Retention and the periodic checkpoints every few seconds of virtual time, not minutes.
    log = replace(base.log, retention_check_interval_ms=2_000,
                  recovery_point_checkpoint_interval_ms=1_000)
    return replace(base, log=log, replica_lag_time_max_ms=2_000)


def retention_and_restart(out: Path) -> None:
    """Append, replicate, advance the HW; DeleteRecords on the leader; retention deletes whole
    segments; a follower crashes (the ISR shrinks), restarts (CrashRestart, a periodic
    checkpoint) and catches up (the ISR expands)."""
    c = Cluster.simulated(seed=11, broker_config=_config(), trace=out)
    c.create_topic("r", 1, 3, configs={"segment.bytes": 200, "retention.bytes": 400})
    for i in range(6):
        c.produce("r", 0, [b"record-%02d" % i * 3])
        c.advance_time(100)
    leader = c.partition_state("r", 0).leader
    c.broker(leader).replica_manager.delete_records(TopicPartition("r", 0), 2)
    c.advance_time(5_000)
    follower = next(r for r in c.partition_state("r", 0).replicas if r != leader)
    c.crash_broker(follower)
    for i in range(3):
        c.produce("r", 0, [b"while-down-%d" % i])
    c.advance_time(5_000)
    c.restart_broker(follower)
    c.advance_time(5_000)
    c.close()


def zombie_controller(out: Path) -> None:
    """A controller failover with the old controller left running: its LeaderAndIsr, resent
    after the failover, reaches a broker that already accepted the new epoch and is rejected
    (STALE_CONTROLLER_EPOCH); its store write is refused."""
    c = Cluster.simulated(seed=12, trace=out)
    c.create_topic("z", 1, 3)
    c.produce("z", 0, [b"before"])
    old = c.controller
    victim = next(b for b in (1, 2, 3) if b != c.partition_state("z", 0).leader)
    c.partition_network(victim, old.node_id)
    c.crash_broker(c.partition_state("z", 0).leader)  # the old controller elects a new leader
    c.advance_time(500)
    c.fail_controller(zombie=True)
    c.advance_time(500)
    c.heal_network()
    c.advance_time(5_000)
    try:
        old.create_topic("ghost", 1, 1)
    except Exception:
        pass
    c.advance_time(1_000)
    c.close()


def fetcher_failure(out: Path) -> None:
    """A follower's log dir fails under its fetcher (StorageError), a newer leader epoch
    un-fails the partition elsewhere, and a topic deletion stops the replicas (StopReplica)."""
    c = Cluster.simulated(seed=13, log_dirs_per_broker=1, trace=out)
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


SCENARIOS: dict[str, Callable[[Path], None]] = {
    "retention-and-restart": retention_and_restart,
    "zombie-controller": zombie_controller,
    "fetcher-failure": fetcher_failure,
}


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, run in SCENARIOS.items():
        run(out_dir / f"{name}.jsonl")
        print(f"wrote {out_dir / name}.jsonl")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus")
