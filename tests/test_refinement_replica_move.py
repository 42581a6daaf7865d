"""The log manager's JBOD move answers to the ReplicaMove model (conformance/replica_move.py):
after every file-system operation of a move, from the future log's creation to the source's
deletion, the abstract state (dir names running and durable, records written and fsynced,
records by identity, start offsets, the lock) is a step of the twin from the one before (at
most three twin steps) where AtomicMoveSwap holds; and a crash right there followed by the
restart is the twin's Crash then Recover (and the recovery's own dir fsync). A planted fault
(the swap's S2 left out) is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from logwright.conformance.refinement import RefinementChecker, RefinementViolation
from logwright.conformance.replica_move import MoveView, ReplicaMoveRefinement, abstract_move
from logwright.errors import KafkaStorageError
from logwright.logmanager import LogManager
from logwright.model.replica_move import ReplicaMoveConfig, ReplicaMoveSpec
from logwright.model.replica_move.twin import FUT, SRC, RMState
from logwright.storage.log import PartitionLog
from logwright.world import Fault
from logwright.world.simfs import SimulatedCrash
from tests.storage_helpers import batch, read_all
from tests.test_jbod_swap import D1, D2, TOPIC_ID, TP, Broker, _ops_of_a_move, copy_all

MAX_RECORDS = 64


def filled(b: Broker, epochs: int = 1) -> PartitionLog:
    """t-0 in D1 with six batches of two records, in ``epochs`` leader epochs, all fsynced."""
    log = b.lm.create_log(TP, TOPIC_ID, D1)
    for i in range(6):
        log.append_as_leader(batch(b"r%d.0" % i, b"r%d.1" % i), leader_epoch=i * epochs // 6)
    log.update_high_watermark(log.log_end_offset)
    log.flush()
    return log


def _twin() -> ReplicaMoveSpec:
    return ReplicaMoveSpec(ReplicaMoveConfig(max_records=MAX_RECORDS))


def _run_move(b: Broker, src: PartitionLog, phase: list[str]) -> None:
    """The move, each phase noted before it starts: the copy, the swap (S1..S6 hold the
    partition's append lock), the source's deletion after the delay."""
    phase[0] = "copy"
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    fut.flush()  # the copier makes the copy durable before it takes the lock
    phase[0] = "swap"
    b.lm.swap_future_log(TP)
    phase[0] = "swapped"
    b.clock.advance(b.config.file_delete_delay_ms + 1)
    b.lm.run_delayed_deletes()
    phase[0] = "done"


def _abstract(b: Broker, src: PartitionLog, view: MoveView, phase: str) -> RMState:
    swapped = phase in ("swapped", "done")
    return abstract_move(b.fs, b.lm, TP, src, D1, D2, view, locked=phase == "swap",
                         current=FUT if swapped else SRC)


def _states_of_a_move(run: Callable[[Broker, PartitionLog, list[str]], None] = _run_move
                      ) -> tuple[list[RMState], list[tuple[RMState, RMState]]]:
    """The abstract state after each file-system operation of a move, and, for a crash right
    after each of them (each in its own run), the state there and the one the restart leads
    to."""
    states, _, _ = _one_run(run, None)
    crashes = []
    for k in range(1, len(states)):
        seen, view, b = _one_run(run, k)
        src = b.lm.get_log(TP)
        b.crash_and_restart()
        crashes.append((seen[-1], _recovered(b, view)))
        del src
    return states, crashes


def _one_run(run: Callable[[Broker, PartitionLog, list[str]], None], crash_after: int | None
             ) -> tuple[list[RMState], MoveView, Broker]:
    """One move, the abstract state taken after every file-system operation (the first: before
    any), stopped by a crash after operation ``crash_after`` if given."""
    b = Broker()
    src = filled(b)
    view = MoveView()
    phase = ["before"]
    states = [_abstract(b, src, view, phase[0])]
    b.fs.after_op = lambda: states.append(_abstract(b, src, view, phase[0]))
    b.fs.crash_after(crash_after)
    try:
        run(b, src, phase)
    except SimulatedCrash:
        assert crash_after is not None
    finally:
        b.fs.after_op = None
        b.fs.crash_after(None)
    view.src = src
    return states, view, b


def _recovered(b: Broker, view: MoveView) -> RMState:
    """The state after the restart: appends go to the log start-up picked; the source is the
    log start-up loaded from D1, or, once the moved log is picked, the old one (renamed)."""
    live = b.lm.get_log(TP)
    assert live is not None
    current = FUT if live.dir_path.startswith(D2) else SRC
    src = live if current == SRC else view.src
    assert src is not None
    return abstract_move(b.fs, b.lm, TP, src, D1, D2, view, current=current)


def test_every_file_system_operation_of_a_move_is_a_step_of_the_model() -> None:
    states, _ = _states_of_a_move()
    assert len(states) > 20
    checker = RefinementChecker(ReplicaMoveRefinement(_twin()), max_steps=3)
    for i, s in enumerate(states):
        checker.check(s, f"after file-system operation {i}")
    assert checker.steps_by_length, "the move made twin steps"
    assert states[-1].durName == ("none", "live") and states[-1].current == FUT


def test_a_crash_after_every_file_system_operation_recovers_as_the_model_does() -> None:
    _, crashes = _states_of_a_move()
    assert len(crashes) > 20
    twin = _twin()
    recoveries = set()
    for i, (at, after) in enumerate(crashes):
        down = twin.Crash(at)  # what the crash keeps: fsynced records, fsynced names
        assert down is not None
        checker = RefinementChecker(ReplicaMoveRefinement(twin), max_steps=3)
        checker.rebase(down, f"the crash after operation {i + 1}")
        found = checker.check(after, f"the restart after the crash after operation {i + 1}")
        assert found.actions[:1] == ("Recover",), (i, found.actions)
        recoveries.add(found.actions)
    # Start-up met both sides of the commit point, and finished a cut swap (R2's fsync).
    assert {after.current for _, after in crashes} == {SRC, FUT}
    assert ("Recover", "FsyncDir") in recoveries or any(len(r) > 1 for r in recoveries)


def _swap_without_s2(b: Broker, src: PartitionLog, phase: list[str]) -> None:
    """The planted fault: the copy is not fsynced before the future log is renamed live (the
    disk acknowledges the future log's fsyncs without doing them)."""
    phase[0] = "copy"
    fut = b.lm.create_future_log(TP, D2)
    copy_all(src, fut)
    phase[0] = "swap"
    b.fs.inject_fault(fut.dir_path, Fault.LOST_FSYNC)
    try:
        LogManager.swap_future_log(b.lm, TP)
    finally:
        b.fs.clear_fault(fut.dir_path)
    phase[0] = "swapped"


def test_a_swap_that_publishes_an_unflushed_copy_is_refused() -> None:
    with pytest.raises(RefinementViolation) as info:
        states, _ = _states_of_a_move(_swap_without_s2)
        checker = RefinementChecker(ReplicaMoveRefinement(_twin()), max_steps=3)
        for i, s in enumerate(states):
            checker.check(s, f"after file-system operation {i}")
    assert "ReplicaMove" in str(info.value)


# -- a dir failure during the move, and the restarts around it ----------------------------------

def _fail_dest_during_move(b: Broker, src: PartitionLog, fail_at: int,
                           states: list[RMState], view: MoveView) -> None:
    """The move, with D2 failing (every call under it an I/O error) after the move's
    ``fail_at``-th file-system operation; the abstract state after every operation."""
    phase = ["before"]
    start = b.fs.ops

    def after_op() -> None:
        states.append(_abstract_failing(b, src, view, phase[0]))
        if b.fs.ops - start == fail_at:
            b.fs.inject_fault(D2, Fault.EIO)  # from the next operation on

    b.fs.after_op = after_op
    try:
        _run_move(b, src, phase)
    except KafkaStorageError:
        pass
    finally:
        b.fs.after_op = None
    b.fs.inject_fault(D2, Fault.EIO)  # at the latest once the move is over
    states.append(_abstract_failing(b, src, view, "failed"))


def _abstract_failing(b: Broker, src: PartitionLog, view: MoveView, phase: str) -> RMState:
    live = b.lm.get_log(TP)
    in_d2 = live is not None and live.dir_path.startswith(D2)
    if live is None or live.offline or (in_d2 and D2 in b.lm.offline_dirs):
        current = "none"
    elif phase in ("swapped", "done", "failed"):
        current = FUT if in_d2 else SRC
    else:
        current = SRC
    locked = phase == "swap" and D2 not in b.lm.offline_dirs
    return abstract_move(b.fs, b.lm, TP, src, D1, D2, view, locked=locked, current=current)


@pytest.mark.parametrize("appends", [0, 2])
def test_a_dir_failure_at_any_point_of_a_move_and_the_restarts_after_are_steps_of_the_model(
        appends: int) -> None:
    """D2 fails after each file-system operation of a move in turn: every change is a twin
    step (FailDir among them); the restart with D2 still failed is Crash, Recover and Serve
    (R6 re-stamps what it serves); appends follow; the restart with D2 back is Crash, Repair,
    Recover, the dir fsyncs and Serve; AtomicMoveSwap holds throughout, and no acknowledged
    record is lost."""
    total = _ops_of_a_move()
    twin = _twin()
    outcomes = set()
    for fail_at in range(1, total + 1):
        b = Broker()
        src = filled(b)
        original = read_all(src)
        view = MoveView()
        states = [_abstract_failing(b, src, view, "before")]
        _fail_dest_during_move(b, src, fail_at, states, view)
        # five steps at most: a restart that drops a stale future dir starts the move again
        # (Repair, Recover, FsyncDir, Serve, RestartMove)
        checker = RefinementChecker(ReplicaMoveRefinement(twin), max_steps=5)
        for i, s in enumerate(states):
            checker.check(s, f"D2 failing after operation {fail_at}: state {i}")
        # restart with D2 still failed
        crashed = twin.Crash(states[-1])
        assert crashed is not None
        checker.rebase(crashed, "the crash")
        b.crash_and_restart()
        live = b.lm.get_log(TP)
        # the source, or nothing if S5 had renamed it (the moved log is on the failed dir)
        view.src = live if live is not None and live.dir_path.startswith(D1) else src
        after = _recovered_failing(b, view)
        found = checker.check(after, f"the restart with D2 failed (after operation {fail_at})")
        assert found.actions[0] == "Recover" and found.actions[-1] == "Serve", found.actions
        if live is not None:
            assert live.dir_path.startswith(D1)
            for i in range(appends):
                live.append_as_leader(batch(b"late%d" % i), leader_epoch=7)
            live.flush()
            live.update_high_watermark(live.log_end_offset)
            acked = read_all(live)
            checker.check(_recovered_failing(b, view), "appends while D2 is failed")
        else:
            acked = original  # S5 ran: the moved copy holds exactly these
        # restart with D2 back
        crashed = twin.Crash(_recovered_failing(b, view))
        assert crashed is not None
        checker.rebase(crashed, "the second crash")
        b.fs.clear_fault(D2)
        b.crash_and_restart()
        back = b.lm.get_log(TP)
        assert back is not None and read_all(back) == acked, fail_at
        view.src = back if back.dir_path.startswith(D1) else view.src
        found = checker.check(_recovered_failing(b, view), "the restart with D2 back")
        assert found.actions[:2] == ("Repair", "Recover"), found.actions
        outcomes.add(back.dir_path.startswith(D2))
    assert outcomes == {True, False}  # D2's failure met both sides of the commit point


def _recovered_failing(b: Broker, view: MoveView) -> RMState:
    live = b.lm.get_log(TP)
    assert view.src is not None
    if live is None:
        return abstract_move(b.fs, b.lm, TP, view.src, D1, D2, view, current="none")
    current = FUT if live.dir_path.startswith(D2) else SRC
    src = live if current == SRC else view.src
    return abstract_move(b.fs, b.lm, TP, src, D1, D2, view, current=current)
