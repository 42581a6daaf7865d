"""What a handler sees of the request it serves: the ``Exchange`` protocol.

Invariant upheld: handlers depend on this protocol only, never on the server module, so the
server imports the handler table and nothing in ``wire/`` imports back (no circle, not even a
type-only one). ``server._Exchange`` implements it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from logwright.broker.authorizer import Operation
from logwright.protocol.messages import Message
from logwright.wire.codec import DecodedRequest
from logwright.wire.security import Protocol as SecurityProtocol
from logwright.wire.security import SaslExchange

if TYPE_CHECKING:
    from logwright.cluster import Cluster

__all__ = ["Exchange"]


class Exchange(Protocol):
    """One request being served."""

    request: DecodedRequest

    @property
    def cluster(self) -> Cluster:
        """The cluster served."""

    @property
    def broker_id(self) -> int:
        """The broker whose port the request came in on."""

    @property
    def principal(self) -> str:
        """Who sent the request (``User:ANONYMOUS`` unless authenticated)."""

    @property
    def authenticated_as(self) -> str | None:
        """The connection's principal; None on a SASL listener before authentication."""

    @property
    def protocol(self) -> SecurityProtocol:
        """The security protocol of the listener the request came in on."""

    @property
    def sasl(self) -> SaslExchange | None:
        """The connection's SASL exchange (SASL listeners only)."""

    def respond(self, body: Any | None, close_after: bool = False) -> None:
        """Answer the request, once (None: no answer, as for acks=0)."""

    def call(self, message_of: Callable[[int], Message],
             on_answer: Callable[[Message | None], None], timeout_ms: int) -> None:
        """Send the broker ``message_of(correlation_id)``; its answer goes to ``on_answer``."""

    def send(self, message_of: Callable[[int], Message]) -> None:
        """Send the broker ``message_of(correlation_id)``, expecting no answer."""

    def wait_for(self, done: Callable[[], bool], timeout_ms: int,
                 then: Callable[[bool], None]) -> None:
        """``then(True)`` once ``done()`` holds, ``then(False)`` after ``timeout_ms``."""

    def address_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where ``broker_id`` listens for this request's protocol."""

    def refuse(self, why: str) -> None:
        """Record why this connection is about to be refused (no secret in ``why``)."""

    def authenticated(self, principal: str) -> None:
        """The connection's SASL exchange succeeded as ``principal``."""

    def tokens_follow_unframed(self) -> None:
        """SaslHandshake v0 succeeded: the next frames are bare SASL tokens."""

    def allowed_topic(self, operation: Operation, topic: str) -> bool:
        """Whether the sender may do ``operation`` on ``topic``."""

    def allowed_cluster(self, operation: Operation) -> bool:
        """Whether the sender may do ``operation`` on the cluster."""
