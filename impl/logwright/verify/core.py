"""The result table of ``logwright verify``: one row per (invariant, method)."""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


class Verdict(enum.StrEnum):
    """What a check concluded."""

    HOLDS = "holds"  # every check passed
    VIOLATED = "VIOLATED"  # a counterexample was found where none may exist
    CAUGHT = "caught"  # a deliberately injected bug was detected, as it must be
    MISSED = "MISSED"  # a deliberately injected bug went undetected: the checker is too weak
    SKIPPED = "skipped"  # the tool is not installed; ``detail`` says how to get it
    ERROR = "ERROR"  # the check itself failed to run

    @property
    def failed(self) -> bool:
        """Whether this verdict makes ``logwright verify`` exit non-zero."""
        return self in (Verdict.VIOLATED, Verdict.MISSED, Verdict.ERROR)


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


Suite = Callable[[], list[Row]]


def run_suites(
    suites: Sequence[tuple[str, Suite]], on_start: Callable[[str], None] | None = None
) -> list[Row]:
    """Run each suite; a suite that raises becomes an ERROR row rather than stopping the rest."""
    rows: list[Row] = []
    for name, suite in suites:
        if on_start is not None:
            on_start(name)
        started = time.perf_counter()
        try:
            rows.extend(suite())
        except Exception as exc:  # a broken suite must not hide the others' verdicts
            rows.append(
                Row(name, "suite", Verdict.ERROR, seconds=time.perf_counter() - started,
                    detail=f"{type(exc).__name__}: {exc}")
            )
    return rows


def render_table(rows: Sequence[Row], console: Console) -> None:
    """Print the rows as one table."""
    table = Table(title="logwright verify", show_lines=False)
    for col, justify in (("invariant", "left"), ("method", "left"), ("checks", "right"),
                         ("verdict", "left"), ("time", "right"), ("detail", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        style = "red" if row.verdict.failed else ("yellow" if row.verdict is Verdict.SKIPPED
                                                  else "green")
        table.add_row(row.invariant, row.method, f"{row.checks:,}",
                      f"[{style}]{row.verdict.value}[/{style}]", f"{row.seconds:.2f}s",
                      escape(row.detail))
    console.print(table)


def render_json(rows: Sequence[Row]) -> str:
    """The rows as a JSON document for machines."""
    out = []
    for row in rows:
        d = asdict(row)
        d["verdict"] = row.verdict.value
        d["failed"] = row.verdict.failed
        out.append(d)
    return json.dumps({"rows": out, "failed": any(r.verdict.failed for r in rows)}, indent=2)
