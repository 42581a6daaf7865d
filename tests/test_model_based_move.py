"""Tests generated from the ReplicaMove model, driven through the log manager and the dir-move
fetcher (logwright.conformance.model_based_move; docs/verification.md, "Tests from the
models").

Each generated case is a path of the twin driven through the code, every twin variable compared
after every move: the covering set of the correct twin (every move, a crash after every step of
the swap with an acknowledged record at stake, and with records not yet fsynced), and each
bug's counterexample, which the code must leave where the bug acts. The comparison is shown to
fail: on a state one variable off, and on broken implementations (the mutation catalogue's
faults planted in a copy of the package, run in a fresh interpreter).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutation.catalogue import ROOT

from logwright.conformance import model_based_move as mv
from logwright.conformance.generated import Case, ModelDivergence, run_case
from logwright.model.replica_move import ReplicaMoveConfig
from logwright.model.replica_move.bugs import BUGS
from logwright.model.replica_move.twin import FUT, SRC
from tests.test_model_based_cluster import _run_planted

SEED = 20261123
COVER = mv.covering_paths(SEED)
REPORTS = mv.bug_cases()
ALL = [*COVER.cases, *(r.case for r in REPORTS if r.case is not None)]


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_generated_case(case: Case) -> None:
    """The code takes the model's path move by move (for a bug's counterexample: up to the
    move where the bug acts, then steps of the correct model only, never the bug's)."""
    run = mv.run(case, SEED)
    if case.bug_step is None:
        assert tuple(run.states) == case.states
    else:
        k = case.bug_step
        assert run.states[:k + 1] == list(case.states[:k + 1])
        assert run.states[k + 1] != case.states[k + 1]


def test_the_covering_set_reaches_every_goal() -> None:
    assert COVER.unreachable == []
    assert set(COVER.reached) == set(mv.GOALS)
    moves = {m.action for c in COVER.cases for m in c.moves}
    assert moves == set(mv.MOVES)
    # A crash before the swap, after each of its steps and after the source's deletion, each
    # with a record acknowledged; a dir failure found at start-up after the commit point, and a
    # repaired dir whose future log start-up drops (R6, then R3).
    assert sum(g.startswith("CrashRestart at") for g in COVER.reached) == 8
    assert "CrashRestart(failed) after the commit point" in COVER.reached
    assert "CrashRestart(repaired) drops a future log of an older generation" in COVER.reached


def test_each_bug_has_a_case_or_the_reason_it_cannot_be_driven() -> None:
    assert [r.bug for r in REPORTS] == list(BUGS)
    missing = {r.bug: r.reason for r in REPORTS if r.case is None}
    assert set(missing) == {"AppendDuringSwap"}
    assert "single-threaded" in missing["AppendDuringSwap"]
    acts = {r.bug: r.case.moves[r.case.bug_step].action for r in REPORTS
            if r.case is not None and r.case.bug_step is not None}
    assert acts == {"SwapBeforeFlush": "RenameFutureLive",
                    "SeedRenameOrder": "RenameSourceDelete",
                    "SwapBeforeCopyDone": "RenameFutureLive",
                    "CopierResumesFromHW": "CrashRestart",
                    "NoRestampOnOfflineDir": "CrashRestart(failed)"}


def test_generation_is_deterministic_per_seed() -> None:
    assert [c.id for c in mv.covering_paths(SEED).cases] == [c.id for c in COVER.cases]


def test_the_generating_twin_has_the_cfg_constants() -> None:
    for bug in ("none", *BUGS):
        name = "ReplicaMove" if bug == "none" else f"ReplicaMove_bug_{bug}"
        on_disk = ReplicaMoveConfig.from_cfg(ROOT / "spec" / f"{name}.cfg")
        assert mv.twin(bug).config == on_disk


@pytest.mark.parametrize("field", ["vol", "dur", "name", "durName"])
def test_a_state_one_variable_off_fails_the_case(field: str) -> None:
    """The comparison can fail: an expected state with one variable changed is reported at
    that move."""
    case = next(c for c in COVER.cases if len(c.moves) >= 8)
    k = 5
    s = case.states[k]
    value = getattr(s, field)
    wrong = s._replace(**{field: (value[0] + 1, value[1]) if isinstance(value[0], int)
                          else (value[1], value[0])})
    broken = Case(case.module, case.moves, (*case.states[:k], wrong, *case.states[k + 1:]))
    spec = mv.twin()
    driver = mv.MoveDriver(SEED)
    try:
        with pytest.raises(ModelDivergence, match=rf"move {k} \("):
            run_case(broken, driver, spec, mv.Generator(spec).step)
    finally:
        driver.close()


def test_a_crash_in_the_middle_of_the_swap_unwinds_the_code() -> None:
    """A crash while the swap is suspended ends it as a crash would (no step after it is
    taken) and the restart recovers to one live log."""
    case = next(c for c in COVER.cases if any(
        g.startswith("CrashRestart at ('live', 'live')/('live', 'future') locked")
        for g in c.goals))
    run = mv.run(case, SEED)
    before, after = run.states[-2], run.states[-1]
    assert before.locked and before.name == ("live", "live")
    assert after.current == SRC and not after.locked and after.durName[1] != "live"
    end = next(c for c in COVER.cases if c.moves[-1].action == "EndSwap")
    assert mv.run(end, SEED).states[-1].current == FUT


PLANTED = [
    ("rename before the future is flushed", "CAUGHT"),
    ("copier resumes from the current log's HW", "CAUGHT"),
    ("a raised start offset not made durable", "CAUGHT"),
    ("no re-stamp when a dir is offline at start-up", "CAUGHT"),
]


@pytest.mark.parametrize(("mutant", "verdict"), PLANTED, ids=[m for m, _ in PLANTED])
def test_a_planted_fault_fails_a_generated_case(mutant: str, verdict: str,
                                                tmp_path: Path) -> None:
    out = _run_planted("model_based_move", mutant, tmp_path)
    assert out.startswith(verdict), out


def test_the_unmutated_copy_passes_every_case(tmp_path: Path) -> None:
    assert _run_planted("model_based_move", None, tmp_path) == "MISSED"


@pytest.mark.parametrize("seed", range(8))
def test_the_covering_sets_of_other_seeds_pass_too(seed: int) -> None:
    """Another seed orders the search differently and finds other shortest paths (a start
    offset raised before the swap, a dir failure after it): they pass as well."""
    cover = mv.covering_paths(seed)
    assert cover.unreachable == []
    for case in cover.cases:
        mv.run(case, seed)
