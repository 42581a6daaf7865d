"""``logwright verify``: every way logwright checks its safety invariants, as one table.

Each source of checks is a *suite*: a function that runs and returns ``Row``s. Suites are
registered in ``logwright.verify.suites`` in the order they run. ``exit_code`` maps rows to the
command's exit code, ``summary`` to its last line, and ``Progress`` receives a line as each check
starts and ends.
"""

from logwright.verify.core import (
    Progress,
    Row,
    Verdict,
    exit_code,
    render_json,
    render_table,
    run_check,
    run_suites,
    summary,
)

__all__ = ["Progress", "Row", "Verdict", "exit_code", "render_json", "render_table", "run_check",
           "run_suites", "summary"]
