"""``logwright fuzz --seeds N``: one seeded simulation per seed, spread over processes or Spark.

Each seed is one run of the simulated three-broker cluster: the whole alphabet of the cluster
fuzzer (client traffic, topic changes, JBOD moves, reassignments, crashes with and without power
loss, dir failures, restarts with dirs still failed, controller failovers, network faults),
``steps`` actions drawn by ``random.Random(seed)``, every property of
:class:`~logwright.verify.cluster_run.ClusterRun` checked after every action, and the run's
model events recorded as a trace (``seed-<seed>.jsonl``, trace id ``fuzz-seed-<seed>``) that is
then checked against the twins (:func:`logwright.verify.traces.check_paths`). A seed is a pure
function of its number: the same seed gives the same actions, the same trace and the same
verdict wherever it runs, so the failures it reports replay from the seed alone (and from the
steps saved beside them, in the format of traces/regressions/).

Spreading the seeds is Spark's job (``--master URL``: one task per slice of seeds), or a process
pool's without it; no scheduling is written here.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from logwright.verify.cluster_run import ClusterRun, Step
from logwright.verify.stateful_cluster import BROKERS, CLUSTER, CONFIG_CHANGES, TOPICS
from logwright.verify.traces import check_paths

RULES = ("produce", "produce", "produce", "fetch", "list_offsets", "delete_records",
         "create_topic", "delete_topic", "recreate_topic", "alter_configs", "reassign",
         "alter_log_dir", "crash", "crash_during", "restart", "restart_with_failed_dirs",
         "fail_dir", "fail_controller", "cut", "heal", "network", "advance", "advance",
         "repair_and_settle")
"""The actions a seed draws from (produce and advance weighted up: records and time are what
the faults act on), the rules of the cluster fuzzer's state machine."""

CUTS: tuple[tuple[int, int | str], ...] = (
    (1, 2), (1, 3), (2, 3), (1, "controller"), (2, "controller"), (3, "controller"),
    (1, "client"), (2, "client"), (3, "client"))


@dataclass(frozen=True)
class SeedResult:
    """What one seed's run did: its actions, the first property that failed (None: none), and
    the trace checker's verdict on its trace."""

    seed: int
    steps: int
    failure: str | None
    trace: str
    """The trace file (``seed-<seed>.jsonl`` in the output directory)."""
    trace_events: int
    trace_violations: int
    trace_bad_input: int

    @property
    def ok(self) -> bool:
        """No property failed and the trace checked clean."""
        return self.failure is None and not self.trace_violations and not self.trace_bad_input


class _Walk:
    """Draws the next action of a seed's run, as the state machine's rules build them."""

    def __init__(self, seed: int, run: ClusterRun) -> None:
        self.rng = random.Random(seed)
        self.run = run
        self.counter = 0

    def _partition(self) -> tuple[str, int] | None:
        live = sorted(self.run.topics)
        if not live:
            return None
        topic = self.rng.choice(live)
        return topic, self.rng.randrange(self.run.topics[topic].partitions)

    def _values(self, n: int) -> list[str]:
        self.counter += n
        return [f"m{self.counter - n + i}" for i in range(n)]

    def _delete_offset(self, where: tuple[str, int]) -> int:
        acked = self.run.topics[where[0]].acked[where[1]]
        return self.rng.randint(0, max(acked, default=-1) + 2)

    def next(self) -> Step | None:
        """The next action, or None when the rule drawn has nothing to act on."""
        rule, rng, run = self.rng.choice(RULES), self.rng, self.run
        b = rng.choice(BROKERS)
        where = self._partition() if rule in (
            "produce", "fetch", "list_offsets", "delete_records", "reassign",
            "alter_log_dir") else None
        if rule == "produce" and where:
            return {"op": "produce", "topic": where[0], "partition": where[1],
                    "values": self._values(rng.randint(1, 3)),
                    "acks": rng.choice([-1, -1, 1, 0])}
        if rule == "fetch" and where:
            return {"op": "fetch", "topic": where[0], "partition": where[1], "offset": 0}
        if rule == "list_offsets" and where:
            return {"op": "list_offsets", "topic": where[0], "partition": where[1],
                    "which": rng.choice(["earliest", "latest"])}
        if rule == "delete_records" and where:
            return {"op": "delete_records", "topic": where[0], "partition": where[1],
                    "offset": self._delete_offset(where)}
        if rule == "create_topic":
            name = rng.choice(TOPICS)
            if name not in run.topics and run.cluster.store.topic(name) is None:
                return {"op": "create_topic", "topic": name, "partitions": rng.randint(1, 3),
                        "replication_factor": rng.randint(2, 3)}
        if rule in ("delete_topic", "recreate_topic", "alter_configs") and run.topics:
            topic = rng.choice(sorted(run.topics))
            if rule == "delete_topic":
                return {"op": "delete_topic", "topic": topic}
            if rule == "recreate_topic":
                return {"op": "recreate_topic", "topic": topic, "partitions": rng.randint(1, 3),
                        "replication_factor": rng.randint(2, 3)}
            change = rng.choice(CONFIG_CHANGES)
            if rng.random() < 0.5:
                return {"op": "alter_configs", "topic": topic, "set": {},
                        "delete": sorted(change)}
            return {"op": "alter_configs", "topic": topic, "set": dict(change), "delete": []}
        if rule == "reassign" and where:
            order = list(BROKERS)
            rng.shuffle(order)
            return {"op": "reassign", "topic": where[0], "partition": where[1],
                    "replicas": order[:rng.randint(2, 3)]}
        if rule == "alter_log_dir" and where:
            return {"op": "alter_log_dir", "topic": where[0], "partition": where[1],
                    "broker": b, "dir": rng.randint(1, 2)}
        if rule == "crash" and run.running(b):
            return {"op": "crash", "broker": b, "power_loss": rng.random() < 0.5}
        if rule == "crash_during":
            return self._crash_during(b)
        if rule == "restart" and not run.running(b):
            return {"op": "restart", "broker": b, "repair": True}
        if rule == "restart_with_failed_dirs" and any(x == b for x, _ in run.faulted):
            if run.running(b):
                return {"op": "crash", "broker": b, "power_loss": False}
            return {"op": "restart", "broker": b, "repair": False}
        if rule == "fail_dir" and run.running(b):
            return {"op": "fail_dir", "broker": b, "dir": rng.randint(1, 2)}
        if rule == "fail_controller" and len(run.cluster.controllers) < 4:
            return {"op": "fail_controller", "zombie": rng.random() < 0.5}
        if rule == "cut":
            a, other = rng.choice(CUTS)
            return {"op": "cut", "a": a, "b": other}
        if rule == "heal" and run.network_disturbed():
            return {"op": "heal"}
        if rule == "network":
            return {"op": "network", "drop_rate": rng.choice([0.0, 0.05, 0.2]),
                    "duplicate_rate": rng.choice([0.0, 0.1, 0.3]),
                    "max_delay_ms": rng.choice([10, 50])}
        if rule == "advance":
            return {"op": "advance", "ms": rng.choice([100, 2_000, 12_000, 70_000])}
        if rule == "repair_and_settle":
            return {"op": "repair_and_settle"}
        return None

    def _crash_during(self, b: int) -> Step | None:
        rng, run = self.rng, self.run
        after_ops = rng.randint(1, 40)
        if not run.running(b):
            if any(x == b for x, _ in run.faulted):
                return None
            return {"op": "crash_during", "broker": b, "after_ops": after_ops,
                    "step": {"op": "restart", "broker": b, "repair": True}}
        kind = rng.choice(["advance", "produce", "alter_configs", "delete_topic",
                           "delete_records"])
        where = self._partition()
        nested: Step
        if kind == "advance" or where is None:
            nested = {"op": "advance", "ms": rng.choice([100, 2_000])}
        elif kind == "produce":
            nested = {"op": "produce", "topic": where[0], "partition": where[1],
                      "values": self._values(2), "acks": -1}
        elif kind == "delete_records":
            nested = {"op": "delete_records", "topic": where[0], "partition": where[1],
                      "offset": self._delete_offset(where)}
        elif kind == "alter_configs":
            nested = {"op": "alter_configs", "topic": where[0],
                      "set": {"segment.bytes": 100}, "delete": []}
        else:
            nested = {"op": "delete_topic", "topic": where[0]}
        return {"op": "crash_during", "broker": b, "after_ops": after_ops, "step": nested}


def run_seed(seed: int, steps: int, out_dir: str, light: bool = False) -> SeedResult:
    """Run seed ``seed`` for ``steps`` actions, its trace into ``out_dir``; a failing run's
    steps are saved as ``failures/seed-<seed>.json`` there (the format of
    traces/regressions/, so ``logwright``'s regression replay reads it)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"seed-{seed}.jsonl"
    args: dict[str, Any] = {**CLUSTER, "seed": seed}
    run = ClusterRun({**args, "trace": str(trace), "trace_id": f"fuzz-seed-{seed}"},
                     per_event_models=not light)
    walk = _Walk(seed, run)
    failure: str | None = None
    done = 0
    try:
        run.apply({"op": "create_topic", "topic": "s", "partitions": 3,
                   "replication_factor": 3})
        run.check()
        while done < steps:
            step = walk.next()
            if step is None:
                continue
            done += 1
            run.apply(step)
            run.check()
    except Exception as exc:  # a fuzzer reports whatever the cluster raised, with its seed
        failure = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        try:
            run.cluster.close()
        except Exception as exc:  # a close that fails is a finding too
            failure = failure or f"{type(exc).__name__} at close: {exc}"
    report = check_paths([trace])
    if failure is not None:
        (out / "failures").mkdir(exist_ok=True)
        (out / "failures" / f"seed-{seed}.json").write_text(json.dumps({
            "found_by": f"logwright fuzz --seeds (seed {seed}, {steps} steps)",
            "what": failure, "status": "open: not yet triaged", "seed": seed,
            "cluster": args, "steps": run.steps}, indent=1) + "\n", encoding="utf-8")
    return SeedResult(seed, done, failure, trace.name, report.events, len(report.failures),
                      len(report.bad_input))


@dataclass
class SeedCampaign:
    """The results of a ``--seeds`` campaign, in seed order, and where it ran."""

    results: list[SeedResult]
    engine: str
    seconds: float
    startup_seconds: float = 0.0

    @property
    def failures(self) -> list[SeedResult]:
        """The seeds whose run failed or whose trace did not check clean."""
        return [r for r in self.results if not r.ok]

    def verdicts(self) -> list[tuple[Any, ...]]:
        """What two engines must agree on: every seed's result."""
        return [tuple(asdict(r).values()) for r in self.results]

    def write_summary(self, out: Path) -> None:
        """``summary.json`` in ``out``: the engine, the time, and every seed's result."""
        (out / "summary.json").write_text(json.dumps({
            "engine": self.engine, "seeds": len(self.results),
            "failures": len(self.failures), "seconds": round(self.seconds, 3),
            "startup_seconds": round(self.startup_seconds, 3),
            "results": [asdict(r) for r in self.results]}, indent=1) + "\n", encoding="utf-8")


def _run_slice(seeds: Iterable[int], steps: int, out_dir: str,
               light: bool) -> Iterator[dict[str, Any]]:
    for seed in seeds:
        yield asdict(run_seed(seed, steps, out_dir, light))


def run_seeds(seeds: Sequence[int], steps: int, out_dir: Path, *, master: str | None = None,
              workers: int | None = None, light: bool = False,
              spark: Any = None) -> SeedCampaign:
    """Run every seed of ``seeds``: on Spark at ``master`` (one task per seed; or on the
    session ``spark``, not stopped), else in a pool of ``workers`` processes (default: one per
    core; 1: in this process). ``out_dir`` must be writable by every worker (on a cluster:
    shared storage)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = str(out_dir.resolve())
    started = time.perf_counter()
    if master is not None or spark is not None:
        from logwright.verify.spark import session, ship_package

        own = spark is None
        if own:
            assert master is not None
            spark = session(master, "logwright fuzz --seeds")
            if not master.startswith("local"):
                ship_package(spark)
        startup = time.perf_counter() - started
        try:
            rows = (spark.sparkContext.parallelize(list(seeds), max(1, len(seeds)))
                    .mapPartitions(lambda it: _run_slice(it, steps, target, light))
                    .collect())
        finally:
            if own:
                spark.stop()
        results = sorted((SeedResult(**r) for r in rows), key=lambda r: r.seed)
        return SeedCampaign(results, f"spark {spark.sparkContext.master}",
                            time.perf_counter() - started, startup)
    if workers == 1:
        results = [run_seed(s, steps, target, light) for s in seeds]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(run_seed, seeds, [steps] * len(seeds),
                                    [target] * len(seeds), [light] * len(seeds)))
    return SeedCampaign(results, "processes" if workers != 1 else "one process",
                        time.perf_counter() - started)


__all__ = ["RULES", "SeedCampaign", "SeedResult", "run_seed", "run_seeds"]
