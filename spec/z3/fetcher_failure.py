"""FetcherFailure (spec/FetcherFailure.tla) in Z3: unbounded epochs, any number of partitions.

The same machine as the TLA+ module and the Python twin, seen from one arbitrary partition p,
with no bound on leader epochs and a counter abstraction of p's neighbours: FailureContained is a
conjunction over partitions, and what another partition can do to p goes only through their
shared fetcher thread (``alive``) and whether the fetcher has partitions left (ShutdownIdle). So
the state is p's variables (the TLA+ ones at index p), ``alive`` (p's fetcher) and ``others``, the
number of other partitions of p's fetcher that are in its partition states. Every step of the
TLA+ module maps to a step here or to none (another fetcher's partitions, or another partition's
fetches, change nothing seen from p):

* another partition's LeaderAndIsr: it joins (``others + 1``) or was already there, and the
  thread runs (``OtherLeaderAndIsr``); under NoUnfailOnNewEpoch a failed one stays out: no step;
* another partition's failure at its epoch, or its StopReplica: it leaves (``OtherLeaves``);
* another partition's StorageError: it leaves, and under FailWholeFetcher the thread dies
  (``OtherStorageError``).

So the proof covers every number of partitions and fetchers, not only the .cfg's.

Strengthening: none stated by hand. Spacer finds the inductive invariant itself (reported in the
proof's detail), with facts such as ``knownEpoch <= leaderEpoch`` and ``fetching => alive``.

``prove(bug)`` returns one ProofResult per invariant; with a bug switched on, FailureContained
comes back ``holds=False`` with a shortest counterexample found by BMC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import z3
from logwright.model.core import ProofResult
from logwright.model.fetcher_failure.bugs import BUG_TABLE

from .common import (
    ActionDef,
    TransitionSystem,
    TwinView,
    limits,
    prove_or_refute,
    refute_bmc,
)

INVARIANTS = ("FailureContained",)
NOT_HOSTED = -1
NOT_FAILED = -1
NO_FETCH = -1

INT_VARS = (
    "leaderEpoch",  # p's leader epoch at the leader
    "knownEpoch",   # p's leader epoch at this follower, or NOT_HOSTED
    "failedEpoch",  # the epoch p failed at, or NOT_FAILED
    "inflight",     # the epoch of p's outstanding fetch, or NO_FETCH
    "others",       # how many other partitions of p's fetcher are in its partition states
)
BOOL_VARS = (
    "fetching",     # p is in its fetcher's partition states
    "alive",        # p's fetcher thread runs
)

Step = tuple[Any, dict[str, Any]]
TRUE = z3.BoolVal(True)
FALSE = z3.BoolVal(False)


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)

    def init(s: Mapping[str, Any]) -> Any:
        return z3.And(s["leaderEpoch"] == 0, s["knownEpoch"] == NOT_HOSTED,
                      s["failedEpoch"] == NOT_FAILED, s["inflight"] == NO_FETCH,
                      s["others"] == 0, z3.Not(s["fetching"]), z3.Not(s["alive"]))

    def elect_leader(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        return TRUE, {"leaderEpoch": s["leaderEpoch"] + 1}

    def leader_and_isr(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        guard = s["knownEpoch"] < s["leaderEpoch"]
        known = s["leaderEpoch"]
        if bug == "NoUnfailOnNewEpoch":
            stays_failed = s["failedEpoch"] != NOT_FAILED
            return guard, {
                "knownEpoch": known,
                "failedEpoch": z3.If(stays_failed, s["failedEpoch"], NOT_FAILED),
                "fetching": z3.If(stays_failed, s["fetching"], TRUE),
                "alive": z3.If(stays_failed, s["alive"], TRUE)}
        return guard, {"knownEpoch": known, "failedEpoch": NOT_FAILED, "fetching": TRUE,
                       "alive": TRUE}

    def fetch_request(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        guard = z3.And(s["fetching"], s["alive"], s["inflight"] == NO_FETCH)
        return guard, {"inflight": s["knownEpoch"]}

    def fetch_ok(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        guard = z3.And(s["inflight"] != NO_FETCH, s["inflight"] == s["leaderEpoch"])
        return guard, {"inflight": NO_FETCH}

    def fetch_fenced(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        request = s["inflight"]
        guard = z3.And(request != NO_FETCH, request < s["leaderEpoch"])
        current = TRUE if bug == "FenceWithStaleEpochFails" else request == s["knownEpoch"]
        fails = z3.And(s["fetching"], current)
        if bug == "StaleFenceStalls":  # a stale fence is never handled
            guard = z3.And(guard, fails)
        return guard, {"inflight": NO_FETCH,
                       "failedEpoch": z3.If(fails, request, s["failedEpoch"]),
                       "fetching": z3.If(fails, FALSE, s["fetching"])}

    def storage_error(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        guard = z3.And(s["fetching"], s["alive"])
        upd: dict[str, Any] = {"failedEpoch": s["knownEpoch"], "fetching": FALSE}
        if bug == "FailWholeFetcher":
            upd["alive"] = FALSE
        return guard, upd

    def stop_replica(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        return s["knownEpoch"] != NOT_HOSTED, {"knownEpoch": NOT_HOSTED, "fetching": FALSE,
                                               "failedEpoch": NOT_FAILED}

    def shutdown_idle(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        guard = z3.And(s["alive"], z3.Not(s["fetching"]), s["others"] == 0)
        return guard, {"alive": FALSE}

    def other_leader_and_isr(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        # p["joins"] = 1: it was not in the partition states; 0: it was (so others >= 1).
        joins = p["joins"]
        guard = z3.Or(joins == 1, z3.And(joins == 0, s["others"] >= 1))
        return guard, {"others": s["others"] + joins, "alive": TRUE}

    def other_leaves(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        return s["others"] >= 1, {"others": s["others"] - 1}

    def other_storage_error(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        upd: dict[str, Any] = {"others": s["others"] - 1}
        if bug == "FailWholeFetcher":
            upd["alive"] = FALSE
        return z3.And(s["others"] >= 1, s["alive"]), upd

    def failure_contained(s: Mapping[str, Any]) -> Any:
        failed = s["failedEpoch"] != NOT_FAILED
        return z3.And(
            z3.Implies(z3.And(s["knownEpoch"] != NOT_HOSTED, z3.Not(failed)), s["fetching"]),
            z3.Implies(s["fetching"], s["alive"]),
            z3.Implies(failed, z3.Not(s["fetching"])),
            z3.Implies(failed, s["failedEpoch"] == s["knownEpoch"]))

    return TransitionSystem(
        name=f"FetcherFailure_{bug}",
        int_vars=INT_VARS,
        bool_vars=BOOL_VARS,
        init=init,
        actions=[
            ActionDef("ElectLeader", elect_leader),
            ActionDef("LeaderAndIsr", leader_and_isr),
            ActionDef("FetchRequest", fetch_request),
            ActionDef("FetchOk", fetch_ok),
            ActionDef("FetchFenced", fetch_fenced),
            ActionDef("StorageError", storage_error),
            ActionDef("StopReplica", stop_replica),
            ActionDef("ShutdownIdle", shutdown_idle),
            ActionDef("OtherLeaderAndIsr", other_leader_and_isr, ("joins",)),
            ActionDef("OtherLeaves", other_leaves),
            ActionDef("OtherStorageError", other_storage_error),
        ],
        invariants=[("FailureContained", failure_contained)],
    )


def describe(v: Mapping[str, str]) -> str:
    """One state of a counterexample, in the words of the TLA+ module."""
    known = "not hosted" if v["knownEpoch"] == str(NOT_HOSTED) else v["knownEpoch"]
    text = (f"partition p: leaderEpoch={v['leaderEpoch']} knownEpoch={known} "
            f"{'fetching' if v['fetching'] == 'True' else 'not fetching'}")
    if v["failedEpoch"] != str(NOT_FAILED):
        text += f" FAILED at epoch {v['failedEpoch']}"
    if v["inflight"] != str(NO_FETCH):
        text += f" (fetch in flight at epoch {v['inflight']})"
    return (text + f"; its fetcher {'running' if v['alive'] == 'True' else 'stopped'} with "
            f"{v['others']} other partition(s)")


def prove(bug: str = "none", *, rlimit: int | None = None) -> list[ProofResult]:
    """Prove FailureContained unbounded (``bug="none"``), or refute it with a trace. A bug whose
    only symptom is lost progress (its table names a temporal property, which Z3 does not
    check) gets the proof too: FailureContained still holds with it on."""
    ts = system(bug)
    if bug != "none" and BUG_TABLE.expected_violation[bug] in INVARIANTS:
        # a bounded search for the shortest counterexample, within its rlimit
        return [refute_bmc(ts, name, max_steps=16, describe=describe, **limits(rlimit))
                for name in INVARIANTS]
    return [prove_or_refute(ts, name, describe=describe, **limits(rlimit)) for name in INVARIANTS]


def twin_views(spec: Any) -> list[TwinView]:
    """How this encoding sees the Python twin: one view per partition p, which is the
    encoding's arbitrary partition; its fetcher's other partitions are the counter ``others``.

    Exact pairs: p's own actions and its fetcher's ShutdownIdle. The Other* actions stand for
    the other partitions of p's fetcher with no bound on how many there are, so they allow more
    than a twin of a few partitions does: the twin's steps of other partitions are checked to be
    Z3 steps (or to leave p's view unchanged), not the converse.
    """
    from logwright.model.fetcher_failure import FFState

    k = spec.config

    def view(p: int) -> TwinView:
        i, f = p - 1, spec.FetcherOf(p)
        mates = [q - 1 for q in spec.partitions if q != p and spec.FetcherOf(q) == f]

        def abstract(s: Any) -> dict[str, int | bool]:
            assert isinstance(s, FFState)
            return {"leaderEpoch": s.leaderEpoch[i], "knownEpoch": s.knownEpoch[i],
                    "failedEpoch": s.failedEpoch[i], "inflight": s.inflight[i],
                    "others": sum(s.fetching[j] for j in mates), "fetching": s.fetching[i],
                    "alive": s.alive[f - 1]}

        def own(method: Any) -> Any:
            return lambda s: [t for t in [method(s, p)] if t is not None]

        def bounds(t: Mapping[str, Any]) -> Any:
            return z3.And(t["leaderEpoch"] <= k.max_leader_epoch, t["others"] <= len(mates))

        return TwinView(f"FetcherFailure, p={p}", abstract,
                        [(name, own(getattr(spec, name)))
                         for name in ("ElectLeader", "LeaderAndIsr", "FetchRequest", "FetchOk",
                                      "FetchFenced", "StorageError", "StopReplica")]
                        + [("ShutdownIdle",
                            lambda s: [t for t in [spec.ShutdownIdle(s, f)] if t is not None])],
                        bounds)

    return [view(p) for p in spec.partitions]
