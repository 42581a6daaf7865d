"""Conformance: the implementation answers to the models' Python twins, by refinement.

:mod:`~logwright.conformance.refinement` is generic: a twin, an abstraction function from the
running system to the twin's state, and a check that each observed change of the abstract state
is a stutter or a short path of twin steps, with every twin invariant holding after it.
:mod:`~logwright.conformance.log_start_offset` is the abstraction of one partition (of a
simulated cluster, or of one log in the storage harness) onto the LogStartOffset twin.
:mod:`~logwright.conformance.model_based` generates tests from that twin: its paths, driven
through one real log, the abstract states compared move by move.
:mod:`~logwright.conformance.controller_fencing` and
:mod:`~logwright.conformance.fetcher_failure` abstract a simulated cluster onto the
ControllerFencing twin (per partition, over every broker) and the FetcherFailure twin (per
replica); :mod:`~logwright.conformance.stray_cleanup` onto the StrayCleanup twin (per
partition name, over every broker, against the control requests the controllers sent);
:mod:`~logwright.conformance.replica_move` a log manager's move of one partition between two
dirs of the simulated disk onto the ReplicaMove twin.

This package sits above ``cluster/`` and below ``verify/`` (docs/architecture.md): it may read
everything the abstraction needs, and nothing below imports it.
"""

from __future__ import annotations

from logwright.conformance.refinement import (
    DEFAULT_MAX_STEPS,
    Refinement,
    RefinementChecker,
    RefinementViolation,
    StepFound,
)

__all__ = [
    "DEFAULT_MAX_STEPS",
    "Refinement",
    "RefinementChecker",
    "RefinementViolation",
    "StepFound",
]
