"""The bug switches of spec/LeaderElection.tla (its ``Bug`` constant): the one table the twin,
the Z3 encoding (spec/z3/leader_election.py) and ``logwright verify`` read."""

from __future__ import annotations

from logwright.model.bugs import Bug, BugTable

BUG_TABLE = BugTable("LeaderElection", (
    Bug("DamagedReplicaKeptInIsr", "AckedRecordsSurvive",
        "a replica registering after an unclean shutdown keeps its ISR and ELR membership "
        "(Kafka before KIP-966): it can lead without the records it lost"),
    Bug("LastIsrMemberKept", "AckedRecordsSurvive",
        "no ELR, and the last ISR member is never removed (Kafka before KIP-966): it leads "
        "after losing records another replica still holds"),
    Bug("ElectOutsideEligible", "AckedRecordsSurvive",
        "with no live ISR or ELR member any live replica is elected at once, without a "
        "recovery election and without reporting a loss"),
    Bug("NoStrictMinIsr", "AckedRecordsSurvive",
        "the HW advances with the ISR smaller than MinIsr: a replica in the ELR lacks a "
        "record acknowledged after it left, and is elected"),
))
"""Every bug ``Bug`` can switch on in LeaderElection, and the invariant each breaks."""

BUGS = BUG_TABLE.names
"""The bug switches' names (``"none"``, the correct model, is not one)."""

EXPECTED_VIOLATION = BUG_TABLE.expected_violation
"""Bug name -> the invariant it must violate (the first one TLC checks that fails)."""
