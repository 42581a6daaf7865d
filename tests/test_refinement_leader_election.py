"""Conformance: the cluster's partitions answer to the LeaderElection twin.

``ClusterRun`` maps each partition's controller state and each replica's log to the twin's
variables after every step and checks the twin's invariants (conformance/leader_election.py).
Here: the mapping on a plain run, the three sequences of traces/cluster/ (which lost records
before eligible leader replicas) passing it, and faults planted through the mutation
catalogue's patches in a copy of the package, caught by this projection alone (the other
projections and the run's own properties switched off in the driver).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutation.catalogue import run_in_copy

from logwright.identity import TopicPartition
from logwright.model.leader_election import NO_LEADER, UP
from logwright.verify.cluster_run import ClusterRun, replay

ROOT = Path(__file__).parents[1]
TRACES = sorted((ROOT / "traces" / "cluster").glob("*.json"))
CLUSTER = {"brokers": 3, "log_dirs_per_broker": 2, "seed": 3, "max_delay_ms": 10}


def _abstract(run: ClusterRun, p: int = 0):  # type: ignore[no-untyped-def]
    book = run.topics["s"]
    found = run.election_projection.abstract(TopicPartition("s", p), book.topic_id,
                                             book.acked[p], book.holders[p],
                                             book.maybe_deleted_below[p])
    assert found is not None
    return found


def test_the_mapping_of_a_healthy_partition() -> None:
    run = ClusterRun(CLUSTER)
    run.apply({"op": "create_topic", "topic": "s", "partitions": 1, "replication_factor": 3})
    run.apply({"op": "produce", "topic": "s", "partition": 0, "values": ["a", "b"]})
    run.apply({"op": "settle"})
    run.check()
    twin, s = _abstract(run)
    state = run.cluster.partition_state("s", 0)
    assert s.leader == state.leader and s.isr == frozenset(state.isr) == {1, 2, 3}
    assert s.elr == frozenset() and s.proc == (UP, UP, UP) and all(s.alive)
    assert len(s.acked) == 2 and all(by == {1, 2, 3} for _, by in s.acked)
    assert all(log == (1, 1) for log in s.log), "every replica holds both records intact"
    assert s.hw == 2 and not s.lossReported
    assert all(holds(s) for _, holds in twin.invariants())
    assert run.election_projection.checks > 0


def test_a_partition_with_no_eligible_replica_maps_to_no_leader() -> None:
    """Every broker loses power and one restarts: it registers uncleanly and is neither in the
    ISR nor in the ELR, the others are down, so the partition has no leader; the record,
    unflushed everywhere, is held by no replica."""
    run = ClusterRun(CLUSTER)
    run.apply({"op": "create_topic", "topic": "s", "partitions": 1, "replication_factor": 3})
    run.apply({"op": "produce", "topic": "s", "partition": 0, "values": ["a"]})
    for b in (1, 2, 3):
        run.apply({"op": "crash", "broker": b, "power_loss": True})
    run.apply({"op": "restart", "broker": 1})
    run.apply({"op": "advance", "ms": 12_000})  # the others' sessions expire
    run.check()
    _, s = _abstract(run)
    assert s.leader == NO_LEADER and 1 not in s.isr | s.elr and s.proc[0] == UP
    assert s.acked[0][1] == frozenset(), "every replica that held it lost it"


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_the_cluster_traces_answer_to_the_model(path: Path) -> None:
    trace = json.loads(path.read_text())
    run = replay({**trace, "steps": [*trace["steps"], {"op": "repair_and_settle"}]})
    assert run.election_projection.checks >= len(trace["steps"])


DRIVER = """
import json, sys
from logwright.conformance.refinement import RefinementViolation
from logwright.identity import TopicPartition
from logwright.verify.cluster_run import ClusterRun
trace = json.loads(open(sys.argv[1]).read())
run = ClusterRun(trace["cluster"], per_event_models=False)
try:
    for step in [*trace["steps"], {"op": "repair_and_settle"}]:
        run.apply(step)
        for name, book in run.topics.items():
            for p in range(book.partitions):
                run.election_projection.check(TopicPartition(name, p), book.topic_id,
                                              book.acked[p], book.holders[p],
                                              book.maybe_deleted_below[p], "a step")
    print("PASSED")
except RefinementViolation as exc:
    print("CAUGHT", exc.module, exc.reason)
except Exception as exc:
    print("OTHER", type(exc).__name__)
"""


@pytest.mark.parametrize("mutant", ["damaged replica kept in the ISR",
                                    "election outside the eligible set"])
def test_a_planted_fault_is_caught_by_the_projection(mutant: str, tmp_path: Path) -> None:
    trace = ROOT / "traces" / "cluster" / "0002-last-isr-member-lost-its-data.json"
    run = run_in_copy(DRIVER, tmp_path / "copy", mutant, (str(trace),), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == \
        "CAUGHT LeaderElection AckedRecordsSurvive is violated", run.stdout[-2000:]


def test_the_unplanted_driver_passes(tmp_path: Path) -> None:
    trace = ROOT / "traces" / "cluster" / "0002-last-isr-member-lost-its-data.json"
    run = run_in_copy(DRIVER, tmp_path / "copy", None, (str(trace),), timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "PASSED", run.stdout[-2000:]
