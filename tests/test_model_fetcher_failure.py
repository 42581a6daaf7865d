"""FetcherFailure (KIP-461): the Python twin is TLC's machine, every bug is caught, Z3 proves the
invariant for any number of partitions.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py; this file
checks the module's own protocol, its fast path and its Z3 encoding.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from logwright.model import SPECS, check
from logwright.model.fetcher_failure import (
    BUGS,
    EXPECTED_VIOLATION,
    NO_FETCH,
    NOT_FAILED,
    FetcherFailureConfig,
    FetcherFailureSpec,
    FFState,
)
from logwright.verify.formal import load_z3_module

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
                                          bug="none", invariants=("TypeOK", "FailureContained"))
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


@pytest.mark.parametrize("bug", BUGS)
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
