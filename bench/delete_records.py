"""DeleteRecords benchmarks (issue 11): what the durable start offset costs, and what the start
offset check costs the fetch path.

Invariant upheld: every figure is judged beside a reference measured in the same run.

- Latency on a simulated 3-broker cluster, in virtual milliseconds (the simulated world's
  clock: deterministic, the same on any machine): ``Cluster.delete_records`` of one partition
  with every raise written at once (logwright's default), beside the same with the start offset
  written only by the periodic checkpoint (Kafka's behaviour, ``durable_log_start_offset``
  off). The file system operations of each are counted too.
- Latency on ``Cluster.real`` (wall clock, real disk), beside one fsync of a small file in the
  same directory, measured in the same run.
- The fetch path: ``PartitionLog.read`` of one small batch, beside the same method with the
  start offset comparison taken out (its text edited, nothing else), both made from the
  method's text the same way; the check may cost at most 5%.

    python bench/delete_records.py     # or: python bench/run.py (every module)
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
import textwrap
import types
from collections.abc import Callable

from common import Result, Samples, Target, fsync_ms, interleaved, median, scratch_dir, timed
from logwright import Cluster, _native
from logwright.broker import BrokerConfig
from logwright.identity import TopicPartition
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import SimFileSystem, VirtualClock

CHECK = "start_offset < self._log_start_offset or "


def _virtual_latencies(durable: bool, seeds: int, deletions: int) -> tuple[list[float], float]:
    """Virtual ms of each deletion, and the file system operations per deletion."""
    config = BrokerConfig()
    config = dataclasses.replace(config, log=dataclasses.replace(
        config.log, durable_log_start_offset=durable))
    out: list[float] = []
    ops = 0
    for seed in range(seeds):
        c = Cluster.simulated(brokers=3, seed=seed, broker_config=config)
        c.create_topic("t", partitions=1, replication_factor=3)
        world = c.simulated_world
        disks = [world.new_fs(f"broker-{b}") for b in c.brokers]
        for _ in range(deletions):
            c.produce("t", 0, [b"x"] * 5)
            c.run_until_idle()
            t0, ops0 = world.clock.now_ms(), sum(d.ops for d in disks)
            result = c.delete_records({("t", 0): -1})[("t", 0)]
            assert result.ok, result
            out.append(float(world.clock.now_ms() - t0))
            ops += sum(d.ops for d in disks) - ops0
        c.close()
    return out, ops / (seeds * deletions)


def bench_simulated_latency(quick: bool) -> Result:
    """Virtual ms per DeleteRecords, durable start offset, beside Kafka's periodic one."""
    seeds, deletions = (1, 3) if quick else (8, 20)
    durable, durable_ops = _virtual_latencies(True, seeds, deletions)
    lazy, lazy_ops = _virtual_latencies(False, seeds, deletions)
    samples = Samples(figures=durable, references=lazy)
    return Result.measured(
        "DeleteRecords latency, simulated 3 brokers (virtual)", "ms", "ms",
        "the same without the durability step (Kafka's periodic checkpoint; same run)",
        Target("ratio", "<", 1.5), samples,
        note=f"{len(durable)} deletions each way, replication factor 3; file system "
             f"operations per deletion: {durable_ops:.1f} durable, {lazy_ops:.1f} without "
             "(the simulated disk takes no virtual time: the durability step adds no round "
             "trip)")


def bench_real_latency(quick: bool) -> Result:
    """Wall ms per DeleteRecords on Cluster.real, beside one fsync in the same directory."""
    repeats = 2 if quick else 9
    with scratch_dir("delete-records") as root:
        path = os.path.join(root, "cluster")
        with Cluster.real(path, brokers=3, log_dirs_per_broker=1) as c:
            c.create_topic("t", partitions=1, replication_factor=3)
            sent = [0]

            def figure() -> tuple[float, float]:
                c.produce("t", 0, [b"x"] * 5)
                sent[0] += 5
                done: list[bool] = []
                t = timed(lambda: done.append(
                    c.delete_records({("t", 0): sent[0]}, timeout_ms=30_000)[("t", 0)].ok))
                assert done == [True]
                return t.wall_s * 1_000, t.cpu_s * 1_000

            samples = interleaved(figure, lambda: fsync_ms(root), repeats)
    return Result.measured(
        "DeleteRecords latency, Cluster.real (wall)", "ms", "ms",
        "one fsync of a small file in the same dir (same run)",
        Target("figure", "<", 1_000.0), samples,
        note="3 brokers, replication factor 3: each replica writes its start offset "
             "checkpoint (fsync of the file and of its dir) before the answer; medians of "
             "interleaved runs")


def _read_source() -> str:
    """The text of ``PartitionLog.read``, from the module's source file (the compiled build,
    docs/native.md, has no text to ask ``inspect`` for)."""
    tree_text = _native.source_of(PartitionLog.__module__).read_text()
    for node in ast.walk(ast.parse(tree_text)):
        if isinstance(node, ast.ClassDef) and node.name == PartitionLog.__name__:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "read":
                    text = ast.get_source_segment(tree_text, item, padded=True)
                    assert text is not None
                    return textwrap.dedent(text)
    raise RuntimeError("PartitionLog.read is not found in its module's source")


def _read(with_check: bool) -> Callable[..., object]:
    """``PartitionLog.read`` made from its text, with or without the start offset comparison.
    Both are made the same way (interpreted Python calling the log as it is, compiled or not),
    so the two differ in the comparison alone."""
    source = _read_source()
    if source.count(CHECK) != 1:
        raise RuntimeError("PartitionLog.read changed: the start offset check is not found")
    namespace: dict[str, object] = {}
    module = sys.modules[PartitionLog.__module__]
    text = source if with_check else source.replace(CHECK, "")
    exec(compile(text, f"<read {'with' if with_check else 'without'} check>", "exec"),
         dict(vars(module)), namespace)
    fn = namespace["read"]
    assert isinstance(fn, types.FunctionType)
    return fn


def bench_fetch_check(quick: bool) -> Result:
    """µs per read of one small batch, with the start offset check, beside without it."""
    clock = VirtualClock(1_700_000_000_000)
    fs = SimFileSystem(clock)
    fs.mkdir("/d")
    log = PartitionLog.create(fs, "/d/t-0", TopicPartition("t", 0), LogConfig(), clock)
    for i in range(200):
        log.append_as_leader(build_simple_batch([b"v%03d" % i], clock.now_ms()))
    log.update_high_watermark(log.log_end_offset)
    log.increment_log_start_offset(10)
    checked, bare = _read(True), _read(False)
    calls = 2_000 if quick else 10_000
    offsets = [10 + (i * 7) % 190 for i in range(calls)]

    def run(read: Callable[..., object]) -> float:
        def work() -> None:
            for o in offsets:
                read(log, o, 1 << 16, None, True)
        return timed(work).wall_s * 1e6 / calls

    def figure() -> tuple[float, float]:
        t = run(checked)
        return t, t

    samples = interleaved(figure, lambda: run(bare), 3 if quick else 11)
    return Result.measured(
        "fetch path with the start offset check", "µs", "µs",
        "the same read without the check (same run)", Target("ratio", "<", 1.05), samples,
        note=f"PartitionLog.read of one small batch, {calls:,} reads per sample; "
             f"median ratio {median(samples.figures) / median(samples.references):.3f}")


def run(quick: bool = False) -> list[Result]:
    """Every DeleteRecords figure."""
    return [bench_simulated_latency(quick), bench_real_latency(quick), bench_fetch_check(quick)]


if __name__ == "__main__":
    for result in run("--quick" in sys.argv):
        print(json.dumps(result.to_json(), indent=1))
