"""Requests a node sends and the answers it waits for, matched by correlation id.

Invariant upheld: each request's callback runs exactly once, with the first response carrying its
correlation id or with None when ``timeout_ms`` passes first; a late or duplicated response finds
no callback and is dropped. Correlation ids start at a random base drawn from the node's seeded
generator, so a response addressed to an earlier incarnation of the node (same node id) is not
mistaken for an answer to this one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from logwright.protocol import Message
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler, Task

ResponseCallback = Callable[[Message | None], None]


@dataclass
class _Pending:
    dst: str
    callback: ResponseCallback
    timer: Task


class RequestChannel:
    """Outgoing requests of one node and their pending answers."""

    def __init__(self, node_id: str, network: Network, scheduler: Scheduler,
                 rng: random.Random, max_pending: int = 100_000) -> None:
        self.node_id = node_id
        self.network = network
        self.scheduler = scheduler
        self.max_pending = max_pending
        self._next_id = rng.randrange(1 << 40) * 1_000
        self._pending: dict[int, _Pending] = {}
        self.closed = False
        self.timeouts = 0

    def next_correlation_id(self) -> int:
        """A correlation id never used by this channel before."""
        self._next_id += 1
        return self._next_id

    def send(self, dst: str, build: Callable[[int], Message], callback: ResponseCallback,
             timeout_ms: int) -> int:
        """Send the request ``build(correlation_id)`` to ``dst``; ``callback`` gets the answer
        (or None after ``timeout_ms``). Returns the correlation id."""
        if self.closed:
            return -1  # the node stopped mid-operation: its requests go nowhere
        assert timeout_ms > 0
        assert len(self._pending) < self.max_pending, f"{self.node_id}: too many requests pending"
        correlation_id = self.next_correlation_id()
        request = build(correlation_id)
        assert request.correlation_id == correlation_id
        timer = self.scheduler.schedule(f"{self.node_id} request timeout",
                                        lambda: self._time_out(correlation_id), timeout_ms)
        self._pending[correlation_id] = _Pending(dst, callback, timer)
        self.network.send(self.node_id, dst, request)
        return correlation_id

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
        pending.timer.cancel()
        pending.callback(message)
        return True

    def _time_out(self, correlation_id: int) -> None:
        pending = self._pending.pop(correlation_id, None)
        if pending is None or self.closed:
            return
        self.timeouts += 1
        pending.callback(None)

    @property
    def pending_count(self) -> int:
        """Requests still waiting for an answer."""
        return len(self._pending)

    def close(self) -> None:
        """Forget every pending request without calling back (the node stopped)."""
        for pending in self._pending.values():
            pending.timer.cancel()
        self._pending.clear()
        self.closed = True
