"""A broker's storage under test, with a model of what it must hold, across crashes and faults.

``StorageHarness`` drives a real ``LogManager`` over a ``SimFileSystem`` and keeps, per partition,
the acknowledged batches, the offset up to which they were flushed, the acknowledged log start
offset and the high watermark. Two oracles check it, and ``check`` (run after every operation
by the harness itself, and after every restart) raises ``InvariantViolation`` naming the
invariant broken:

- the LogStartOffset twin, by refinement (``logwright.conformance.log_start_offset``): each
  partition's log is the one-replica projection of the model, every change of its offsets (LEO,
  HW, start offset, first segment, checkpoint on disk, recovery point) must be a step the model
  allows, and the model's invariants must hold: NeverServeBelowLogStart (0 <= logStart <= HW <=
  LEO, and the start offset never below one acknowledged, across crashes too), NoNewDataDeleted
  (nothing at or above the HW deleted), CommittedDataOnIsr. A change no model step explains is
  ``LogStartOffsetRefinement``;
- the record-level checks the twin does not cover, since it knows offsets, not records:
  NeverServeBelowLogStart (a read below the log start offset fails), NoNewDataDeleted (every
  acknowledged record at or above the log start offset is readable with its value) and
  DurableFlush (after a crash, every record that was flushed is still there).

Both the Hypothesis stateful test (model_tests/) and the crash campaign of ``logwright verify``
use it, so the two check the same thing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from logwright.conformance.log_start_offset import LogProjection
from logwright.conformance.refinement import NO_STEP, RefinementViolation
from logwright.errors import KafkaStorageError, OffsetOutOfRange
from logwright.identity import TopicPartition
from logwright.logmanager import LogManager, LogManagerConfig
from logwright.records import build_simple_batch
from logwright.storage.config import LogConfig
from logwright.storage.log import PartitionLog
from logwright.world import Fault, SimFileSystem, SimScheduler, SimulatedCrash, VirtualClock

Batch = tuple[int, tuple[bytes, ...]]  # (base offset, values)


class InvariantViolation(AssertionError):
    """A safety invariant does not hold; ``invariant`` is its name (architecture.md)."""

    def __init__(self, invariant: str, detail: str) -> None:
        self.invariant = invariant
        super().__init__(f"{invariant}: {detail}")

    @classmethod
    def of_refinement(cls, tp: TopicPartition, exc: RefinementViolation) -> InvariantViolation:
        """The twin's verdict under the name of the invariant it broke (``REFINEMENT`` when no
        model step explains the change)."""
        name = REFINEMENT if exc.reason == NO_STEP else exc.reason.split()[1]
        return cls(name, f"{tp}: {exc}")


@dataclass
class PartitionModel:
    """What one partition must hold."""

    batches: list[Batch] = field(default_factory=list)
    flushed_end: int = 0  # every batch ending below this was flushed
    log_start_offset: int = 0  # acknowledged
    high_watermark: int = 0
    in_flight: tuple[bytes, ...] | None = None  # a produce cut short by a crash
    truncating_to: int | None = None  # a truncation cut short by a crash

    @property
    def end(self) -> int:
        if not self.batches:
            return self.log_start_offset
        base, values = self.batches[-1]
        return base + len(values)


DIRS = ("/data/d1", "/data/d2")
REFINEMENT = "LogStartOffsetRefinement"
"""A change of a log's offsets that no step of the LogStartOffset model explains."""
STORAGE_INVARIANTS = ("NeverServeBelowLogStart", "NoNewDataDeleted", "DurableFlush", REFINEMENT)


class StorageHarness:
    """A log manager in a simulated world, its model, and the operations that change both."""

    def __init__(self, *, seed: int, partitions: int = 3, torn_crashes: bool = True,
                 config: LogManagerConfig | None = None, bug: str | None = None) -> None:
        self.rng = random.Random(seed)
        self.torn_crashes = torn_crashes
        self.clock = VirtualClock(1_000_000)
        self.fs = SimFileSystem(self.clock)
        self.config = config or LogManagerConfig(
            log=LogConfig(segment_bytes=600, index_interval_bytes=100, retention_ms=50_000,
                          retention_bytes=2_000),
            initial_task_delay_ms=0, file_delete_delay_ms=5_000)
        twin_bug = "none"
        if bug == "PeriodicStartOffsetCheckpoint":  # Kafka's behaviour, hazard 12
            self.config = replace(self.config, durable_log_start_offset=False)
            twin_bug = "StartOffsetCheckpointLazy"  # the same behaviour in the model
        elif bug is not None:
            raise ValueError(f"unknown storage bug switch {bug!r}")
        self.tps = [TopicPartition("t", n) for n in range(partitions)]
        self.models = {tp: PartitionModel() for tp in self.tps}
        self.projections = {tp: LogProjection(tp, bug=twin_bug) for tp in self.tps}
        self.counter = 0
        self.crashes = 0
        self.checks = 0
        self.faulted: set[str] = set()
        self._start()
        for i, tp in enumerate(self.tps):
            self.lm.create_log(tp, log_dir=DIRS[i % len(DIRS)])

    # ---- lifecycle -----------------------------------------------------------------------------

    def _start(self) -> None:
        self.sched = SimScheduler(self.clock, seed=self.rng.randrange(1 << 30))
        self.lm = LogManager(self.fs, DIRS, self.clock, self.sched, self.config,
                             rng=random.Random(self.rng.randrange(1 << 30)))
        self.lm.startup()

    def log(self, tp: TopicPartition) -> PartitionLog | None:
        """The live log of ``tp`` if its dir is online."""
        log = self.lm.get_log(tp)
        return None if log is None or log.offline else log

    def run(self, op: Callable[[], None], crash_after: int | None = None) -> bool:
        """Run ``op``; with ``crash_after`` the machine loses power after that many file system
        operations. Returns whether a crash happened (then the broker has restarted)."""
        self.fs.crash_after(crash_after)
        try:
            op()
        except SimulatedCrash:
            self.crash_and_restart()
            return True
        finally:
            self.fs.crash_after(None)
        return False

    def crash_and_restart(self) -> None:
        """Power loss, then start-up: the model is reconciled with what survived."""
        self.crashes += 1
        self.fs.crash(self.rng if self.torn_crashes else None)
        self._restart_and_reconcile()

    def repair_and_restart(self) -> None:
        """The operator replaces failed disks' faults and restarts the process (no power loss)."""
        for path in self.faulted:
            self.fs.clear_fault(path)
        self.faulted.clear()
        self.fs.kill_process()
        self._restart_and_reconcile()

    def clean_restart(self) -> None:
        """Clean shutdown and start-up."""
        self.lm.shutdown()
        self.fs.kill_process()
        self._restart_and_reconcile()

    def _restart_and_reconcile(self) -> None:
        self._start()
        for tp in self.tps:
            try:
                self._reconcile(tp)
            except KafkaStorageError:
                continue  # a dir still faulted: checked once it is repaired

    # ---- operations (each updates the model only once the real call returned) ------------------

    def produce(self, tp: TopicPartition, count: int) -> None:
        values = tuple(b"r%d" % (self.counter + i) for i in range(count))
        self.counter += count
        log = self.log(tp)
        if log is None:
            return
        model = self.models[tp]
        model.in_flight = values
        try:
            info = log.append_as_leader(build_simple_batch(list(values), self.clock.now_ms()))
        except KafkaStorageError:
            model.in_flight = None
            return
        model.in_flight = None
        assert info.first_offset == model.end, f"{tp}: offset {info.first_offset} != {model.end}"
        model.batches.append((info.first_offset, values))
        self._observe(tp, "produce")

    def advance_high_watermark(self, tp: TopicPartition, step: int) -> None:
        log = self.log(tp)
        if log is None:
            return
        hw = min(log.log_end_offset, log.high_watermark + step)
        log.update_high_watermark(hw)
        self.models[tp].high_watermark = hw
        self._observe(tp, "advance the high watermark")

    def delete_records(self, tp: TopicPartition, fraction: float) -> None:
        log = self.log(tp)
        if log is None:
            return
        target = log.log_start_offset + int((log.high_watermark - log.log_start_offset) * fraction)
        try:
            log.increment_log_start_offset(target)
        except KafkaStorageError:
            return
        model = self.models[tp]
        model.log_start_offset = max(model.log_start_offset, target)
        self._observe(tp, f"DeleteRecords({target})")

    def flush(self, tp: TopicPartition) -> None:
        log = self.log(tp)
        if log is None:
            return
        try:
            log.flush()
        except KafkaStorageError:
            return
        self.models[tp].flushed_end = log.log_end_offset
        self._observe(tp, "flush")

    def truncate(self, tp: TopicPartition, fraction: float) -> None:
        """A follower's truncation: only above the high watermark."""
        log = self.log(tp)
        if log is None:
            return
        hw, leo = log.high_watermark, log.log_end_offset
        target = hw + int((leo - hw) * fraction)
        model = self.models[tp]
        model.truncating_to = target
        try:
            log.truncate_to(target)
        except KafkaStorageError:
            model.truncating_to = None
            return
        model.truncating_to = None
        model.batches = [b for b in model.batches if b[0] + len(b[1]) <= log.log_end_offset]
        model.flushed_end = min(model.flushed_end, log.log_end_offset)
        # A follower's truncation: outside the one-replica projection, whose lone replica leads.
        try:
            self.projections[tp].rebase(log, acked=model.log_start_offset,
                                        context=f"truncate to {target}")
        except RefinementViolation as exc:
            raise InvariantViolation.of_refinement(tp, exc) from exc

    def pass_time(self, delta_ms: int) -> None:
        """Let time pass: retention, checkpoints and delayed deletes run on the scheduler."""
        self.sched.advance(delta_ms)
        for tp in self.tps:
            log = self.log(tp)
            if log is not None:
                self.models[tp].log_start_offset = max(self.models[tp].log_start_offset,
                                                       log.log_start_offset)
                self._observe(tp, f"{delta_ms} ms passed")

    def fail_dir(self, index: int, fault: Fault = Fault.EIO) -> None:
        path = DIRS[index % len(DIRS)]
        self.fs.inject_fault(path, fault)
        self.faulted.add(path)

    # ---- checking ------------------------------------------------------------------------------

    def _reconcile(self, tp: TopicPartition) -> None:
        """After a restart: check durability against the model, then adopt what survived."""
        log = self.log(tp)
        model = self.models[tp]
        if log is None:
            return
        lso = log.log_start_offset
        try:  # the twin: a CrashRestart step (acknowledged start offsets stay, hazard 12)
            if model.truncating_to is None:
                self.projections[tp].restarted(log, acked=model.log_start_offset,
                                               context="crash and restart")
            else:  # a truncation cut short: outside the projection, as a whole one is
                self.projections[tp].rebase(log, acked=model.log_start_offset,
                                            context="crash in a truncation, and restart")
        except RefinementViolation as exc:
            raise InvariantViolation.of_refinement(tp, exc) from exc
        actual = self._read_batches(log)
        expected = {base: values for base, values in model.batches}
        for base, values in actual:
            if base in expected and expected[base] != values:
                raise InvariantViolation("DurableFlush", f"{tp}: batch at {base} changed")
            if base not in expected and values != model.in_flight:
                raise InvariantViolation("DurableFlush", f"{tp}: batch at {base} was never "
                                         f"acknowledged: {values!r}")
        surviving = {base for base, _ in actual}
        may_be_truncated = model.truncating_to if model.truncating_to is not None else model.end
        for base, values in model.batches:
            end = base + len(values)
            if end <= model.flushed_end and end > lso and base not in surviving \
                    and end <= may_be_truncated:
                raise InvariantViolation("DurableFlush", f"{tp}: flushed batch at {base} "
                                         f"(flushed up to {model.flushed_end}) lost in a crash")
        model.batches = actual
        model.in_flight = None
        model.truncating_to = None
        model.log_start_offset = lso
        model.high_watermark = log.high_watermark
        model.flushed_end = log.log_end_offset  # what survived a crash is on disk
        self._check_partition(tp, log)

    def _read_batches(self, log: PartitionLog) -> list[Batch]:
        return [(header.base_offset, tuple(rec.value or b"" for _, rec in records))
                for header, records in log.read_batches()]

    def check(self) -> None:
        """Check every invariant on every online partition; raises ``InvariantViolation``."""
        for tp in self.tps:
            log = self.log(tp)
            if log is not None:
                try:
                    self._check_partition(tp, log)
                except KafkaStorageError:
                    continue  # its dir failed just now: offline, and the others go on

    def _observe(self, tp: TopicPartition, what: str) -> None:
        """The twin's check of the change ``what`` made to ``tp``'s log."""
        log = self.log(tp)
        if log is None:
            return
        try:
            self.projections[tp].observe(log, acked=self.models[tp].log_start_offset,
                                         context=what)
        except RefinementViolation as exc:
            raise InvariantViolation.of_refinement(tp, exc) from exc

    def _check_partition(self, tp: TopicPartition, log: PartitionLog) -> None:
        """What the twin does not see: reads, and records with their values (the offsets'
        invariants are the twin's, checked by refinement)."""
        self.checks += 1
        model = self.models[tp]
        lso, hw = log.log_start_offset, log.high_watermark
        self._observe(tp, "check")
        if lso > 0:
            try:
                log.read(lso - 1, 100)
            except OffsetOutOfRange:
                pass
            else:
                raise InvariantViolation("NeverServeBelowLogStart",
                                         f"{tp}: offset {lso - 1} below the start {lso} was served")
        actual = self._read_batches(log)
        wanted = [b for b in model.batches if b[0] + len(b[1]) > lso]
        if actual != wanted:
            missing = sorted(set(b[0] for b in wanted) - set(b[0] for b in actual))
            raise InvariantViolation("NoNewDataDeleted",
                                     f"{tp}: readable batches differ from the acknowledged ones "
                                     f"(start {lso}, hw {hw}); missing bases {missing[:5]}")
