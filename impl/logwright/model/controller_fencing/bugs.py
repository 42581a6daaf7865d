"""The bug switches of spec/ControllerFencing.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/controller_fencing.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("ControllerFencing", (
    Bug("NoControllerEpochCheck", "StaleControllerFenced",
        "brokers skip the controller epoch check"),
    Bug("NoBrokerEpochCheck", "StaleControllerFenced",
        "brokers skip the broker epoch check (hazard 3)"),
    Bug("UnconditionalStoreWrite", "StaleControllerFenced",
        "store writes ignore the controller epoch (hazard 4)"),
    Bug("NoControllerEpochRecorded", "BrokerFollowsLatestDecision",
        "brokers check the controller epoch but never record the one they accept"),
))
"""Every bug ``Bug`` can switch on in ControllerFencing, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
