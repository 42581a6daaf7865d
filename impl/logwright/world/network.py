"""Networks between nodes (controller, brokers, clients).

``SimNetwork`` delivers every message after a seeded random delay through the simulation's
scheduler, so messages are reordered; it can drop and duplicate them and cut any two nodes apart.
``LocalNetwork`` is the real runtime's in-process network: delivery in order on the event loop.
A message to a node that is not registered (crashed) is lost, as on a real network.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from mypy_extensions import mypyc_attr

from logwright.world.scheduler import Scheduler

MessageMatch = Callable[[str, str, object], bool]
"""Picks messages out of the traffic: ``match(src, dst, message)``."""


class Endpoint(Protocol):
    """A node that can receive messages."""

    node_id: str

    def receive(self, src: str, message: object) -> None:
        """Handle ``message`` sent by ``src``."""
        ...


@dataclass
class NetworkStats:
    """Counters of what the network did."""

    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    duplicated: int = 0


# The networks stay Python classes when compiled (mypyc's native_class=False): a run's observers
# wrap an instance's ``send`` (conformance/stray_cleanup.py records the control requests sent),
# which a native class refuses and native calls would bypass.
@mypyc_attr(native_class=False)
class Network:
    """Registration and sending; subclasses decide how delivery happens."""

    #: Whether every pair of nodes talks in order (one connection each), not only the
    #: ``ordered_sources``.
    orders_everything = False

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.endpoints: dict[str, Endpoint] = {}
        self.stats = NetworkStats()
        # Nodes whose messages to any one destination arrive in the order sent (a Kafka
        # client's connection to a broker is one TCP stream), and their messages in flight.
        self.ordered_sources: set[str] = set()
        self._in_order: dict[tuple[str, str], deque[tuple[object, Endpoint | None]]] = {}
        self._last_due_ms: dict[tuple[str, str], int] = {}
        # The delivery tasks' names, made once per kind of message and pair of nodes.
        self._delivery_names: dict[tuple[type, str, str], str] = {}

    def register(self, endpoint: Endpoint) -> None:
        """Attach a node; messages to its id reach it from now on."""
        self.endpoints[endpoint.node_id] = endpoint

    def unregister(self, node_id: str) -> None:
        """Detach a node (it crashed): messages in flight to it are lost."""
        self.endpoints.pop(node_id, None)

    def keep_order_from(self, node_id: str) -> None:
        """From now on, what ``node_id`` sends to any one node arrives in the order sent (it
        may still be lost, duplicated next to itself, or cut off), as over one connection."""
        self.ordered_sources.add(node_id)

    def _schedule_delivery(self, src: str, dst: str, message: object, target: Endpoint | None,
                           delay_ms: int, deliver: Callable[[str, str, object, Endpoint | None],
                                                            None]) -> None:
        """Deliver after ``delay_ms``; for an ordered source never before what it sent earlier
        to ``dst``: each delivery task then hands over the oldest message of the pair, so equal
        due times cannot swap two messages either."""
        names = self._delivery_names
        key = (type(message), src, dst)
        name = names.get(key)
        if name is None:
            name = names[key] = f"deliver {type(message).__name__} {src}->{dst}"
        if src not in self.ordered_sources and not self.orders_everything:
            self.scheduler.schedule(name, partial(deliver, src, dst, message, target), delay_ms)
            return
        pair = (src, dst)
        now = self.scheduler.clock.now_ms()
        due = max(now + delay_ms, self._last_due_ms.get(pair, now))
        self._last_due_ms[pair] = due
        self._in_order.setdefault(pair, deque()).append((message, target))
        self.scheduler.schedule(name, partial(self._next_of_pair, pair, deliver), due - now)

    def _next_of_pair(self, pair: tuple[str, str],
                      deliver: Callable[[str, str, object, Endpoint | None], None]) -> None:
        """Hand over the oldest message ``pair[0]`` sent to ``pair[1]`` (a method, not a
        closure: mypyc cannot compile a closure in a method of a Python class)."""
        queue = self._in_order[pair]
        oldest, oldest_target = queue.popleft()
        if not queue:
            del self._in_order[pair]
        deliver(pair[0], pair[1], oldest, oldest_target)

    def listening(self, node_id: str) -> bool:
        """Whether a node is registered under ``node_id``: a client connecting to a node that is
        not (a crashed process) is refused at once, as by a closed port, rather than left to
        time out. A cut link (``SimNetwork.partition``) still looks open: its messages are lost
        silently, as on a real network."""
        return node_id in self.endpoints

    def send(self, src: str, dst: str, message: object) -> None:
        """Send ``message`` from ``src`` to ``dst``."""
        raise NotImplementedError

    def _deliver(self, src: str, dst: str, message: object, generation: Endpoint | None) -> None:
        endpoint = self.endpoints.get(dst)
        # A message sent to an earlier incarnation of a node is lost with that incarnation.
        if endpoint is None or (generation is not None and endpoint is not generation):
            self.stats.dropped += 1
            return
        self.stats.delivered += 1
        endpoint.receive(src, message)


@mypyc_attr(native_class=False)
class LocalNetwork(Network):
    """In-process delivery, in order between any two nodes, on the next turn of the event
    loop."""

    orders_everything = True

    def send(self, src: str, dst: str, message: object) -> None:
        self.stats.sent += 1
        target = self.endpoints.get(dst)
        self._schedule_delivery(src, dst, message, target, 0, self._deliver)


@mypyc_attr(native_class=False)
class SimNetwork(Network):
    """Seeded delays (so reordering), drops, duplicates and partitions between any two nodes."""

    def __init__(self, scheduler: Scheduler, *, seed: int, min_delay_ms: int = 1,
                 max_delay_ms: int = 10, drop_rate: float = 0.0,
                 duplicate_rate: float = 0.0) -> None:
        super().__init__(scheduler)
        assert 0 <= min_delay_ms <= max_delay_ms
        assert 0.0 <= drop_rate <= 1.0 and 0.0 <= duplicate_rate <= 1.0
        self.rng = random.Random(seed)
        self.min_delay_ms = min_delay_ms
        self.max_delay_ms = max_delay_ms
        self.drop_rate = drop_rate
        self.duplicate_rate = duplicate_rate
        self._cut: set[frozenset[str]] = set()
        # One-shot faults for precise tests: each rule acts on the first message it matches.
        self._drop_once: list[MessageMatch] = []
        self._duplicate_once: list[MessageMatch] = []
        self._intercepts: list[tuple[MessageMatch, Callable[[str, str, object], None]]] = []

    def drop_next(self, match: MessageMatch) -> None:
        """Drop the next message for which ``match(src, dst, message)`` holds, once."""
        self._drop_once.append(match)

    def duplicate_next(self, match: MessageMatch) -> None:
        """Deliver the next message for which ``match(src, dst, message)`` holds twice, once."""
        self._duplicate_once.append(match)

    def intercept(self, match: MessageMatch,
                  handler: Callable[[str, str, object], None]) -> Callable[[], None]:
        """From now on, hand every message for which ``match(src, dst, message)`` holds to
        ``handler`` instead of sending it (a test decides when, whether and how often it
        arrives); returns the function that ends the interception."""
        rule = (match, handler)
        self._intercepts.append(rule)
        return partial(self._end_intercept, rule)

    def _end_intercept(self, rule: tuple[MessageMatch, Callable[[str, str, object], None]]
                       ) -> None:
        """Stop the interception ``rule`` (``intercept``'s answer; a method, not a closure, as
        in ``_next_of_pair``)."""
        if rule in self._intercepts:
            self._intercepts.remove(rule)

    @staticmethod
    def _take_rule(rules: list[MessageMatch], src: str, dst: str, message: object) -> bool:
        for i, match in enumerate(rules):
            if match(src, dst, message):
                del rules[i]
                return True
        return False

    def partition(self, a: str, b: str) -> None:
        """Cut ``a`` and ``b`` apart (both directions)."""
        self._cut.add(frozenset((a, b)))

    def heal(self, a: str | None = None, b: str | None = None) -> None:
        """Reconnect ``a`` and ``b``, or every pair when called without arguments."""
        if a is None or b is None:
            self._cut.clear()
        else:
            self._cut.discard(frozenset((a, b)))

    @property
    def partitioned(self) -> bool:
        """Whether any two nodes are cut apart."""
        return bool(self._cut)

    def connected(self, a: str, b: str) -> bool:
        """Whether messages between ``a`` and ``b`` can get through."""
        return not self._cut or frozenset((a, b)) not in self._cut

    def send(self, src: str, dst: str, message: object) -> None:
        stats = self.stats
        stats.sent += 1
        for match, handler in self._intercepts:
            if match(src, dst, message):
                handler(src, dst, message)
                return
        if self._drop_once and self._take_rule(self._drop_once, src, dst, message):
            stats.dropped += 1
            return
        rng = self.rng
        # not self.connected(src, dst), inlined
        if (self._cut and frozenset((src, dst)) in self._cut) or rng.random() < self.drop_rate:
            stats.dropped += 1
            return
        copies = 1
        if rng.random() < self.duplicate_rate or (
                self._duplicate_once and self._take_rule(self._duplicate_once, src, dst, message)):
            copies = 2
            stats.duplicated += 1
        target = self.endpoints.get(dst)
        # A delay is rng.randint(low, high), which is low + rng._randbelow(high - low + 1)
        # (CPython's randint calls randrange, which calls _randbelow): the same draws, two
        # Python calls fewer per message.
        below: Callable[[int], int] = rng._randbelow  # type: ignore[attr-defined]
        low = self.min_delay_ms
        span = self.max_delay_ms - low + 1
        deliver = self._deliver_if_connected
        self._schedule_delivery(src, dst, message, target, low + below(span), deliver)
        if copies == 2:  # the duplicate: its own delay, drawn after the first one is scheduled
            self._schedule_delivery(src, dst, message, target, low + below(span), deliver)

    def _deliver_if_connected(self, src: str, dst: str, message: object,
                              target: Endpoint | None) -> None:
        # not self.connected(src, dst): cut while in flight
        if self._cut and frozenset((src, dst)) in self._cut:
            self.stats.dropped += 1
            return
        # _deliver(), inlined
        endpoint = self.endpoints.get(dst)
        if endpoint is None or (target is not None and endpoint is not target):
            self.stats.dropped += 1
            return
        self.stats.delivered += 1
        endpoint.receive(src, message)
