"""What a CI run of ``make test`` covers: the two stateful campaigns, counted.

A script, not a test (pytest collects only ``test_*.py``), and not a timing. It runs the two
Hypothesis machines that model_tests/ runs in CI with the same settings (the ``ci`` profile:
derandomized; 120 examples of at most 40 steps for the cluster, 300 of at most 30 for storage)
and counts what they exercised: examples, steps, rules by name, simulated events, refinement
checks of the four per-event models and their matched steps, power losses and crash points.
docs/verification.md ("What a CI run of make test covers") quotes its output.

    HYPOTHESIS_PROFILE=ci python model_tests/ci_coverage.py            # both (~4 minutes)
    HYPOTHESIS_PROFILE=ci python model_tests/ci_coverage.py --storage  # one of them
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

from hypothesis import settings
from hypothesis.stateful import invariant, run_state_machine_as_test

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # conftest.py: the Hypothesis profiles make test uses
import conftest  # noqa: E402,F401  (registers and loads the profile named by HYPOTHESIS_PROFILE)

from logwright.verify.stateful_cluster import KNOWN_DEFECT_RULES, ClusterMachine  # noqa: E402
from logwright.verify.stateful_storage import StorageMachine  # noqa: E402


def cluster() -> dict[str, Any]:
    """The cluster campaign of model_tests/test_cluster_stateful.py, counted."""
    totals: Counter[str] = Counter()
    ops: Counter[str] = Counter()

    class Counted(ClusterMachine):
        avoid = KNOWN_DEFECT_RULES

        @invariant()
        def count_step(self) -> None:
            if hasattr(self, "run"):
                totals["steps"] += 1

        def teardown(self) -> None:
            run = getattr(self, "run", None)
            if run is not None:
                totals["examples"] += 1
                totals["simulated events"] += run.cluster.runtime.events
                totals["machine power losses"] += run.machine_crashes
                for name in ("projection", "fencing_projection", "fetcher_projection",
                             "stray_projection", "move_projection"):
                    p = getattr(run, name, None)
                    if p is not None:
                        totals[f"{name}: checks"] += getattr(p, "checks", 0)
                        totals[f"{name}: model steps matched"] += getattr(p, "steps", 0)
                for step in run.steps:
                    ops[str(step.get("op"))] += 1
            super().teardown()

    config = settings(settings(), max_examples=max(120, settings().max_examples),
                      stateful_step_count=40, database=None)
    run_state_machine_as_test(Counted, settings=config)
    return {**dict(totals), "steps by op": dict(sorted(ops.items()))}


def storage() -> dict[str, Any]:
    """The storage campaign of model_tests/test_storage_stateful.py, counted."""
    totals: Counter[str] = Counter()

    class Counted(StorageMachine):
        @invariant()
        def count_step(self) -> None:
            if hasattr(self, "harness"):
                totals["steps"] += 1

        def teardown(self) -> None:
            harness = getattr(self, "harness", None)
            if harness is not None:
                totals["examples"] += 1
                totals["power losses (crash points reached)"] += harness.crashes
            parent = getattr(super(), "teardown", None)
            if parent is not None:
                parent()

    config = settings(settings(), max_examples=max(300, settings().max_examples),
                      stateful_step_count=30, database=None)
    run_state_machine_as_test(Counted, settings=config)
    return dict(totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", action="store_true", help="only the cluster campaign")
    parser.add_argument("--storage", action="store_true", help="only the storage campaign")
    args = parser.parse_args()
    both = not (args.cluster or args.storage)
    out: dict[str, Any] = {"profile": os.environ.get("HYPOTHESIS_PROFILE", "dev")}
    if both or args.cluster:
        out["cluster"] = cluster()
    if both or args.storage:
        out["storage"] = storage()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
