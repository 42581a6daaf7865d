"""The Python twin of spec/LeaderElection.tla: ``twin.py`` (the twin, one method per TLA+
action) and ``bugs.py`` (its bug switches).

``LeaderElectionSpec`` is the twin the registry :data:`logwright.model.SPECS` and ``logwright
verify`` use (it has no packed encoding: see ``twin.py``).
"""

from __future__ import annotations

from logwright.model.leader_election.bugs import BUG_TABLE, BUGS, EXPECTED_VIOLATION
from logwright.model.leader_election.twin import (
    CLEAN,
    NO_LEADER,
    NO_REPORT,
    UNCLEAN,
    UP,
    ElectionResult,
    LeaderElectionConfig,
    LeaderElectionSpec,
    LeaderElectionTwin,
    LEState,
)

__all__ = [
    "BUGS",
    "BUG_TABLE",
    "CLEAN",
    "EXPECTED_VIOLATION",
    "NO_LEADER",
    "NO_REPORT",
    "UNCLEAN",
    "UP",
    "ElectionResult",
    "LEState",
    "LeaderElectionConfig",
    "LeaderElectionSpec",
    "LeaderElectionTwin",
]
