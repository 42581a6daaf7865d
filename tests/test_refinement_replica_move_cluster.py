"""A JBOD move on a broker of a running simulated cluster answers to the ReplicaMove model
(conformance/replica_move.py), observed after every file-system operation of that broker: the
copy racing produce (the broker a leader or a follower), a DeleteRecords during the copy, the
leader's broker crashing (the follower source follows a new leader), and the destination dir
failing. Every change is at most eight twin steps (a start offset raised by four is four
``RaiseStart``) with AtomicMoveSwap holding; a planted fault, a copier that copies source
records not yet fsynced, is refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from logwright import Cluster
from logwright.conformance.refinement import RefinementChecker, RefinementViolation
from logwright.conformance.replica_move import MoveView, ReplicaMoveRefinement, abstract_move
from logwright.errors import KafkaError
from logwright.model.replica_move import FUT, SRC, ReplicaMoveConfig, ReplicaMoveSpec
from logwright.world import Fault
from tests.test_jbod_move import TP, _cluster, _dir_of, _leader, _other_dir, _pick

SCENARIOS = ("plain", "delete_records", "leader_change", "dir_failure")


class MoveObserver:
    """Broker ``b``'s move of TP from its current dir to another, projected after every
    file-system operation of that broker and checked against the twin."""

    def __init__(self, c: Cluster, b: int) -> None:
        self.c, self.b = c, b
        self.broker = c.brokers[b]
        self.lm = self.broker.log_manager
        self.fs = c.simulated_world.new_fs(f"broker-{b}")
        self.src_dir, self.dest_dir = _dir_of(c, b), _other_dir(c, b)
        src = self.lm.get_log(TP)
        assert src is not None
        self.src = src
        self.view = MoveView()
        twin = ReplicaMoveSpec(ReplicaMoveConfig(max_records=64))
        self.checker = RefinementChecker(ReplicaMoveRefinement(twin), max_steps=8)
        self.checker.rebase(self.state(), "before the move")
        self.fs.after_op = self.observe

    def state(self):  # type: ignore[no-untyped-def]
        lm, mover = self.lm, self.broker.replica_manager.dir_mover
        live = lm.get_log(TP)
        in_dest = live is not None and live.dir_path.startswith(self.dest_dir)
        if live is None or live.offline or (in_dest and self.dest_dir in lm.offline_dirs):
            current = "none"
        else:
            current = FUT if in_dest and TP not in mover.swapping else SRC
        locked = TP in mover.swapping and self.dest_dir not in lm.offline_dirs
        return abstract_move(self.fs, lm, TP, self.src, self.src_dir, self.dest_dir, self.view,
                             locked=locked, current=current)

    def observe(self) -> None:
        if self.broker.alive and self.lm.get_log(TP) is not None:
            self.checker.check(self.state(), f"broker {self.b}, file-system op {self.fs.ops}")

    def detach(self) -> None:
        self.fs.after_op = None


def _move(seed: int, who: str, scenario: str,
          plant: Callable[[Cluster, int], None] | None = None) -> MoveObserver:
    c = _cluster(seed, rate=300, records=10)
    b = _pick(c, who)
    if plant is not None:
        plant(c, b)
    obs = MoveObserver(c, b)
    c.alter_replica_log_dirs({("t", 0, b): obs.dest_dir})
    for i in range(6):
        try:
            c.produce("t", 0, [b"racing-%d" % i], timeout_ms=3_000)
        except KafkaError:
            pass  # the leader's broker crashed: not acknowledged
        c.advance_time(100)
        if i == 2 and scenario == "delete_records":
            c.delete_records({("t", 0): 4})
        elif i == 2 and scenario == "leader_change" and _leader(c) != b:
            c.crash_broker(_leader(c))
        elif i == 2 and scenario == "dir_failure":
            obs.fs.inject_fault(obs.dest_dir, Fault.EIO)
    c.run_until_idle()
    c.advance_time(70_000)  # the source's -delete dir goes (S7)
    c.run_until_idle()
    obs.detach()
    return obs


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("who", ["leader", "follower"])
def test_every_file_system_operation_of_a_move_in_a_cluster_is_a_step_of_the_model(
        who: str, scenario: str) -> None:
    obs = _move(5, who, scenario)
    assert obs.checker.steps_by_length, "the move made twin steps"
    last = obs.checker.last
    if scenario == "dir_failure":
        assert last is not None and last.offline[1] and last.current == SRC
    else:  # the move ended: appends go to the moved log, the source dir is gone
        assert last is not None and last.current == FUT and last.durName == ("none", "live")
    obs.c.close()


def _copies_unflushed(c: Cluster, b: int) -> None:
    """The planted fault: the copier reads the source up to its end, fsynced or not."""
    mover = c.brokers[b].replica_manager.dir_mover
    copy = mover.copy
    mover.copy = lambda src, fut, max_bytes, limit: copy(  # type: ignore[method-assign]
        src, fut, max_bytes, src.log_end_offset)


def test_a_copier_that_copies_unflushed_records_is_refused() -> None:
    with pytest.raises(RefinementViolation, match="ReplicaMove"):
        _move(5, "leader", "plain", plant=_copies_unflushed)
