"""The trace checker on Spark: ``logwright traces check PATH... --master URL`` (docs/pipeline.md).

Spark is the distributed engine here; nothing of a scheduler is written in this project. Every
step is a batch of Python over whole partitions (``mapInArrow``), never a Python call per event.
Files are read as bytes (Spark's ``binaryFile`` source: local paths or any path Hadoop's file
systems understand) and parsed on the executors by
:func:`logwright.verify.traces.scan_bytes`; every trace is checked by
:func:`logwright.verify.traces.check_trace`. Both are the functions the single-process checker
uses. A trace's events may lie in several files, so the job has two ways to a trace:

1. *Where it is read.* The files up to an even share of the corpus's bytes are spread over the
   tasks; each task parses its files and checks each trace it finds there at once, as if the
   trace were whole in that file, and returns one row per trace (its report as JSON and the
   fingerprints of the abstract states its twins reached) and one per line of bad input. No
   event leaves the task: no serialising, no shuffle, no second parse.
2. *Gathered by trace id.* A trace that turns out to have lines in more than one file, and
   every trace of a file larger than the even share (one task would hold back the job), goes
   the long way: its files are parsed into one row per line, the rows are partitioned by trace
   id and sorted, and each trace is checked whole. What the first way made of such a trace is
   dropped.

The driver merges the per-trace reports (a few hundred bytes each) into one
:class:`~logwright.verify.traces.CheckReport` and counts distinct states with Spark. Because
both engines read with the same function and check each whole trace with the same function,
their verdicts are the same (tests/test_spark_traces.py holds them equal, on traces in one file
and on traces spread over files).
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

from logwright.logmanager.collector import collector_paused
from logwright.verify.trace_outputs import report_from_json, report_to_json
from logwright.verify.traces import (
    BadInput,
    CheckReport,
    Event,
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
    driver. Its dependencies must be installed where the executors' Python runs. The sources
    only: a zip cannot hold importable extension modules, so the compiled build
    (docs/native.md) stays behind and the executors run pure Python."""
    import logwright
    from logwright import _native

    package = Path(logwright.__file__).parent
    target = Path(tempfile.mkdtemp(prefix="logwright-spark-")) / "logwright.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if (f.is_file() and "__pycache__" not in f.parts and not _native.is_build_file(f)):
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


# ---- the executors' side ------------------------------------------------------------------

READ_SCHEMA = "trace string, seq long, where string, event string, bad string"
RESULT_SCHEMA = "trace string, report string, states array<string>"
FILE_SCHEMA = ("path string, trace string, where string, bad string, report string, "
               "states array<string>")


def _local_name(names: dict[str, str], path: str) -> str:
    """The name a file read by Spark (``path``: a URI) is reported under."""
    uri = urlparse(path)
    local = unquote(uri.path) if uri.scheme in ("", "file") else path
    return names.get(local, local)


def _checked(trace: str, lines: list[tuple[str, Event]],
             bad_traces: frozenset[str] | set[str]) -> tuple[str, list[str]]:
    """One trace's report as JSON and its sorted state fingerprints: replayed, or only counted
    when a line of it is bad input (``bad_traces``)."""
    report = CheckReport(track_states=True)
    if trace in bad_traces:  # a line of it is bad input: reported, the rest not replayed
        skip_trace(lines, report)
    else:
        check_trace(trace, lines, report)
    return report_to_json(report), sorted(report.states)


def _check_files(names: dict[str, str]) -> Any:
    """The first way (module docstring): (path, content) rows in; per file, one row per line
    of bad input and one per trace with events in it, checked as if whole in that file."""
    import pyarrow as pa

    schema = pa.schema([("path", pa.string()), ("trace", pa.string()), ("where", pa.string()),
                        ("bad", pa.string()), ("report", pa.string()),
                        ("states", pa.list_(pa.string()))])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, content in zip(batch.column("path").to_pylist(),
                                     batch.column("content").to_pylist(), strict=True):
                with collector_paused():  # as check_paths: the events make no cycle
                    rows = _file_rows(path, content)
                yield pa.RecordBatch.from_pylist(rows, schema=schema)

    def _file_rows(path: str, content: bytes) -> list[dict[str, Any]]:
        traces: dict[str, list[tuple[str, Event]]] = {}
        rows: list[dict[str, Any]] = []
        for where, got in scan_bytes(_local_name(names, path), content):
            if isinstance(got, BadInput):
                rows.append({"path": path, "trace": got.trace, "where": got.where,
                             "bad": got.reason})
            else:
                traces.setdefault(got["trace"], []).append((where, got))
        named_bad = {r["trace"] for r in rows if r["trace"]}
        for trace, lines in traces.items():
            report, states = _checked(trace, lines, named_bad)
            rows.append({"path": path, "trace": trace, "report": report, "states": states})
        return rows
    return run
def _read_batches(names: dict[str, str]) -> Any:
    """The second way's parse: (path, content) rows in, one row per line out (the event as
    JSON, or the bad input's reason)."""
    import pyarrow as pa

    schema = pa.schema([("trace", pa.string()), ("seq", pa.int64()), ("where", pa.string()),
                        ("event", pa.string()), ("bad", pa.string())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, content in zip(batch.column("path").to_pylist(),
                                     batch.column("content").to_pylist(), strict=True):
                out: dict[str, list[Any]] = {k: [] for k in schema.names}
                with collector_paused():
                    for where, got in scan_bytes(_local_name(names, path), content):
                        row: tuple[str, int, str, str | None, str | None]
                        if isinstance(got, BadInput):
                            row = (got.trace, -1, got.where, None, got.reason)
                        else:
                            row = (got["trace"], int(got["seq"]), where,
                                   json.dumps(got, sort_keys=True), None)
                        for key, value in zip(out, row, strict=True):
                            out[key].append(value)
                yield pa.RecordBatch.from_pydict(out, schema=schema)
    return run


def _replay_batches(bad_traces: frozenset[str]) -> Any:
    """The second way's replay: the events of whole traces in, sorted by trace id; one row per
    trace out, its report and its states."""
    import pyarrow as pa

    schema = pa.schema([("trace", pa.string()), ("report", pa.string()),
                        ("states", pa.list_(pa.string()))])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current: str | None = None
        lines: list[tuple[str, Event]] = []
        done: list[dict[str, Any]] = []

        def finish() -> None:
            assert current is not None
            report, states = _checked(current, lines, bad_traces)
            done.append({"trace": current, "report": report, "states": states})

        for batch in batches:
            with collector_paused():
                for trace, where, event in zip(batch.column("trace").to_pylist(),
                                               batch.column("where").to_pylist(),
                                               batch.column("event").to_pylist(), strict=True):
                    if trace != current:
                        if current is not None:
                            finish()
                        current, lines = trace, []
                    lines.append((where, json.loads(event)))
            if done:
                yield pa.RecordBatch.from_pylist(done, schema=schema)
                done = []
        if current is not None:
            with collector_paused():
                finish()
            yield pa.RecordBatch.from_pylist(done, schema=schema)
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
    ``spark://host:port``, ``yarn``, ``k8s://...``). ``partitions``: how many tasks replay
    the traces gathered by id (default: twice the default parallelism); files are read and
    checked in about :data:`FILE_TASKS_PER_PARTITION` times as many. ``spark``: a session to
    use (not stopped); otherwise one is started and stopped. Raises TraceFormatError for a
    local path that holds no trace, SparkUnavailable without pyspark."""
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


_SPLIT_CONFS = ("spark.sql.files.minPartitionNum", "spark.sql.files.openCostInBytes")
FILE_TASKS_PER_PARTITION = 4
"""Files are read, and their traces checked, in about this many tasks per replay partition:
a file is never split, so with a few large tasks the last one can leave a core idle for most
of its length; with small ones Spark hands the next task to whichever core is free."""


@contextmanager
def _files_over_tasks(spark: SparkSession, tasks: int) -> Iterator[None]:
    """While inside, a file read is cut into about ``tasks`` partitions of even bytes (Spark
    packs whole files; by default it packs small files into as few tasks as the cores, which
    leaves a core idle whenever one task holds more than its share). Restored after."""
    before = {k: spark.conf.get(k, None) for k in _SPLIT_CONFS}
    spark.conf.set("spark.sql.files.minPartitionNum", str(tasks))
    spark.conf.set("spark.sql.files.openCostInBytes", "1")
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _job(spark: SparkSession, files: list[str], names: dict[str, str],
         partitions: int | None) -> tuple[CheckReport, dict[str, int], int]:
    from pyspark.sql import functions as F

    def read(paths: list[str]) -> DataFrame:
        return spark.read.format("binaryFile").load(paths)

    raw = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
           .option("pathGlobFilter", "*.{jsonl,parquet}").load(files)
           if any("://" in f and not f.startswith("file:") for f in files) else read(files))
    sizes = {r["path"]: int(r["length"]) for r in raw.select("path", "length").collect()}
    n = partitions or max(1, 2 * spark.sparkContext.defaultParallelism)
    share = sum(sizes.values()) / n
    big = sorted(p for p, size in sizes.items() if size > share)
    small = sorted(p for p in sizes if p not in set(big))
    bad: list[BadInput] = []
    cached: list[DataFrame] = []
    results: list[DataFrame] = []  # (trace, report, states) of the traces kept
    with _files_over_tasks(spark, FILE_TASKS_PER_PARTITION * n):
        # The first way: each small file's traces checked where the file is read.
        here: DataFrame | None = None
        files_of: dict[str, set[str]] = {}
        if small:
            here = read(small).select("path", "content").mapInArrow(
                _check_files(names), FILE_SCHEMA).cache()
            cached.append(here)
            for r in here.select("path", "trace", "where", "bad").collect():
                if r["bad"] is not None:
                    bad.append(BadInput(r["where"], r["trace"], r["bad"]))
                if r["trace"]:
                    files_of.setdefault(r["trace"], set()).add(r["path"])
        # The second way: the traces of big files, and traces found in more than one file.
        gathered = {t for t, paths in files_of.items() if len(paths) > 1}
        lines: DataFrame | None = None
        if big:
            lines = read(big).select("path", "content").mapInArrow(
                _read_batches(names), READ_SCHEMA).cache()
            cached.append(lines)
            for r in lines.where(F.col("bad").isNotNull()).collect():
                bad.append(BadInput(r["where"], r["trace"], r["bad"]))
            gathered |= {r["trace"] for r in lines.select("trace").distinct().collect()
                         if r["trace"]}
        if gathered:
            ids = F.broadcast(spark.createDataFrame([(t,) for t in sorted(gathered)],
                                                    "trace string"))
            also = sorted({p for t in gathered for p in files_of.get(t, ())})
            if also:  # the small files that hold lines of a gathered trace
                more = read(also).select("path", "content").mapInArrow(
                    _read_batches(names), READ_SCHEMA).join(ids, "trace", "left_semi")
                lines = more if lines is None else lines.unionByName(more)
            assert lines is not None
            bad_traces = frozenset(b.trace for b in bad if b.trace)
            long_way = (lines.where(F.col("bad").isNull()).repartition(n, "trace")
                        .sortWithinPartitions("trace")
                        .mapInArrow(_replay_batches(bad_traces), RESULT_SCHEMA).cache())
            cached.append(long_way)
            results.append(long_way)
            if here is not None:  # what the first way made of the gathered traces is dropped
                here = here.join(ids, "trace", "left_anti")
        if here is not None:
            results.append(here.where(F.col("report").isNotNull())
                           .select("trace", "report", "states"))
        report = CheckReport(files=len(sizes), bad_input=list(bad))
        seen = set()
        for frame in results:
            for r in frame.select("trace", "report").collect():
                report.merge(report_from_json(r["report"]))
                seen.add(r["trace"])
        distinct: dict[str, int] = {}
        if results:
            every = results[0]
            for frame in results[1:]:
                every = every.unionByName(frame)
            states = (every.coalesce(n).select(F.explode("states").alias("s")).distinct()
                      .select(F.split("s", ":").getItem(0).alias("model"))
                      .groupBy("model").count().collect())
            distinct = dict(sorted((r["model"], int(r["count"])) for r in states))
    report.events += len(bad)
    if bad:
        report.outcomes[("?", "?", "bad input")] += len(bad)
    report.traces += len({b.trace for b in bad if b.trace} - seen)  # every line was bad
    for frame in cached:
        frame.unpersist()
    return report, distinct, n


__all__ = ["DEFAULT_MASTER", "SparkRun", "SparkUnavailable", "check_on_spark", "session",
           "ship_package", "using"]
