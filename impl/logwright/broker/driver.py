"""The broker's driver: the one place where the broker's decisions touch the world.

A decision (a message handled, a timer fired, an answer to one of the broker's requests) runs
inside ``decide``: whatever the broker's parts emit meanwhile is collected, in order, and
returned, not performed. ``perform`` then sends over the injected network (responses), through
the request channel (requests that await an answer, heartbeats) and arms timers on the injected
scheduler. A timer's action and a request's answer come back through the driver as decisions of
their own.

Invariants upheld: nothing is sent or armed for a broker that is not alive (crashed, halted,
shut down, or replaced under its node id), and stopping the driver cancels every timer it armed, so
no task of a dead process runs again. Effects are performed in the order they were emitted.

An effect emitted outside any decision (a replica fetcher's run sending its request, or noticing
an offline dir and so answering the operations waiting on it) is performed at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TypeVar

from logwright.broker.effects import ArmTask, Call, CancelTask, Effect, Notify, Send
from logwright.protocol import Message
from logwright.protocol.channel import RequestChannel
from logwright.world.network import Network
from logwright.world.scheduler import Scheduler, Task

_A = TypeVar("_A")
_B = TypeVar("_B")


def _answer(on_response: Callable[[Message | None], None], message: Message | None) -> None:
    """A request's continuation given its answer (``run_message``'s decision for it)."""
    on_response(message)


class BrokerDriver:
    """Performs one broker's effects over the injected network, scheduler and request channel."""

    def __init__(self, node_id: str, network: Network, scheduler: Scheduler,
                 channel: RequestChannel, alive: Callable[[], bool]) -> None:
        """``alive`` says whether the broker may still act; effects of a dead one are dropped."""
        self.node_id = node_id
        self.network = network
        self.scheduler = scheduler
        self.channel = channel
        self.alive = alive
        self._collected: list[Effect] | None = None
        self._tasks: list[Task] = []
        self._prune_at = 16  # _tasks is pruned once it is this long (then twice what is left)
        self._by_key: dict[str, Task] = {}  # the task last armed under each key
        self.performed = 0

    # ---- decisions -------------------------------------------------------------------------

    def emit(self, effect: Effect) -> None:
        """Hand over an effect: collected while a decision runs, else performed at once."""
        if self._collected is not None:
            self._collected.append(effect)
        else:
            self.perform((effect,))

    def decide(self, decision: Callable[[], None]) -> list[Effect]:
        """Run ``decision`` and return what it emitted, performing nothing. Inside another
        decision it is part of that one: its effects join the outer decision's."""
        if self._collected is not None:
            decision()
            return []
        self._collected = []
        try:
            decision()
        finally:
            effects, self._collected = self._collected, None
        return effects

    def run(self, decision: Callable[[], None]) -> None:
        """Run ``decision`` and perform its effects."""
        self.perform(self.decide(decision))

    def run_message(self, decision: Callable[[_A, _B], None], src: _A, message: _B) -> None:
        """``run(lambda: decision(src, message))`` without the lambda (one per message)."""
        if self._collected is not None:  # inside another decision: part of that one
            decision(src, message)
            return
        self._collected = []
        try:
            decision(src, message)
        finally:
            effects, self._collected = self._collected, None
        if effects:
            self.perform(effects)

    # ---- performing ------------------------------------------------------------------------

    def perform(self, effects: Iterable[Effect]) -> None:
        """Perform ``effects`` in order over the world. Once the broker is not alive only
        cancellations are performed: a dead broker sends nothing and arms nothing."""
        for effect in effects:
            if isinstance(effect, CancelTask):
                self._cancel(effect.key)
                continue
            if not self.alive():
                continue
            self.performed += 1
            if isinstance(effect, Send):
                self.network.send(self.node_id, effect.dst, effect.message)
            elif isinstance(effect, Call):
                self._request(effect)
            elif isinstance(effect, Notify):
                self.channel.send_oneway(effect.dst, effect.build)
            else:
                self._arm(effect)

    def _request(self, request: Call) -> None:
        # The answer (or None) is a decision of its own: run(lambda: on_response(message)).
        self.channel.send(request.dst, request.build,
                          partial(self.run_message, _answer, request.on_response),
                          request.timeout_ms)

    def _arm(self, timer: ArmTask) -> None:
        def fire() -> None:
            if timer.period_ms is None and self._by_key.get(timer.key) is task:
                del self._by_key[timer.key]
            if self.alive():
                self.run(timer.action)
        task = self.scheduler.schedule(f"{self.node_id} {timer.key}", fire, timer.delay_ms,
                                       timer.period_ms)
        self._by_key[timer.key] = task
        # Forget tasks that are done (one-shot and run) or cancelled, once the list has doubled
        # since it was last pruned: the list stays bounded, at a constant cost per timer.
        tasks = self._tasks
        if len(tasks) >= self._prune_at:
            tasks = self._tasks = [t for t in tasks
                                   if not t.cancelled and (t.period_ms or t.runs == 0)]
            self._prune_at = max(16, 2 * len(tasks))
        tasks.append(task)

    def _cancel(self, key: str) -> None:
        task = self._by_key.pop(key, None)
        if task is not None:
            task.cancel()

    @property
    def armed(self) -> list[Task]:
        """Timers armed and not yet done (for tests and the facade)."""
        return [t for t in self._tasks if not t.cancelled and (t.period_ms or t.runs == 0)]

    def stop(self) -> None:
        """Cancel every timer this driver armed (the broker stopped or died)."""
        for task in self._tasks:
            if not task.cancelled and (task.period_ms or task.runs == 0):  # not done already
                task.cancel()
        self._tasks = []
        self._by_key.clear()


__all__ = ["BrokerDriver"]
