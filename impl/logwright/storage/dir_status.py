"""Whether one log dir still serves; a log that meets an I/O error takes its whole dir offline.

Invariant upheld here (hazards 5 and 11): a dir that fails goes offline alone and at once: every log
of it is marked offline and its files released in the same call that met the error, so no other
log of the dir serves from a failing disk afterwards, and no other dir is touched. Once offline a
dir stays offline until the process restarts.

The log manager owns one per dir and hands it down to every log of the dir, as Kafka hands its
LogDirFailureChannel down to its logs: a log reports a failure to it, it never calls up into the
manager. It knows the dir's live logs through a mapping the manager keeps (read, never copied).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from logwright.storage.naming import TopicPartition


class DirLog(Protocol):
    """What a dir's status needs of each of its logs."""

    offline: bool

    def close(self) -> None:
        """Release every file handle."""
        ...


class LogDirStatus:
    """Online or offline (and why) for the dir ``path`` holding the logs in ``logs``."""

    def __init__(self, path: str, logs: Mapping[TopicPartition, DirLog]) -> None:
        self.path = path
        self._logs = logs
        self.offline_reason: str | None = None

    def __repr__(self) -> str:
        state = "online" if self.online else f"offline: {self.offline_reason}"
        return f"LogDirStatus({self.path!r}, {state})"

    @property
    def online(self) -> bool:
        """Whether the dir still serves."""
        return self.offline_reason is None

    def take_offline(self, reason: str) -> bool:
        """Take the dir offline for ``reason``: each of its logs goes offline and releases its
        files. False (and nothing changes) if it already was offline."""
        if not self.online:
            return False
        self.offline_reason = reason
        for log in self._logs.values():
            log.offline = True
            try:
                log.close()
            except OSError:
                pass  # the dir is already failing; its handles go with it
        return True
