"""The abstraction of a simulated cluster onto the FetcherFailure twin, per replica.

One twin instance of one partition and one fetcher per (broker, partition, topic id): the
twin's fetchers share nothing between partitions but the fetcher's life, and a fetcher of the
implementation holding several partitions is several instances, each seeing it alive or not.
What is abstracted, for broker ``b``'s replica of ``tp``:

* ``leaderEpoch``: the metadata store's leader epoch of the partition (the latest decision);
* ``knownEpoch``: the replica's leader epoch while it is a follower with a leader to fetch from
  (on an online dir, or failed); ``NOT_HOSTED`` otherwise: no replica, a stopped one, a leader
  (a broker that becomes leader stops fetching the partition and forgets its failure, the
  twin's ``StopReplica``), or a follower told of no leader;
* ``fetching``: the partition is in one of the broker's fetchers; ``alive``: that fetcher has not
  died (False when the partition is in none: the twin's idle fetcher shuts down);
* ``failedEpoch``: the leader epoch of its entry in the fetcher manager's failed partitions;
* ``inflight``: ``NO_FETCH``, hidden (see below).

What is checked, after every event of the world (when the abstract state changed) and every
step of the fuzzer: ``FailureContained`` (and ``TypeOK``), and that the change is one step of the
twin or a stutter, with two variables hidden: ``inflight`` (a fetch request's epoch: any value
before the step), and ``leaderEpoch`` before the step (any epoch up to the store's now: the
controller decides on its own, and a LeaderAndIsr may reach the broker after a later decision,
so the twin's ``LeaderAndIsr``, which reads the newest epoch, is matched with the epoch the
broker learnt). An idle fetcher's shutdown may follow in the same event. The failed partition
records which action failed it (``FailedPartition.action``): a failure recorded as a fence must
be the twin's ``FetchFenced``, any other its ``StorageError``.

One event of the cluster changes one replica by at most one twin step (a LeaderAndIsr moves a
partition to its new epoch in one step; a dir failure fails each of its partitions once), so K
is 1: a failed partition back in its fetcher at the same epoch is no step of the twin, where two
(StopReplica, then LeaderAndIsr) would hide it. One event makes two: a LeaderAndIsr during
which the replica's dir goes offline (its own I/O, such as the fsync of a reassignment's
target, finds the dir failed) adds the replica to its fetcher at the new epoch, then fails it
at that epoch with the dir's other partitions. That pair, ``LeaderAndIsr`` then
``StorageError``, is accepted as one change, and only when the new failure is a storage error
and the replica's log dir is offline after the event (``FetcherFailureRefinement.dir_offline``).

A broker's restart (a new incarnation starts with no fetcher and no failure) is outside the
twin: the instance starts a new behaviour there (:meth:`RefinementChecker.rebase`, invariants
checked); a broker that is down keeps its state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from logwright.broker.broker import Broker
from logwright.broker.fetcher import FailedPartition
from logwright.broker.partition import NO_LEADER, Role
from logwright.cluster import Cluster
from logwright.conformance.refinement import (
    ClusterObserver,
    RefinementChecker,
    RefinementViolation,
)
from logwright.identity import TopicPartition, Uuid
from logwright.model.core import State
from logwright.model.fetcher_failure import (
    NO_FETCH,
    NOT_FAILED,
    NOT_HOSTED,
    FetcherFailureConfig,
    FetcherFailureTwin,
    FFState,
)

MAX_LEADER_EPOCH = 2**62
"""The twin's MaxLeaderEpoch for refinement: beyond any epoch a run reaches."""

FENCED = "FetchFenced"
"""``FailedPartition.action`` of a failure by a fence; any other is a storage error."""


def twin() -> FetcherFailureTwin:
    """The one-partition, one-fetcher twin each replica is checked against."""
    return FetcherFailureTwin(FetcherFailureConfig(
        num_partitions=1, num_fetchers=1, max_leader_epoch=MAX_LEADER_EPOCH))


class FetcherFailureRefinement:
    """The twin's steps with ``inflight`` and the previous ``leaderEpoch`` hidden (a
    :class:`~logwright.conformance.refinement.Refinement`). ``failure`` and ``dir_offline`` are
    set by the projection before a check: the action the target's new failure was recorded as,
    and whether the target's log dir is offline."""

    def __init__(self, spec: FetcherFailureTwin) -> None:
        self._spec = spec
        self.failure = ""
        #: The target replica's log dir is offline. With a new storage error, the change may
        #: also be a LeaderAndIsr whose own I/O failed the dir: ``LeaderAndIsr`` then
        #: ``StorageError`` at its epoch, in one event (the module's docstring).
        self.dir_offline = False

    @property
    def spec(self) -> FetcherFailureTwin:
        """The twin."""
        return self._spec

    def successors(self, state: State, target: State) -> Iterable[tuple[str, State]]:
        """Every twin step from ``state`` with any hidden values, projected (``inflight``
        NO_FETCH, ``leaderEpoch`` the target's), with or without an idle shutdown after; and a
        LeaderAndIsr followed by a StorageError when a new storage error took the target's
        dir offline."""
        assert isinstance(state, FFState) and isinstance(target, FFState)
        return self._moves(state, target)

    def _moves(self, s: FFState, target: FFState) -> Iterator[tuple[str, State]]:
        spec = self._spec
        top = target.leaderEpoch[0]
        epochs = sorted({e for e in (*s.knownEpoch, *s.failedEpoch, *target.knownEpoch,
                                     *target.failedEpoch, *s.leaderEpoch, top)
                         if 0 <= e <= top})
        actions: list[tuple[str, Callable[[FFState, int], FFState | None]]] = [
            ("LeaderAndIsr", spec.LeaderAndIsr), ("StopReplica", spec.StopReplica)]
        if self.failure == FENCED:
            actions.append(("FetchFenced", spec.FetchFenced))
        elif self.failure:
            actions.append(("StorageError", spec.StorageError))
        then_fail = self.failure not in ("", FENCED) and self.dir_offline
        for le in epochs:
            for inflight in (NO_FETCH, *epochs):
                hidden = s._replace(leaderEpoch=(le,), inflight=(inflight,))
                for name, fn in actions:
                    t = fn(hidden, 1)
                    if t is None:
                        continue
                    t = t._replace(leaderEpoch=(top,), inflight=(NO_FETCH,))
                    yield name, t
                    idle = spec.ShutdownIdle(t, 1)
                    if idle is not None:
                        yield f"{name}, ShutdownIdle", idle
                    failed = None
                    if then_fail and name == "LeaderAndIsr":  # its own I/O failed the dir
                        failed = spec.StorageError(t, 1)
                    if failed is not None:
                        yield f"{name}, StorageError", failed
                        idle = spec.ShutdownIdle(failed, 1)
                        if idle is not None:
                            yield f"{name}, StorageError, ShutdownIdle", idle
        if top > s.leaderEpoch[0]:  # the controller's decisions alone
            yield "ElectLeader", s._replace(leaderEpoch=(top,))
        idle = spec.ShutdownIdle(s._replace(leaderEpoch=(top,)), 1)
        if idle is not None:
            yield "ShutdownIdle", idle


@dataclass
class _Replica:
    topic_id: Uuid
    refinement: FetcherFailureRefinement
    checker: RefinementChecker
    incarnation: object | None = None
    #: What ``_read`` last gave when the state it makes was the state last checked (that
    #: state): the same reading again makes an equal state, a stutter, without making it.
    seen: tuple[_Reading, State] | None = None


_Reading = tuple[int, int, bool, int, bool]
"""What the abstraction reads of one replica: the store's leader epoch, the replica's known
epoch, whether a fetcher holds it, its failed epoch, whether that fetcher is alive."""


def _state(reading: _Reading) -> FFState:
    """The abstract state of a reading (``inflight`` hidden: NO_FETCH)."""
    leader_epoch, known, fetching, failed, alive = reading
    return FFState((leader_epoch,), (known,), (fetching,), (failed,), (NO_FETCH,), (alive,))


class FetcherFailureProjection(ClusterObserver):
    """Every replica of every followed partition as a FetcherFailure state, checked after
    every event (``attach``) and on ``check``; raises :class:`RefinementViolation`."""

    def __init__(self, cluster: Cluster,
                 follow: Callable[[], Iterable[TopicPartition]]) -> None:
        self.cluster = cluster
        self.follow = follow
        self.events = 0
        self.checks = 0
        self.steps = 0
        self.rebases = 0
        self.replicas: dict[tuple[int, TopicPartition], _Replica] = {}

    def check(self, context: str = "") -> None:
        """Abstract every replica of every followed partition and check it."""
        store = self.cluster.store
        partitions = []
        for tp in self.follow():
            record, state = store.topic(tp.topic), store.partition(tp)
            if record is not None and state is not None:
                partitions.append((tp, record.topic_id, max(0, state.leader_epoch)))
        for b, broker in sorted(self.cluster.brokers.items()):
            if not broker.alive:
                continue  # down: the state last seen stands
            for tp, topic_id, leader_epoch in partitions:
                self._check_replica(broker, b, tp, topic_id, leader_epoch, context)

    def state_of(self, b: int, tp: TopicPartition) -> FFState | None:
        """The last abstract state checked for broker ``b``'s replica of ``tp``."""
        r = self.replicas.get((b, tp))
        last = r.checker.last if r is not None else None
        assert last is None or isinstance(last, FFState)
        return last

    def _check_replica(self, broker: Broker, b: int, tp: TopicPartition, topic_id: Uuid,
                       leader_epoch: int, context: str) -> None:
        r = self.replicas.get((b, tp))
        if r is None or r.topic_id != topic_id:
            spec = twin()
            ref = FetcherFailureRefinement(spec)
            r = _Replica(topic_id, ref, RefinementChecker(ref, max_steps=1,
                                                         initial=next(iter(spec.init_states()))))
            r.incarnation = broker.incarnation_id
            self.replicas[(b, tp)] = r
        reading, failed = self._read(broker, b, tp, topic_id, leader_epoch)
        if r.incarnation != broker.incarnation_id:  # restarted: outside the twin
            r.incarnation = broker.incarnation_id
            self.rebases += 1
            r.checker.rebase(_state(reading), f"broker {b} {tp}, {context}: a new incarnation")
            return
        last = r.checker.last
        if r.seen is not None and r.seen[1] is last and r.seen[0] == reading:
            return  # the state it makes equals the last one (see ``_Replica.seen``)
        s = _state(reading)
        if s == last:
            r.seen = (reading, last)
            return
        failure = failed.action if failed is not None else ""
        where = f"broker {b} {tp}, {context}"
        before = r.checker.last
        assert isinstance(before, FFState)
        new_failure = s.failedEpoch[0] != NOT_FAILED and (
            before.failedEpoch[0] != s.failedEpoch[0] or before.fetching[0])
        r.refinement.failure = failure if new_failure else ""
        part = broker.replica_manager.partitions.get(tp)
        r.refinement.dir_offline = part is not None and part.offline
        self.checks += 1
        found = r.checker.check(s, where)
        if found.actions:
            self.steps += 1

    @staticmethod
    def _read(broker: Broker, b: int, tp: TopicPartition, topic_id: Uuid,
              leader_epoch: int) -> tuple[_Reading, FailedPartition | None]:
        """What the abstraction reads of broker ``b``'s replica of ``tp``, and its entry in the
        failed partitions."""
        rm = broker.replica_manager
        part = rm.partitions.get(tp)
        if part is None or part.topic_id not in (None, topic_id):
            return (leader_epoch, NOT_HOSTED, False, NOT_FAILED, False), None
        fm = rm.replica_fetcher_manager
        failed = fm.failed_partitions.get(tp)
        fetcher = fm.fetcher_of(tp)
        fetching = fetcher is not None
        hosted = (part.role is Role.FOLLOWER and part.leader_id not in (NO_LEADER, b)
                  and (fetching or failed is not None or not part.offline))
        known = part.leader_epoch if hosted else NOT_HOSTED
        alive = fetcher is not None and not fetcher.dead and fetcher.running
        return ((leader_epoch, known, fetching,
                 failed.leader_epoch if failed is not None else NOT_FAILED, alive), failed)


__all__ = ["FENCED", "MAX_LEADER_EPOCH", "FetcherFailureProjection",
           "FetcherFailureRefinement", "RefinementViolation", "twin"]
