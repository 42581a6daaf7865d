"""Refinement: a simulated cluster answers to the StrayCleanup twin, per partition name.

The abstraction (conformance/stray_cleanup.py) checked on seeded cluster runs where topics are
deleted and re-created under their names, partitions reassigned away and back, brokers crash and
restart, dirs fail, controllers fail over, and strays outlive the orphan removal delay and the
retention; and on broken implementations: the mutation catalogue's faults of issue 10 planted in
a copy of the package, each refused by the projection.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from mutation.catalogue import caught_in_copy, refinement_driver

from logwright.broker.config import BrokerConfig
from logwright.conformance import RefinementChecker, RefinementViolation
from logwright.conformance.refinement import NO_STEP
from logwright.conformance.stray_cleanup import (
    MAX_STEPS,
    MAX_TOPIC_IDS,
    StrayCleanupRefinement,
    twin_for,
)
from logwright.model.stray_cleanup import (
    FULL,
    LIVE,
    NO_LOG,
    NO_VERSION,
    STOP,
    STRAY,
    Log,
    Msg,
    SCState,
)
from logwright.verify.cluster_run import ClusterRun

MIN = 60_000

CONFIG = {"orphan.partition.removal.delay.ms": str(MIN), "log.retention.ms": str(3 * MIN),
          "log.retention.check.interval.ms": str(MIN // 2)}


KEEP = {"retention.ms": "-1"}
"""The topic's own retention: live logs keep everything (the run's checks expect every
acknowledged record), strays are judged by the brokers' default (three minutes)."""


def steps_for(seed: int, n: int = 45) -> list[dict[str, Any]]:
    """A seeded run of topic deletions and re-creations, reassignments away and back, crashes
    (one broker down at a time), dir failures, failovers and produce, with time passing by
    seconds to minutes (the delay is a minute, the retention three)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [
        {"op": "create_topic", "topic": "s", "partitions": 2, "replication_factor": 2,
         "configs": KEEP},
        {"op": "network", "drop_rate": 0.0, "duplicate_rate": 0.3, "max_delay_ms": 200}]
    down: set[int] = set()
    live = True
    for i in range(n):
        k, b = rng.random(), rng.randint(1, 3)
        if k < 0.25 and live:
            out.append({"op": "produce", "topic": "s", "partition": rng.randrange(2),
                        "values": [f"v{i}"], "acks": 1})
        elif k < 0.33:
            if live:
                out.append({"op": "delete_topic", "topic": "s"})
                live = False
            else:
                out.append({"op": "create_topic", "topic": "s", "partitions": 2,
                            "replication_factor": 2, "configs": KEEP})
                live = True
        elif k < 0.38 and live:
            out.append({"op": "recreate_topic", "topic": "s", "partitions": 2,
                        "replication_factor": 2, "configs": KEEP})
        elif k < 0.48 and live:
            out.append({"op": "reassign", "topic": "s", "partition": rng.randrange(2),
                        "replicas": rng.sample([1, 2, 3], 2)})
        elif k < 0.56 and not down:
            out.append({"op": "crash", "broker": b, "power_loss": False})
            down.add(b)
        elif k < 0.66:
            out.append({"op": "restart", "broker": down.pop() if down else b})
        elif k < 0.70:
            out.append({"op": "fail_controller", "zombie": True})
        elif k < 0.74:
            out.append({"op": "fail_dir", "broker": b, "dir": rng.randint(1, 2)})
        else:
            out.append({"op": "advance", "ms": rng.choice([500, 5_000, 40_000, 2 * MIN])})
    return [*out, {"op": "heal"}, {"op": "repair_and_settle"}, {"op": "advance", "ms": 4 * MIN}]


def offline_dir_restart(seed: int) -> list[dict[str, Any]]:
    """A broker restarts with one of its two dirs failed (the one ``seed`` picks): the logs it
    held there are unreadable, and the FULL LeaderAndIsr of its registration lists them."""
    b, j = 1 + seed % 3, 1 + (seed // 3) % 2
    return [{"op": "create_topic", "topic": "s", "partitions": 2, "replication_factor": 3,
             "configs": KEEP},
            {"op": "produce", "topic": "s", "partition": 0, "values": ["a"], "acks": -1},
            {"op": "produce", "topic": "s", "partition": 1, "values": ["b"], "acks": -1},
            {"op": "crash", "broker": b, "power_loss": False},
            {"op": "fail_dir", "broker": b, "dir": j},
            {"op": "restart", "broker": b},
            {"op": "advance", "ms": 5_000},
            {"op": "repair_and_settle"}]


def run_steps(seed: int, scenario: str = "steps_for") -> ClusterRun:
    """Apply ``steps_for(seed)`` (or ``offline_dir_restart``) to a fresh run, checking after
    every step."""
    run = ClusterRun({"brokers": 3, "log_dirs_per_broker": 2, "max_delay_ms": 10, "seed": seed,
                      "broker_config": BrokerConfig.from_properties(CONFIG)})
    steps = steps_for(seed) if scenario == "steps_for" else offline_dir_restart(seed)
    for step in steps:
        run.apply(step)
        run.check()
    return run


# ---- the step check on hand-built abstract states ---------------------------------------------

RETENTION, DELAY = 3 * MIN, MIN
T0 = 1_000 * MIN


def _state(logs: tuple[Log, ...], *, now: int = T0, replicas: frozenset[int] = frozenset({2}),
           applied: tuple[int, int] = (1, 5), saw_full: bool = True) -> SCState:
    """Broker 1 (the one watched) holding ``logs`` of the name; broker 2 its replica."""
    empty = (NO_LOG,) * MAX_TOPIC_IDS
    return SCState(
        now=now, controllerEpoch=1, seq=0, topicId=(2,), replicas=(replicas,),
        assignedAt=(tuple((1, 3) if b in replicas else NO_VERSION for b in (1, 2)),),
        online=(True, True), brokerEpoch=(4, 5), seenEpoch=(1, 1),
        appliedVersion=((applied,), ((1, 3),)), sawFull=(saw_full, True),
        dirOnline=(True, True), disk=(((*logs, *empty[len(logs):]),), (empty,)),
        network=frozenset(), lost=frozenset())


def _checker(*sent: Msg) -> RefinementChecker:
    ref = StrayCleanupRefinement(twin_for((1, 2), RETENTION, DELAY))
    ref.network = frozenset(sent)
    ref.first_seen = (1, 1)
    return RefinementChecker(ref, max_steps=MAX_STEPS)


OLD_STRAY = Log(STRAY, T0 - 10 * MIN, T0 - 2 * MIN)
"""Broker 1's stray of topic id 1: written ten minutes ago, set aside two minutes ago."""


def test_an_old_stray_deleted_after_its_delay_is_a_step() -> None:
    found = _checker().check_step(_state((OLD_STRAY,)), _state((NO_LOG,), now=T0 + 5))
    assert [a for a in found.actions if "DeleteStray" in a]


@pytest.mark.parametrize(("stray", "now", "saw_full"), [
    pytest.param(Log(STRAY, T0 - MIN, T0 - 2 * MIN), T0, True, id="younger than retention"),
    pytest.param(Log(STRAY, T0 - 10 * MIN, T0 - 10), T0, True, id="before its delay"),
    pytest.param(OLD_STRAY, T0, False, id="before a FULL LeaderAndIsr"),
])
def test_a_stray_deleted_too_soon_is_no_step(stray: Log, now: int, saw_full: bool) -> None:
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker().check_step(_state((stray,), saw_full=saw_full),
                              _state((NO_LOG,), now=now, saw_full=saw_full))


def test_a_full_request_sets_aside_only_what_it_does_not_list() -> None:
    live = Log(LIVE, T0 - MIN, 0)
    before = _state((NO_LOG, live), replicas=frozenset({1, 2}), applied=(1, 3))
    aside = _state((NO_LOG, Log(STRAY, T0 - MIN, T0)), replicas=frozenset({1, 2}),
                   applied=(1, 9))
    listing = Msg(FULL, 1, 4, 1, 9, 0, 0, False, frozenset({(1, 2)}))
    not_listing = Msg(FULL, 1, 4, 1, 9, 0, 0, False, frozenset())
    assert _checker(not_listing).check_step(before, aside).actions
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker(listing).check_step(before, aside)  # the stray set inverted
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker().check_step(before, aside)  # no request was sent


def test_a_stop_replica_deletes_only_the_topic_id_it_names() -> None:
    live = Log(LIVE, T0 - MIN, 0)
    before = _state((NO_LOG, live), applied=(1, 3))
    after = _state((NO_LOG, NO_LOG), applied=(1, 9))
    assert _checker(Msg(STOP, 1, 4, 1, 9, 1, 2, True, frozenset())).check_step(before, after)
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker(Msg(STOP, 1, 4, 1, 9, 1, 1, True, frozenset())).check_step(before, after)


def test_a_truncation_lowers_a_live_log_s_newest_write_and_only_a_live_one_s() -> None:
    """A follower's truncation leaves an older newest write (Truncate). A stray is never
    truncated, so its age cannot be lowered that way, and a deletion is judged by what is left."""
    live, older = Log(LIVE, T0 - MIN, 0), Log(LIVE, T0 - 10 * MIN, 0)
    found = _checker().check_step(_state((live,), replicas=frozenset({1, 2})),
                                  _state((older,), replicas=frozenset({1, 2})))
    assert [a for a in found.actions if "Truncate" in a]
    young = Log(STRAY, T0 - MIN, T0 - 2 * MIN)
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker().check_step(_state((young,)), _state((young._replace(lastWrite=T0 - 10 * MIN),)))
    with pytest.raises(RefinementViolation, match=NO_STEP):
        _checker().check_step(_state((young,)), _state((NO_LOG,), now=T0 + 5))


def test_the_lost_data_ghost_breaks_no_new_data_deleted() -> None:
    state = _state((NO_LOG,))._replace(lost=frozenset({(1, 1, 1, T0 - MIN)}))
    with pytest.raises(RefinementViolation, match="invariant NoNewDataDeleted is violated"):
        _checker().check_invariants(state)
    two = _state((Log(LIVE, T0, 0), Log(LIVE, T0, 0)))
    with pytest.raises(RefinementViolation, match="invariant TopicIdentity is violated"):
        _checker().check_invariants(two)


# ---- seeded cluster runs ------------------------------------------------------------------------

SEEDS = [1, 3]
"""Seeds whose runs set aside and delete strays (each run takes a few seconds)."""


@pytest.mark.parametrize("seed", SEEDS)
def test_cluster_runs_with_deletions_recreations_and_orphans_refine_the_twin(seed: int) -> None:
    run = run_steps(seed)
    p = run.stray_projection
    assert p is not None
    # steps: changes matched by a search (time passing alone is counted apart, in ticks)
    assert p.steps > 50 and p.ticks > 500 and p.rebases > 0, \
        "names changed, time passed and brokers restarted"
    assert p.stray_deletions > 0, "orphan removal deleted strays, each a twin step"


# ---- planted faults, through the real code paths ------------------------------------------------

def _driver(scenario: str) -> str:
    return refinement_driver("from tests.test_refinement_stray_cleanup import run_steps",
                             f"run_steps(seed, {scenario!r})")


# The seeds where each fault first shows (``offline``: ``offline_dir_restart``, else
# ``steps_for``); the unmutated code passes them all. (The lineage's round trip moved "stray set
# inverted" from seed 0 to 1; a follower's truncation to its log end forgetting the epochs that
# begin there, which changes what the runs do, from 1 to 2.)
PLANTED = [
    ("no age guard", "steps_for", [1],
     "CAUGHT StrayCleanup invariant NoNewDataDeleted is violated"),
    ("stray set inverted", "steps_for", [2], f"CAUGHT StrayCleanup {NO_STEP}"),
    ("topic id ignored on StopReplica", "steps_for", [6], f"CAUGHT StrayCleanup {NO_STEP}"),
    ("non-new replica created with a dir offline", "offline", [0],
     "CAUGHT StrayCleanup invariant NoNewDataDeleted is violated"),
]


@pytest.mark.parametrize(("mutant", "scenario", "seeds", "expected"), PLANTED,
                         ids=[m for m, _, _, _ in PLANTED])
def test_a_planted_fault_is_refused_by_the_stray_cleanup_projection(
        mutant: str, scenario: str, seeds: list[int], expected: str, tmp_path: Path) -> None:
    assert caught_in_copy(_driver(scenario).format(seeds=seeds), tmp_path, mutant) == expected


def test_the_driver_passes_on_the_unmutated_code(tmp_path: Path) -> None:
    """The planted-fault runs above can fail only because of the fault."""
    for scenario in ("steps_for", "offline"):
        seeds = sorted({s for _, sc, ss, _ in PLANTED if sc == scenario for s in ss})
        driver = _driver(scenario).format(seeds=seeds)
        assert caught_in_copy(driver, tmp_path / scenario, None) == "MISSED"
