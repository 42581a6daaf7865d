"""``logwright verify``: every way logwright checks its safety invariants, as one table.

Each source of checks is a *suite*: a function that runs and returns ``Row``s. Suites are
registered in ``logwright.verify.suites`` in the order they run.
"""

from logwright.verify.core import Row, Verdict, render_json, render_table, run_suites

__all__ = ["Row", "Verdict", "render_json", "render_table", "run_suites"]
