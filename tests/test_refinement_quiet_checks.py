"""The projections' shortcut for an unchanged partition checks exactly what a full check does.

After every event, each of the four per-event projections (LogStartOffset, ControllerFencing,
FetcherFailure, StrayCleanup) skips a partition whose inputs (every value of the cluster its
abstraction reads) are those of its last *quiet* check, one that changed nothing the
projection keeps: such a check would be retraced, changing nothing again (StrayCleanup: but
the time, the twin's Ticks). Here every partition is checked in full after every event
(``cross_check``), and each one the shortcut would have skipped is asserted to be quiet again,
with the state the shortcut would have left.
"""

from __future__ import annotations

from typing import ClassVar

from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from logwright.verify.stateful_cluster import ClusterMachine


class CrossChecked(ClusterMachine):
    """The fuzzer's machine with the shortcut cross-checked (from its first step on); counts
    the checks compared."""

    compared: ClassVar[dict[str, int]] = {}

    @invariant()
    def cross_checked(self) -> None:
        run = getattr(self, "run", None)
        if run is not None:
            for observer in (run.projection, run.fencing_projection, run.fetcher_projection,
                             run.stray_projection):
                if observer is not None:
                    observer.cross_check = True

    def teardown(self) -> None:
        run = getattr(self, "run", None)
        if run is not None:
            for observer in (run.projection, run.fencing_projection, run.fetcher_projection,
                             run.stray_projection):
                if observer is not None:
                    name = type(observer).__name__
                    self.compared[name] = self.compared.get(name, 0) + observer.cross_checks
        super().teardown()


def test_the_shortcut_for_unchanged_partitions_agrees_with_full_checks() -> None:
    CrossChecked.compared.clear()
    run_state_machine_as_test(CrossChecked, settings=settings(
        max_examples=6, stateful_step_count=40, derandomize=True, deadline=None,
        database=None, suppress_health_check=list(HealthCheck)))
    compared = CrossChecked.compared
    for name in ("ClusterProjection", "ControllerFencingProjection",
                 "StrayCleanupProjection"):
        assert compared.get(name, 0) > 1_000, f"{name}: the shortcut was cross-checked"
