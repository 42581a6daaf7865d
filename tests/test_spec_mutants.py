"""The spec mutation suite's list stays applicable, and its runner skips cleanly without TLC.

Running the mutants needs TLC (``python -m logwright.verify.spec_mutants``; spec/README.md has
the results); this file checks, without TLC, that every mutation still applies to exactly one
place of its module, and what the runner and the coverage reader do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from logwright.model import SPECS
from logwright.verify.spec_mutants import (
    MUTANTS,
    NO_NEW_STATES,
    SpecMutant,
    coverage,
    parse_coverage,
    run_mutant,
)
from logwright.verify.tlc import find_tools

SPEC = Path(__file__).resolve().parents[1] / "spec"


@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{m.module}/{m.name}" for m in MUTANTS])
def test_each_mutation_finds_its_text_exactly_once(mutant: SpecMutant) -> None:
    text = (SPEC / f"{mutant.module}.tla").read_text(encoding="utf-8")
    assert text.count(mutant.find) == 1
    mutated = mutant.apply(text)
    assert mutated != text and mutant.replace in mutated


def test_every_module_has_mutants_with_distinct_names() -> None:
    assert {m.module for m in MUTANTS} == set(SPECS)
    for module in SPECS:
        names = [m.name for m in MUTANTS if m.module == module]
        assert len(names) >= 4 and len(set(names)) == len(names), module


def test_a_mutation_whose_text_is_not_there_once_is_refused() -> None:
    m = SpecMutant("X", "Twice", "a", "b", "")
    with pytest.raises(ValueError, match="occurs 2 times"):
        m.apply("a a")
    with pytest.raises(ValueError, match="occurs 0 times"):
        m.apply("c")


def test_the_runner_skips_cleanly_without_tlc() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TLA2TOOLS_JAR"}
    done = subprocess.run([sys.executable, "-m", "logwright.verify.spec_mutants"],
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("spec mutants: skipped, TLC not installed")


def test_coverage_names_the_actions_tlc_reports_as_disjuncts_of_next() -> None:
    tla = "\n".join(["---- MODULE M ----", "Next ==", "    \\/ Tick",
                     "    \\/ \\E p \\in P : Grow(p)", "===="])
    output = "\n".join([
        "<Init line 5, col 1 to line 5, col 4 of module M>: 1:1",
        "<Tick line 9, col 1 to line 9, col 4 of module M>: 3:10",
        "<Next line 2, col 1 to line 2, col 4 of module M (4 8 4 30)>: 0:7",
        "<Shrink line 20, col 1 to line 20, col 6 of module M (22 5 25 9)>: 2:4",
        "<TypeOK line 12, col 1 to line 12, col 6 of module M>",
    ])
    assert parse_coverage(output, tla) == {"Tick": (3, 10), "Grow": (0, 7), "Shrink": (2, 4)}


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
def test_tlc_catches_a_dropped_guard_and_not_an_equivalent_change() -> None:
    by_name = {(m.module, m.name): m for m in MUTANTS}
    caught = run_mutant(by_name["ReplicaMove", "AppendWhileLocked"])
    assert caught.verdict == "caught" and caught.violation == "AtomicMoveSwap"
    survived = run_mutant(by_name["ReplicaMove", "BeginSwapBeforeCaughtUp"])
    assert survived.verdict == "survived"  # argued equivalent in spec/README.md


def test_every_mutant_names_a_cfg_that_exists() -> None:
    for m in MUTANTS:
        assert (SPEC / m.cfg_name).is_file(), f"{m.module}/{m.name}: no {m.cfg_name}"
    # A mutant names another .cfg for the fairness (the liveness one) or for a deeper bound
    # (a bug that needs more leader epochs than the correct .cfg's).
    named = [m for m in MUTANTS if m.cfg]
    assert named and all(m.cfg in (f"{m.module}_liveness.cfg", f"{m.module}_MaxEpoch4.cfg")
                         for m in named)


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
def test_a_fairness_mutant_is_a_lasso_on_the_liveness_cfg() -> None:
    """LogStartOffset's liveness is checked on its own .cfg: a mutant of the fairness runs
    there, and TLC finds the DeleteRecords that waits forever."""
    by_name = {(m.module, m.name): m for m in MUTANTS}
    r = run_mutant(by_name["LogStartOffset", "NoAckFairness"])
    assert r.verdict == "caught" and r.violation == "temporal properties"


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
def test_every_replica_move_action_finds_a_new_state_or_is_argued_not_to() -> None:
    """ReplicaMove's TLC coverage: an action that finds no state first is a finding unless
    NO_NEW_STATES accepts it (argued in spec/README.md); an accepted one that does find states
    is a stale entry."""
    table = coverage("ReplicaMove")
    assert "EndSwap" in table and table["EndSwap"][0] > 0
    accepted = {a for (m, a) in NO_NEW_STATES if m == "ReplicaMove"}
    assert {a for a, (distinct, _) in table.items() if distinct == 0} == accepted
    assert all(table[a][1] > 0 for a in accepted)  # enabled somewhere, only never first
