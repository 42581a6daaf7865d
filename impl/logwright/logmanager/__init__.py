"""Layer 3: every log dir of one broker: loading, offline dirs, delayed deletion, tasks."""

from logwright.logmanager.manager import (
    DataDirIdentity,
    DoubtedCopy,
    LogDirState,
    LogManager,
    LogManagerConfig,
    StartupReport,
)
from logwright.logmanager.strays import StrayLog

__all__ = ["DataDirIdentity", "DoubtedCopy", "LogDirState", "LogManager", "LogManagerConfig",
           "StartupReport", "StrayLog"]
