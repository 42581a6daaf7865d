"""StrayCleanup: the Python twin is TLC's machine, every bug is caught, Z3 proves the rest.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py; this file
checks the module's own protocol, its fast path and its Z3 encoding.
"""

from __future__ import annotations

import random
import re
from collections import deque
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from logwright.model import SPECS, check
from logwright.model.stray_cleanup import (
    BUGS,
    EXPECTED_VIOLATION,
    LIVE,
    NO_LOG,
    STRAY,
    FullRequest,
    Log,
    SCState,
    StrayCleanupConfig,
    StrayCleanupSpec,
)
from logwright.verify.formal import load_z3_module

SPEC = Path(__file__).resolve().parents[1] / "spec"
BUG_CFGS = [f"StrayCleanup_bug_{bug}.cfg" for bug in BUGS]


def load_z3() -> ModuleType:
    module = load_z3_module("StrayCleanup", SPEC)
    assert module is not None
    return module


def spec_of(cfg: str) -> StrayCleanupSpec:
    return StrayCleanupSpec.from_cfg(SPEC / cfg)


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["StrayCleanup"] is StrayCleanupSpec
    assert StrayCleanupConfig.from_cfg(SPEC / "StrayCleanup.cfg") == StrayCleanupConfig(
        brokers=(1,), partitions=(1,), max_topic_id=2, max_controller_epoch=3, max_time=3,
        retention_period=2, stray_deletion_delay=1, bug="none",
        invariants=("TypeOK", "NoNewDataDeleted"))
    for cfg in BUG_CFGS:
        assert spec_of(cfg).config.bug == cfg.removesuffix(".cfg").split("_bug_")[1]


def test_counterexample_reads_as_the_story_of_the_bug() -> None:
    spec = spec_of("StrayCleanup_bug_StaleEpochStrayDeletion.cfg")
    violation = check(spec).violation
    assert violation is not None
    text = violation.format(spec)
    assert text.startswith("Invariant NoNewDataDeleted is violated after 7 states:")
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "ControllerFailover", "RecreateTopic", "Tick",
        "DeliverDelayedLeaderAndIsr", "Tick", "DeleteStray"]
    assert "in flight: full LeaderAndIsr(controllerEpoch=1, broker=1, hosted=[(1, 1)])" in text
    assert text.splitlines()[-1].strip() == (
        "deleted stray (1,id 2) on broker 1: age 2, ASSIGNED to it by the controller")


# -- the protocol, action by action ------------------------------------------------------------

def initial(spec: StrayCleanupSpec) -> SCState:
    s = next(iter(spec.init_states()))
    assert isinstance(s, SCState)
    return s


def with_log(s: SCState, t: int, log: Log) -> SCState:
    """Broker 1's log of partition 1, topic id ``t``, replaced by ``log``."""
    logs = list(s.disk[0][0])
    logs[t - 1] = log
    return s._replace(disk=((tuple(logs),),))


def test_full_request_marks_unlisted_logs_stray_and_restores_listed_strays() -> None:
    spec = StrayCleanupSpec()
    s = with_log(initial(spec), 2, Log(STRAY, 0, 0))._replace(
        now=2, topicId=(2,), sawFullRequest=(False,))
    after = spec.SendFullLeaderAndIsr(s, 1)
    assert after is not None
    assert spec.log(after, 1, 1, 1) == Log(STRAY, 0, 2)  # old topic id: set aside now
    assert spec.log(after, 1, 1, 2) == Log(LIVE, 0, 0)  # listed stray restored, not re-fetched


def test_stale_full_request_is_rejected_and_changes_nothing_but_the_network() -> None:
    spec = StrayCleanupSpec()
    m = FullRequest(epoch=1, broker=1, hosted=frozenset())
    s = initial(spec)._replace(controllerEpoch=2, brokerControllerEpoch=(2,),
                               network=frozenset({m}))
    after = spec.DeliverDelayedLeaderAndIsr(s, m)
    assert after == s._replace(network=frozenset())
    buggy = StrayCleanupSpec(StrayCleanupConfig(bug="StaleEpochStrayDeletion"))
    applied = buggy.DeliverDelayedLeaderAndIsr(s, m)
    assert applied is not None and buggy.log(applied, 1, 1, 1).state == STRAY


def test_young_stray_waits_for_the_retention_period() -> None:
    spec = StrayCleanupSpec()
    s = with_log(initial(spec), 1, Log(STRAY, 1, 1))._replace(now=2, replicas=(frozenset(),))
    assert spec.DeleteStray(s, 1, 1, 1) is None  # newest segment 1 old, retention 2
    deleted = spec.DeleteStray(s._replace(now=3), 1, 1, 1)
    assert deleted is not None and spec.log(deleted, 1, 1, 1) == NO_LOG
    assert deleted.lastStrayDeletion == frozenset({(1, 1, 1, False, 2)})
    assert spec.NoNewDataDeleted(deleted)


def test_no_stray_deletion_before_the_first_full_request_of_an_incarnation() -> None:
    spec = StrayCleanupSpec()
    s = with_log(initial(spec), 1, Log(STRAY, 0, 0))._replace(now=3, replicas=(frozenset(),))
    assert spec.DeleteStray(s, 1, 1, 1) is not None
    assert spec.DeleteStray(s._replace(sawFullRequest=(False,)), 1, 1, 1) is None


def test_reassignment_before_deletion_restores_the_stray() -> None:
    spec = StrayCleanupSpec()
    s = with_log(initial(spec), 1, Log(STRAY, 0, 1))._replace(now=3, replicas=(frozenset(),))
    after = spec.Assign(s, 1, 1)
    assert after is not None and spec.log(after, 1, 1, 1) == Log(LIVE, 0, 0)
    assert after.brokerControllerEpoch == (after.controllerEpoch,)


def test_name_only_match_deletes_the_new_topic_id_too() -> None:
    s = with_log(initial(StrayCleanupSpec()), 2, Log(LIVE, 3, 0))
    s = with_log(s, 1, Log(STRAY, 0, 0))._replace(now=3, topicId=(2,))
    correct = StrayCleanupSpec().DeleteStray(s, 1, 1, 1)
    assert correct is not None and correct.disk[0][0][1] == Log(LIVE, 3, 0)
    buggy = StrayCleanupSpec(StrayCleanupConfig(bug="TopicNameOnlyMatch"))
    after = buggy.DeleteStray(s, 1, 1, 1)
    assert after is not None and after.disk[0][0] == (NO_LOG, NO_LOG)
    assert not buggy.NoNewDataDeleted(after)


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        StrayCleanupConfig(bug="Typo")


# -- the packed fast path: the same machine as the Python actions ----------------------------------

def bfs_states(spec: StrayCleanupSpec) -> list[SCState]:
    """Every reachable state (invariants ignored), in breadth-first order."""
    init = [s for s in spec.init_states() if isinstance(s, SCState)]
    seen, queue = dict.fromkeys(init), deque(init)
    while queue:
        s = queue.popleft()
        for _name, fn in spec.actions():
            for t in fn(s):
                assert isinstance(t, SCState)
                if t not in seen:
                    seen[t] = None
                    queue.append(t)
    return list(seen)


def walk_states(spec: StrayCleanupSpec, walks: int, steps: int, seed: int) -> list[SCState]:
    """The states along ``walks`` random behaviours of ``steps`` steps (reproducible by seed):
    deep states of a model too large to enumerate."""
    rng = random.Random(seed)
    actions = spec.actions()
    seen: dict[SCState, None] = {}
    for _ in range(walks):
        s = initial(spec)
        seen[s] = None
        for _ in range(steps):
            successors = [t for _name, fn in actions for t in fn(s)]
            if not successors:
                break
            t = rng.choice(successors)
            assert isinstance(t, SCState)
            seen[s := t] = None
    return list(seen)


def assert_packed_is_generic(spec: StrayCleanupSpec, states: list[SCState]) -> None:
    """On each state: the vectorized successors are the Python actions', action by action and
    in order; the invariants agree; encode and decode are inverse."""
    codes = np.array([spec.encode(s) for s in states], dtype=np.int64)
    assert [spec.decode(int(c)) for c in codes] == states
    packed: list[list[tuple[int, int, int]]] = [[] for _ in states]
    for b in spec.packed_successors(codes):
        for parent, code in zip(b.parents.tolist(), b.codes.tolist(), strict=True):
            packed[parent].append((b.action, b.branch, code))
    actions = spec.actions()
    for s, successors in zip(states, packed, strict=True):
        generic = [(a, t) for a, (_, fn) in enumerate(actions) for t in fn(s)]
        assert [(a, spec.decode(code)) for a, _, code in sorted(successors)] == generic, \
            spec.describe(s)
    for (name, ok), (name2, holds) in zip(spec.packed_invariants(codes), spec.invariants(),
                                          strict=True):
        assert name == name2
        assert ok.tolist() == [holds(s) for s in states], name


SMALL = {"brokers": (1,), "partitions": (1,), "max_topic_id": 2, "max_controller_epoch": 2,
         "max_time": 1, "retention_period": 1, "stray_deletion_delay": 0}


@pytest.mark.parametrize("bug", ["none", *BUGS])
def test_packed_actions_are_the_python_actions_on_every_reachable_state(bug: str) -> None:
    spec = StrayCleanupSpec(StrayCleanupConfig(**SMALL, bug=bug))  # type: ignore[arg-type]
    states = bfs_states(spec)
    assert len(states) > 1000
    assert_packed_is_generic(spec, states)


@pytest.mark.parametrize("bug", ["none", *BUGS])
def test_packed_actions_with_two_brokers_and_two_partitions(bug: str) -> None:
    """Broker and partition ids that are not positions, every action with two of each, on the
    states of random behaviours (the reachable states are millions)."""
    spec = StrayCleanupSpec(StrayCleanupConfig(
        brokers=(2, 5), partitions=(3, 7), max_topic_id=2, max_controller_epoch=2, max_time=1,
        retention_period=1, stray_deletion_delay=0, bug=bug))
    states = walk_states(spec, walks=50, steps=30, seed=3)
    assert len(states) > 1000
    assert any(s.network for s in states) and any(s.lastStrayDeletion for s in states)
    assert_packed_is_generic(spec, states)


@pytest.mark.parametrize("shape", [
    {"brokers": (1, 2), "partitions": (1,), "max_topic_id": 1, "max_time": 0},
    {"brokers": (1,), "partitions": (1, 2), "max_topic_id": 2, "max_time": 0},
], ids=["two-brokers", "two-partitions"])
def test_both_engines_explore_the_same_model(shape: dict[str, object]) -> None:
    spec = StrayCleanupSpec(StrayCleanupConfig(
        max_controller_epoch=2, retention_period=0, stray_deletion_delay=0,
        **shape))  # type: ignore[arg-type]
    generic, packed = check(spec, packed=False), check(spec, packed=True)
    assert packed.engine == "packed" and packed.holds and generic.holds
    assert (packed.generated, packed.distinct, packed.depth) == (
        generic.generated, generic.distinct, generic.depth)
    assert generic.distinct > 5000


def test_a_model_too_large_for_one_int64_code_falls_back_to_the_generic_engine() -> None:
    spec = StrayCleanupSpec(StrayCleanupConfig(brokers=(1, 2), partitions=(1, 2), max_time=3,
                                               max_controller_epoch=3))
    assert not spec.packed_available()
    result = check(spec, max_states=200)
    assert result.engine == "generic" and not result.complete and result.distinct == 200
    with pytest.raises(ValueError, match="no packed fast path"):
        check(spec, packed=True)


def test_encode_refuses_sets_the_protocol_never_builds() -> None:
    spec = StrayCleanupSpec(StrayCleanupConfig(partitions=(1, 2), max_controller_epoch=3))
    s = initial(spec)
    twice = frozenset({FullRequest(1, 1, frozenset({(1, 1)})), FullRequest(1, 1, frozenset())})
    with pytest.raises(ValueError, match="no slot"):
        spec.encode(s._replace(network=twice))
    two_partitions = frozenset({(1, 1, 1, False, 2), (1, 2, 1, False, 2)})
    with pytest.raises(ValueError, match="several partitions"):
        spec.encode(s._replace(lastStrayDeletion=two_partitions))
    one = s._replace(network=frozenset({FullRequest(2, 1, frozenset({(2, 1)}))}),
                     lastStrayDeletion=frozenset({(1, 2, 1, False, 2), (1, 2, 2, True, 0)}))
    assert spec.decode(spec.encode(one)) == one


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_no_new_data_deleted_unbounded() -> None:
    (result,) = load_z3().prove("none")
    assert result.invariant == "NoNewDataDeleted" and result.holds, result.detail
    assert "DelayedRequestsAreCurrent" in result.detail


def test_z3_strengthening_is_needed_so_the_proof_is_not_vacuous() -> None:
    z3_module = load_z3()
    weaker = [c for c in z3_module.strengthening() if c[0] != "DelayedRequestsAreCurrent"]
    result = z3_module.prove_inductive(z3_module.system("none"), "NoNewDataDeleted", weaker)
    assert not result.holds and "DeliverDelayedLeaderAndIsr" in result.detail


@pytest.mark.parametrize("bug", BUGS)
def test_z3_refutes_every_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == EXPECTED_VIOLATION[bug]
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: now=0 controllerEpoch=1")
    assert len(steps) >= 4
    assert "DELETED stray" in steps[-1] and steps[-1].startswith("DeleteStray[")
    if bug == "NoAgeGuard":
        found = re.search(r"DELETED stray id \d+ aged (-?\d+) \(retention (\d+)\)", steps[-1])
        assert found is not None and int(found[1]) < int(found[2])  # younger than retention
    else:
        assert "assigned by the controller" in steps[-1]


# -- TLC itself, when installed -------------------------------------------------------------------
