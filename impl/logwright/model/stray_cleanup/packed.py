"""The packed encoding of the StrayCleanup twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.stray_cleanup.twin.StrayCleanupTwin`); tests compare the two engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from logwright.model.core import State
from logwright.model.packed import Branch, Codes, Mask, PackedSpec
from logwright.model.stray_cleanup.twin import (
    _STATES,
    LIVE,
    STRAY,
    Deletion,
    FullRequest,
    Log,
    SCState,
    StrayCleanupConfig,
    StrayCleanupTwin,
    _hosted,
    _inflight,
    _lw,
    _request_order,
    _sa,
    _sc,
    _st,
)


class StrayCleanupSpec(StrayCleanupTwin, PackedSpec):
    """The StrayCleanup twin with the checker's batched fast path.

    Every variable of every broker, partition and
    log is a digit of a mixed-radix code. Two variables are sets and take a shape the protocol
    guarantees: ``network`` holds at most one request per (broker, controller epoch), since a
    failover sends one per broker and then leaves its epoch behind, so it is one slot per pair
    (present, and the topic id listed per partition, 0 for none); ``lastStrayDeletion`` holds the
    logs of one broker's one partition, deleted by one step, so it is that (broker, partition) and
    per topic id (deleted, assigned then, age then). :meth:`encode` refuses any other shape.
    """

    def __init__(self, config: StrayCleanupConfig | None = None) -> None:
        super().__init__(config)
        k = self.config
        nb, np_, nt, times = len(k.brokers), len(k.partitions), k.max_topic_id, k.max_time + 1
        fields: list[tuple[str, int]] = [("now", times),
                                         ("controllerEpoch", k.max_controller_epoch + 1)]
        for j in range(np_):
            fields += [(f"topicId{j}", nt + 1), (f"replicas{j}", 2 ** nb)]
        for i in range(nb):
            fields += [(f"online{i}", 2), (f"sawFullRequest{i}", 2),
                       (f"brokerControllerEpoch{i}", k.max_controller_epoch + 1)]
        for i in range(nb):
            for j in range(np_):
                for u in range(nt):
                    fields += [(_st(i, j, u), 3), (_lw(i, j, u), times), (_sa(i, j, u), times)]
        for i, e in self._slots:
            fields += [(_inflight(i, e), 2)]
            fields += [(_hosted(i, e, j), nt + 1) for j in range(np_)]
        ghost = [("deletedFrom", 1 + nb * np_)]
        for u in range(nt):
            ghost += [(f"deleted{u}", 2), (f"deletedAssigned{u}", 2), (f"deletedAge{u}", times)]
        self._ghost = [name for name, _ in ghost]
        fields += ghost
        self.use_layout(fields)

    # -- the packed fast path ----------------------------------------------------------------


    def encode(self, s: State) -> int:
        """The mixed-radix code of a state (see the class docstring for the two sets)."""
        s = _sc(s)
        v = dict.fromkeys(self.layout.names, 0)
        v["now"], v["controllerEpoch"] = s.now, s.controllerEpoch
        for j in range(len(self.config.partitions)):
            v[f"topicId{j}"] = s.topicId[j]
            v[f"replicas{j}"] = sum(1 << self._b[b] for b in s.replicas[j])
        for i in range(len(self.config.brokers)):
            v[f"online{i}"] = int(s.online[i])
            v[f"sawFullRequest{i}"] = int(s.sawFullRequest[i])
            v[f"brokerControllerEpoch{i}"] = s.brokerControllerEpoch[i]
            for j, row in enumerate(s.disk[i]):
                for u, log in enumerate(row):
                    v[_st(i, j, u)] = _STATES.index(log.state)
                    v[_lw(i, j, u)], v[_sa(i, j, u)] = log.lastWrite, log.strayAt
        for m in s.network:
            i = self._b[m.broker]
            slot = _inflight(i, m.epoch)
            if slot not in v or v[slot]:
                raise ValueError(f"no slot for the request {m} beside the others in flight "
                                 f"{sorted(s.network, key=_request_order)}")
            v[slot] = 1
            for p, t in m.hosted:
                hosted = _hosted(i, m.epoch, self._p[p])
                if v[hosted]:
                    raise ValueError(f"{m} lists partition {p} twice")
                v[hosted] = t
        places = {(b, p) for b, p, *_ in s.lastStrayDeletion}
        if len(places) > 1:
            raise ValueError(f"one step deleted strays of several partitions: {places}")
        for b, p, t, assigned, age in s.lastStrayDeletion:
            v["deletedFrom"] = 1 + self._b[b] * len(self.config.partitions) + self._p[p]
            u = t - 1
            v[f"deleted{u}"], v[f"deletedAssigned{u}"], v[f"deletedAge{u}"] = 1, int(assigned), age
        return self.layout.pack(v)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        k = self.config
        nb, np_ = len(k.brokers), len(k.partitions)
        network = frozenset(
            FullRequest(e, k.brokers[i], frozenset(
                (p, v[_hosted(i, e, j)]) for j, p in enumerate(k.partitions)
                if v[_hosted(i, e, j)]))
            for i, e in self._slots if v[_inflight(i, e)])
        deleted: frozenset[Deletion] = frozenset()
        if v["deletedFrom"]:
            i, j = divmod(v["deletedFrom"] - 1, np_)
            deleted = frozenset((k.brokers[i], k.partitions[j], u + 1,
                                 bool(v[f"deletedAssigned{u}"]), v[f"deletedAge{u}"])
                                for u in range(k.max_topic_id) if v[f"deleted{u}"])
        return SCState(
            now=v["now"], controllerEpoch=v["controllerEpoch"],
            topicId=tuple(v[f"topicId{j}"] for j in range(np_)),
            replicas=tuple(frozenset(b for i, b in enumerate(k.brokers)
                                     if v[f"replicas{j}"] >> i & 1) for j in range(np_)),
            online=tuple(bool(v[f"online{i}"]) for i in range(nb)),
            sawFullRequest=tuple(bool(v[f"sawFullRequest{i}"]) for i in range(nb)),
            brokerControllerEpoch=tuple(v[f"brokerControllerEpoch{i}"] for i in range(nb)),
            disk=tuple(tuple(tuple(Log(_STATES[v[_st(i, j, u)]], v[_lw(i, j, u)],
                                       v[_sa(i, j, u)]) for u in range(k.max_topic_id))
                             for j in range(np_)) for i in range(nb)),
            network=network, lastStrayDeletion=deleted)

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`; each branch is one
        choice of parameters, numbered in the order the generic actions enumerate them."""
        import numpy as np

        k, w = self.config, self.layout.weight
        c = {name: self.layout.column(frontier, name) for name in self.layout.names}
        nb, np_, nt = len(k.brokers), len(k.partitions), k.max_topic_id
        now, ce = c["now"], c["controllerEpoch"]
        size = frontier.size
        live, stray = _STATES.index(LIVE), _STATES.index(STRAY)
        # Every step but a stray deletion empties the ghost (ClearGhost).
        clear = -sum((c[name] * w[name] for name in self._ghost), np.zeros(size, dtype=np.int64))

        def branch(action: int, b: int, mask: Mask, delta: Codes) -> Branch:
            idx = np.flatnonzero(mask)
            return Branch(action, b, idx, frontier[idx] + delta[idx])

        def member(i: int, j: int) -> Mask:
            """Broker i in partition j's replicas."""
            inside: Mask = (c[f"replicas{j}"] >> i) & 1 == 1
            return inside

        def gone(i: int, j: int, u: int) -> Codes:
            """The delta to NoLog."""
            return -(c[_st(i, j, u)] * w[_st(i, j, u)] + c[_lw(i, j, u)] * w[_lw(i, j, u)]
                     + c[_sa(i, j, u)] * w[_sa(i, j, u)])

        def new_log(i: int, j: int, u: int) -> Codes:
            """The delta to NewLog: live, written now."""
            return ((live - c[_st(i, j, u)]) * w[_st(i, j, u)]
                    + (now - c[_lw(i, j, u)]) * w[_lw(i, j, u)] - c[_sa(i, j, u)] * w[_sa(i, j, u)])

        def hosted_log(i: int, j: int, u: int) -> Codes:
            """The delta to HostedLog: a missing log new, any other live with its history."""
            st = c[_st(i, j, u)]
            restored = (live - st) * w[_st(i, j, u)] - c[_sa(i, j, u)] * w[_sa(i, j, u)]
            return np.where(st == 0, new_log(i, j, u), restored)

        def at_topic(delta: Callable[[int, int, int], Codes], i: int, j: int) -> Codes:
            """``delta(i, j, u)`` on broker i's log of partition j's current topic id u + 1."""
            out = np.zeros(size, dtype=np.int64)
            for u in range(nt):
                out += np.where(c[f"topicId{j}"] == u + 1, delta(i, j, u), 0)
            return out

        def after_full(i: int, listed: dict[tuple[int, int], Mask]) -> Codes:
            """The delta to AfterFull(b, hosted), ``listed[j, u]`` saying what hosted lists."""
            out = np.zeros(size, dtype=np.int64)
            for j in range(np_):
                for u in range(nt):
                    st, sa = c[_st(i, j, u)], c[_sa(i, j, u)]
                    set_aside = np.where(st == live, (stray - live) * w[_st(i, j, u)]
                                         + (now - sa) * w[_sa(i, j, u)], 0)
                    out += np.where(listed[j, u], hosted_log(i, j, u), set_aside)
            return out

        def new_controller_epoch(i: int, epoch: Codes | int) -> Codes:
            e = c[f"brokerControllerEpoch{i}"]
            return (epoch - e) * w[f"brokerControllerEpoch{i}"]

        # Tick
        yield branch(0, 0, now < k.max_time, clear + w["now"])
        # Append(b, p)
        for i in range(nb):
            ready = (c[f"online{i}"] == 1) & (c[f"sawFullRequest{i}"] == 1)
            for j in range(np_):
                mask = np.zeros(size, dtype=bool)
                delta = clear.copy()
                for u in range(nt):
                    sel = (c[f"topicId{j}"] == u + 1) & (c[_st(i, j, u)] == live)
                    mask |= sel
                    delta += np.where(sel, (now - c[_lw(i, j, u)]) * w[_lw(i, j, u)], 0)
                yield branch(1, i * np_ + j, mask & ready & member(i, j), delta)
        # Assign(p, b), Unassign(p, b)
        for j in range(np_):
            for i in range(nb):
                online = c[f"online{i}"] == 1
                applied = at_topic(hosted_log, i, j) + new_controller_epoch(i, ce)
                yield branch(2, j * nb + i, ~member(i, j),
                             clear + (1 << i) * w[f"replicas{j}"] + np.where(online, applied, 0))
        for j in range(np_):
            for i in range(nb):
                online = c[f"online{i}"] == 1
                applied = at_topic(gone, i, j) + new_controller_epoch(i, ce)
                yield branch(3, j * nb + i, member(i, j),
                             clear - (1 << i) * w[f"replicas{j}"] + np.where(online, applied, 0))
        # RecreateTopic(p, S)
        for j in range(np_):
            old = c[f"topicId{j}"]
            for n, subset in enumerate(self._subsets):
                bits = sum(1 << self._b[b] for b in subset)
                delta = clear + w[f"topicId{j}"] + (bits - c[f"replicas{j}"]) * w[f"replicas{j}"]
                for i, b in enumerate(k.brokers):
                    in_s = b in subset
                    told = (c[f"online{i}"] == 1) & (member(i, j) | in_s)
                    changes = new_controller_epoch(i, ce)
                    for u in range(nt):
                        changes += np.where(member(i, j) & (old == u + 1), gone(i, j, u), 0)
                        if in_s:
                            changes += np.where(old == u, new_log(i, j, u), 0)
                    delta += np.where(told, changes, 0)
                yield branch(4, j * len(self._subsets) + n, old < nt, delta)
        # StopBroker(b), StartBroker(b)
        for i in range(nb):
            saw = c[f"sawFullRequest{i}"]
            yield branch(5, i, c[f"online{i}"] == 1,
                         clear - w[f"online{i}"] - saw * w[f"sawFullRequest{i}"])
        for i in range(nb):
            yield branch(6, i, c[f"online{i}"] == 0,
                         clear + w[f"online{i}"] + new_controller_epoch(i, ce))
        # SendFullLeaderAndIsr(b): the current controller's view of b
        for i in range(nb):
            saw = c[f"sawFullRequest{i}"]
            enabled = (c[f"online{i}"] == 1) & ~(
                (saw == 1) & (c[f"brokerControllerEpoch{i}"] >= ce))
            view = after_full(i, {(j, u): member(i, j) & (c[f"topicId{j}"] == u + 1)
                                  for j in range(np_) for u in range(nt)})
            yield branch(7, i, enabled, clear + view + (1 - saw) * w[f"sawFullRequest{i}"]
                         + new_controller_epoch(i, ce))
        # ControllerFailover: the deposed controller's full requests, one per broker, in flight
        sent = np.zeros(size, dtype=np.int64)
        for i, e in self._slots:
            slot = (1 - c[_inflight(i, e)]) * w[_inflight(i, e)]
            for j in range(np_):
                in_view = np.where(member(i, j), c[f"topicId{j}"], 0)
                slot += (in_view - c[_hosted(i, e, j)]) * w[_hosted(i, e, j)]
            sent += np.where(ce == e, slot, 0)
        yield branch(8, 0, ce < k.max_controller_epoch, clear + w["controllerEpoch"] + sent)
        # DeliverDelayedLeaderAndIsr(m): one branch per slot, in the order of _request_order
        for n, (i, e) in enumerate(self._slots):
            seen = c[f"brokerControllerEpoch{i}"]
            taken = clear - c[_inflight(i, e)] * w[_inflight(i, e)]
            for j in range(np_):
                taken -= c[_hosted(i, e, j)] * w[_hosted(i, e, j)]
            listed = {(j, u): c[_hosted(i, e, j)] == u + 1 for j in range(np_) for u in range(nt)}
            applied = (after_full(i, listed)
                       + (1 - c[f"sawFullRequest{i}"]) * w[f"sawFullRequest{i}"]
                       + new_controller_epoch(i, np.maximum(seen, e)))
            if k.bug != "StaleEpochStrayDeletion":
                applied = np.where(e < seen, 0, applied)
            yield branch(9, n, (c[_inflight(i, e)] == 1) & (c[f"online{i}"] == 1),
                         taken + applied)
        # DeleteStray(b, p, t)
        for i in range(nb):
            ready = (c[f"online{i}"] == 1) & (c[f"sawFullRequest{i}"] == 1)
            for j in range(np_):
                for t in range(nt):
                    st, lw, sa = c[_st(i, j, t)], c[_lw(i, j, t)], c[_sa(i, j, t)]
                    mask = ready & (st == stray) & (now >= sa + k.stray_deletion_delay)
                    if k.bug != "NoAgeGuard":
                        mask &= now - lw >= k.retention_period
                    delta = clear + (1 + i * np_ + j) * w["deletedFrom"]
                    for u in range(nt):
                        if k.bug == "TopicNameOnlyMatch":  # every log of the partition name
                            deleted: Mask | bool = c[_st(i, j, u)] != 0
                        elif u == t:
                            deleted = True
                        else:
                            continue
                        assigned = member(i, j) & (c[f"topicId{j}"] == u + 1)
                        record = (gone(i, j, u) + w[f"deleted{u}"]
                                  + assigned * w[f"deletedAssigned{u}"]
                                  + (now - c[_lw(i, j, u)]) * w[f"deletedAge{u}"])
                        delta += np.where(deleted, record, 0)
                    yield branch(10, (i * np_ + j) * nt + t, mask, delta)

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the digits keep every other value in its type)."""
        import numpy as np

        k = self.config

        def col(name: str) -> Codes:
            return self.layout.column(codes, name)

        type_ok = col("controllerEpoch") >= 1
        for j in range(len(k.partitions)):
            type_ok &= col(f"topicId{j}") >= 1
        for i in range(len(k.brokers)):
            type_ok &= col(f"brokerControllerEpoch{i}") >= 1
        no_new: Mask = np.ones(codes.size, dtype=bool)
        for u in range(k.max_topic_id):
            harmless = (col(f"deletedAssigned{u}") == 0) & (
                col(f"deletedAge{u}") >= k.retention_period)
            no_new &= (col(f"deleted{u}") == 0) | harmless
        table = {"TypeOK": type_ok, "NoNewDataDeleted": no_new}
        return [(name, table[name]) for name in k.invariants]


