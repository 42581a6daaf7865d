"""A client node: sends requests to brokers and collects the responses by correlation id."""

from __future__ import annotations

import itertools

from logwright.protocol import Message
from logwright.world.network import Network


class ClientNode:
    """What a Kafka client is to the cluster: a node that sends requests and awaits answers."""

    def __init__(self, node_id: str, network: Network) -> None:
        self.node_id = node_id
        self.network = network
        self._ids = itertools.count(1)
        self.responses: dict[int, Message] = {}
        network.register(self)

    def next_correlation_id(self) -> int:
        """A fresh correlation id."""
        return next(self._ids)

    def send(self, dst: str, request: Message) -> None:
        """Send ``request`` to ``dst``; its response lands in ``responses``."""
        self.network.send(self.node_id, dst, request)

    def receive(self, src: str, message: object) -> None:
        """Keep the first answer to each request (the network may duplicate)."""
        if isinstance(message, Message):
            self.responses.setdefault(message.correlation_id, message)

    def take(self, correlation_id: int) -> Message | None:
        """The response to ``correlation_id`` if it arrived."""
        return self.responses.pop(correlation_id, None)
