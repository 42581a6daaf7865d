"""Kafka's wire protocol in front of the embedded cluster (docs/wire.md): ``logwright serve``."""

from logwright.wire.server import Listener, WireServer, serving

__all__ = ["Listener", "WireServer", "serving"]
