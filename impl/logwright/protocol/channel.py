"""Requests a node sends and the answers it waits for, matched by correlation id.

One channel per node serves the broker (fetches, registration, AlterPartition) and the controller
(control requests): it hands out correlation ids, remembers each outstanding request with its
destination until the answer comes, bounds how many are outstanding, and arms the per-request
timer after which the request counts as unanswered (the broker then gives up or tries again; the
controller rebuilds a control request from the state as it is then and sends it again).

Invariant upheld: each request's callback runs at most once, with the first response carrying its
correlation id from its destination, or with None when its timer fires first; a late or
duplicated response finds no callback and is dropped. A forgotten request (:meth:`forget`, the
bound, :meth:`close`) never calls back. Correlation ids grow by one per request from a base the
node passes in: the broker draws it from its seeded generator, so a response addressed to an
earlier incarnation of the node (same node id) is not mistaken for an answer to this one; the
controller starts at 0 within each of its epochs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from logwright.protocol.messages import Message
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler, Task

__all__ = ["RequestChannel", "ResponseCallback", "WhenFull"]

ResponseCallback = Callable[[Message | None], None]

WhenFull = Literal["refuse", "forget_oldest"]
"""What :meth:`RequestChannel.send` does with one request too many outstanding: "refuse" (an
assertion: the node's own bound should have stopped it) or "forget_oldest" (the oldest request is
forgotten without a callback; the controller's choice: a broker that missed it gets a FULL
LeaderAndIsr when it registers again)."""


@dataclass(init=False)
class _Pending:
    dst: str
    request: Message
    callback: ResponseCallback
    timer: Task | None

    def __init__(self, dst: str, request: Message, callback: ResponseCallback,
                 timer: Task | None) -> None:
        # The generated __init__'s, written out (native when compiled, as Task's).
        self.dst = dst
        self.request = request
        self.callback = callback
        self.timer = timer


class RequestChannel:
    """Outgoing requests of one node and their pending answers.

    Either ``rng`` (the base of the correlation ids is drawn from it) or ``first_correlation_id``
    (the ids start right after it) is given, never neither: nothing is defaulted from global state.
    """

    def __init__(self, node_id: str, network: Network, scheduler: Scheduler,
                 rng: random.Random | None = None, max_pending: int = 100_000, *,
                 first_correlation_id: int | None = None, when_full: WhenFull = "refuse",
                 timer_after_send: bool = False) -> None:
        assert (rng is None) != (first_correlation_id is None), \
            "a correlation id base comes from exactly one of rng and first_correlation_id"
        assert max_pending >= 1
        self.node_id = node_id
        self.network = network
        self.scheduler = scheduler
        self.max_pending = max_pending
        self.when_full = when_full
        # The order of the two scheduler-visible calls of a send (arming the timer, handing the
        # message to the network) is part of what one seed replays; each node keeps its own.
        self.timer_after_send = timer_after_send
        self._next_id = (rng.randrange(1 << 40) * 1_000 if rng is not None
                         else first_correlation_id if first_correlation_id is not None else 0)
        self._pending: dict[int, _Pending] = {}  # insertion order: oldest first
        self._timer_name = f"{node_id} request timeout"  # the default, made once
        self.closed = False
        self.timeouts = 0

    def next_correlation_id(self) -> int:
        """A correlation id never used by this channel before."""
        self._next_id += 1
        return self._next_id

    def send(self, dst: str, build: Callable[[int], Message], callback: ResponseCallback,
             timeout_ms: int | None) -> int:
        """Send the request ``build(correlation_id)`` to ``dst``; ``callback`` gets the answer
        (or None after ``timeout_ms``; None: no timer, the request waits until answered or
        forgotten). Returns the correlation id (-1 once closed: nothing is sent)."""
        if self.closed:
            return -1  # the node stopped mid-operation: its requests go nowhere
        correlation_id = self.next_correlation_id()
        request = build(correlation_id)
        self.send_request(dst, request, callback, timeout_ms)
        return correlation_id

    def send_request(self, dst: str, request: Message, callback: ResponseCallback,
                     timeout_ms: int | None, timer_name: str | None = None) -> None:
        """Send ``request``, built with an id from :meth:`next_correlation_id`, to ``dst`` and
        remember it as :meth:`send` does (for a node that builds its messages before sending).
        ``timer_name`` names the timer in the scheduler (default: "<node> request timeout")."""
        if self.closed:
            return
        correlation_id = request.correlation_id
        assert timeout_ms is None or timeout_ms > 0
        assert correlation_id <= self._next_id and correlation_id not in self._pending, \
            f"{self.node_id}: correlation id {correlation_id} not fresh from this channel"
        if self.timer_after_send:
            self.network.send(self.node_id, dst, request)
        while len(self._pending) >= self.max_pending:
            assert self.when_full == "forget_oldest", f"{self.node_id}: too many requests pending"
            self._forget(next(iter(self._pending)))
        timer = None
        if timeout_ms is not None:
            timer = self.scheduler.schedule(timer_name or self._timer_name,
                                            lambda: self._time_out(correlation_id), timeout_ms)
        self._pending[correlation_id] = _Pending(dst, request, callback, timer)
        if not self.timer_after_send:
            self.network.send(self.node_id, dst, request)

    def send_oneway(self, dst: str, build: Callable[[int], Message]) -> None:
        """Send a message that has no answer (heartbeats, responses)."""
        if self.closed:
            return
        self.network.send(self.node_id, dst, build(self.next_correlation_id()))

    def receive(self, src: str, message: Message) -> bool:
        """Deliver ``message`` to the request it answers; False if no request awaits it."""
        pending = self._pending.get(message.correlation_id)
        if pending is None or pending.dst != src:
            return False
        del self._pending[message.correlation_id]
        if pending.timer is not None:
            pending.timer.cancel()
        pending.callback(message)
        return True

    def _time_out(self, correlation_id: int) -> None:
        pending = self._pending.pop(correlation_id, None)
        if pending is None or self.closed:
            return
        self.timeouts += 1
        pending.callback(None)

    def _forget(self, correlation_id: int) -> None:
        pending = self._pending.pop(correlation_id)
        if pending.timer is not None:
            pending.timer.cancel()

    def request(self, correlation_id: int) -> Message | None:
        """The outstanding request with ``correlation_id``, if it still awaits an answer."""
        pending = self._pending.get(correlation_id)
        return None if pending is None else pending.request

    def forget(self, dst: str | None = None) -> int:
        """Forget, without calling back, every request outstanding to ``dst`` (to anyone when
        None); the channel stays open. Returns how many were forgotten."""
        doomed = [c for c, p in self._pending.items() if dst is None or p.dst == dst]
        for correlation_id in doomed:
            self._forget(correlation_id)
        return len(doomed)

    @property
    def pending_count(self) -> int:
        """Requests still waiting for an answer."""
        return len(self._pending)

    def close(self) -> None:
        """Forget every pending request without calling back (the node stopped)."""
        self.forget()
        self.closed = True
