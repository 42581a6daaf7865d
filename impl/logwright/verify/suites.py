"""The suites ``logwright verify`` runs, in order. Each returns table rows."""

from __future__ import annotations

from logwright.verify.agreement import agreement_suite
from logwright.verify.core import Suite
from logwright.verify.formal import formal_suite
from logwright.verify.storage_campaign import storage_suite
from logwright.verify.trace_suite import trace_suite

SUITES: list[tuple[str, Suite]] = [
    ("storage", storage_suite),
    ("formal", formal_suite),
    ("agreement", agreement_suite),
    ("traces", trace_suite),
]
"""(name, suite) in the order they run; a name is what ``--suite`` takes (no spaces)."""

DESCRIPTIONS: dict[str, str] = {
    "storage": "the storage crash campaign: power loss at every file system operation",
    "formal": "the TLA+ models: the Python model checker, Z3 proofs, TLC when installed",
    "agreement": "each packed encoding against its readable twin on every reachable state of "
                 "every shipped .cfg",
    "traces": "seeded runs recorded now and traces/corpus, checked on Spark (local[2]) and in "
              "one process",
}
"""One line about each suite, for ``logwright verify --list``."""
