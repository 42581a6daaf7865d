"""JBOD move benchmarks (issue 12, docs/jbod.md): how fast a replica moves between two log dirs
of one broker, how well the copy keeps to its configured rate, and how long appends wait while
the move's swap holds the partition's append lock.

Invariant upheld: every figure is judged beside a reference measured in the same run.

- Copy throughput: ``Cluster.real`` with one broker and two log dirs on the same disk; a
  partition of ``SIZE`` bytes moved to the other dir, unthrottled, from the
  ``alter_replica_log_dirs`` call to the swap (the copy, its fsyncs, the renames), in MB/s;
  beside ``dd`` copying a file of the same size between the same two dirs with
  ``conv=fsync`` (the move makes its copy durable too). Target: at least 50% of dd.
- Throttle accuracy: the same move with ``replica.alter.log.dirs.io.max.bytes.per.second`` set,
  the bytes copied over a window of wall time, against the configured rate. The figure is the
  error in percent; target under 10%.
- Appends held in the swap: the wall time of the swap (S1 taking the append lock to S6
  releasing it: ``DirMoveFetcher.swap``, timed by wrapping it here, not in the product) of a
  1 GiB partition, beside one fsync of a small file in the same dir. Target under 10 ms.

    python bench/jbod.py     # or: python bench/run.py (every module)
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from common import MB, MIB, Result, Samples, Target, dd, fsync_ms, interleaved, scratch_dir, timed
from logwright import Cluster
from logwright.broker import BrokerConfig
from logwright.broker.dir_move import DirMoveFetcher
from logwright.identity import TopicPartition

TP = TopicPartition("t", 0)
RECORD = 1_000  # bytes of value per record
PER_BATCH = 500  # records per produce: batches of about half a MB


def _fill(c: Cluster, size: int) -> int:
    """Produce about ``size`` bytes of records to t-0; returns the bytes in its log."""
    value = b"x" * RECORD
    batches = max(1, size // (RECORD * PER_BATCH))
    for _ in range(batches):
        c.produce("t", 0, [value] * PER_BATCH, acks=1)
    log = c.broker(1).log_manager.get_log(TP)
    assert log is not None
    log.flush()
    return log.size_bytes


@contextmanager
def _one_broker(root: str, size: int, rate: int | None = None) -> Iterator[tuple[Cluster, str]]:
    """A real one-broker cluster under ``root`` whose t-0 holds ``size`` bytes; yields it and
    the path of the dir t-0 is not in."""
    config = BrokerConfig() if rate is None else BrokerConfig(
        replica_alter_log_dirs_io_max_bytes_per_second=rate)
    with Cluster.real(os.path.join(root, "cluster"), brokers=1, log_dirs_per_broker=2,
                      broker_config=config) as c:
        c.create_topic("t", partitions=1, replication_factor=1,
                       configs={"segment.bytes": 1 << 30, "retention.ms": -1,
                                "retention.bytes": -1})
        _fill(c, size)
        lm = c.broker(1).log_manager
        src = lm.dir_of(TP)
        assert src is not None
        yield c, next(d for d in lm.dirs if d != src.path)


def _move(c: Cluster, dest: str, timeout_s: float = 600.0) -> None:
    """Move t-0 to ``dest`` and run until its swap is done."""
    mover = c.broker(1).replica_manager.dir_mover
    swaps = mover.stats.swaps
    answer = c.alter_replica_log_dirs({("t", 0, 1): dest})[("t", 0, 1)]
    assert answer.name == "NONE", answer
    ok = c.runtime.run_until(lambda: mover.stats.swaps > swaps, int(timeout_s * 1_000))
    assert ok, f"the move did not finish within {timeout_s} s"


def _other(c: Cluster) -> str:
    lm = c.broker(1).log_manager
    src = lm.dir_of(TP)
    assert src is not None
    return next(d for d in lm.dirs if d != src.path)


def _dd_copy_mb_per_s(src_file: str, dest_dir: str) -> float:
    """dd copying ``src_file`` into ``dest_dir`` (1 MiB blocks, fsynced at the end), MB/s."""
    out = os.path.join(dest_dir, "dd-copy")
    try:
        return dd(f"if={src_file}", f"of={out}", "bs=1M", "conv=fsync").mb_per_s
    finally:
        if os.path.exists(out):
            os.remove(out)


def bench_copy_throughput(quick: bool) -> Result:
    size = 8 * MIB if quick else 256 * MIB
    repeats = 2 if quick else 5
    with scratch_dir("jbod-copy") as root, _one_broker(root, size) as (c, _):
        log = c.broker(1).log_manager.get_log(TP)
        assert log is not None
        moved = log.size_bytes

        def figure() -> tuple[float, float]:
            t = timed(lambda: _move(c, _other(c)))
            return moved / t.wall_s / MB, moved / max(t.cpu_s, 1e-9) / MB

        def reference() -> float:
            current = c.broker(1).log_manager.get_log(TP)
            assert current is not None
            seg = max((os.path.join(current.dir_path, n) for n in os.listdir(current.dir_path)
                       if n.endswith(".log")), key=os.path.getsize)
            return _dd_copy_mb_per_s(seg, _other(c))

        samples = interleaved(figure, reference, repeats, warm_up=False)
    return Result.measured(
        "JBOD move copy throughput, Cluster.real (wall, unthrottled)", "MB/s", "MB/s",
        "dd copying the partition's segment file to the other dir, conv=fsync (same run)",
        Target("ratio", ">=", 0.5), samples,
        note=f"one broker, two log dirs on one disk; a {moved / MIB:.0f} MiB partition moved "
             "back and forth, from the AlterReplicaLogDirs call to the swap; medians of "
             "interleaved runs")


def bench_throttle(quick: bool) -> Result:
    rate = 1 * MB
    window_s = 1.0 if quick else 10.0
    size = int(rate * (window_s + 3))
    repeats = 1 if quick else 3
    errors: list[float] = []
    rates: list[float] = []
    with scratch_dir("jbod-throttle") as root, _one_broker(root, size, rate) as (c, dest):
        mover = c.broker(1).replica_manager.dir_mover
        for i in range(repeats):
            target = dest if i % 2 == 0 else _other(c)
            before = mover.stats.bytes_copied
            assert c.alter_replica_log_dirs({("t", 0, 1): target})[("t", 0, 1)].name == "NONE"
            # The bucket starts full (a tenth of a second's worth): leave out the first second.
            c.runtime.run_until(lambda: False, 1_000)
            start_bytes, start = mover.stats.bytes_copied, time.perf_counter()
            c.runtime.run_until(lambda: False, int(window_s * 1_000))
            elapsed = time.perf_counter() - start
            measured = (mover.stats.bytes_copied - start_bytes) / elapsed
            rates.append(measured / MB)
            errors.append(abs(measured / rate - 1) * 100)
            assert mover.stats.bytes_copied > before
            _move_finish(c)
    samples = Samples(errors, [], [rate / MB] * len(errors))
    return Result.measured(
        "JBOD move throttle accuracy, Cluster.real (wall)", "%", "MB/s",
        "the configured replica.alter.log.dirs.io.max.bytes.per.second",
        Target("figure", "<", 10.0), samples,
        note=f"error of the bytes copied over {window_s:.0f} s of wall time against the "
             f"configured {rate / MB:.0f} MB/s (after the first second); measured "
             f"{', '.join(f'{r:.3f}' for r in rates)} MB/s")


def _move_finish(c: Cluster) -> None:
    """Cancel the running move of t-0 (asking for the dir it is in)."""
    lm = c.broker(1).log_manager
    src = lm.dir_of(TP)
    assert src is not None
    c.alter_replica_log_dirs({("t", 0, 1): src.path})


@contextmanager
def _timing_swaps(out: list[float]) -> Iterator[None]:
    """Wrap ``DirMoveFetcher.swap`` (S1..S6, the append lock held): each call's wall ms."""
    original = DirMoveFetcher.swap

    def timed_swap(self: DirMoveFetcher, *args: Any) -> None:
        start = time.perf_counter()
        try:
            original(self, *args)
        finally:
            out.append((time.perf_counter() - start) * 1_000)

    DirMoveFetcher.swap = timed_swap  # type: ignore[method-assign]
    try:
        yield
    finally:
        DirMoveFetcher.swap = original  # type: ignore[method-assign]


def bench_swap_hold(quick: bool) -> Result:
    size = 8 * MIB if quick else 1 << 30
    repeats = 2 if quick else 3
    held: list[float] = []
    with scratch_dir("jbod-swap") as root, _one_broker(root, size) as (c, _):
        log = c.broker(1).log_manager.get_log(TP)
        assert log is not None
        moved = log.size_bytes

        def figure() -> tuple[float, float]:
            held.clear()
            with _timing_swaps(held):
                _move(c, _other(c))
            assert held, "no swap ran"
            return held[-1], held[-1]

        samples = interleaved(figure, lambda: fsync_ms(root), repeats, warm_up=False)
    samples.cpu_figures.clear()
    return Result.measured(
        "JBOD move: appends held in the swap, Cluster.real (wall)", "ms", "ms",
        "one fsync of a small file in the same dir (same run)",
        Target("figure", "<", 10.0), samples,
        note=f"a {moved / MIB:.0f} MiB partition; S1 (the append lock taken) to S6 (released): "
             "the source's fsync, the last copy, the future log's fsync, two renames and "
             "three dir fsyncs, the moved log opened; medians of interleaved runs")


def run(quick: bool = False) -> list[Result]:
    """Every JBOD figure."""
    return [bench_copy_throughput(quick), bench_throttle(quick), bench_swap_hold(quick)]


if __name__ == "__main__":
    for result in run("--quick" in sys.argv):
        print(json.dumps(result.to_json(), indent=1))
