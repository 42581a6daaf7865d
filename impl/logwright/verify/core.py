"""The result table of ``logwright verify``: one row per (invariant, method).

Besides the rows and their verdicts, this module holds what every suite shares: progress lines
as each check starts and ends (:func:`run_check`, reported to the :class:`Progress` that
:func:`run_suites` installs), the summary line, and the exit code a set of rows means.
"""

from __future__ import annotations

import contextvars
import enum
import json
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table


class Verdict(enum.StrEnum):
    """What a check concluded."""

    HOLDS = "holds"  # every check passed
    VIOLATED = "VIOLATED"  # a counterexample was found where none may exist
    CAUGHT = "caught"  # a deliberately injected bug was detected, as it must be
    MISSED = "MISSED"  # a deliberately injected bug went undetected: the checker is too weak
    UNDECIDED = "UNDECIDED"  # the check used up its resource limit (or state budget) undecided
    SKIPPED = "skipped"  # the tool is not installed; ``detail`` says how to get it
    ERROR = "ERROR"  # the check itself failed to run

    @property
    def failed(self) -> bool:
        """Whether this verdict is a failure (a violation, a missed bug or a broken check).

        UNDECIDED is not a failure but still makes ``logwright verify`` exit non-zero (4)."""
        return self in (Verdict.VIOLATED, Verdict.MISSED, Verdict.ERROR)


EXIT_OK = 0
"""Every row holds or caught its bug (skipped rows allowed)."""
EXIT_VIOLATED = 1
"""A safety invariant is VIOLATED."""
EXIT_USAGE = 2
"""Usage error (click's own code for a bad option or suite name)."""
EXIT_MISSED = 3
"""A bug switch was MISSED: a checker is too weak to see a known bug."""
EXIT_UNDECIDED = 4
"""A check could not decide within its resource limit (UNDECIDED)."""
EXIT_TOOL_ERROR = 5
"""A check crashed, or a tool (TLC, SANY) failed (ERROR)."""

_SEVERITY: tuple[tuple[Verdict, int], ...] = (
    (Verdict.VIOLATED, EXIT_VIOLATED),
    (Verdict.MISSED, EXIT_MISSED),
    (Verdict.ERROR, EXIT_TOOL_ERROR),
    (Verdict.UNDECIDED, EXIT_UNDECIDED),
)
"""Most severe first: when several verdicts apply, the first one present sets the exit code."""


def exit_code(rows: Sequence[Row]) -> int:
    """The exit code of ``logwright verify`` for these rows (most severe wins: 1 > 3 > 5 > 4)."""
    present = {r.verdict for r in rows}
    for verdict, code in _SEVERITY:
        if verdict in present:
            return code
    return EXIT_OK


@dataclass
class Row:
    """One line of the table."""

    invariant: str
    method: str
    verdict: Verdict
    checks: int = 0
    seconds: float = 0.0
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``invariant [method]``: the row named in the summary and in progress lines."""
        return f"{self.invariant} [{self.method}]"


Suite = Callable[[], list[Row]]


class Progress:
    """Where the lines "a check starts" and "a check ended: verdicts, time" go.

    Writes plain lines and flushes each, so they show in a pipe or a CI log as they happen (a
    spinner would show nothing there). The base class with no stream reports nothing.
    """

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream

    def _line(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(text + "\n")
            self.stream.flush()

    def started(self, label: str) -> None:
        """A check named ``label`` starts."""
        self._line(f"[start] {label}")

    def finished(self, label: str, rows: Sequence[Row], seconds: float) -> None:
        """The check named ``label`` ended with ``rows`` after ``seconds``."""
        self._line(f"[ end ] {label}: {count_verdicts(rows) or 'no rows'} ({seconds:.1f}s)")


_PROGRESS: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "logwright_verify_progress", default=None)
"""The Progress of the running :func:`run_suites`, if any (None: report nothing)."""


def run_check(label: str, fn: Callable[[], list[Row]], *, invariant: str | None = None,
              method: str | None = None) -> list[Row]:
    """Run one check, reporting its start and end; a check that raises becomes one ERROR row
    (named ``invariant`` / ``method``, default ``label``) rather than stopping the others."""
    progress = _PROGRESS.get() or Progress()
    progress.started(label)
    started = time.perf_counter()
    try:
        rows = fn()
    except Exception as exc:  # a broken check must not hide the others' verdicts
        rows = [Row(invariant or label, method or "check", Verdict.ERROR,
                    seconds=time.perf_counter() - started,
                    detail=f"{type(exc).__name__}: {exc}")]
    progress.finished(label, rows, time.perf_counter() - started)
    return rows


def run_suites(
    suites: Sequence[tuple[str, Suite]], on_start: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> list[Row]:
    """Run each suite; a suite that raises becomes an ERROR row rather than stopping the rest.

    ``progress`` receives a line as each suite and each check inside it starts and ends."""
    rows: list[Row] = []
    token = _PROGRESS.set(progress if progress is not None else _PROGRESS.get())
    try:
        for name, suite in suites:
            if on_start is not None:
                on_start(name)
            rows.extend(run_check(f"suite {name}", suite, invariant=name, method="suite"))
    finally:
        _PROGRESS.reset(token)
    return rows


def count_verdicts(rows: Sequence[Row]) -> str:
    """``3 holds, 1 caught``: how many rows of each verdict, in the Verdict order."""
    counts = {v: sum(1 for r in rows if r.verdict is v) for v in Verdict}
    return ", ".join(f"{n} {v.value}" for v, n in counts.items() if n)


def summary(rows: Sequence[Row]) -> str:
    """The final line: ``N hold, M caught, K failed, U undecided, S skipped``, then the rows that
    failed or could not decide, named."""
    def n(*verdicts: Verdict) -> int:
        return sum(1 for r in rows if r.verdict in verdicts)

    failed = [r for r in rows if r.verdict.failed]
    undecided = [r for r in rows if r.verdict is Verdict.UNDECIDED]
    line = (f"{n(Verdict.HOLDS)} hold, {n(Verdict.CAUGHT)} caught, {len(failed)} failed, "
            f"{len(undecided)} undecided, {n(Verdict.SKIPPED)} skipped")
    named = [f"{r.label} {r.verdict.value}" for r in failed + undecided]
    return line + (": " + "; ".join(named) if named else "")


_STYLE = {Verdict.SKIPPED: "yellow", Verdict.UNDECIDED: "magenta"}


def _count(n: int) -> str:
    """``457,212``; ``1.2M`` from a million on, to keep the column narrow (JSON has the exact)."""
    return f"{n:,}" if n < 1_000_000 else f"{n / 1_000_000:.1f}M"


def render_table(rows: Sequence[Row], console: Console) -> None:
    """Print the rows as one table, readable at 80 columns: the details are numbered notes below
    it, wrapped to the console's width, rather than a column squeezing the others."""
    table = Table(title="logwright verify", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False,
                  padding=0)
    for col, justify, kw in (("#", "right", {"no_wrap": True}),
                             ("invariant", "left", {"max_width": 23, "overflow": "fold"}),
                             ("method", "left", {"ratio": 1, "overflow": "fold"}),
                             ("verdict", "left", {"no_wrap": True}),
                             ("checks", "right", {"no_wrap": True}),
                             ("time", "right", {"no_wrap": True})):
        table.add_column(col, justify=justify, **kw)  # type: ignore[arg-type]
    for i, row in enumerate(rows, 1):
        style = "red" if row.verdict.failed else _STYLE.get(row.verdict, "green")
        table.add_row(str(i), escape(row.invariant), escape(row.method),
                      f"[{style}]{row.verdict.value}[/{style}]", _count(row.checks),
                      f"{row.seconds:.0f}s" if row.seconds >= 100 else f"{row.seconds:.1f}s")
    console.print(table)
    width = max(40, console.width)
    for i, row in enumerate(rows, 1):
        if row.detail:
            console.print(escape(textwrap.fill(row.detail, width, initial_indent=f"{i:>3}. ",
                                               subsequent_indent="     ")),
                          highlight=False, soft_wrap=True)


def render_json(rows: Sequence[Row]) -> str:
    """The rows as a JSON document for machines, with the summary line and the exit code."""
    out = []
    for row in rows:
        d = asdict(row)
        d["verdict"] = row.verdict.value
        d["failed"] = row.verdict.failed
        out.append(d)
    return json.dumps({"rows": out, "failed": any(r.verdict.failed for r in rows),
                       "summary": summary(rows), "exit_code": exit_code(rows)}, indent=2)
