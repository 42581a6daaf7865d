"""ControllerFencing: the Python twin is TLC's machine, every bug is caught, Z3 proves the rest.

The equality with TLC's figures on every .cfg is tests/test_model_conformance.py; this file
checks the module's own protocol, its fast path and its Z3 encoding.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from logwright.model import SPECS, check
from logwright.model.controller_fencing import (
    BUGS,
    EXPECTED_VIOLATION,
    LEADER_AND_ISR,
    NOT_HOSTED,
    STOP_REPLICA,
    CFState,
    ControllerFencingConfig,
    ControllerFencingSpec,
    Request,
)
from logwright.verify.formal import load_z3_module

SPEC = Path(__file__).resolve().parents[1] / "spec"


def load_z3() -> ModuleType:
    """spec/z3/controller_fencing.py, loaded the way ``logwright verify`` loads it."""
    module = load_z3_module("ControllerFencing", SPEC)
    assert module is not None, "the Z3 encoding exists"
    return module


def spec_of(cfg: str) -> ControllerFencingSpec:
    return ControllerFencingSpec.from_cfg(SPEC / cfg)


def test_registered_and_reads_the_cfg_tlc_reads() -> None:
    assert SPECS["ControllerFencing"] is ControllerFencingSpec
    config = ControllerFencingConfig.from_cfg(SPEC / "ControllerFencing.cfg")
    assert config == ControllerFencingConfig(
        brokers=(1,), max_controller_epoch=3, max_broker_epoch=2, max_leader_epoch=1,
        max_in_flight=2, bug="none",
        invariants=("TypeOK", "StaleControllerFenced", "BrokerFollowsLatestDecision"))
    for bug in BUGS:
        assert spec_of(f"ControllerFencing_bug_{bug}.cfg").config.bug == bug


def test_counterexample_reads_as_the_story_of_the_bug() -> None:
    spec = spec_of("ControllerFencing_bug_NoControllerEpochCheck.cfg")
    violation = check(spec).violation
    assert violation is not None
    text = violation.format(spec)
    assert text.startswith("Invariant StaleControllerFenced is violated after 6 states:")
    assert "State 1: <Initial predicate>" in text
    assert [action for action, _ in violation.steps] == [
        "Initial predicate", "ElectController", "SendLeaderAndIsr", "SendLeaderAndIsr",
        "Deliver", "Deliver"]
    last = text.splitlines()[-4:]
    assert any("last change by a request (controllerEpoch 1, brokerEpoch 1) when the broker had "
               "(controllerEpoch 2, brokerEpoch 1)" in line for line in last)


# -- the fences, action by action -------------------------------------------------------------

def delivered(spec: ControllerFencingSpec, s: CFState, m: Request) -> CFState | None:
    return spec.Deliver(s._replace(network=frozenset({m})), m)


def broker_state(spec: ControllerFencingSpec, *, controller_epoch: int = 2,
                 broker_epoch: int = 2, accepted: int = 2, replica: int = 1) -> CFState:
    init = next(iter(spec.init_states()))
    assert isinstance(init, CFState)
    return init._replace(controllerEpoch=controller_epoch, leaderEpoch=1,
                         brokerEpoch=(broker_epoch,), brokerControllerEpoch=(accepted,),
                         replicaEpoch=(replica,))


def test_lower_controller_epoch_changes_nothing() -> None:
    spec = ControllerFencingSpec(ControllerFencingConfig(max_broker_epoch=3))
    s = broker_state(spec, controller_epoch=3)
    assert delivered(spec, s, Request(STOP_REPLICA, 1, 1, 2, 1)) is None
    t = delivered(spec, s, Request(STOP_REPLICA, 3, 1, 2, 1))
    assert t is not None and t.replicaEpoch == (NOT_HOSTED,) and t.brokerControllerEpoch == (3,)


def test_older_broker_epoch_rejected_newer_and_unknown_accepted() -> None:
    spec = ControllerFencingSpec(ControllerFencingConfig(max_broker_epoch=3))
    s = broker_state(spec, replica=NOT_HOSTED)
    assert delivered(spec, s, Request(LEADER_AND_ISR, 2, 1, 1, 1)) is None  # STALE_BROKER_EPOCH
    for e in (2, 3, -1):  # its own, a newer one, and "unknown" (-1) are not stale
        t = delivered(spec, s, Request(LEADER_AND_ISR, 2, 1, e, 1))
        assert t is not None and t.replicaEpoch == (1,), e


def test_stop_replica_with_older_leader_epoch_is_fenced() -> None:
    spec = ControllerFencingSpec()
    s = broker_state(spec, accepted=1, replica=1)
    t = delivered(spec, s, Request(STOP_REPLICA, 2, 1, 2, 0))  # FENCED_LEADER_EPOCH
    assert t is not None and t.replicaEpoch == (1,) and t.brokerControllerEpoch == (2,)
    t = delivered(spec, s, Request(STOP_REPLICA, 2, 1, 2, 1))
    assert t is not None and t.replicaEpoch == (NOT_HOSTED,)


def test_deposed_controller_cannot_write_the_store() -> None:
    s = broker_state(ControllerFencingSpec(), controller_epoch=2)._replace(leaderEpoch=0)
    assert ControllerFencingSpec().ElectLeader(s, 1) is None
    assert ControllerFencingSpec().ElectLeader(s, 2) is not None
    buggy = ControllerFencingSpec(ControllerFencingConfig(bug="UnconditionalStoreWrite"))
    t = buggy.ElectLeader(s, 1)
    assert t is not None and not buggy.StaleControllerFenced(t)


def test_restart_forgets_the_controller_epoch_but_fences_the_old_incarnation() -> None:
    spec = ControllerFencingSpec()
    s = broker_state(spec, broker_epoch=1, accepted=2)
    t = spec.Register(s, 1)
    assert t is not None and t.brokerEpoch == (2,) and t.brokerControllerEpoch == (0,)
    assert delivered(spec, t, Request(LEADER_AND_ISR, 2, 1, 1, 1)) is None


def test_unknown_bug_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown Bug"):
        ControllerFencingConfig(bug="NoSuchBug")


# -- Z3 ----------------------------------------------------------------------------------------

def test_z3_proves_stale_controller_fenced_unbounded() -> None:
    results = load_z3().prove("none")
    assert [r.invariant for r in results] == ["StaleControllerFenced",
                                              "BrokerFollowsLatestDecision"]
    assert all(r.holds for r in results), [r.detail for r in results]
    assert "inductive invariant" in results[0].detail


@pytest.mark.parametrize("bug", BUGS)
def test_z3_refutes_every_bug_with_readable_steps(bug: str) -> None:
    (result,) = load_z3().prove(bug)
    assert not result.holds and result.invariant == EXPECTED_VIOLATION[bug]
    steps = result.counterexample
    assert steps is not None and steps[0].startswith("Init: store controllerEpoch=1")
    assert len(steps) >= 3  # the initial state and at least two actions
    story = {"NoControllerEpochCheck": "when the broker had accepted controller epoch 2",
             "NoBrokerEpochCheck": "and was broker epoch 2",
             "UnconditionalStoreWrite": "last store write by controller epoch 1",
             "NoControllerEpochRecorded": "of controller epoch 1 to broker epoch 1, when the "
                                          "broker had accepted controller epoch 0"}[bug]
    assert story in steps[-1]


# -- TLC itself, when installed -------------------------------------------------------------------

def test_packed_encoding_and_invariants_agree_with_the_generic_ones() -> None:
    spec = ControllerFencingSpec()
    s = broker_state(spec)._replace(
        network=frozenset({Request(STOP_REPLICA, 3, 1, 2, 1), Request(LEADER_AND_ISR, 1, 1, 1, 0)}),
        lastApply=((2, 1, 0, 2),), lastStoreWrite=(1, 3))
    states = [s, s._replace(lastApply=((),)), s._replace(lastStoreWrite=(3, 3)),
              s._replace(lastApply=((3, 2, 3, 2),), lastStoreWrite=())]
    codes = np.array([spec.encode(t) for t in states], dtype=np.int64)
    assert [spec.decode(int(code)) for code in codes] == states
    for (name, holds), (packed_name, mask) in zip(spec.invariants(),
                                                   spec.packed_invariants(codes), strict=True):
        assert name == packed_name
        assert [holds(t) for t in states] == mask.tolist()
    assert [spec.StaleControllerFenced(t) for t in states] == [False, False, False, True]


# -- the end-to-end invariant sees what the restated guard cannot ------------------------------

def with_invariants(cfg: str, *invariants: str) -> ControllerFencingSpec:
    config = ControllerFencingConfig.from_cfg(SPEC / cfg)
    return ControllerFencingSpec(dataclasses.replace(config, invariants=invariants))


@pytest.mark.parametrize("packed", [True, False])
def test_a_broker_that_never_records_the_epoch_passes_the_old_invariant_only(
        packed: bool) -> None:
    cfg = "ControllerFencing_bug_NoControllerEpochRecorded.cfg"
    old = check(with_invariants(cfg, "TypeOK", "StaleControllerFenced"), packed=packed)
    assert old.complete and old.violation is None  # the guard's restatement sees nothing
    new = check(with_invariants(cfg, "TypeOK", "BrokerFollowsLatestDecision"), packed=packed)
    assert new.violation is not None
    assert new.violation.invariant == "BrokerFollowsLatestDecision"
    assert len(new.violation) == 6  # the shortest: elect, two sends, two deliveries
    # The story: the newer controller's request applied, then an older one's over it.
    last = new.violation.steps[-1][1]
    assert isinstance(last, CFState)
    assert last.brokerControllerEpoch == (0,) and last.appliedEpoch == (2,)
    assert last.lastApply[0][:1] == (1,)


@pytest.mark.parametrize("bug", BUGS)
@pytest.mark.parametrize("packed", [True, False])
def test_the_end_to_end_invariant_alone_catches_every_bug(bug: str, packed: bool) -> None:
    spec = with_invariants(f"ControllerFencing_bug_{bug}.cfg", "TypeOK",
                           "BrokerFollowsLatestDecision")
    result = check(spec, packed=packed)
    assert result.violation is not None, bug
    assert result.violation.invariant == "BrokerFollowsLatestDecision"


def test_the_ghost_is_the_broker_memory_in_the_correct_model() -> None:
    """The ghosts add no state to the correct model: appliedEpoch equals what the broker
    records, and replicaPeak the replica's leader epoch."""
    spec = ControllerFencingSpec.from_cfg(SPEC / "ControllerFencing.cfg")
    seen = 0
    frontier = list(spec.init_states())
    visited = set(frontier)
    while frontier:
        s = frontier.pop()
        assert isinstance(s, CFState)
        assert s.appliedEpoch == s.brokerControllerEpoch
        assert s.replicaPeak == s.replicaEpoch
        seen += 1
        for _, fn in spec.actions():
            for t in fn(s):
                if t not in visited:
                    visited.add(t)
                    frontier.append(t)
    assert seen == 70_895


def test_the_end_to_end_invariant_judges_single_states() -> None:
    spec = ControllerFencingSpec()
    s = broker_state(spec, broker_epoch=2, accepted=2)._replace(appliedEpoch=(2,),
                                                                replicaPeak=(1,))
    ok = s._replace(lastApply=((2, 2, 1, 2),))
    assert spec.BrokerFollowsLatestDecision(ok)
    assert not spec.BrokerFollowsLatestDecision(ok._replace(lastApply=((1, 2, 0, 2),)))
    assert not spec.BrokerFollowsLatestDecision(ok._replace(lastApply=((2, 1, 1, 2),)))
    # a change made by an earlier incarnation is not this one's to answer for
    assert spec.BrokerFollowsLatestDecision(ok._replace(lastApply=((1, 1, 0, 1),)))
    assert not spec.BrokerFollowsLatestDecision(ok._replace(leaderEpoch=0))  # replica ahead
    assert not spec.BrokerFollowsLatestDecision(ok._replace(replicaEpoch=(0,)))  # taken back
    assert not spec.BrokerFollowsLatestDecision(ok._replace(lastStoreWrite=(1, 2)))
    packed = spec.packed_invariants(np.array([spec.encode(ok),
                                              spec.encode(ok._replace(lastApply=((1, 2, 0, 2),)))],
                                             dtype=np.int64))
    assert list(dict(packed)["BrokerFollowsLatestDecision"]) == [True, False]
