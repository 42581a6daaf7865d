"""Leader election and the ISR: clean (and, where a topic allows it, unclean) election, the
AlterPartition requests of leaders, and replicas whose log dir failed.

Invariants upheld:

- Clean election unless the topic allows unclean election: a leader is always an ISR member that
  is alive, the first such replica in assignment order; with none alive the leader is -1 and the
  ISR keeps its last member, so that member leads again when it returns and no committed record
  is lost. Only with unclean.leader.election.enable=true (topic override, else the controller
  default) may a live replica outside the ISR lead then; that is logged as a warning because
  committed records may be lost.
- Every leadership change bumps the leader epoch; ISR changes a leader asked for with
  AlterPartition bump only the partition epoch.
- A replica on a failed log dir counts as dead for its partition (it leaves the ISR and cannot
  lead), while the broker's other replicas go on (hazard 5 seen from the controller).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from logwright.controller.errors import StaleControllerEpoch
from logwright.controller.reassigning import Reassignments
from logwright.controller.store import NO_LEADER, MetadataDelta, PartitionState, TopicRecord
from logwright.errors import Errors
from logwright.identity import TopicPartition, broker_node_id
from logwright.protocol.messages import AlterPartitionRequest, AlterPartitionResponse

__all__ = ["Election"]

log = logging.getLogger(__name__)


class Election(Reassignments):
    """The room of leader election and ISR changes."""

    def _unclean_allowed(self, topic: TopicRecord | None) -> bool:
        """unclean.leader.election.enable of ``topic``: its override, else the default."""
        value = None if topic is None else topic.config_map.get("unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return value == "true"

    def _elect(self, state: PartitionState,
               topic: TopicRecord | None = None) -> PartitionState | None:
        """The state after removing dead brokers from the ISR and electing a live ISR leader.

        None when nothing changes. With no live ISR member the leader is -1 and the ISR is kept
        as it is, so its last member can lead again when it returns; unless the topic allows
        unclean election (``topic``: its record, read from the store when not given) and a
        replica outside the ISR is alive: that replica leads, alone in the ISR.
        """
        live_isr = tuple(r for r in state.isr if self._replica_alive(r, state.tp))
        unclean = False
        if state.leader in live_isr:
            leader, isr = state.leader, live_isr
        elif live_isr:
            leader = next(r for r in state.replicas if r in live_isr)
            isr = live_isr
        else:
            leader, isr = NO_LEADER, state.isr
            live = [r for r in state.replicas if self._replica_alive(r, state.tp)
                    and r not in state.removing_replicas]
            if live and self._unclean_allowed(
                    topic if topic is not None else self.store.topic(state.tp.topic)):
                leader, isr, unclean = live[0], (live[0],), True
        if leader == state.leader and isr == state.isr:
            return None
        if unclean:
            log.warning("%s: unclean leader election for %s: broker %d leads from outside the "
                        "ISR %s; records committed after it fell behind are lost", self.node_id,
                        state.tp, leader, list(state.isr))
        new = replace(state, leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1,
                      partition_epoch=state.partition_epoch + 1)
        assert new.leader == NO_LEADER or (
            new.leader in new.isr and self._replica_alive(new.leader, new.tp))
        return new

    def _elect_where_needed(self) -> list[PartitionState]:
        """New states for every partition whose leader or ISR holds a replica that cannot serve
        (broker dead or dir failed), or that has no leader while an ISR member could lead."""
        deleting = self._deleting()
        return [new for state in self.store.partitions()
                if state.tp.topic not in deleting
                and (new := self._elect(state)) is not None]

    # -- ISR changes from leaders ----------------------------------------------------------

    def _on_alter_partition(self, src: str, request: AlterPartitionRequest) -> None:
        """A leader asks to change its ISR: answer, and on success tell every live broker."""
        state = self.store.partition(request.tp)
        error = self._alter_partition_error(src, request, state)
        if error is None and state is not None and tuple(request.new_isr) != state.isr:
            new = replace(state, isr=tuple(request.new_isr),
                          partition_epoch=state.partition_epoch + 1)
            try:
                self._commit(MetadataDelta(partitions=[new]))
            except StaleControllerEpoch:
                self._answer_alter_partition(src, request, Errors.STALE_CONTROLLER_EPOCH)
                return
            self._answer_alter_partition(src, request, Errors.NONE, new)
            self._send_update_metadata([new])
            self._maybe_complete_reassignment(request.tp)
        elif error is None:
            # Already so (a duplicated or retried request): answer with the current state, which
            # tells the leader the truth whatever partition epoch it sent.
            self._answer_alter_partition(src, request, Errors.NONE, state)
        else:
            self._answer_alter_partition(src, request, error)

    def _alter_partition_error(self, src: str, request: AlterPartitionRequest,
                               state: PartitionState | None) -> Errors | None:
        """Why ``request`` cannot change ``state`` (None: it can, or it already has)."""
        if not self.active:
            return Errors.STALE_CONTROLLER_EPOCH  # Kafka: NOT_CONTROLLER
        registration = self.store.broker(request.broker_id)
        if (registration is None or registration.broker_epoch != request.broker_epoch
                or src != broker_node_id(request.broker_id)):
            return Errors.STALE_BROKER_EPOCH
        if state is None or request.tp.topic in self._deleting():
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if request.leader_epoch != state.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if request.broker_id != state.leader:
            return Errors.NOT_LEADER_OR_FOLLOWER
        new_isr = tuple(request.new_isr)
        if new_isr == state.isr:
            return None
        if request.partition_epoch != state.partition_epoch:
            return Errors.INVALID_REQUEST  # Kafka: INVALID_UPDATE_VERSION (95)
        if (not new_isr or len(set(new_isr)) != len(new_isr) or state.leader not in new_isr
                or not set(new_isr) <= set(state.replicas)
                or not all(self._replica_alive(r, request.tp) for r in new_isr)):
            return Errors.INVALID_REQUEST  # Kafka: INELIGIBLE_REPLICA (107) for a dead member
        return None

    def _answer_alter_partition(self, src: str, request: AlterPartitionRequest, error: Errors,
                                state: PartitionState | None = None) -> None:
        if error != Errors.NONE:
            log.info("%s rejects AlterPartition %s from %s: %s", self.node_id, request.tp,
                     src, error.name)
        if state is None:
            self._reply(src, AlterPartitionResponse(request.correlation_id, request.tp, error))
        else:
            self._reply(src, AlterPartitionResponse(
                request.correlation_id, request.tp, error, state.leader_epoch,
                state.partition_epoch, state.isr))

    def _replicas_offline(self, broker_id: int, tps: Iterable[TopicPartition]) -> None:
        """``broker_id``'s replicas of ``tps`` are on a failed dir: out of the ISR, no leading."""
        fresh = [tp for tp in tps if (tp, broker_id) not in self._offline_replicas]
        if not fresh:
            return
        self._offline_replicas.update((tp, broker_id) for tp in fresh)
        log.info("%s: replicas of %s on broker %d are offline", self.node_id,
                 [str(tp) for tp in fresh], broker_id)
        changes = [new for tp in fresh
                   if (state := self.store.partition(tp)) is not None
                   and broker_id in state.replicas and (new := self._elect(state)) is not None]
        try:
            self._commit(MetadataDelta(partitions=changes))
        except StaleControllerEpoch:
            return
        self._announce(changes)

