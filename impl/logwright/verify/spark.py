"""The trace checker on Spark: ``logwright traces check PATH... --master URL`` (docs/pipeline.md).

Spark is the distributed engine here; nothing of a scheduler is written in this project. The
job has two stages, each a batch of Python over whole partitions (``mapInArrow``), never a
Python call per event:

1. *Read.* Every file is read as bytes (Spark's ``binaryFile`` source: local paths or any path
   Hadoop's file systems understand) and parsed on the executors by
   :func:`logwright.verify.traces.scan_bytes`, the same function the single-process checker
   uses: one row per line, the event or the bad input with its reason.
2. *Replay.* The events are partitioned by trace id and each partition is sorted by it; the
   executor replays each trace with :func:`logwright.verify.traces.check_trace` (the same
   function again) and returns one row per trace: its report as JSON and the fingerprints of
   the abstract states its twins reached.

The driver merges the per-trace reports (a few hundred bytes each) into one
:class:`~logwright.verify.traces.CheckReport` and counts distinct states with Spark. Because
both engines read with the same function and check each trace with the same function, their
verdicts are the same (tests/test_spark_traces.py holds them equal).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from logwright.verify.trace_outputs import report_from_json, report_to_json
from logwright.verify.traces import (
    BadInput,
    CheckReport,
    TraceFormatError,
    check_trace,
    scan_bytes,
    skip_trace,
    trace_files,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[*]"
"""Every core of this machine."""


class SparkUnavailable(TraceFormatError):
    """PySpark (or Java, which it needs) is not installed."""


@dataclass
class SparkRun:
    """A run of the Spark job: its report, the distinct states, and where the time went."""

    report: CheckReport
    distinct: dict[str, int]
    master: str
    startup_seconds: float
    """Starting the Spark session (the JVM, the executors), apart from the work."""
    work_seconds: float
    partitions: int
    notes: list[str] = field(default_factory=list)

    def timings(self) -> dict[str, Any]:
        """The engine's figures for ``summary.json``."""
        r = self.report
        return {"engine": "spark", "master": self.master, "partitions": self.partitions,
                "session_start_seconds": round(self.startup_seconds, 3),
                "work_seconds": round(self.work_seconds, 3),
                "events_per_second": round(r.events / self.work_seconds)
                if self.work_seconds > 0 else None}


def session(master: str = DEFAULT_MASTER, app: str = "logwright traces check") -> SparkSession:
    """A Spark session on ``master``: executors run this interpreter (``PYSPARK_PYTHON`` unless
    set), Arrow on, the web UI off for a local master."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable("the Spark engine needs pyspark: pip install "
                               "'logwright[spark]' (and Java 17)") from exc
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.python.worker.reuse", "true"))
    if master.startswith("local"):
        builder = builder.config("spark.ui.enabled", "false")
    builder = builder.config("spark.ui.showConsoleProgress", "false")  # ours: _Progress
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ship_package(spark: SparkSession) -> None:
    """Send this logwright package to the executors of a cluster (a zip on their
    ``sys.path``, as ``spark-submit --py-files`` would): they replay with the same code as the
    driver. Its dependencies must be installed where the executors' Python runs."""
    import logwright

    package = Path(logwright.__file__).parent
    target = Path(tempfile.mkdtemp(prefix="logwright-spark-")) / "logwright.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, Path("logwright") / f.relative_to(package))
    spark.sparkContext.addPyFile(str(target))


@contextmanager
def using(master: str = DEFAULT_MASTER, app: str = "logwright") -> Iterator[SparkSession]:
    """This process's running Spark session (left running), or a new one on ``master``,
    stopped at the end."""
    active = _active()
    if active is not None:
        yield active
        return
    spark = session(master, app)
    try:
        yield spark
    finally:
        spark.stop()


def _active() -> SparkSession | None:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None  # session() says what to install
    return SparkSession.getActiveSession()


# ---- stage 1: read ------------------------------------------------------------------------

READ_SCHEMA = "trace string, seq long, where string, event string, bad string"


def _display_names(paths: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The files Spark reads and, for local ones, the name each is reported under (the one
    :func:`trace_files` gives, so that both engines say the same ``file:line``)."""
    local = [p for p in paths if "://" not in p or p.startswith("file:")]
    remote = [p for p in paths if p not in local]
    names: dict[str, str] = {}
    files: list[str] = []
    for f in trace_files([unquote(urlparse(p).path) if p.startswith("file:") else p
                          for p in local]) if local else []:
        absolute = str(Path(f).resolve())
        names[absolute] = str(f)
        files.append(absolute)
    return files + remote, names


def _read_batches(names: dict[str, str]) -> Any:
    """The executor's side of stage 1: (path, content) rows in, one row per line out."""
    import pyarrow as pa

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out: dict[str, list[Any]] = {k: [] for k in ("trace", "seq", "where", "event",
                                                         "bad")}
            for path, content in zip(batch.column("path").to_pylist(),
                                     batch.column("content").to_pylist(), strict=True):
                uri = urlparse(path)
                local = unquote(uri.path) if uri.scheme in ("", "file") else path
                name = names.get(local, local)
                for where, got in scan_bytes(name, content):
                    row: tuple[str, int, str, str | None, str | None]
                    if isinstance(got, BadInput):
                        row = (got.trace, -1, got.where, None, got.reason)
                    else:
                        row = (got["trace"], int(got["seq"]), where,
                               json.dumps(got, sort_keys=True), None)
                    for key, value in zip(out, row, strict=True):
                        out[key].append(value)
            yield pa.RecordBatch.from_pydict(out, schema=pa.schema([
                ("trace", pa.string()), ("seq", pa.int64()), ("where", pa.string()),
                ("event", pa.string()), ("bad", pa.string())]))
    return run


# ---- stage 2: replay ----------------------------------------------------------------------

RESULT_SCHEMA = "trace string, report string, states array<string>"


def _replay_batches(bad_traces: frozenset[str]) -> Any:
    """The executor's side of stage 2: the events of whole traces in, sorted by trace id; one
    row per trace out, its report and its states."""
    import pyarrow as pa

    schema = pa.schema([("trace", pa.string()), ("report", pa.string()),
                        ("states", pa.list_(pa.string()))])

    def finish(trace: str, lines: list[tuple[str, dict[str, Any]]]) -> tuple[str, str,
                                                                            list[str]]:
        report = CheckReport(track_states=True)
        if trace in bad_traces:  # a line of it is bad input: reported, the rest not replayed
            skip_trace(lines, report)
        else:
            check_trace(trace, lines, report)
        return trace, report_to_json(report), sorted(report.states)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current: str | None = None
        lines: list[tuple[str, dict[str, Any]]] = []
        done: list[tuple[str, str, list[str]]] = []
        for batch in batches:
            for trace, where, event in zip(batch.column("trace").to_pylist(),
                                           batch.column("where").to_pylist(),
                                           batch.column("event").to_pylist(), strict=True):
                if trace != current:
                    if current is not None:
                        done.append(finish(current, lines))
                    current, lines = trace, []
                lines.append((where, json.loads(event)))
            if done:
                yield pa.RecordBatch.from_pylist(
                    [{"trace": t, "report": r, "states": s} for t, r, s in done], schema=schema)
                done = []
        if current is not None:
            t, r, s = finish(current, lines)
            yield pa.RecordBatch.from_pylist([{"trace": t, "report": r, "states": s}],
                                             schema=schema)
    return run


class _Progress:
    """Tasks done of the running stages, on stderr, while the job runs (Spark's status
    tracker polled twice a second); nothing when ``show`` is false or stderr is no terminal."""

    def __init__(self, spark: SparkSession, show: bool) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.show = show and sys.stderr.isatty()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Progress:
        if self.show:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.show:
            self.thread.join()
            sys.stderr.write("\r\033[K")

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            parts = []
            for sid in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(sid)
                if info is not None:
                    running = f", {info.numActiveTasks} running" if info.numActiveTasks else ""
                    parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} "
                                 f"tasks{running}")
            if parts:
                sys.stderr.write("\r\033[Ktraces check on Spark: " + "; ".join(parts))
                sys.stderr.flush()


def check_on_spark(paths: Sequence[str], master: str = DEFAULT_MASTER, *,
                   partitions: int | None = None, progress: bool = True,
                   spark: SparkSession | None = None) -> SparkRun:
    """Check every trace under ``paths`` on Spark (``master``: ``local[*]``,
    ``spark://host:port``, ``yarn``, ``k8s://...``). ``partitions``: how many replay tasks
    (default: twice the default parallelism). ``spark``: a session to use (not stopped);
    otherwise one is started and stopped. Raises TraceFormatError for a local path that holds
    no trace, SparkUnavailable without pyspark."""
    files, names = _display_names(list(paths))
    started = time.perf_counter()
    spark = spark or _active()  # this process's session, if it runs one: not stopped
    own = spark is None
    spark = spark or session(master)
    if own and not master.startswith("local"):
        ship_package(spark)
    startup = time.perf_counter() - started
    try:
        begun = time.perf_counter()
        with _Progress(spark, progress):
            report, distinct, n = _job(spark, files, names, partitions)
        work = time.perf_counter() - begun
    finally:
        if own:
            spark.stop()
    report.seconds = work
    return SparkRun(report, distinct, master if own else str(spark.sparkContext.master),
                    startup, work, n)


def _job(spark: SparkSession, files: list[str], names: dict[str, str],
         partitions: int | None) -> tuple[CheckReport, dict[str, int], int]:
    from pyspark.sql import functions as F

    raw = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
           .option("pathGlobFilter", "*.{jsonl,parquet}").load(files)
           if any("://" in f and not f.startswith("file:") for f in files)
           else spark.read.format("binaryFile").load(files))
    file_count = raw.count()
    rows: DataFrame = raw.select("path", "content").mapInArrow(_read_batches(names),
                                                               READ_SCHEMA).cache()
    bad = [BadInput(r["where"], r["trace"], r["bad"])
           for r in rows.where(F.col("bad").isNotNull()).collect()]
    bad_traces = frozenset(b.trace for b in bad if b.trace)
    n = partitions or max(1, 2 * spark.sparkContext.defaultParallelism)
    results = (rows.where(F.col("bad").isNull()).repartition(n, "trace")
               .sortWithinPartitions("trace")
               .mapInArrow(_replay_batches(bad_traces), RESULT_SCHEMA).cache())
    report = CheckReport(files=file_count, bad_input=list(bad))
    seen = set()
    for r in results.select("trace", "report").collect():
        report.merge(report_from_json(r["report"]))
        seen.add(r["trace"])
    report.events += len(bad)
    if bad:
        report.outcomes[("?", "?", "bad input")] += len(bad)
    report.traces += len(bad_traces - seen)  # every line of these was bad
    states = (results.select(F.explode("states").alias("s")).distinct()
              .select(F.split("s", ":").getItem(0).alias("model"))
              .groupBy("model").count().collect())
    distinct = dict(sorted((r["model"], int(r["count"])) for r in states))
    rows.unpersist()
    results.unpersist()
    return report, distinct, n


__all__ = ["DEFAULT_MASTER", "SparkRun", "SparkUnavailable", "check_on_spark", "session",
           "ship_package", "using"]
