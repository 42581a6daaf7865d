"""Hypothesis stateful test of the simulated cluster: the machine and its invariants are
:class:`logwright.verify.stateful_cluster.ClusterMachine` (shared with bench/)."""

from __future__ import annotations

from hypothesis import settings

from logwright.verify.stateful_cluster import ClusterMachine

ClusterMachine.TestCase.settings = settings(
    settings(), max_examples=max(200, settings().max_examples), stateful_step_count=40)
TestCluster = ClusterMachine.TestCase
