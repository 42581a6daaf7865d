"""The Hypothesis state machine of a broker's storage: its partition logs and log manager
against a simple model, with power loss at arbitrary file system operations, torn writes and log
dir faults. model_tests/ runs it as a test and bench/ measures its steps per second; it needs
hypothesis (the ``dev`` extra).

After every step and every restart: everything flushed is there, nothing below the log start
offset is readable, 0 <= logStart <= HW <= LEO, the log start offset never moves back, and
nothing at or above the high watermark was deleted (see logwright.verify.storage_oracle).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from logwright.identity import TopicPartition
from logwright.verify.storage_oracle import StorageHarness
from logwright.world import Fault

PARTITION = st.integers(0, 2)
CRASH_POINT = st.one_of(st.none(), st.integers(1, 12))
FRACTION = st.floats(0.0, 1.0)


class StorageMachine(RuleBasedStateMachine):
    """Random operations on three partitions in two log dirs, with crashes anywhere."""

    harness: StorageHarness

    @initialize(seed=st.integers(0, 2**16), torn=st.booleans())
    def start(self, seed: int, torn: bool) -> None:
        self.harness = StorageHarness(seed=seed, partitions=3, torn_crashes=torn)

    def _tp(self, n: int) -> TopicPartition:
        return self.harness.tps[n]

    @rule(p=PARTITION, count=st.integers(1, 6), crash=CRASH_POINT)
    def produce(self, p: int, count: int, crash: int | None) -> None:
        self.harness.run(lambda: self.harness.produce(self._tp(p), count), crash)

    @rule(p=PARTITION, step=st.integers(0, 20))
    def advance_high_watermark(self, p: int, step: int) -> None:
        self.harness.advance_high_watermark(self._tp(p), step)

    @rule(p=PARTITION, fraction=FRACTION, crash=CRASH_POINT)
    def delete_records(self, p: int, fraction: float, crash: int | None) -> None:
        self.harness.run(lambda: self.harness.delete_records(self._tp(p), fraction), crash)

    @rule(p=PARTITION, crash=CRASH_POINT)
    def flush(self, p: int, crash: int | None) -> None:
        self.harness.run(lambda: self.harness.flush(self._tp(p)), crash)

    @rule(p=PARTITION, fraction=FRACTION, crash=CRASH_POINT)
    def truncate(self, p: int, fraction: float, crash: int | None) -> None:
        self.harness.run(lambda: self.harness.truncate(self._tp(p), fraction), crash)

    @rule(delta_ms=st.sampled_from([1_000, 10_000, 60_000, 400_000]), crash=CRASH_POINT)
    def pass_time(self, delta_ms: int, crash: int | None) -> None:
        self.harness.run(lambda: self.harness.pass_time(delta_ms), crash)

    @rule()
    def power_loss(self) -> None:
        self.harness.crash_and_restart()

    @rule()
    def clean_restart(self) -> None:
        self.harness.run(self.harness.clean_restart)

    @rule(index=st.integers(0, 1), fault=st.sampled_from([Fault.EIO, Fault.ENOSPC]))
    def fail_dir(self, index: int, fault: Fault) -> None:
        self.harness.fail_dir(index, fault)

    @rule()
    def repair_and_restart(self) -> None:
        self.harness.repair_and_restart()

    @invariant()
    def invariants_hold(self) -> None:
        if hasattr(self, "harness"):
            self.harness.check()

