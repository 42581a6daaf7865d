"""Tests generated from the ControllerFencing, FetcherFailure and two-replica LogStartOffset
models, driven through simulated clusters (logwright.conformance.model_based_fencing,
model_based_fetcher, model_based_cluster; docs/verification.md, "Tests from the models").

Each generated case is a path of a twin driven through a real cluster, the abstract state
compared with the twin's after every move: the covering set of each correct twin, and each
bug's counterexample, which the (correct) implementation must leave where the bug acts. The
comparison is shown to fail: on a state one variable off, and on broken implementations (the
mutation catalogue's faults planted in a copy of the package, run in a fresh interpreter).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from mutation.catalogue import ROOT, by_name
from mutation.catalogue import apply as plant

from logwright.conformance import model_based_cluster as lso
from logwright.conformance import model_based_fencing as cf
from logwright.conformance import model_based_fetcher as ff
from logwright.conformance.generated import Case, CaseRun, ModelDivergence, run_case
from logwright.model.controller_fencing import BUGS as CF_BUGS
from logwright.model.controller_fencing import ControllerFencingConfig
from logwright.model.fetcher_failure import FetcherFailureConfig
from logwright.model.fetcher_failure.bugs import BUGS as FF_BUGS
from logwright.model.log_start_offset import LogStartOffsetConfig

SEED = 20261123
SPEC = ROOT / "spec"

CF_COVER = cf.covering_paths(SEED)
CF_REPORTS = cf.bug_cases()
FF_COVER = ff.covering_paths(SEED)
FF_REPORTS = ff.bug_cases()
LSO_COVER = lso.covering_paths(SEED)
LSO_REPORTS = lso.bug_cases()

Runner = Callable[[Case, int], CaseRun]
ALL: list[tuple[Case, Runner]] = [
    *((c, cf.run) for c in CF_COVER.cases),
    *((r.case, cf.run) for r in CF_REPORTS if r.case is not None),
    *((c, ff.run) for c in FF_COVER.cases),
    *((r.case, ff.run) for r in FF_REPORTS if r.case is not None),
    *((c, lso.run) for c in LSO_COVER.cases),
    *((r.case, lso.run) for r in LSO_REPORTS if r.case is not None),
]


@pytest.mark.parametrize(("case", "runner"), ALL, ids=[c.id for c, _ in ALL])
def test_generated_case(case: Case, runner: Runner) -> None:
    """The implementation takes the model's path move by move (for a bug's counterexample, the
    correct model's from the move where the bug acts)."""
    run = runner(case, SEED)
    assert len(run.states) == len(case.moves) + 1


BUG_RUNS = [(r.case, run) for reports, run in ((CF_REPORTS, cf.run), (FF_REPORTS, ff.run),
                                              (LSO_REPORTS, lso.run))
            for r in reports if r.case is not None]


@pytest.mark.parametrize(("case", "runner"), BUG_RUNS, ids=[c.id for c, _ in BUG_RUNS])
def test_a_counterexample_is_left_where_the_bug_acts(case: Case, runner: Runner) -> None:
    """Up to the bug's move the implementation shows the counterexample's states; there it
    shows another (a fenced request, a stale fence, a refused write changes nothing)."""
    assert case.bug_step is not None
    run = runner(case, SEED)
    k = case.bug_step
    show = _view_of(runner)
    assert run.states[:k + 1] == [show(s) for s in case.states[:k + 1]]
    assert run.states[k + 1] != show(case.states[k + 1])


def _view_of(runner: Runner) -> Callable[[object], object]:
    if runner is ff.run:
        return ff.Generator().view  # type: ignore[return-value]
    if runner is lso.run:
        return lso.view  # type: ignore[return-value]
    return lambda s: s


def test_every_bug_of_each_module_has_a_case_or_a_reason() -> None:
    """Every ControllerFencing and FetcherFailure bug switch and both two-replica
    LogStartOffset bugs is a case, but StaleFenceStalls, which breaks a liveness property."""
    assert [r.bug for r in CF_REPORTS] == list(CF_BUGS)
    assert all(r.case is not None for r in CF_REPORTS)
    assert [r.bug for r in FF_REPORTS] == list(FF_BUGS)
    missing = {r.bug: r.reason for r in FF_REPORTS if r.case is None}
    assert list(missing) == ["StaleFenceStalls"] and "liveness" in missing["StaleFenceStalls"]
    assert [r.bug for r in LSO_REPORTS] == list(lso.BUGS)
    assert all(r.case is not None for r in LSO_REPORTS)


def test_each_covering_set_reaches_every_goal() -> None:
    for cover, goals in ((CF_COVER, cf.GOALS), (FF_COVER, ff.GOALS), (LSO_COVER, lso.GOALS)):
        assert cover.unreachable == []
        assert set(cover.reached) == set(goals)
        ids = {c.id for c in cover.cases}
        assert set(cover.reached.values()) <= ids
    # Every action of the twins the moves stand for appears in some case.
    cf_actions = {m.action for c in CF_COVER.cases for m in c.moves}
    assert cf_actions == {"ElectController", "ElectLeader", "Register", "SendLeaderAndIsr",
                          "SendStopReplica", "Deliver", "Lose"}
    assert {m.action for c in FF_COVER.cases for m in c.moves} == {
        "ElectLeader", "LeaderAndIsr", "LeaderAndIsrAgain", "StopReplica", "StorageError",
        "FetchResponse"}


def test_generation_is_deterministic_per_seed() -> None:
    assert [c.id for c in cf.covering_paths(SEED).cases] == [c.id for c in CF_COVER.cases]
    assert [c.id for c in ff.covering_paths(SEED).cases] == [c.id for c in FF_COVER.cases]


def test_the_generating_twins_have_the_cfg_constants() -> None:
    """The constants the cases are generated with are those TLC checks."""
    for bug in ("none", *CF_BUGS):
        name = "ControllerFencing" if bug == "none" else f"ControllerFencing_bug_{bug}"
        on_disk = ControllerFencingConfig.from_cfg(SPEC / f"{name}.cfg")
        assert cf.twin_config(bug) == on_disk
    for bug in ("none", *FF_BUGS):
        name = "FetcherFailure" if bug == "none" else f"FetcherFailure_bug_{bug}"
        on_disk = FetcherFailureConfig.from_cfg(SPEC / f"{name}.cfg")
        mine = ff.twin_config(bug)
        assert (mine.num_partitions, mine.num_fetchers, mine.max_leader_epoch, mine.bug) == (
            on_disk.num_partitions, on_disk.num_fetchers, on_disk.max_leader_epoch, bug)
    for bug in lso.BUGS:
        on_disk = LogStartOffsetConfig.from_cfg(SPEC / f"LogStartOffset_bug_{bug}.cfg")
        assert lso.twin(bug).config == on_disk


def test_a_state_one_variable_off_fails_the_case() -> None:
    """The comparison can fail: an expected state with one variable changed is reported at
    that move, naming it."""
    case = next(c for c in CF_COVER.cases if len(c.moves) >= 2)
    wrong = case.states[1]._replace(controllerEpoch=case.states[1].controllerEpoch + 1)  # type: ignore[attr-defined]
    broken = Case(case.module, case.moves, (case.states[0], wrong, *case.states[2:]))
    spec = cf.twin()
    driver = cf.FencingDriver(SEED)
    try:
        with pytest.raises(ModelDivergence, match=r"move 1 \("):
            run_case(broken, driver, spec, cf.step_of(spec))
    finally:
        driver.close()


def test_a_fenced_delivery_changes_nothing_in_the_cluster() -> None:
    """The NoBrokerEpochCheck counterexample: a request addressed to the incarnation a restart
    replaced reaches the new one; the broker refuses it (STALE_BROKER_EPOCH) and the abstract
    state stays the correct twin's, which does not deliver it."""
    case = next(r.case for r in CF_REPORTS if r.bug == "NoBrokerEpochCheck")
    assert case is not None and case.moves[-1].action == "Deliver"
    driver = cf.FencingDriver(SEED)
    try:
        spec = cf.twin()
        run = run_case(case, driver, spec, cf.step_of(spec))
        assert run.states[-1] == run.states[-2]
        broker = driver.cluster.broker(cf.BROKER)
        assert broker.fenced_requests == 1 and broker.last_fence is not None
        assert broker.last_fence[1].name == "STALE_BROKER_EPOCH"
    finally:
        driver.close()


# ---- planted faults ---------------------------------------------------------------------------

DRIVER = """
from logwright.conformance import RefinementViolation
from logwright.conformance import {module} as mod
from logwright.conformance.generated import ModelDivergence
for case in mod.generated_cases(20261123):
    try:
        mod.run(case, 20261123)
    except (ModelDivergence, RefinementViolation) as exc:
        print("CAUGHT", case.id, type(exc).__name__)
        break
    except Exception as exc:  # the fault broke the driven cluster: the case fails too
        print("RAISED", case.id, type(exc).__name__)
        break
else:
    print("MISSED")
"""


def _run_planted(module: str, mutant: str | None, tmp_path: Path) -> str:
    shutil.copytree(ROOT / "impl", tmp_path / "impl",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if mutant is not None:
        plant(by_name(mutant), tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "impl"), str(ROOT)])}
    check = f"import logwright; assert logwright.__file__.startswith({str(tmp_path)!r})\n"
    out = subprocess.run([sys.executable, "-c", check + textwrap.dedent(
        DRIVER.format(module=module))], env=env, capture_output=True, text=True, timeout=300,
        cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


PLANTED = [
    ("model_based_fencing", "a stale controller epoch accepted", "CAUGHT"),
    ("model_based_fencing", "an older broker epoch accepted", "CAUGHT"),
    ("model_based_fetcher", "a fence with an older epoch fails the partition", "CAUGHT"),
    ("model_based_fetcher", "a failed partition un-failed by any LeaderAndIsr", "CAUGHT"),
    # The fetcher's death is an exception out of the fetch answer's handler: the generated
    # StorageError case fails before any state is compared.
    ("model_based_fetcher", "a fetcher dies on one partition's storage error",
     "RAISED FetcherFailure:"),
    ("model_based_cluster", "the HW ignores the ISR", "CAUGHT"),
]


@pytest.mark.parametrize(("module", "mutant", "verdict"), PLANTED,
                         ids=[m for _, m, _ in PLANTED])
def test_a_planted_fault_fails_a_generated_case(module: str, mutant: str, verdict: str,
                                                tmp_path: Path) -> None:
    """A case fails on the fault: the driven cluster leaves the model's path (ModelDivergence),
    the projection refuses a change on the way (RefinementViolation), or the cluster breaks."""
    out = _run_planted(module, mutant, tmp_path)
    assert out.startswith(verdict), out


def test_the_unmutated_copy_passes_every_case(tmp_path: Path) -> None:
    """The planted-fault runs can fail only because of the fault."""
    for module in sorted({m for m, _, _ in PLANTED}):
        target = tmp_path / module
        target.mkdir()
        assert _run_planted(module, None, target) == "MISSED"
