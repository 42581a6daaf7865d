"""Tests generated from the LogStartOffset model (logwright.conformance.model_based).

Each generated case is a path of the one-replica twin driven through a real log over the
simulated file system, the log's abstract state compared with the twin's after every move: the
covering set of the correct twin (every move, every crash point), the covering set of Kafka's
periodic start offset checkpoint against the twin's lazy-checkpoint switch, and each bug's
counterexample, which the (correct) implementation must leave at the step where the bug acts.
"""

from __future__ import annotations

import pytest

from logwright.conformance.model_based import (
    CRASH_MOVES,
    LAZY,
    MOVES,
    Case,
    LogDriver,
    ModelDivergence,
    all_goals,
    bug_cases,
    covering_paths,
    generated_cases,
    model_step,
    one_replica_twin,
    run_case,
)
from logwright.errors import LogwrightError
from logwright.model.log_start_offset import BUGS

SEED = 20261123

CASES = list(generated_cases(SEED))
BUG_CASES = [r.case for r in bug_cases() if r.case is not None]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_generated_case(case: Case) -> None:
    """The implementation takes the same path as the model, move by move (or, for a bug's
    counterexample, the correct model's path where the bug acts)."""
    run = run_case(case, SEED)
    assert len(run.states) == len(case.moves) + 1
    if case.bug_step is None:
        assert tuple(run.states) == case.states


@pytest.mark.parametrize("case", BUG_CASES, ids=[c.id for c in BUG_CASES])
def test_counterexample_not_reproduced(case: Case) -> None:
    """Up to the bug's step the implementation is where the counterexample is; there it goes
    elsewhere, and the invariant the counterexample breaks holds on every state it reaches."""
    assert case.bug_step is not None and case.invariant is not None
    run = run_case(case, SEED)
    k = case.bug_step
    assert run.states[:k + 1] == list(case.states[:k + 1])
    assert run.states[k + 1] != case.states[k + 1]
    twin = one_replica_twin(max_offset=1 << 62)
    holds = dict(twin.invariants())[case.invariant]
    assert not holds(case.states[-1])
    assert all(holds(s) for s in run.states)


def test_coverage_of_the_correct_model() -> None:
    """Every move and every crash point is reached, but the periodic start offset checkpoint:
    with the checkpoint written at each raise, it is never behind in the correct model."""
    cov = covering_paths(SEED)
    assert sorted(cov.unreachable) == ["CheckpointStartOffset", "Crash after CheckpointStartOffset"]
    assert set(cov.reached) == set(all_goals()) - set(cov.unreachable)
    for crash in CRASH_MOVES:
        assert crash in cov.reached
    for move in MOVES:
        if move != "CheckpointStartOffset":
            assert f"Crash after {move}" in cov.reached
    assert "Crash after start" in cov.reached
    # A covering set: no case is a prefix of another, each reaches a goal no shorter one does.
    ids = [c.moves for c in cov.cases]
    assert not any(a != b and b[:len(a)] == a for a in ids for b in ids)
    assert all(c.goals for c in cov.cases)


def test_coverage_of_kafkas_periodic_checkpoint() -> None:
    """Against the lazy checkpoint's twin every goal is reached, CheckpointStartOffset too."""
    cov = covering_paths(SEED, model=LAZY)
    assert cov.unreachable == []
    assert all(c.model == LAZY for c in cov.cases)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_is_seeded_and_deterministic(seed: int) -> None:
    """One seed, one set of cases; every seed reaches the same goals, and its cases pass."""
    a, b = covering_paths(seed), covering_paths(seed)
    assert [c.moves for c in a.cases] == [c.moves for c in b.cases]
    assert set(a.reached) == set(covering_paths(SEED).reached)
    for case in a.cases:
        run_case(case, seed)


def test_which_bugs_have_a_one_replica_counterexample() -> None:
    """Retention past the HW and the lazy checkpoint act on a lone replica; the follower's and
    the ISR's bugs need a second replica (the one-replica model holds with them on)."""
    reports = {r.bug: r for r in bug_cases()}
    assert set(reports) == set(BUGS)
    acting = {b: r.case.moves[r.case.bug_step] for b, r in reports.items()
              if r.case is not None and r.case.bug_step is not None}
    assert acting == {"RetentionIgnoresHW": "Retention(size)",
                      "StartOffsetCheckpointLazy": "DeleteRecords(to HW)"}
    for bug in ("FollowerRaisesStartBeforeHW", "HWIgnoresIsr"):
        assert reports[bug].case is None and "not expressible" in reports[bug].reason


def test_kafkas_checkpoint_follows_the_lazy_counterexample() -> None:
    """Kafka's periodic checkpoint is the lazy bug: driven so, the log does follow the
    counterexample, and the generated test says so (the comparison can fail)."""
    case = next(c for c in BUG_CASES if c.bug == LAZY)
    with pytest.raises(ModelDivergence, match="followed the StartOffsetCheckpointLazy"):
        run_case(case, SEED, periodic_start_offset_checkpoint=True)


@pytest.mark.parametrize("field", ["leo", "hw", "logStart", "ckptStart", "flushed"])
def test_a_wrong_model_state_is_caught(field: str) -> None:
    """A case whose expected state is off in one variable fails at that move."""
    case = max((c for c in CASES if c.bug == "none" and c.model == "none"),
               key=lambda c: len(c.moves))
    last = case.states[-1]
    wrong = last._replace(**{field: (getattr(last, field)[0] + 1,)})
    bad = Case(case.name, case.moves, (*case.states[:-1], wrong))
    with pytest.raises(ModelDivergence, match=f"move {len(case.moves)} "):
        run_case(bad, SEED)


def test_moves_are_twin_steps_or_refused() -> None:
    """A move the twin does not enable there returns None; an unknown move is refused."""
    twin = one_replica_twin()
    init = next(iter(twin.init_states()))
    assert model_step(twin, init, "Flush") is None  # nothing to flush
    assert model_step(twin, init, "DeleteRecords(to HW)") is None
    assert model_step(twin, init, "Retention(size)") is None
    assert model_step(twin, init, "Crash(power loss, HW kept)") is None  # nothing unflushed
    with pytest.raises(ValueError, match="unknown move"):
        model_step(twin, init, "Compact")
    driver = LogDriver(SEED)
    with pytest.raises(ValueError, match="unknown move"):
        driver.apply("Compact")
    assert isinstance(ModelDivergence("x"), LogwrightError)
