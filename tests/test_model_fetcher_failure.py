"""FetcherFailure (KIP-461): the Python twin is TLC's machine, every bug is caught, Z3 proves the
invariant for any number of partitions.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py; this file
checks the module's own protocol, its fast path and its Z3 encoding.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logwright.model import SPECS, Action, Invariant, Spec, State, check
from logwright.model.fetcher_failure import (
    BUGS,
    EXPECTED_VIOLATION,
    NO_FETCH,
    NOT_FAILED,
    FetcherFailureConfig,
    FetcherFailureSpec,
    FFState,
)
from logwright.model.liveness import Progress, check_liveness
from logwright.verify.formal import load_z3_module, z3_rows
from logwright.verify.tlc import find_tools, run_tlc

SPEC = Path(__file__).resolve().parents[1] / "spec"


def load_z3() -> ModuleType:
    """spec/z3/fetcher_failure.py, loaded the way ``logwright verify`` loads it."""
    module = load_z3_module("FetcherFailure", SPEC)
    assert module is not None, "the Z3 encoding exists"
    return module


def spec_of(cfg: str) -> FetcherFailureSpec:
    return FetcherFailureSpec.from_cfg(SPEC / cfg)


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["FetcherFailure"] is FetcherFailureSpec
    config = FetcherFailureConfig.from_cfg(SPEC / "FetcherFailure.cfg")
    assert config == FetcherFailureConfig(num_partitions=3, num_fetchers=2, max_leader_epoch=2,
                                          bug="none", invariants=("TypeOK", "FailureContained"),
                                          properties=("HealthyPartitionsFetch",))
    spec = FetcherFailureSpec(config)
    assert [spec.FetcherOf(p) for p in (1, 2, 3)] == [1, 2, 1]  # 1 and 3 share a fetcher


def test_counterexample_reads_as_the_story_of_the_bug() -> None:
    spec = spec_of("FetcherFailure_bug_FailWholeFetcher.cfg")
    violation = check(spec).violation
    assert violation is not None
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "LeaderAndIsr", "LeaderAndIsr", "StorageError"]
    text = violation.format(spec)
    assert text.startswith("Invariant FailureContained is violated after 4 states:")
    last = text.split("State 4: StorageError")[1]
    assert "fetcher 1: stopped, fetching partitions [3]" in last  # 3 stranded by 1's failure
    assert "partition 1: leaderEpoch=0 knownEpoch=0, FAILED at epoch 0" in last


# -- the KIP-461 rules, action by action ----------------------------------------------------------

def following(spec: FetcherFailureSpec, *partitions: int) -> FFState:
    """Every partition given has had its first LeaderAndIsr."""
    s = next(iter(spec.init_states()))
    assert isinstance(s, FFState)
    for p in partitions:
        t = spec.LeaderAndIsr(s, p)
        assert t is not None
        s = t
    return s


def test_storage_error_fails_one_partition_and_the_fetcher_goes_on() -> None:
    spec = FetcherFailureSpec()
    s = spec.StorageError(following(spec, 1, 3), 1)
    assert s is not None
    assert s.failedEpoch[0] == 0 and not s.fetching[0]
    assert s.fetching[2] and s.alive[0]  # partition 3, same fetcher, unaffected
    assert spec.FetchRequest(s, 3) is not None and spec.FetchRequest(s, 1) is None
    assert spec.ShutdownIdle(s, 1) is None  # 3 is still there


def test_fetcher_with_nothing_left_shuts_down_and_restarts_on_demand() -> None:
    spec = FetcherFailureSpec()
    s = spec.StorageError(following(spec, 1), 1)
    assert s is not None
    s = spec.ShutdownIdle(s, 1)
    assert s is not None and not s.alive[0]
    s = spec.LeaderAndIsr(s._replace(leaderEpoch=(1, 0, 0)), 1)  # a newer epoch un-fails
    assert s is not None and s.alive[0] and s.fetching[0] and s.failedEpoch[0] == NOT_FAILED


def test_fence_fails_only_at_the_current_epoch() -> None:
    spec = FetcherFailureSpec()
    s = following(spec, 1)
    s = spec.FetchRequest(s, 1)
    assert s is not None and s.inflight[0] == 0
    s = s._replace(leaderEpoch=(1, 0, 0))
    fenced_now = spec.FetchFenced(s, 1)  # the request's epoch is the fetcher's: fail
    assert fenced_now is not None and fenced_now.failedEpoch[0] == 0
    newer = spec.LeaderAndIsr(s, 1)
    assert newer is not None
    stale = spec.FetchFenced(newer, 1)  # a newer epoch arrived meanwhile: not a failure
    assert stale is not None and stale.failedEpoch[0] == NOT_FAILED and stale.fetching[0]
    assert stale.inflight[0] == NO_FETCH


def test_stop_replica_clears_the_failed_set() -> None:
    spec = FetcherFailureSpec()
    s = spec.StorageError(following(spec, 2), 2)
    assert s is not None and s.failedEpoch[1] == 0
    t = spec.StopReplica(s, 2)
    assert t is not None and t.failedEpoch[1] == NOT_FAILED and spec.FailureContained(t)


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        FetcherFailureConfig(bug="NoSuchBug")


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_failure_contained_for_any_number_of_partitions() -> None:
    results = load_z3().prove("none")
    assert [r.invariant for r in results] == ["FailureContained"]
    assert all(r.holds for r in results), [r.detail for r in results]
    assert "inductive invariant" in results[0].detail


@pytest.mark.parametrize("bug", [b for b in BUGS if EXPECTED_VIOLATION[b] == "FailureContained"])
def test_z3_refutes_every_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == EXPECTED_VIOLATION[bug]
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: partition p:")
    story = {"FailWholeFetcher": ("OtherStorageError", "fetching; its fetcher stopped"),
             "FenceWithStaleEpochFails": ("FetchFenced", "knownEpoch=1 not fetching FAILED at "
                                                         "epoch 0"),
             "NoUnfailOnNewEpoch": ("LeaderAndIsr", "knownEpoch=1 not fetching FAILED at "
                                                    "epoch 0")}[bug]
    assert steps[-1].startswith(story[0]) and story[1] in steps[-1]


# -- TLC itself, when installed -------------------------------------------------------------------

def test_packed_encoding_and_invariants_agree_with_the_generic_ones() -> None:
    spec = FetcherFailureSpec()
    s = spec.StorageError(following(spec, 1, 2, 3), 3)
    assert s is not None
    states = [s, s._replace(inflight=(0, NO_FETCH, 0), leaderEpoch=(2, 1, 0)),
              s._replace(alive=(False, True)), s._replace(knownEpoch=(0, 0, 1)),
              s._replace(fetching=(True, True, True))]
    codes = np.array([spec.encode(t) for t in states], dtype=np.int64)
    assert [spec.decode(int(code)) for code in codes] == states
    for (name, holds), (packed_name, mask) in zip(spec.invariants(),
                                                   spec.packed_invariants(codes), strict=True):
        assert name == packed_name
        assert [holds(t) for t in states] == mask.tolist()
    assert [spec.FailureContained(t) for t in states] == [True, True, False, False, False]


# -- liveness: HealthyPartitionsFetch under weak fairness of each partition's fetch actions ----

SMALL = {"num_partitions": 3, "num_fetchers": 2, "max_leader_epoch": 1}
"""Partitions 1 and 3 share fetcher 1; one election each: about 16,000 states, a second or two."""


def live_spec(bug: str = "none", invariants: tuple[str, ...] = ("TypeOK",),
              **constants: int) -> FetcherFailureSpec:
    return FetcherFailureSpec(FetcherFailureConfig(
        **{**SMALL, **constants}, bug=bug, invariants=invariants,
        properties=("HealthyPartitionsFetch",)))


def test_healthy_partitions_keep_fetching_in_the_correct_model() -> None:
    for constants in ({}, {"num_partitions": 2, "num_fetchers": 1},
                      {"num_partitions": 2, "num_fetchers": 2, "max_leader_epoch": 2}):
        spec = live_spec(**constants)
        result = check_liveness(spec, spec.temporal_properties())
        assert result.holds, result.violation and result.violation.format(spec)
        assert result.checked == spec.config.num_partitions  # one instance per partition


def test_a_stale_fence_that_stalls_is_safe_and_only_the_liveness_property_sees_it() -> None:
    spec = live_spec("StaleFenceStalls", invariants=("TypeOK", "FailureContained"))
    safety = check(spec)
    assert safety.complete and safety.violation is None  # every state is safe
    result = check_liveness(spec, spec.temporal_properties())
    lasso = result.violation
    assert lasso is not None and lasso.property == "HealthyPartitionsFetch"
    assert [a for a, _ in lasso.prefix] == ["Initial predicate", "LeaderAndIsr", "ElectLeader",
                                            "FetchRequest", "LeaderAndIsr"]
    assert lasso.cycle == []  # it stutters: nothing the fetcher may do for p is enabled
    last = lasso.prefix[-1][1]
    assert isinstance(last, FFState)
    p = int(lasso.instance.removeprefix("p=")) - 1
    assert last.fetching[p] and last.inflight[p] < last.knownEpoch[p] == last.leaderEpoch[p]
    assert lasso.format(spec).endswith("State 6: Stuttering")


def test_fail_whole_fetcher_is_lost_progress_the_liveness_property_catches_alone() -> None:
    """Without FailureContained checked, HealthyPartitionsFetch still catches hazard 5: a
    partition stranded in the fetcher its neighbour's storage error stopped never fetches."""
    spec = live_spec("FailWholeFetcher")
    lasso = check_liveness(spec, spec.temporal_properties()).violation
    assert lasso is not None and lasso.cycle == []
    assert [a for a, _ in lasso.prefix][-1] == "StorageError"
    text = lasso.format(spec)
    assert "fetcher 1: stopped, fetching partitions [1]" in text.split("State 4:")[1]
    # With a fetcher per partition, nobody is stranded: the same bug loses no progress.
    alone = live_spec("FailWholeFetcher", num_partitions=2, num_fetchers=2)
    assert check_liveness(alone, alone.temporal_properties()).holds


@pytest.mark.parametrize("bug", ["FenceWithStaleEpochFails", "NoUnfailOnNewEpoch"])
def test_safety_bugs_fail_partitions_rather_than_stall_them(bug: str) -> None:
    """Their partitions leave the healthy set, so progress is not what they break."""
    spec = live_spec(bug)
    assert check_liveness(spec, spec.temporal_properties()).holds


def test_without_fairness_the_property_fails_so_the_check_reads_the_fairness() -> None:
    spec = live_spec()
    unfair = [dataclasses.replace(q, weakly_fair=()) for q in spec.temporal_properties()]
    lasso = check_liveness(spec, unfair).violation
    assert lasso is not None and lasso.cycle == []  # a healthy partition that is never served
    # Fairness of another partition's fetcher does not help p=1.
    others = [dataclasses.replace(q, weakly_fair=q.weakly_fair[1:])
              for q in spec.temporal_properties()]
    lasso = check_liveness(spec, others[:1]).violation
    assert lasso is not None and lasso.instance == "p=1"


def test_fairness_holds_on_a_cycle_where_the_action_is_disabled_somewhere() -> None:
    """A hand-made two-state loop: x toggles; the fair action A is enabled only when x = 0 and
    never taken; progress never happens. Weak fairness is then satisfied (A is not continuously
    enabled), so there is a violating behaviour; with A enabled in both states every such
    behaviour is unfair, and with the flip a weakly fair progress step none violates."""

    class Toggle(Spec):
        name = "Toggle"

        def init_states(self) -> list[State]:
            return [0]

        def actions(self) -> list[Action]:
            return [Action("Flip", lambda s: [1 - int(s)])]  # type: ignore[call-overload]

        def invariants(self) -> list[Invariant]:
            return []

    spec = Toggle()
    never = Progress("P", "-", lambda s: True, lambda s: [], [("WF(A)", lambda s: [2] if s == 0
                                                                else [])])
    lasso = check_liveness(spec, [never]).violation
    assert lasso is not None  # e.g. stuttering at x = 1, where A is disabled
    assert lasso.prefix == [("Initial predicate", 0), ("Flip", 1)] and lasso.cycle == []
    always = dataclasses.replace(never, weakly_fair=[("WF(A)", lambda s: [2])])
    assert check_liveness(spec, [always]).holds
    progress = dataclasses.replace(never, progress=lambda s: [1 - s])
    assert not check_liveness(spec, [progress]).holds  # Flip is not fair: it may stop
    fair_flip = dataclasses.replace(progress, weakly_fair=[("WF(Flip)", lambda s: [1 - s])])
    assert check_liveness(spec, [fair_flip]).holds


def test_z3_proves_the_liveness_bug_safe_and_says_it_checks_safety_only() -> None:
    (result,) = load_z3().prove("StaleFenceStalls")
    assert result.holds and result.invariant == "FailureContained"
    rows = [r for r in z3_rows("FetcherFailure", SPEC) if "StaleFenceStalls" in r.method]
    assert [(r.invariant, r.verdict.value) for r in rows] == [("FailureContained", "holds")]
    assert "HealthyPartitionsFetch, a temporal property" in rows[0].detail


@pytest.mark.skipif(find_tools() is None, reason="TLC not installed (set TLA2TOOLS_JAR)")
@pytest.mark.parametrize(("bug", "invariants", "caught"), [
    ("none", "TypeOK FailureContained", False),
    ("StaleFenceStalls", "TypeOK FailureContained", True),
    ("FailWholeFetcher", "TypeOK", True),  # the liveness property alone, as above
])
def test_tlc_checks_the_property_under_fairness(tmp_path: Path, bug: str, invariants: str,
                                                 caught: bool) -> None:
    cfg = tmp_path / "small.cfg"
    cfg.write_text("CONSTANTS\n    NumPartitions = 3\n    NumFetchers = 2\n"
                   f"    MaxLeaderEpoch = 1\n    Bug = \"{bug}\"\nSPECIFICATION Spec\n"
                   f"INVARIANTS {invariants}\nPROPERTIES HealthyPartitionsFetch\n",
                   encoding="utf-8")
    result = run_tlc(SPEC / "FetcherFailure.tla", cfg)
    assert result.ok, result.error
    assert result.violation == ("HealthyPartitionsFetch" if caught else None)


def _type_ok_per_element(twin: FetcherFailureSpec, s: FFState) -> bool:
    """TypeOK as the TLA+ module writes it, one membership test per element."""
    k, n = twin.config, twin.config.num_partitions
    epochs = range(0, k.max_leader_epoch + 1)
    return (len(s.leaderEpoch) == len(s.knownEpoch) == len(s.fetching) == n
            and len(s.failedEpoch) == len(s.inflight) == n and len(s.alive) == k.num_fetchers
            and all(e in epochs for e in s.leaderEpoch)
            and all(e == -1 or e in epochs for e in s.knownEpoch)
            and all(isinstance(b, bool) for b in (*s.fetching, *s.alive))
            and all(e == -1 or e in epochs for e in s.failedEpoch)
            and all(e == -1 or e in epochs for e in s.inflight))


@settings(max_examples=1_000)  # microseconds each: wide enough to meet every boundary
@given(st.integers(1, 3), st.integers(1, 2), st.integers(0, 3), st.data())
def test_type_ok_by_bounds_is_type_ok_per_element(n: int, f: int, top: int,
                                                  data: st.DataObject) -> None:
    """The twin's TypeOK bounds integers (-1 is the integer below 0..MaxLeaderEpoch); on any
    integers or booleans, or a fraction or a string among them, lengths right or wrong, it
    answers as the per-element test (which alone would take 2.0 for the epoch 2)."""
    twin = FetcherFailureSpec(FetcherFailureConfig(num_partitions=n, num_fetchers=f,
                                                   max_leader_epoch=top))
    # Mostly values in range, now and then one outside it or of another type; now and then a
    # row one too long.
    values = st.one_of(st.integers(-1, top), st.sampled_from([-2, top + 1, True, False, 0.5, "x"]))
    longer = data.draw(st.sampled_from([None, None, None, *range(6)]))

    def row(i: int, m: int, of: st.SearchStrategy[Any] = values) -> tuple[Any, ...]:
        return tuple(data.draw(st.lists(of, min_size=m + (i == longer),
                                        max_size=m + (i == longer))))

    flags = st.one_of(st.booleans(), st.sampled_from([0, 1]))
    s = FFState(row(0, n), row(1, n), row(2, n, flags), row(3, n), row(4, n), row(5, f, flags))
    assert twin.TypeOK(s) == _type_ok_per_element(twin, s)
