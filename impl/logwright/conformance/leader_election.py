"""The abstraction of a simulated cluster onto the LeaderElection twin, per partition.

After every step of the cluster fuzzer (``ClusterRun.check``), each partition's controller
state and each replica's log are mapped to the twin's variables, and the twin's invariants
(every one its .cfg checks but ``TypeOK``, whose bounds are the model checker's) must hold on
the result. What is abstracted, for a partition ``tp`` of one generation of its topic:

* ``leader``, ``isr``, ``elr``, ``leaderEpoch``, ``recoveryLogEnds``: the active controller's
  stored state (``NO_LEADER`` for none; a replica with no reported log end ``NO_REPORT``);
* ``lineage``: the epoch of the lineage the controller recorded, with nothing below it (the
  records' epochs are abstracted away, and no invariant reads it);
* ``alive``: whether the controller takes the replica as able to serve (its broker's session
  live, its dir not failed);
* ``proc``: ``up`` while the broker runs and its replica's log can be read, ``unclean``
  otherwise (which way a broker went down matters to the twin's next steps, not to its
  invariants);
* ``acked``: the records acknowledged to acks=all producers (the run's book) at offsets no
  DeleteRecords may have deleted, renumbered 1, 2, ... in offset order, each acknowledged by
  the replicas the run holds to have it intact (those that held it when it was acknowledged,
  less those a fault may have damaged since, plus any seen with it again);
* ``log``: per replica, one entry per acknowledged record, in the same order: epoch 1 (the
  acknowledged record's) where the replica's log holds the acknowledged value at its offset,
  epoch 2 (another record) where it holds something else or nothing. The twin's ``Holds`` is
  then "the replica holds the acknowledged record intact". A replica that cannot be read (its
  broker down, its dir failed) holds what the run holds it to: the acknowledged records it is
  a holder of;
* ``flushed``: the entries below the log's recovery point; ``hw``: the leader's high watermark
  in entries; ``epochStartOffset``: the leader's leader epoch start offset in entries (0 when
  it is down);
* ``cacheEpoch``: the latest epoch of the replica's leader epoch cache (0 for none, or when it
  cannot be read): the records' epochs are abstracted away, so it is not compared with them;
* ``lossReported``: the controller reported an unclean election for this generation, and
  the topic allows one (``unclean.leader.election.enable``): the one loss the user agreed to.

What the invariants then say of the implementation: the leader, when it runs, holds every
acknowledged record a replica that acknowledged it still holds (AckedRecordsSurvive: a
recovery election over logs that all lost a record is not a loss the controller could avoid,
and the record is then held by none); the leader is in the ISR (LeaderInIsr); no replica is in
both the ISR and the ELR (IsrElrDisjoint); the ELR is empty once the ISR has
``min.insync.replicas`` members (ElrOnlyBelowMinIsr). The steps are not matched against the
twin's actions: one step of the fuzzer is many of the twin's, and the records' epochs are
abstracted away.
"""

from __future__ import annotations

from collections.abc import Mapping

from logwright.broker.partition import Partition
from logwright.cluster import Cluster
from logwright.conformance.refinement import RefinementViolation
from logwright.controller.store import NO_LEADER as STORE_NO_LEADER
from logwright.errors import KafkaError, KafkaStorageError
from logwright.identity import TopicPartition, Uuid
from logwright.model.leader_election import (
    NO_LEADER,
    NO_REPORT,
    UNCLEAN,
    UP,
    LeaderElectionConfig,
    LeaderElectionTwin,
    LEState,
)

__all__ = ["LeaderElectionProjection"]

ACKED_EPOCH, OTHER_EPOCH = 1, 2
"""The two record epochs of the abstraction: the acknowledged record, and any other."""


class LeaderElectionProjection:
    """Maps each partition of a simulated cluster to the LeaderElection twin and checks the
    twin's invariants on it (see the module docstring)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.checks = 0
        """Partition states checked so far."""
        self._twins: dict[tuple[tuple[int, ...], int], LeaderElectionTwin] = {}

    def _twin(self, replicas: tuple[int, ...], min_isr: int) -> LeaderElectionTwin:
        key = (replicas, min_isr)
        twin = self._twins.get(key)
        if twin is None:
            config = LeaderElectionConfig(
                replicas=replicas, min_isr=min_isr,
                invariants=("AckedRecordsSurvive", "LeaderInIsr", "IsrElrDisjoint",
                            "ElrOnlyBelowMinIsr"))
            twin = self._twins[key] = LeaderElectionTwin(config)
        return twin

    def abstract(self, tp: TopicPartition, topic_id: Uuid | None, acked: Mapping[int, bytes],
                 holders: Mapping[int, set[int]], floor: int
                 ) -> tuple[LeaderElectionTwin, LEState] | None:
        """The twin and the abstract state of ``tp`` (None when the active controller has no
        such partition of that generation). ``acked``: offset -> value acknowledged;
        ``holders``: offset -> brokers held to hold it intact; ``floor``: offsets below it
        may have been deleted by a DeleteRecords."""
        controller = self.cluster.controller
        try:
            state = controller.partition_state(tp)
            topic = controller.topic(tp.topic)
        except KafkaError:
            return None
        if topic.topic_id != topic_id or not state.replicas:
            return None
        replicas = tuple(sorted(set(state.replicas)))
        configured = topic.config_map.get("min.insync.replicas")
        min_isr = (int(configured) if configured is not None
                   else controller.config.min_insync_replicas)
        twin = self._twin(replicas, max(1, min_isr))
        offsets = sorted(o for o in acked if o >= floor)
        ends = {b: (min(agreeing, end), max(epoch, 0), end)
                for b, agreeing, epoch, end in state.recovery_log_ends}
        logs, flushed, up, cache = [], [], [], []
        hw = start = 0
        for b in replicas:
            held, recovery_point, high_watermark = self._replica(b, tp, topic_id)
            part = self._partition(b, tp) if held is not None else None
            cache.append(max(part.log.latest_epoch or 0, 0) if part is not None else 0)
            if held is None:
                # Down or unreadable: what its disk holds is what the run holds it to hold
                # (a power loss or a failed dir takes it out of the holders).
                logs.append(tuple(ACKED_EPOCH if b in holders.get(o, ()) else OTHER_EPOCH
                                  for o in offsets))
                flushed.append(0)
                up.append(False)
                continue
            logs.append(tuple(ACKED_EPOCH if held.get(o) == acked[o] else OTHER_EPOCH
                              for o in offsets))
            flushed.append(sum(1 for o in offsets if o < recovery_point))
            up.append(True)
            if b == state.leader:
                hw = sum(1 for o in offsets if o < high_watermark)
                if part is not None and part.is_leader:
                    start = sum(1 for o in offsets if o < part.leader_epoch_start_offset)
        allowed = topic.config_map.get("unclean.leader.election.enable")
        unclean = ((allowed == "true" if allowed is not None
                    else controller.config.unclean_leader_election_enable)
                   and any(e[0] == tp and e[1] == topic_id and e[2] == "unclean"
                           for c in self.cluster.controllers for e in c.reported_elections))
        s = LEState(
            leader=NO_LEADER if state.leader == STORE_NO_LEADER else state.leader,
            isr=frozenset(state.isr), elr=frozenset(state.elr),
            leaderEpoch=state.leader_epoch,
            recoveryLogEnds=tuple(ends.get(b, NO_REPORT) for b in replicas),
            lineage=(max(state.lineage_epoch, 1), ()),
            alive=tuple(controller.replica_alive(b, tp) for b in replicas),
            proc=tuple(UP if u else UNCLEAN for u in up),
            log=tuple(logs), flushed=tuple(flushed), cacheEpoch=tuple(cache), hw=hw,
            epochStartOffset=start,
            acked=tuple((ACKED_EPOCH, frozenset(holders.get(o, set()) & set(replicas)))
                        for o in offsets),
            lossReported=unclean)
        return twin, s

    def _partition(self, b: int, tp: TopicPartition) -> Partition | None:
        """Broker ``b``'s hosted partition ``tp``, or None."""
        broker = self.cluster.brokers.get(b)
        if broker is None or not broker.alive:
            return None
        return broker.replica_manager.describe().get(tp)

    def _replica(self, b: int, tp: TopicPartition, topic_id: Uuid | None
                 ) -> tuple[dict[int, bytes | None] | None, int, int]:
        """Broker ``b``'s replica of ``tp``: its records by offset, its recovery point and its
        high watermark; records None when it is down, missing, offline, of another generation
        or cannot be read."""
        broker = self.cluster.brokers.get(b)
        if broker is None or not broker.alive:
            return None, 0, 0
        part = broker.replica_manager.describe().get(tp)
        if part is None or part.offline or part.log.topic_id not in (None, topic_id):
            return None, 0, 0
        try:
            held = {o: r.value for o, r in part.log.read_records()}
        except KafkaStorageError:
            return None, 0, 0
        return held, part.log.recovery_point, part.log.high_watermark

    def check(self, tp: TopicPartition, topic_id: Uuid | None, acked: Mapping[int, bytes],
              holders: Mapping[int, set[int]], floor: int, context: str = "") -> None:
        """Map ``tp`` (see :meth:`abstract`) and check the twin's invariants on it; raises
        :class:`RefinementViolation` naming the invariant."""
        found = self.abstract(tp, topic_id, acked, holders, floor)
        if found is None:
            return
        twin, s = found
        self.checks += 1
        for name, holds in twin.invariants():
            if not holds(s):
                raise RefinementViolation(twin.name, f"{name} is violated", "(not tracked)",
                                          twin.describe(s), f"{tp}, {context}")
