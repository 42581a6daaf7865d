"""logwright: a verified reference implementation of the Kafka broker's log lifecycle.

The package is layered bottom up (see docs/architecture.md): ``world`` (injected clock, scheduler
and file system), ``records`` (the v2 RecordBatch codec), ``storage`` (segments, partition logs,
checkpoints), ``logmanager`` (all log dirs of one broker), and beside them ``model`` (the
executable reference model and its checker) and ``verify`` (``make verify``).
"""

import logging

from logwright.errors import KafkaError, LogwrightError

# A library logs, it does not print: nothing shows unless the application configures logging.
logging.getLogger("logwright").addHandler(logging.NullHandler())


def __getattr__(name: str) -> object:
    """``logwright.Cluster`` without importing the cluster layers for every ``import logwright``."""
    if name == "Cluster":
        from logwright.cluster import Cluster

        return Cluster
    raise AttributeError(name)

__version__ = "0.1.0"

__all__ = ["Cluster", "KafkaError", "LogwrightError", "__version__"]
