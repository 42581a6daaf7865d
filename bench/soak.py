"""Memory under sustained load: a soak of ``Cluster.real`` (3 brokers, acks=all, full speed).

Invariant upheld: the figure is judged beside a reference from the same run. The soak runs in a
child process of its own, so what other modules loaded does not count, and produces acks=all
batches to one partition replicated three times, as fast as it can, for ``SECONDS`` (600; 20 with
``--quick``). Every ``SAMPLE_S`` seconds it samples its resident set size and the scheduler's
queue (tasks armed, cancelled ones not yet dropped included). The figure is the RSS at the end;
the reference is the RSS at the end of the warm-up (the first ``WARM_UP_S`` seconds); the target
is a ratio below 1.10, memory flat after warm-up. The note gives the whole series, the
produces, the queue's largest size and the load average.

Before the scheduler dropped cancelled tasks (docs/performance.md, "Memory under sustained
load"), every completed acks=all produce stayed alive until its request timeout through its
cancelled expiry timer: a 60 s soak grew from 34 MB to 168 MB with 71,000 entries queued.

    python bench/soak.py            # or: python bench/run.py --only soak
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Result, Samples, Target

SECONDS = 600
WARM_UP_S = 60
SAMPLE_S = 10
QUICK_SECONDS, QUICK_WARM_UP_S, QUICK_SAMPLE_S = 20, 5, 5
SKIP_IN_QUICK_RUNS = True
"""``bench/run.py --quick`` leaves it out (a cluster's start costs more than the rest of its
quick run); ``python bench/soak.py --quick`` runs it."""


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def soak(seconds: int, sample_s: int) -> dict[str, object]:
    """The child's work: the soak itself; returns its samples."""
    from logwright import Cluster

    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="logwright-soak-") as d:
        cluster = Cluster.real(os.path.join(d, "data"), brokers=3, log_dirs_per_broker=1,
                               seed=1)
        try:
            cluster.create_topic("soak", partitions=1, replication_factor=3)
            values = [b"x" * 100] * 10
            scheduler = cluster.runtime.scheduler
            start = time.monotonic()
            due, produces = start, 0
            while True:
                now = time.monotonic()
                if now >= due:
                    samples.append({"t": now - start, "rss_mb": _rss_mb(),
                                    "queued": scheduler.queued, "produces": produces})
                    due += sample_s
                if now - start >= seconds:
                    break
                cluster.produce("soak", 0, values, acks=-1)
                produces += 1
        finally:
            cluster.close()
    return {"samples": samples}


def run(quick: bool = False) -> list[Result]:
    """The figure of the module docstring."""
    seconds, warm_up, sample_s = ((QUICK_SECONDS, QUICK_WARM_UP_S, QUICK_SAMPLE_S) if quick
                                  else (SECONDS, WARM_UP_S, SAMPLE_S))
    load = os.getloadavg()
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                          str(seconds), str(sample_s)],
                         capture_output=True, text=True, check=True)
    samples = json.loads(out.stdout)["samples"]
    warm = next(s for s in samples if s["t"] >= warm_up)
    end = samples[-1]
    series = ", ".join(f"{s['t']:.0f}s {s['rss_mb']:.0f}" for s in samples)
    note = (f"{seconds} s, warm-up {warm_up} s; {end['produces']:,} acks=all produces of 10 "
            f"records; RSS MB over time: {series}; scheduler queue at most "
            f"{max(s['queued'] for s in samples):,} entries; load average at start "
            f"{load[0]:.2f}")
    return [Result.measured("soak: RSS at the end (Cluster.real, acks=all, full speed)", "MB",
                            "MB", "RSS after the warm-up", Target("ratio", "<", 1.10),
                            Samples(figures=[end["rss_mb"]], references=[warm["rss_mb"]]),
                            note)]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(soak(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        for result in run(quick="--quick" in sys.argv):
            print(result.benchmark, f"{result.figure:.1f} MB beside {result.reference:.1f} MB",
                  f"ratio {result.ratio:.3f}", result.verdict.value)
            print(result.note)
