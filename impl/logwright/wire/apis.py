"""The table of served APIs: API key -> handler. ApiVersions advertises exactly these."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from logwright.wire.admin import ADMIN_HANDLERS
from logwright.wire.auth import AUTH_HANDLERS
from logwright.wire.codec import SUPPORTED
from logwright.wire.handlers import DATA_HANDLERS

if TYPE_CHECKING:
    from logwright.wire.exchange import Exchange

__all__ = ["HANDLERS", "handle"]

HANDLERS: dict[int, Callable[[Exchange], None]] = {**DATA_HANDLERS, **ADMIN_HANDLERS,
                                                    **AUTH_HANDLERS}
assert set(HANDLERS) == set(SUPPORTED), "every advertised API has a handler, and no other"


def handle(ex: Exchange) -> None:
    """Serve ``ex``'s request: it is answered now, or when its broker or a wait answers."""
    HANDLERS[ex.request.api_key](ex)
