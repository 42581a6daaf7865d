"""The leader applies an AlterPartition answer only when it is a success for the change it still
waits for, at its leader epoch, with a newer partition epoch (found by `make mutmut`: the stub
controller always agreed at once, so no refused, stale or superseded answer was ever seen)."""

from __future__ import annotations

import pytest

from logwright.broker.partition import UNKNOWN_OFFSET
from logwright.errors import Errors
from logwright.protocol import AlterPartitionRequest, AlterPartitionResponse
from tests.test_broker_harness import T0, World, fast_config, state

LAG = 2_000


def proposed_shrink() -> tuple[World, AlterPartitionRequest]:
    """Leader 1 of T0 (epoch 3, partition epoch 3, ISR 1 2 3) has asked to drop broker 3."""
    w = World(broker_ids=(1, 2, 3), config=fast_config(replica_lag_time_max_ms=LAG))
    w.controller.answer_alter_partition = False
    w.assign(T0, 1, 3, [1, 2, 3])
    w.crash_broker(3)
    assert w.run_until(lambda: bool(w.controller.alter_requests), 5 * LAG)
    request = w.controller.alter_requests[-1]
    assert request.new_isr == (1, 2) and w.partition(1, T0).pending_isr is not None
    return w, request


def answer(w: World, request: AlterPartitionRequest, error: Errors = Errors.NONE,
           leader_epoch: int | None = None, partition_epoch: int | None = None) -> None:
    w.network.send(w.controller.node_id, "broker-1", AlterPartitionResponse(
        request.correlation_id, request.tp, error,
        request.leader_epoch if leader_epoch is None else leader_epoch,
        request.partition_epoch + 1 if partition_epoch is None else partition_epoch,
        request.new_isr))
    w.run(50)


def test_a_successful_answer_is_applied() -> None:
    w, request = proposed_shrink()
    answer(w, request)
    p = w.partition(1, T0)
    assert (p.isr, p.partition_epoch, p.pending_isr) == ((1, 2), 4, None)


@pytest.mark.parametrize("kw", [
    {"error": Errors.INVALID_UPDATE_VERSION}, {"error": Errors.FENCED_LEADER_EPOCH},
    {"leader_epoch": 2}, {"leader_epoch": 4}, {"partition_epoch": 3}, {"partition_epoch": 2}])
def test_a_refused_or_stale_answer_changes_nothing_and_the_leader_asks_again(
        kw: dict[str, object]) -> None:
    w, request = proposed_shrink()
    answer(w, request, **kw)  # type: ignore[arg-type]
    p = w.partition(1, T0)
    assert (p.isr, p.partition_epoch, p.pending_isr) == ((1, 2, 3), 3, None)
    assert p.maximal_isr == (1, 2, 3)
    asked = len(w.controller.alter_requests)
    assert w.run_until(lambda: len(w.controller.alter_requests) > asked, 3 * LAG), \
        "the leader never asked again"


def test_an_answer_to_a_change_superseded_by_a_leader_and_isr_is_ignored() -> None:
    w, request = proposed_shrink()
    w.lair(1, [state(T0, 1, 3, [1, 2, 3], partition_epoch=60)])
    answer(w, request, partition_epoch=61)  # even one that looks newer
    p = w.partition(1, T0)
    assert (p.isr, p.partition_epoch) == ((1, 2, 3), 60)


def test_a_refused_member_of_an_earlier_incarnation_is_not_proposed_again_until_it_fetches(
        ) -> None:
    """KIP-903 (trace seed 170): the leader names each member's broker epoch as its last fetch
    gave it. Told INELIGIBLE_REPLICA (the member's broker registered again since), it forgets
    what the added members fetched, so it proposes none of them again on that knowledge: only
    after a fetch of the present incarnation, with that incarnation's epoch."""
    w = World(broker_ids=(1, 2, 3), config=fast_config(replica_lag_time_max_ms=LAG))
    w.controller.answer_alter_partition = False
    w.assign(T0, 1, 3, [1, 2], replicas=[1, 2, 3])
    assert w.run_until(lambda: bool(w.controller.alter_requests), 5 * LAG)
    request = w.controller.alter_requests[-1]
    first = w.controller.broker_epochs[3]
    assert request.new_isr == (1, 2, 3)
    assert request.new_isr_broker_epochs == (w.controller.broker_epochs[1],
                                             w.controller.broker_epochs[2], first)
    w.crash_broker(3)
    answer(w, request, Errors.INELIGIBLE_REPLICA)
    p = w.partition(1, T0)
    assert (p.isr, p.pending_isr) == ((1, 2), None)
    assert p.followers[3].log_end_offset == UNKNOWN_OFFSET
    asked = len(w.controller.alter_requests)
    w.run(3 * LAG)
    assert len(w.controller.alter_requests) == asked, "proposed again on the forgotten fetches"
    w.start_broker(3)
    w.assign(T0, 1, 3, [1, 2], replicas=[1, 2, 3])
    assert w.run_until(lambda: len(w.controller.alter_requests) > asked, 5 * LAG)
    again = w.controller.alter_requests[-1]
    assert again.new_isr == (1, 2, 3)
    assert again.new_isr_broker_epochs[2] == w.controller.broker_epochs[3] != first
