"""Layer 3: every log dir of one broker: loading, offline dirs, delayed deletion, tasks."""

from logwright.logmanager.manager import LogDirState, LogManager, LogManagerConfig, StartupReport

__all__ = ["LogDirState", "LogManager", "LogManagerConfig", "StartupReport"]
