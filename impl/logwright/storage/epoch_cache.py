"""The leader epoch cache of one partition: for each leader epoch, the offset where it began.

It belongs to its ``PartitionLog`` (``storage/log.py``), as Kafka's cache belongs to its
UnifiedLog: the log loads it (``storage/loader.py``), and the log alone changes it, so that it
always describes the log's own offsets. Nobody else writes ``leader-epoch-checkpoint``.

Invariants upheld here:
- Entries are ordered: epochs strictly increasing, start offsets non-decreasing; every change is
  written through ``LeaderEpochCheckpointFile`` (tmp + fsync + rename + dir fsync) before the
  method returns, so after a crash the file holds exactly what was last acknowledged.
- ``truncate_from_end`` drops epochs that began at or after a truncation point,
  ``truncate_from_start`` forgets what lies below a raised log start offset (keeping the epoch
  that covers it); the owning log calls them on every truncation and start offset raise.
- ``end_offset_for`` answers OffsetForLeaderEpoch (KIP-101, KIP-279): for a requested epoch, the
  largest epoch at or below it and the offset where the next higher epoch began (or the log end
  offset for the latest epoch), which is what lets a follower truncate exactly its divergent
  suffix instead of trusting its high watermark.

A change that cannot be written raises ``OSError``: the owning log turns it into a
``KafkaStorageError`` and takes its dir offline, as for any other I/O error on its files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from logwright.storage.metadata_files import LeaderEpochCheckpointFile
from logwright.world.fs import FileSystem

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """The leader of ``epoch`` wrote its first record at ``start_offset``."""

    epoch: int
    start_offset: int


def epoch_at(pairs: Iterable[tuple[int, int]], offset: int) -> int | None:
    """The leader epoch a record at ``offset`` was written in, by a cache's (epoch, start
    offset) pairs in order (:attr:`LeaderEpochCache.pairs`): the epoch of the last entry that
    starts at or below it; None when every entry starts above it (or there is none)."""
    found = None
    for epoch, start in pairs:
        if start > offset:
            break
        found = epoch
    return found


class LeaderEpochCache:
    """The ``leader-epoch-checkpoint`` of one partition dir, in memory and on disk."""

    def __init__(self, fs: FileSystem, dir_path: str, entries: Iterable[EpochEntry] = ()) -> None:
        self._fs = fs
        self._dir_path = dir_path
        self._file: LeaderEpochCheckpointFile | None = None
        self._entries = list(entries)
        #: The newest epoch known, or None when the cache is empty (a plain attribute, set with
        #: every change of the entries: the leader reads it on every append).
        self.latest_epoch: int | None = None
        if self._entries:  # (_check of no entries would leave latest_epoch None, as here)
            self._check()

    @property
    def file(self) -> LeaderEpochCheckpointFile:
        """The ``leader-epoch-checkpoint`` file (made on first use: most caches loaded at
        start-up are empty and never written)."""
        if self._file is None:
            self._file = LeaderEpochCheckpointFile(self._fs, self._dir_path)
        return self._file

    @classmethod
    def read(cls, fs: FileSystem, dir_path: str, *, exists: bool | None = None
             ) -> LeaderEpochCache:
        """The cache as its file holds it (empty when there is no file; ``exists``: whether it
        is there, when the caller just listed the dir).

        A malformed file raises ``CheckpointError`` (hazard 11); an I/O error ``OSError``.
        """
        cache = cls(fs, dir_path)
        if exists is False:
            return cache  # (a partition that never had a leader epoch: most at start-up)
        cache._entries = [EpochEntry(e, o) for e, o in cache.file.read(exists=exists)]
        cache._check()
        return cache

    # ---- queries -------------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """Every entry, oldest epoch first."""
        return tuple(self._entries)

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """Every entry as (epoch, start offset), oldest first: what a broker tells the
        controller of its log (a report to a recovery election, a leader's lineage)."""
        return tuple((e.epoch, e.start_offset) for e in self._entries)

    def earliest_entry(self) -> EpochEntry | None:
        """The oldest entry, or None."""
        return self._entries[0] if self._entries else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` for OffsetForLeaderEpoch.

        ``epoch`` is the largest known epoch <= ``requested_epoch`` and ``end_offset`` the start
        offset of the next higher epoch, or ``log_end_offset`` if ``epoch`` is the latest. When
        ``requested_epoch`` is below every known epoch the answer is ``(requested_epoch, start
        offset of the first epoch)``: the caller has nothing in common with this log from there
        on. Unknown (``requested_epoch`` above every known epoch, or undefined):
        ``(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)``.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for entry in self._entries:
            if entry.epoch > requested_epoch:
                break
            floor = entry
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    # ---- changes (each durable before it returns; OSError if it cannot be) --------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` began at ``start_offset``; True if the cache changed.

        A repeat of the latest epoch at or after its start changes nothing. An entry that would
        break the order replaces every entry it conflicts with (an epoch at or above ``epoch``,
        or a start offset at or above ``start_offset``), as Kafka's cache does.
        """
        assert epoch >= 0 and start_offset >= 0, f"bad epoch entry ({epoch}, {start_offset})"
        latest = self._entries[-1] if self._entries else None
        if latest is not None and latest.epoch == epoch and start_offset >= latest.start_offset:
            return False
        if latest is not None and latest.epoch > epoch and latest.start_offset <= start_offset:
            # An older epoch's batch after a newer epoch began: impossible in a valid log. Keep
            # the newer knowledge rather than rewrite history backwards.
            return False
        self._entries = [e for e in self._entries
                         if e.epoch < epoch and e.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()
        return True

    def rebuild(self, batch_epochs: Iterable[tuple[int, int]]) -> bool:
        """Refill an empty cache from ``(partition leader epoch, first offset)`` of each batch,
        in offset order (the file was lost but the log holds records). True if it changed."""
        assert not self._entries, "only an empty cache is rebuilt"
        rebuilt: list[EpochEntry] = []
        for epoch, start_offset in batch_epochs:
            if epoch >= 0 and (not rebuilt or epoch > rebuilt[-1].epoch):
                rebuilt.append(EpochEntry(epoch, start_offset))
        if not rebuilt:
            return False
        self._entries = rebuilt
        self._flush()
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget every epoch that began at or after ``end_offset`` (the log was cut there)."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if len(kept) == len(self._entries):
            return False
        self._entries = kept
        self._flush()
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget what lies below ``start_offset``; the epoch covering it now starts there."""
        below = [e for e in self._entries if e.start_offset < start_offset]
        if not below:
            return False
        covering = below[-1]
        rest = [e for e in self._entries if e.start_offset >= start_offset]
        if rest and rest[0].start_offset == start_offset:
            self._entries = rest  # the next epoch begins exactly at the new start
        else:
            self._entries = [EpochEntry(covering.epoch, start_offset), *rest]
        self._flush()
        return True

    def clear(self) -> None:
        """Forget every epoch (a follower restarting its log empty at the leader's start)."""
        if self._entries:
            self._entries = []
            self._flush()

    # ---- persistence ---------------------------------------------------------------------------

    def _check(self) -> None:
        # Every change of the entries ends here (through _flush, or after a read).
        self.latest_epoch = self._entries[-1].epoch if self._entries else None
        if len(self._entries) < 2:
            return  # (most caches at start-up: nothing to compare)
        for previous, entry in zip(self._entries, self._entries[1:], strict=False):
            assert entry.epoch > previous.epoch, f"{self.file}: epochs not increasing"
            assert entry.start_offset >= previous.start_offset, f"{self.file}: offsets decrease"

    def _flush(self) -> None:
        self._check()
        self.file.write([(e.epoch, e.start_offset) for e in self._entries])
