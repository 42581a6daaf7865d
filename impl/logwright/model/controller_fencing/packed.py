"""The packed encoding of the ControllerFencing twin: its state as one mixed-radix
integer and each action as a vectorized step over a whole frontier (the checker's batched fast
path, :mod:`logwright.model.packed`).

What it upholds: the same states, counts and shortest traces as the readable twin
(:class:`~logwright.model.controller_fencing.twin.ControllerFencingTwin`); tests compare the
two engines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logwright.model.controller_fencing.twin import (
    LEADER_AND_ISR,
    NO_BROKER_EPOCH,
    NOT_HOSTED,
    STOP_REPLICA,
    ApplyRecord,
    CFState,
    ControllerFencingConfig,
    ControllerFencingTwin,
    Request,
    StoreWriteRecord,
)
from logwright.model.core import State
from logwright.model.packed import Branch, Codes, Mask, PackedSpec


class ControllerFencingSpec(ControllerFencingTwin, PackedSpec):
    """The ControllerFencing twin with the checker's batched fast path.

    The network is one digit holding a bitmask
    over every request the constants allow (:attr:`requests`, sorted), the ghost records are each
    one digit numbering their possible values, every other variable a digit of its own.
    """

    def __init__(self, config: ControllerFencingConfig | None = None) -> None:
        super().__init__(config)
        k = self.config
        ce, be = k.max_controller_epoch, k.max_broker_epoch
        fields: list[tuple[str, int]] = [("controllerEpoch", ce + 1),
                                         ("leaderEpoch", k.max_leader_epoch + 1)]
        for i in range(len(k.brokers)):
            fields += [(f"brokerEpoch{i}", be + 1), (f"brokerControllerEpoch{i}", ce + 1),
                       (f"replicaEpoch{i}", k.max_leader_epoch + 2),
                       (f"lastApply{i}", 1 + ce * be * (ce + 1) * be)]
        fields += [("network", 2 ** len(self.requests)), ("lastStoreWrite", 1 + ce * ce)]
        fields += [(f"appliedEpoch{i}", ce + 1) for i in range(len(k.brokers))]
        fields += [(f"replicaPeak{i}", k.max_leader_epoch + 2) for i in range(len(k.brokers))]
        self.use_layout(fields)

    # -- the packed fast path ----------------------------------------------------------------


    def _apply_digit(self, r: ApplyRecord) -> int:
        """The digit of a ghost ``lastApply`` record: 0 for none, else 1 + its mixed radix."""
        if len(r) != 4:
            return 0
        ce, be = self.config.max_controller_epoch, self.config.max_broker_epoch
        request_ce, request_be, seen_ce, own_be = r
        return 1 + (((request_ce - 1) * be + request_be - 1) * (ce + 1) + seen_ce) * be + own_be - 1

    def _apply_record(self, digit: int) -> ApplyRecord:
        if digit == 0:
            return ()
        ce, be = self.config.max_controller_epoch, self.config.max_broker_epoch
        rest, own = divmod(digit - 1, be)
        rest, seen = divmod(rest, ce + 1)
        request_ce, request_be = divmod(rest, be)
        return (request_ce + 1, request_be + 1, seen, own + 1)

    def _write_digit(self, w: StoreWriteRecord) -> int:
        if len(w) != 2:
            return 0
        return 1 + (w[0] - 1) * self.config.max_controller_epoch + w[1] - 1

    def _write_record(self, digit: int) -> StoreWriteRecord:
        if digit == 0:
            return ()
        writer, store = divmod(digit - 1, self.config.max_controller_epoch)
        return (writer + 1, store + 1)

    def encode(self, s: State) -> int:
        """The mixed-radix code of a state."""
        assert isinstance(s, CFState)
        values = {"controllerEpoch": s.controllerEpoch, "leaderEpoch": s.leaderEpoch,
                  "network": sum(1 << self._bit[m] for m in s.network),
                  "lastStoreWrite": self._write_digit(s.lastStoreWrite)}
        for i in range(len(self.config.brokers)):
            values.update({f"brokerEpoch{i}": s.brokerEpoch[i],
                           f"brokerControllerEpoch{i}": s.brokerControllerEpoch[i],
                           f"replicaEpoch{i}": s.replicaEpoch[i] + 1,
                           f"lastApply{i}": self._apply_digit(s.lastApply[i]),
                           f"appliedEpoch{i}": s.appliedEpoch[i],
                           f"replicaPeak{i}": s.replicaPeak[i] + 1})
        return self.layout.pack(values)

    def decode(self, code: int) -> State:
        """The state of a code."""
        v = self.layout.unpack(code)
        n = range(len(self.config.brokers))
        return CFState(v["controllerEpoch"], v["leaderEpoch"],
                       tuple(v[f"brokerEpoch{i}"] for i in n),
                       tuple(v[f"brokerControllerEpoch{i}"] for i in n),
                       tuple(v[f"replicaEpoch{i}"] - 1 for i in n),
                       frozenset(m for m, bit in self._bit.items() if v["network"] >> bit & 1),
                       tuple(self._apply_record(v[f"lastApply{i}"]) for i in n),
                       self._write_record(v["lastStoreWrite"]),
                       tuple(v[f"appliedEpoch{i}"] for i in n),
                       tuple(v[f"replicaPeak{i}"] - 1 for i in n))

    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Vectorized twins of the actions, in the order of :meth:`actions`; each branch is one
        choice of parameters, numbered in the order the generic actions enumerate them."""
        import numpy as np

        k, w, bug = self.config, self.layout.weight, self.config.bug
        col = {name: self.layout.column(frontier, name) for name in self.layout.names}
        ce, le, net = col["controllerEpoch"], col["leaderEpoch"], col["network"]
        size = frontier.size

        def branch(action: int, b: int, mask: Mask, delta: Codes | int) -> Branch:
            idx = np.flatnonzero(mask)
            d = delta[idx] if isinstance(delta, np.ndarray) else delta
            return Branch(action, b, idx, frontier[idx] + d)

        # ElectController
        yield branch(0, 0, ce < k.max_controller_epoch, w["controllerEpoch"])
        # ElectLeader(c)
        for c in range(1, k.max_controller_epoch + 1):
            mask = (le < k.max_leader_epoch) & (c <= ce)
            if bug != "UnconditionalStoreWrite":
                mask &= c == ce
            written = 1 + (c - 1) * k.max_controller_epoch + ce - 1
            yield branch(1, c - 1, mask, w["leaderEpoch"]
                         + (written - col["lastStoreWrite"]) * w["lastStoreWrite"])
        # Register(b)
        for i in range(len(k.brokers)):
            be = col[f"brokerEpoch{i}"]
            yield branch(2, i, be < k.max_broker_epoch, w[f"brokerEpoch{i}"]
                         - col[f"brokerControllerEpoch{i}"] * w[f"brokerControllerEpoch{i}"]
                         - col[f"appliedEpoch{i}"] * w[f"appliedEpoch{i}"])
        # SendLeaderAndIsr, SendStopReplica: branches numbered over (c, b, le, e), the order in
        # which the generic action enumerates its parameters.
        room = np.bitwise_count(net.astype(np.uint64)).astype(np.int64) < k.max_in_flight
        for action, kind in ((3, LEADER_AND_ISR), (4, STOP_REPLICA)):
            n = 0
            for c in range(1, k.max_controller_epoch + 1):
                for i, b in enumerate(k.brokers):
                    for lep in range(k.max_leader_epoch + 1):
                        for e in range(1, k.max_broker_epoch + 1):
                            bit = self._bit[Request(kind, c, b, e, lep)]
                            mask = (room & (c <= ce) & (lep <= le) & (e <= col[f"brokerEpoch{i}"])
                                    & ((net >> bit) & 1 == 0))
                            yield branch(action, n, mask, (1 << bit) * w["network"])
                            n += 1
        # Deliver(m), Lose(m): one branch per request, in sorted order
        ce_max, be_max = k.max_controller_epoch, k.max_broker_epoch
        for bit, m in enumerate(self.requests):
            i = self._index[m.broker]
            own, seen = col[f"brokerEpoch{i}"], col[f"brokerControllerEpoch{i}"]
            replica = col[f"replicaEpoch{i}"] - 1
            present = (net >> bit) & 1 == 1
            accepts = np.ones(size, dtype=bool)
            if bug != "NoBrokerEpochCheck":
                accepts &= ~((m.brokerEpoch != NO_BROKER_EPOCH) & (m.brokerEpoch < own))
            if bug != "NoControllerEpochCheck":
                accepts &= ~(m.controllerEpoch < seen)
            if m.type == LEADER_AND_ISR:
                after = np.maximum(replica, m.leaderEpoch)
            else:
                after = np.where((replica != NOT_HOSTED) & (m.leaderEpoch >= replica),
                                 NOT_HOSTED, replica)
            changed = ~((seen == m.controllerEpoch) & (after == replica))
            record = 1 + (((m.controllerEpoch - 1) * be_max + m.brokerEpoch - 1) * (ce_max + 1)
                          + seen) * be_max + own - 1
            recorded = seen if bug == "NoControllerEpochRecorded" else m.controllerEpoch
            applied = col[f"appliedEpoch{i}"]
            delta = ((recorded - seen) * w[f"brokerControllerEpoch{i}"]
                     + (after - replica) * w[f"replicaEpoch{i}"]
                     + (record - col[f"lastApply{i}"]) * w[f"lastApply{i}"]
                     + (np.maximum(applied, m.controllerEpoch) - applied)
                     * w[f"appliedEpoch{i}"])
            peak = col[f"replicaPeak{i}"] - 1
            peak_after = np.where(after == NOT_HOSTED, NOT_HOSTED, np.maximum(peak, after))
            delta = delta + (peak_after - peak) * w[f"replicaPeak{i}"]
            yield branch(5, bit, present & accepts & changed, delta)
        for bit in range(len(self.requests)):
            yield branch(6, bit, (net >> bit) & 1 == 1, -(1 << bit) * w["network"])

    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """The invariants on each code (TypeOK: the encoding keeps every value in its type,
        and the network bound is checked)."""
        import numpy as np

        k = self.config
        col = {name: self.layout.column(codes, name) for name in self.layout.names}
        net = col["network"].astype(np.uint64)
        type_ok = (np.bitwise_count(net).astype(np.int64) <= k.max_in_flight) & (
            col["controllerEpoch"] >= 1)
        fenced = np.ones(codes.size, dtype=bool)
        ce, be = k.max_controller_epoch, k.max_broker_epoch
        for i in range(len(k.brokers)):
            type_ok &= col[f"brokerEpoch{i}"] >= 1
            digit = col[f"lastApply{i}"]
            rest, own = np.divmod(digit - 1, be)
            rest, seen = np.divmod(rest, ce + 1)
            request_ce, request_be = np.divmod(rest, be)
            ok = (request_ce + 1 >= seen) & (request_be + 1 >= own + 1)
            fenced &= (digit == 0) | ok
        writes = col["lastStoreWrite"]
        writer, store = np.divmod(writes - 1, ce)
        store_ok = (writes == 0) | (writer == store)
        fenced &= store_ok
        follows = store_ok.copy()
        for i in range(len(k.brokers)):
            digit, own_now = col[f"lastApply{i}"], col[f"brokerEpoch{i}"]
            rest, own = np.divmod(digit - 1, be)
            rest, _seen = np.divmod(rest, ce + 1)
            request_ce, request_be = np.divmod(rest, be)
            current = (digit != 0) & (own + 1 == own_now)
            follows &= col[f"replicaEpoch{i}"] - 1 <= col["leaderEpoch"]
            follows &= col[f"replicaEpoch{i}"] == col[f"replicaPeak{i}"]
            follows &= ~current | ((request_ce + 1 == col[f"appliedEpoch{i}"])
                                   & (request_be + 1 == own_now))
        table = {"TypeOK": type_ok, "StaleControllerFenced": fenced,
                 "BrokerFollowsLatestDecision": follows}
        return [(name, table[name]) for name in k.invariants]


