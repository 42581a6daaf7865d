"""The messages nodes exchange: control requests, replication, client requests, registration.

Plain frozen dataclasses with Kafka's field names (snake_case), so a request can be logged,
traced, duplicated and reordered by the simulated network without aliasing. Every request has a
response type; ``correlation_id`` pairs them. Error fields carry Kafka error codes
(``logwright.errors.Errors``).
"""

from logwright.protocol.messages import *  # noqa: F403
from logwright.protocol.messages import __all__  # noqa: F401
