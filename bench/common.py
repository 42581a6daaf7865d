"""What every benchmark module shares: the result row, timing, physical references, scratch dirs.

Invariant upheld: a figure is never reported alone. Every ``Result`` carries a physical reference
measured in the same run on the same machine (``dd`` to the same disk, a plain directory walk),
the ratio between the two, and the target it is judged against; timings are medians of several
repetitions, the figure's and the reference's interleaved so that noise from other work on the
shared cores falls on both alike.

A benchmark module is any ``bench/*.py`` (other than ``run.py`` and ``common.py``) that defines
``run(quick: bool = False) -> list[Result]``; ``run()`` without the parameter is accepted too.
``--quick`` asks for small sizes: a smoke test that every figure is still produced, not a
measurement.
"""

from __future__ import annotations

import enum
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from logwright.world.fs import FileHandle
from logwright.world.realfs import RealFileSystem

MIB = 1 << 20
MB = 1_000_000  # bandwidths are in MB/s (10**6 bytes), as dd prints them


class Verdict(enum.StrEnum):
    """How a figure compares with its target."""

    MEETS = "meets"
    BELOW = "below"
    REPORTED = "reported"  # a figure with no target: shown beside its reference, not judged
    ERROR = "ERROR"  # the figure could not be measured; ``Result.error`` says why


@dataclass(frozen=True)
class Target:
    """What a figure must reach: ``value`` compared with the figure itself or with the ratio.

    ``on="ratio"`` targets are fractions of the physical reference (">= 50% of dd");
    ``on="figure"`` targets are absolute ("< 3 s", ">= 100,000 batches/s").
    """

    on: Literal["figure", "ratio"]
    op: Literal[">=", "<"]
    value: float

    def headroom(self, figure: float, ratio: float) -> float:
        """How far past the target the measurement is: >= 1 meets it (a "<" target is met
        strictly), < 1 falls short. 2.0 means twice as good as needed."""
        measured = ratio if self.on == "ratio" else figure
        if self.op == ">=":
            return measured / self.value
        return self.value / measured if measured > 0 else float("inf")

    def met(self, figure: float, ratio: float) -> bool:
        """Whether the measurement meets the target."""
        measured = ratio if self.on == "ratio" else figure
        return measured >= self.value if self.op == ">=" else measured < self.value


@dataclass
class Result:
    """One benchmark's figure beside its physical reference."""

    benchmark: str
    figure: float
    unit: str
    reference: float
    reference_unit: str
    reference_name: str
    target: Target
    samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    cpu_figure: float | None = None
    """The figure computed from CPU time instead of wall time: what it would be with a core to
    itself (None where it means nothing, e.g. for a reference-free figure)."""
    cpu_samples: list[float] = field(default_factory=list)
    note: str = ""
    error: str | None = None

    @classmethod
    def measured(cls, benchmark: str, unit: str, reference_unit: str, reference_name: str,
                 target: Target, samples: Samples, note: str = "") -> Result:
        """The row for a benchmark's repetitions: medians of each series."""
        return cls(benchmark, median(samples.figures), unit, median(samples.references),
                   reference_unit, reference_name, target, samples.figures, samples.references,
                   median(samples.cpu_figures) if samples.cpu_figures else None,
                   samples.cpu_figures, note)

    @property
    def ratio(self) -> float:
        """The figure divided by the reference (both in the same kind of unit)."""
        return self.figure / self.reference if self.reference else float("nan")

    @property
    def headroom(self) -> float:
        """See ``Target.headroom``; NaN when the figure could not be measured."""
        if self.error is not None:
            return float("nan")
        return self.target.headroom(self.figure, self.ratio)

    @property
    def verdict(self) -> Verdict:
        """Meets or below the target; ERROR if there is no figure."""
        if self.error is not None:
            return Verdict.ERROR
        return Verdict.MEETS if self.target.met(self.figure, self.ratio) else Verdict.BELOW

    def target_text(self) -> str:
        """The target in words, e.g. ``>= 50% of reference`` or ``< 3.000 s``."""
        t = self.target
        if t.on == "ratio":
            return f"{t.op} {t.value:.0%} of reference"
        return f"{t.op} {format_value(t.value, self.unit)}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, derived fields included; what was not measured is null."""
        return {
            "benchmark": self.benchmark,
            "figure": _finite_or_none(self.figure),
            "unit": self.unit,
            "reference": _finite_or_none(self.reference),
            "reference_unit": self.reference_unit,
            "reference_name": self.reference_name,
            "ratio": _finite_or_none(self.ratio),
            "target": {"on": self.target.on, "op": self.target.op, "value": self.target.value,
                       "text": self.target_text()},
            "headroom": _finite_or_none(self.headroom),
            "verdict": self.verdict.value,
            "samples": self.samples,
            "reference_samples": self.reference_samples,
            "cpu_figure": self.cpu_figure,
            "cpu_samples": self.cpu_samples,
            "note": self.note,
            "error": self.error,
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def error_result(benchmark: str, unit: str, reference_name: str, target: Target,
                 error: str) -> Result:
    """A row for a benchmark that could not produce its figure."""
    return Result(benchmark, float("nan"), unit, float("nan"), "", reference_name, target,
                  error=error)


def format_value(value: float, unit: str) -> str:
    """A figure with its unit, rounded for a table."""
    if value != value:  # NaN: not measured
        return "-"
    if unit == "s":
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if value >= 10_000:
        return f"{value:,.0f} {unit}"
    return f"{value:,.1f} {unit}"


# ---- timing ------------------------------------------------------------------------------------


def median(samples: list[float]) -> float:
    """The median of the samples (the figure a report quotes)."""
    return statistics.median(samples)


@dataclass(frozen=True)
class Timing:
    """Wall-clock and CPU seconds (this process, user + system) of one timed run."""

    wall_s: float
    cpu_s: float


def timed(fn: Callable[[], object]) -> Timing:
    """Time ``fn`` by the monotonic clock and by this process's CPU time.

    The wall time is the figure; the CPU time says what the code costs when the shared cores
    are busy with other work (the gap between the two is time spent waiting for a core).
    """
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


@dataclass
class Samples:
    """The repetitions of one benchmark: the figure by wall time and by CPU time, and the
    reference, in the order they ran."""

    figures: list[float] = field(default_factory=list)
    cpu_figures: list[float] = field(default_factory=list)
    references: list[float] = field(default_factory=list)


def interleaved(figure: Callable[[], tuple[float, float]], reference: Callable[[], float],
                repeats: int, warm_up: bool = True) -> Samples:
    """Run ``figure`` (returning the figure by wall and by CPU time) and ``reference``
    ``repeats`` times each, alternating which goes first, so a burst of load from a neighbour
    on the shared cores lands on both alike.

    With ``warm_up`` (and more than one repetition) each runs once first, untimed: the first
    run in a process is reliably the slowest (fresh page-cache and heap pages), for dd too.
    """
    if warm_up and repeats > 1:
        figure()
        reference()
    samples = Samples()

    def run_figure() -> None:
        wall, cpu = figure()
        samples.figures.append(wall)
        samples.cpu_figures.append(cpu)

    for i in range(repeats):
        if i % 2 == 0:
            run_figure()
            samples.references.append(reference())
        else:
            samples.references.append(reference())
            run_figure()
    return samples


# ---- physical references: dd -------------------------------------------------------------------

_DD_COPIED = re.compile(r"^(\d+) bytes.* copied, ([0-9.eE+-]+) s", re.MULTILINE)


@dataclass(frozen=True)
class DdRun:
    """What one ``dd`` copied and how long it said it took (its own clock, set up excluded)."""

    bytes_copied: int
    seconds: float

    @property
    def mb_per_s(self) -> float:
        """Bandwidth in MB/s (10**6 bytes per second)."""
        return self.bytes_copied / self.seconds / MB


def dd(*operands: str) -> DdRun:
    """Run ``dd`` with the given operands and parse its closing statistics line."""
    proc = subprocess.run(["dd", *operands], capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})
    if proc.returncode != 0:
        raise RuntimeError(f"dd {' '.join(operands)} failed: {proc.stderr.strip()}")
    match = _DD_COPIED.search(proc.stderr)
    if match is None:
        raise RuntimeError(f"cannot parse dd's statistics: {proc.stderr.strip()!r}")
    return DdRun(int(match.group(1)), float(match.group(2)))


def dd_write(path: str, block_size: str, count: int) -> DdRun:
    """Page-cache write of ``count`` blocks of zeros to a new file (no fsync), then remove it."""
    try:
        return dd("if=/dev/zero", f"of={path}", f"bs={block_size}", f"count={count}")
    finally:
        if os.path.exists(path):
            os.remove(path)


def dd_read(paths: list[str], block_size: str = "1M") -> DdRun:
    """Read ``paths`` to /dev/null; bytes and seconds summed over the files."""
    total_bytes, total_s = 0, 0.0
    for path in paths:
        run = dd(f"if={path}", "of=/dev/null", f"bs={block_size}")
        total_bytes += run.bytes_copied
        total_s += run.seconds
    return DdRun(total_bytes, total_s)


def fsync_ms(path: str) -> float:
    """One small write and fsync of a file in dir ``path``, in wall ms: the physical reference
    for a figure that is a few fsyncs."""
    name = os.path.join(path, "fsync-probe")

    def work() -> None:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, b"0\n1\nt 0 1\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    return timed(work).wall_s * 1_000


# ---- scratch space -----------------------------------------------------------------------------


def scratch_root() -> str:
    """Where benchmarks write: ``$TMPDIR`` or /tmp, so the real file system is measured."""
    return os.environ.get("TMPDIR") or "/tmp"


@contextmanager
def scratch_dir(name: str) -> Iterator[str]:
    """A fresh directory under ``scratch_root()``, removed afterwards whatever happens."""
    path = tempfile.mkdtemp(prefix=f"logwright-bench-{name}-", dir=scratch_root())
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def raise_open_file_limit() -> int:
    """Lift the soft limit on open files to the hard limit (a broker holds a descriptor per
    segment file); returns the limit now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


# ---- a file system for building fixtures -------------------------------------------------------


class _FixtureHandle(FileHandle):
    """A handle that opens the file for each call, so a fixture of tens of thousands of files
    never holds more than one descriptor, and whose fsync does nothing."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._size = os.stat(path).st_size

    def _with_fd(self, fn: Callable[[int], Any]) -> Any:
        fd = os.open(self.path, os.O_RDWR)
        try:
            return fn(fd)
        finally:
            os.close(fd)

    def append(self, data: bytes | bytearray | memoryview) -> int:
        position = self._size
        self.write_at(position, data)
        return position

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)

        def write(fd: int) -> None:
            written = 0
            while written < len(view):
                written += os.pwrite(fd, view[written:], position + written)

        self._with_fd(write)
        self._size = max(self._size, position + len(view))

    def read(self, position: int, size: int) -> bytes:
        if size <= 0 or position >= self._size:
            return b""
        data: bytes = self._with_fd(
            lambda fd: os.pread(fd, min(size, self._size - position), position))
        return data

    def size(self) -> int:
        return self._size

    def truncate(self, size: int) -> None:
        self._with_fd(lambda fd: os.ftruncate(fd, size))
        self._size = size

    def fsync(self) -> None:
        pass  # fixtures are rebuilt, never recovered: durability buys nothing here

    def close(self) -> None:
        pass


class FixtureFileSystem(RealFileSystem):
    """The real file system without fsync and without long-held descriptors, for building
    fixtures only (never for what is timed).

    On this machine an fsync costs milliseconds, so building 10,000 partitions through the real
    code with fsyncs would take minutes; the files it leaves are byte for byte the same.
    """

    def open(self, path: str, create: bool = False) -> FileHandle:
        if create and not os.path.exists(path):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        return _FixtureHandle(path)

    def fsync_dir(self, path: str) -> None:
        pass


def elapsed(fn: Callable[[], object]) -> float:
    """Seconds ``fn`` takes, by the monotonic high-resolution clock."""
    return timed(fn).wall_s
