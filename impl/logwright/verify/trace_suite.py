"""``logwright verify``'s suite "traces": recorded traces checked on Spark (docs/pipeline.md).

The suite records 40 seeded runs of the simulated cluster during the verify run (the whole
fault alphabet of ``logwright fuzz --seeds``, every property after every action), adds the
checked-in corpus (traces/corpus/ of the source tree, when logwright runs from one), and
checks them all on Spark in ``local[2]``; the single-process checker checks them too, and the
two engines must agree. A copy of one trace with a planted mismatch must be refused by both:
the row that shows the checker can see what it is for. Rows:

* ``TracesConform [spark local[2]]``: holds when every trace checks clean, VIOLATED (the
  refused events in the detail) otherwise, ERROR for bad input;
* ``TracesConform [engines agree]``: holds when both engines give the same findings and counts;
* ``PlantedMismatch [spark local[2]]``: caught, or MISSED;
* one skipped row when pyspark or Java is missing.

Deterministic: the seeds, their steps and the corpus are fixed; Spark only distributes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from logwright.verify.core import Row, Verdict, run_check
from logwright.verify.formal import spec_dir
from logwright.verify.trace_outputs import verdicts
from logwright.verify.traces import CheckReport, check_paths

SEEDS = tuple(range(40))
"""The seeded runs recorded during the verify run: 40 of 60 actions found a trace that crashed
the checker (seed 22) where four of 25 found nothing; about 25 s on two cores."""
STEPS = 60
"""Actions per seeded run."""
MASTER = "local[2]"


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401  (only whether it is there)
    except ImportError:
        return "pyspark is not installed: pip install 'logwright[spark]' (and Java 17)"
    if shutil.which("java") is None and not _java_home():
        return "Java is not installed (Spark needs Java 17): install a JDK 17"
    return None


def _java_home() -> bool:
    home = os.environ.get("JAVA_HOME")
    return home is not None and Path(home, "bin", "java").exists()


def _corpus() -> list[Path]:
    """The source tree's traces/corpus/ (none outside a source tree). Not traces/checker/:
    its traces were recorded by seeds this suite records again, under the same trace ids
    (make test checks them)."""
    corpus = spec_dir().parent / "traces" / "corpus"
    return [corpus] if corpus.is_dir() else []


def plant_mismatch(source: Path, target: Path) -> None:
    """A copy of ``source`` whose first Append claims five more records than it appended."""
    events = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    append = next(e for e in events if e["action"] == "Append")
    replica = str(append["args"]["replica"])
    append["changed"] = {"leo": {replica: append["changed"]["leo"][replica] + 5}}
    for e in events:
        e["trace"] = "planted-mismatch"
    target.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events),
                      encoding="utf-8")


def trace_suite() -> list[Row]:
    """The rows of the module docstring."""
    missing = _spark_missing()
    if missing is not None:
        return [Row("TracesConform", f"spark {MASTER}", Verdict.SKIPPED, detail=missing)]
    return run_check(f"traces on Spark {MASTER}", _rows, invariant="TracesConform",
                     method=f"spark {MASTER}")


def _rows() -> list[Row]:
    from logwright.verify.seed_runs import run_seeds
    from logwright.verify.spark import check_on_spark, using

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="logwright-verify-traces-") as tmp:
        recorded = Path(tmp) / "recorded"
        campaign = run_seeds(SEEDS, STEPS, recorded)  # one process per core
        for result in campaign.failures:
            if result.failure is not None:  # a property of the run itself failed
                rows.append(Row("TracesConform", "seeded runs", Verdict.VIOLATED, 1,
                                detail=f"seed {result.seed}: {result.failure}"))
        paths = [str(recorded)]
        corpus = _corpus()
        paths += [str(d) for d in corpus]
        planted = Path(tmp) / "planted"
        planted.mkdir()
        plant_mismatch(recorded / campaign.results[0].trace, planted / "planted.jsonl")
        with using(MASTER, "logwright verify: traces") as spark:
            run = check_on_spark(paths, spark=spark, progress=False)
            caught = check_on_spark([str(planted)], spark=spark, progress=False)
        single = check_paths(paths, CheckReport(track_states=True))
        planted_single = check_paths([str(planted)])
    report = run.report
    where = (f"{len(campaign.results)} seeded runs of {STEPS} actions recorded now"
             + "".join(f" and traces/{d.name}" for d in corpus))
    figures = (f"{report.traces} traces, {report.events:,} events, {report.steps:,} model "
               f"steps; Spark session {run.startup_seconds:.1f} s, work {run.work_seconds:.1f} s")
    if report.failures:
        first = report.failures[0]
        rows.append(Row("TracesConform", f"spark {MASTER}", Verdict.VIOLATED,
                        report.events, run.work_seconds,
                        f"{len(report.failures)} refused; first: {first.where} (seq "
                        f"{first.seq}) {first.model} {first.action}: {first.kind}: "
                        f"{first.message}; {where}"))
    elif report.bad_input:
        rows.append(Row("TracesConform", f"spark {MASTER}", Verdict.ERROR, report.events,
                        run.work_seconds, f"bad input: {report.bad_input[0].format()}"))
    else:
        rows.append(Row("TracesConform", f"spark {MASTER}", Verdict.HOLDS, report.events,
                        run.work_seconds, f"{figures}; {where}",
                        {"distinct_states": run.distinct}))
    same = verdicts(single) == verdicts(report) and single.distinct_states() == run.distinct
    rows.append(Row("TracesConform", "engines agree", Verdict.HOLDS if same else Verdict.ERROR,
                    report.traces, detail="the single-process checker gives the same findings, "
                    "counts and distinct states" if same else "the single-process checker and "
                    "Spark disagree: a defect of the pipeline"))
    refused = [f for f in caught.report.failures if f.kind == "mismatch"]
    both = bool(refused) and bool([f for f in planted_single.failures if f.kind == "mismatch"])
    rows.append(Row("PlantedMismatch", f"spark {MASTER}",
                    Verdict.CAUGHT if both else Verdict.MISSED, caught.report.events,
                    caught.work_seconds,
                    f"{refused[0].where}: {refused[0].message}" if refused else
                    "an Append claiming five records too many was not refused"))
    return rows


__all__ = ["MASTER", "SEEDS", "STEPS", "plant_mismatch", "trace_suite"]
