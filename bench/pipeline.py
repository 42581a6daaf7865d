"""The trace pipeline on Spark (docs/pipeline.md): validation throughput on a generated corpus.

Invariant upheld: each figure is judged beside a reference from the same run. The corpus is
traces/corpus/'s traces copied under new trace ids until it holds ``TRACES`` traces (10,000 of
about 216 events: over 2 million events), in files of 200 traces. Figures:

* ``traces check on Spark local[2]``: events per second of the job's work (the Spark session's
  start-up apart, in the note), beside the single-process checker on the same corpus; the
  target is 200,000 events/s;
* ``Spark speed-up from 1 to 2 cores``: the work time on ``local[1]`` divided by the work time
  on ``local[2]``, beside the ideal 2; the target is 1.7.

``--quick`` uses 100 traces and one session: a smoke test that the figures are produced, not a
measurement. ``bench/run.py --quick`` (the test suite's smoke test) leaves this module out
(:data:`SKIP_IN_QUICK_RUNS`): a Spark session's start costs more than the rest of its quick run.

    python bench/pipeline.py            # or: python bench/run.py (every module)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from common import Result, Samples, Target, scratch_dir, timed
from logwright.verify.spark import check_on_spark, session
from logwright.verify.traces import check_paths

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "traces" / "corpus"
TRACES = 10_000
PER_FILE = 200
SKIP_IN_QUICK_RUNS = True
"""``bench/run.py --quick`` does not run this module (``python bench/pipeline.py --quick`` does)."""


def generate(directory: Path, traces: int) -> int:
    """Write ``traces`` traces (the corpus's, renamed) into ``directory``; returns the events."""
    sources = [[json.loads(line) for line in p.read_text().splitlines()]
               for p in sorted(CORPUS.glob("*.jsonl"))]
    events = 0
    for start in range(0, traces, PER_FILE):
        lines = []
        for i in range(start, min(start + PER_FILE, traces)):
            for e in sources[i % len(sources)]:
                lines.append(json.dumps({**e, "trace": f"bench-{i}"}, sort_keys=True))
        events += len(lines)
        (directory / f"part-{start // PER_FILE:04d}.jsonl").write_text("\n".join(lines) + "\n")
    return events


def run(quick: bool = False) -> list[Result]:
    """The two figures of the module docstring."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with scratch_dir("pipeline") as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        events = generate(corpus, 100 if quick else TRACES)
        single = timed(lambda: check_paths([corpus]))
        runs = {}
        sessions: list[Any] = []
        startup: dict[str, float] = {}
        # Quick mode starts one session (local[2]) and runs the job twice on it: the smoke
        # test's figures, not the speed-up (that needs a session per master).
        for master in ("local[2]",) if quick else ("local[1]", "local[2]"):
            started = timed(lambda m=master: sessions.append(session(m, f"bench {m}")))
            spark = sessions[-1]
            startup[master] = started.wall_s
            try:
                if not quick:  # warm the Python workers
                    check_on_spark([str(corpus)], spark=spark, progress=False)
                runs[master] = check_on_spark([str(corpus)], spark=spark, progress=False)
                if quick:
                    runs["local[1]"] = check_on_spark([str(corpus)], spark=spark,
                                                      progress=False)
            finally:
                spark.stop()
            assert runs[master].report.ok and runs[master].report.events == events
    two, one = runs["local[2]"], runs["local[1]"]
    note = (f"{events:,} events in {100 if quick else TRACES:,} traces; Spark session start "
            f"{startup['local[2]']:.1f} s apart from the work; single process "
            f"{events / single.wall_s:,.0f} events/s")
    throughput = Result.measured(
        "traces check on Spark local[2]", "events/s", "events/s",
        "the single-process checker on the same corpus (same run)",
        Target("figure", ">=", 200_000),
        Samples(figures=[events / two.work_seconds], references=[events / single.wall_s]),
        note=note)
    speedup = Result.measured(
        "Spark speed-up from 1 to 2 cores", "x", "x", "the ideal speed-up of two cores",
        Target("figure", ">=", 1.7),
        Samples(figures=[one.work_seconds / two.work_seconds], references=[2.0]),
        note=f"work on local[1] {one.work_seconds:.1f} s, on local[2] {two.work_seconds:.1f} s")
    return [throughput, speedup]


if __name__ == "__main__":
    for result in run("--quick" in sys.argv):
        print(json.dumps(result.to_json(), indent=1))
