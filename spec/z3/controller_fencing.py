"""ControllerFencing (spec/ControllerFencing.tla) in Z3, over unbounded epochs, proved with Spacer.

The same machine as the TLA+ module and the Python twin, for one broker and with no bound on
controller epochs, broker epochs (restarts) or leader epochs. Each action has the TLA+ name.

Two abstractions, both exact for the invariant:

* One broker. Brokers never interact: a broker's fencing depends only on its own variables, the
  requests addressed to it and the store. StaleControllerFenced is a conjunction over brokers, so
  proving it for one arbitrary broker proves it for all.
* No network variable. In the TLA+ module a controller may send, at any time, any request whose
  controller epoch is at most ``controllerEpoch``, whose broker epoch is at most the broker's and
  whose leader epoch is at most ``leaderEpoch``; and every request in flight satisfies those
  bounds, since the three epochs only grow (the strengthening that replaces the network). So
  ``Deliver`` of "any request within the bounds" is exactly TLA+'s Send followed by Deliver, with
  an unbounded network (no MaxInFlight); duplication, loss and reordering are all included.
  Send and Lose change nothing else and disappear.

Strengthening: none stated by hand. Spacer finds the inductive invariant itself (reported in the
proof's detail): the ghost records satisfy the fence conditions, which every guarded step keeps.

``prove("none")`` returns one ProofResult per invariant (StaleControllerFenced and the end-to-end
BrokerFollowsLatestDecision, both proved by Spacer); with a bug switched on, the invariant the bug
table says it breaks comes back ``holds=False`` with a shortest counterexample found by BMC. The
ghost ``appliedEpoch`` (the highest controller epoch the broker's incarnation applied) is kept by
the model, so NoControllerEpochRecorded (a broker that checks but never records the epoch) is
seen by BrokerFollowsLatestDecision and not by StaleControllerFenced.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import z3
from logwright.model.controller_fencing.bugs import BUG_TABLE
from logwright.model.core import ProofResult

from .common import (
    ActionDef,
    TransitionSystem,
    TwinView,
    limits,
    prove_or_refute,
    refute_bmc,
)

INVARIANTS = ("StaleControllerFenced", "BrokerFollowsLatestDecision")
NOT_HOSTED = -1
NO_BROKER_EPOCH = -1
LEADER_AND_ISR, STOP_REPLICA = 0, 1
"""The request types; Deliver is split by type (``Deliver[LeaderAndIsr]``, ...) for readable
counterexamples."""

INT_VARS = (
    "controllerEpoch",        # store: the active controller's epoch
    "leaderEpoch",            # store: the partition's leader epoch
    "brokerEpoch",            # the broker's current incarnation
    "brokerControllerEpoch",  # controller epoch of the last request the incarnation accepted
    "replicaEpoch",           # the replica's leader epoch, or NOT_HOSTED
    # ghost lastApply = <<applyCE, applyBE, applySeenCE, applyOwnBE>> when ``applied``
    "applyCE", "applyBE", "applySeenCE", "applyOwnBE",
    # ghost lastStoreWrite = <<writerCE, writeStoreCE>> when ``written``
    "writerCE", "writeStoreCE",
    "appliedEpoch",           # ghost: highest controller epoch the incarnation applied
    "replicaPeak",            # ghost: highest leader epoch the replica held since created
)
BOOL_VARS = ("applied", "written")

Step = tuple[Any, dict[str, Any]]

_REQUEST_FIELDS = ("controllerEpoch", "brokerEpoch", "leaderEpoch")
"""Deliver's parameters: the fields of the request delivered (its broker is the one modelled)."""


def system(bug: str = "none") -> TransitionSystem:
    """The transition system with ``bug`` switched on (``"none"``: the correct model)."""
    BUG_TABLE.check(bug)

    def init(s: Mapping[str, Any]) -> Any:
        return z3.And(s["controllerEpoch"] == 1, s["leaderEpoch"] == 0, s["brokerEpoch"] == 1,
                      s["brokerControllerEpoch"] == 0, s["replicaEpoch"] == NOT_HOSTED,
                      *[s[n] == 0 for n in INT_VARS[5:-1]], s["replicaPeak"] == NOT_HOSTED,
                      z3.Not(s["applied"]), z3.Not(s["written"]))

    def elect_controller(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        return z3.BoolVal(True), {"controllerEpoch": s["controllerEpoch"] + 1}

    def elect_leader(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        c = p["c"]
        conditional = z3.BoolVal(True) if bug == "UnconditionalStoreWrite" else (
            c == s["controllerEpoch"])
        guard = z3.And(c >= 1, c <= s["controllerEpoch"], conditional)
        return guard, {"leaderEpoch": s["leaderEpoch"] + 1, "written": z3.BoolVal(True),
                       "writerCE": c, "writeStoreCE": s["controllerEpoch"]}

    def register(s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        return z3.BoolVal(True), {"brokerEpoch": s["brokerEpoch"] + 1,
                                  "brokerControllerEpoch": 0, "appliedEpoch": 0}

    def deliver(kind: int, s: Mapping[str, Any], p: Mapping[str, Any]) -> Step:
        c, e, le = p["controllerEpoch"], p["brokerEpoch"], p["leaderEpoch"]
        in_flight = z3.And(c >= 1, c <= s["controllerEpoch"], e >= 1, e <= s["brokerEpoch"],
                           le >= 0, le <= s["leaderEpoch"])
        stale_broker_epoch = z3.And(e != NO_BROKER_EPOCH, e < s["brokerEpoch"])
        stale_controller_epoch = c < s["brokerControllerEpoch"]
        accepts = z3.And(
            z3.BoolVal(True) if bug == "NoBrokerEpochCheck" else z3.Not(stale_broker_epoch),
            z3.BoolVal(True) if bug == "NoControllerEpochCheck" else z3.Not(stale_controller_epoch))
        rep = s["replicaEpoch"]
        if kind == LEADER_AND_ISR:
            after = z3.If(le > rep, le, rep)
        else:
            after = z3.If(z3.And(rep != NOT_HOSTED, le >= rep), NOT_HOSTED, rep)
        changed = z3.Not(z3.And(s["brokerControllerEpoch"] == c, after == rep))
        recorded = s["brokerControllerEpoch"] if bug == "NoControllerEpochRecorded" else c
        return z3.And(in_flight, accepts, changed), {
            "brokerControllerEpoch": recorded, "replicaEpoch": after, "applied": z3.BoolVal(True),
            "applyCE": c, "applyBE": e, "applySeenCE": s["brokerControllerEpoch"],
            "applyOwnBE": s["brokerEpoch"],
            "appliedEpoch": z3.If(c > s["appliedEpoch"], c, s["appliedEpoch"]),
            "replicaPeak": z3.If(after == NOT_HOSTED, NOT_HOSTED,
                                 z3.If(after > s["replicaPeak"], after, s["replicaPeak"]))}

    def stale_controller_fenced(s: Mapping[str, Any]) -> Any:
        broker_fenced = z3.Implies(s["applied"], z3.And(
            s["applyCE"] >= s["applySeenCE"],
            z3.Or(s["applyBE"] == NO_BROKER_EPOCH, s["applyBE"] >= s["applyOwnBE"])))
        store_fenced = z3.Implies(s["written"], s["writerCE"] == s["writeStoreCE"])
        return z3.And(broker_fenced, store_fenced)

    def broker_follows_latest_decision(s: Mapping[str, Any]) -> Any:
        current = z3.And(s["applied"], s["applyOwnBE"] == s["brokerEpoch"])
        follows = z3.Implies(current, z3.And(
            s["applyCE"] == s["appliedEpoch"],
            z3.Or(s["applyBE"] == NO_BROKER_EPOCH, s["applyBE"] == s["brokerEpoch"])))
        store_fenced = z3.Implies(s["written"], s["writerCE"] == s["writeStoreCE"])
        return z3.And(s["replicaEpoch"] <= s["leaderEpoch"],
                      s["replicaEpoch"] == s["replicaPeak"], follows, store_fenced)

    return TransitionSystem(
        name=f"ControllerFencing_{bug}",
        int_vars=INT_VARS,
        bool_vars=BOOL_VARS,
        init=init,
        actions=[
            ActionDef("ElectController", elect_controller),
            ActionDef("ElectLeader", elect_leader, ("c",)),
            ActionDef("Register", register),
            ActionDef("Deliver[LeaderAndIsr]", partial(deliver, LEADER_AND_ISR), _REQUEST_FIELDS),
            ActionDef("Deliver[StopReplica]", partial(deliver, STOP_REPLICA), _REQUEST_FIELDS),
        ],
        invariants=[("StaleControllerFenced", stale_controller_fenced),
                    ("BrokerFollowsLatestDecision", broker_follows_latest_decision)],
    )


def describe(v: Mapping[str, str]) -> str:
    """One state of a counterexample, in the words of the TLA+ module."""
    replica = "not hosted" if v["replicaEpoch"] == str(NOT_HOSTED) else v["replicaEpoch"]
    text = (f"store controllerEpoch={v['controllerEpoch']} leaderEpoch={v['leaderEpoch']}; "
            f"broker brokerEpoch={v['brokerEpoch']} "
            f"brokerControllerEpoch={v['brokerControllerEpoch']} replicaEpoch={replica}")
    if v["applied"] == "True":
        text += (f"; last change by a request of controller epoch {v['applyCE']} to broker epoch "
                 f"{v['applyBE']}, when the broker had accepted controller epoch "
                 f"{v['applySeenCE']} and was broker epoch {v['applyOwnBE']}")
    if v["applied"] == "True":
        text += f"; highest controller epoch applied by this incarnation {v['appliedEpoch']}"
    if v["written"] == "True":
        text += (f"; last store write by controller epoch {v['writerCE']} while the store's was "
                 f"{v['writeStoreCE']}")
    return text


def prove(bug: str = "none", *, rlimit: int | None = None) -> list[ProofResult]:
    """Prove both invariants unbounded (``bug="none"``), or refute the one the bug breaks
    (its table's) with a trace."""
    ts = system(bug)
    if bug != "none":  # a bounded search for the shortest counterexample, within its rlimit
        return [refute_bmc(ts, BUG_TABLE.expected_violation[bug], max_steps=16,
                           describe=describe, **limits(rlimit))]
    return [prove_or_refute(ts, name, describe=describe, **limits(rlimit)) for name in INVARIANTS]


def twin_views(spec: Any) -> list[TwinView]:
    """How this encoding sees the Python twin (one broker): every variable but the network,
    which the encoding replaces by "any request within the bounds" (see the module docstring).

    Exact pairs: ElectController, ElectLeader(c), Register, and each ``Deliver[type]`` against
    the twin's Send-then-Deliver of every request of that type within the bounds (whether or
    not it is in flight: the encoding's network is unbounded). The twin's Send and Lose change
    only the network, so they stutter here.
    """
    from logwright.model.controller_fencing import (
        LEADER_AND_ISR,
        STOP_REPLICA,
        CFState,
        Request,
    )

    k = spec.config
    assert len(k.brokers) == 1, "the encoding has one broker"
    b = k.brokers[0]

    def abstract(s: Any) -> dict[str, int | bool]:
        assert isinstance(s, CFState)
        applied, written = len(s.lastApply[0]) == 4, len(s.lastStoreWrite) == 2
        ce, be, seen, own = s.lastApply[0] if applied else (0, 0, 0, 0)
        writer, store = s.lastStoreWrite if written else (0, 0)
        return {"controllerEpoch": s.controllerEpoch, "leaderEpoch": s.leaderEpoch,
                "brokerEpoch": s.brokerEpoch[0],
                "brokerControllerEpoch": s.brokerControllerEpoch[0],
                "replicaEpoch": s.replicaEpoch[0], "applyCE": ce, "applyBE": be,
                "applySeenCE": seen, "applyOwnBE": own, "writerCE": writer,
                "writeStoreCE": store, "appliedEpoch": s.appliedEpoch[0],
                "replicaPeak": s.replicaPeak[0],
                "applied": applied, "written": written}

    def deliver_any(kind: str) -> Any:
        def steps(s: Any) -> list[Any]:
            out = []
            for c in range(1, s.controllerEpoch + 1):
                for e in range(1, s.brokerEpoch[0] + 1):
                    for le in range(s.leaderEpoch + 1):
                        m = Request(kind, c, b, e, le)
                        t = spec.Deliver(s._replace(network=s.network | {m}), m)
                        if t is not None:
                            out.append(t)
            return out
        return steps

    def one(method: Any) -> Any:
        return lambda s: [t for t in [method(s)] if t is not None]

    def bounds(t: Mapping[str, Any]) -> Any:
        return z3.And(t["controllerEpoch"] <= k.max_controller_epoch,
                      t["leaderEpoch"] <= k.max_leader_epoch,
                      t["brokerEpoch"] <= k.max_broker_epoch)

    return [TwinView(
        "ControllerFencing", abstract,
        [("ElectController", one(spec.ElectController)),
         ("ElectLeader", lambda s: [t for c in range(1, s.controllerEpoch + 1)
                                    for t in [spec.ElectLeader(s, c)] if t is not None]),
         ("Register", one(lambda s: spec.Register(s, b))),
         ("Deliver[LeaderAndIsr]", deliver_any(LEADER_AND_ISR)),
         ("Deliver[StopReplica]", deliver_any(STOP_REPLICA))],
        bounds)]
