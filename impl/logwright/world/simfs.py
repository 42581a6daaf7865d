"""A simulated file system that keeps durable and volatile state apart.

What a real disk promises after power loss is what this file system keeps after ``crash()``:
file data that was fsynced, and directory entries (creations, renames, deletions) whose directory
was fsynced. Everything else is dropped. ``crash(rng)`` may also keep a random prefix of each
file's unsynced tail, as a page-cache writeback in progress would (a torn write).

Faults are injected per path prefix (a log dir): ``EIO`` fails every call under it, ``ENOSPC``
fails writes. ``crash_after(k)`` raises ``SimulatedCrash`` right after the k-th mutating
operation, so a test can crash at every step of any procedure.

Time for ``mtime_ms`` comes from an injected clock.
"""

from __future__ import annotations

import enum
import errno
import posixpath
import random
from bisect import bisect_right
from collections.abc import Callable, Iterator

from logwright.world.clock import Clock, VirtualClock
from logwright.world.fs import FileHandle, FileLock, FileSystem


class SimulatedCrash(BaseException):
    """The simulated machine lost power. A BaseException so no ``except Exception`` swallows it.

    ``fs`` is the file system whose ``crash_after`` fired (None when raised by hand)."""

    def __init__(self, message: str, fs: SimFileSystem | None = None) -> None:
        super().__init__(message)
        self.fs = fs


class Fault(enum.Enum):
    """Faults injectable under a path prefix."""

    EIO = "EIO"
    ENOSPC = "ENOSPC"
    LOST_FSYNC = "LOST_FSYNC"
    """A file's fsync returns without making its data durable (a disk that acknowledges a flush
    it did not do): a power loss then takes what the file's owner believed synced. Directories
    are synced as usual; nothing fails."""


class _File:
    """A file's contents: a flat bytearray, then the chunks appended since it was last made
    whole, kept as the immutable byte strings they were (an append copies nothing more, and a
    read of what one append wrote returns that same string). ``data`` joins them first, for
    everything that changes bytes in place or looks at the whole file."""

    __slots__ = ("_flat", "_tail", "_tail_bytes", "_tail_starts", "durable", "mtime_ms")

    def __init__(self, mtime_ms: int) -> None:
        self._flat = bytearray()
        self._tail: list[bytes] = []
        self._tail_starts: list[int] = []  # the file position of each chunk of the tail
        self._tail_bytes = 0
        self.durable = b""
        self.mtime_ms = mtime_ms

    @property
    def data(self) -> bytearray:
        """The whole contents as one bytearray (the appended chunks joined onto it first)."""
        if self._tail:
            self._flat += b"".join(self._tail)
            self._tail.clear()
            self._tail_starts.clear()
            self._tail_bytes = 0
        return self._flat

    @data.setter
    def data(self, value: bytearray) -> None:
        self._flat = value
        self._tail.clear()
        self._tail_starts.clear()
        self._tail_bytes = 0

    @property
    def size(self) -> int:
        """The length of the contents."""
        return len(self._flat) + self._tail_bytes

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Append ``data`` (a copy of it unless it is an immutable ``bytes``); returns the
        position it starts at."""
        position = len(self._flat) + self._tail_bytes
        chunk = data if type(data) is bytes else bytes(data)
        if chunk:
            self._tail.append(chunk)
            self._tail_starts.append(position)
            self._tail_bytes += len(chunk)
        return position

    def read(self, position: int, size: int) -> bytes:
        """The bytes at ``position``, at most ``size`` (>= 0) of them, as a slice of the whole
        contents would be."""
        tail = self._tail
        if not tail or position < len(self._flat):
            # One copy (a bytearray slice, then bytes of it, would be two); the view is let go
            # of at once, so the file can grow again.
            return memoryview(self.data)[position : position + size].tobytes()
        starts = self._tail_starts
        i = bisect_right(starts, position) - 1
        chunk = tail[i]
        offset = position - starts[i]
        if offset + size <= len(chunk) or i == len(tail) - 1:
            # Within one chunk (or the last one): the chunk itself when it is all of it.
            return chunk if offset == 0 and size >= len(chunk) else chunk[offset : offset + size]
        pieces = [chunk[offset:]]
        remaining = size - len(pieces[0])
        for chunk in tail[i + 1 :]:
            if remaining <= 0:
                break
            pieces.append(chunk if len(chunk) <= remaining else chunk[:remaining])
            remaining -= len(chunk)
        return b"".join(pieces)


class _Dir:
    __slots__ = ("durable", "entries", "mtime_ms")

    def __init__(self, mtime_ms: int) -> None:
        self.entries: dict[str, _File | _Dir] = {}
        self.durable: dict[str, _File | _Dir] = {}
        self.mtime_ms = mtime_ms


def _split(path: str) -> list[str]:
    norm = posixpath.normpath(path)
    return [p for p in norm.split("/") if p and p != "."]


class SimFileHandle(FileHandle):
    """A handle on a simulated file; invalid after a crash (the process that held it is gone)."""

    def __init__(self, fs: SimFileSystem, path: str, node: _File) -> None:
        self.path = path
        self._fs = fs
        self._node = node
        self._generation = fs.generation
        self._closed = False

    def _check(self, write: bool) -> None:
        if self._closed:
            raise ValueError(f"I/O on closed file {self.path}")
        if self._generation != self._fs.generation:
            raise ValueError(f"handle on {self.path} survived a crash")
        self._fs._fault_check(self.path, write)

    def append(self, data: bytes | bytearray | memoryview) -> int:
        self._check(True)
        position = self._node.append(data)
        self._node.mtime_ms = self._fs.clock.now_ms()
        self._fs._tick()
        return position

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        self._check(True)
        node = self._node
        if position > len(node.data):
            node.data += bytes(position - len(node.data))
        node.data[position : position + len(data)] = data
        node.mtime_ms = self._fs.clock.now_ms()
        self._fs._tick()

    def read(self, position: int, size: int) -> bytes:
        self._check(False)
        return self._node.read(position, max(0, size))

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        """As ``read`` (the same checks and faults, no operation counted), into ``buffer``."""
        self._check(False)
        data = self._node.read(position, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def size(self) -> int:
        self._check(False)
        return self._node.size

    def truncate(self, size: int) -> None:
        self._check(True)
        node = self._node
        if size < len(node.data):
            del node.data[size:]
        else:
            node.data += bytes(size - len(node.data))
        node.mtime_ms = self._fs.clock.now_ms()
        self._fs._tick()

    def fsync(self) -> None:
        self._check(False)
        if not self._fs.loses_fsync(self.path):
            self._node.durable = bytes(self._node.data)
        self._fs._tick()

    def close(self) -> None:
        self._closed = True


class SimFileSystem(FileSystem):
    """An in-memory file system with power-loss semantics, crash points and injected faults."""

    def __init__(self, clock: Clock | None = None, capacity_bytes: int = 1 << 40) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self.capacity_bytes = capacity_bytes
        self._root = _Dir(self.clock.now_ms())
        self.generation = 0
        self.ops = 0
        self._crash_at: int | None = None
        self._faults: dict[str, Fault] = {}
        self._locks: dict[str, FileLock] = {}  # normalised path -> the holder
        #: Called after every mutating operation (before a crash it may trigger): for checkers
        #: that look at the state after each operation. It must only read.
        self.after_op: Callable[[], None] | None = None

    # ---- crash and faults -------------------------------------------------------------------

    def crash_after(self, k: int | None) -> None:
        """Raise ``SimulatedCrash`` right after the ``k``-th mutating operation from now."""
        self._crash_at = None if k is None else self.ops + k

    def crash(self, rng: random.Random | None = None) -> None:
        """Lose power: keep only durable state (and, with ``rng``, random torn tails)."""
        self._crash_at = None
        self.generation += 1
        self._release_locks()
        for node in self._walk_all(self._root):
            if isinstance(node, _Dir):
                node.entries = dict(node.durable)
            else:
                kept = node.durable
                if rng is not None and len(node.data) > len(kept) and node.data.startswith(kept):
                    extra = rng.randint(0, len(node.data) - len(kept))
                    kept = bytes(node.data[: len(kept) + extra])
                node.data = bytearray(kept)
                node.durable = kept

    def kill_process(self) -> None:
        """The process dies but the machine does not: open handles go, the page cache stays."""
        self._crash_at = None
        self.generation += 1
        self._release_locks()

    def _release_locks(self) -> None:
        # A dead process holds no locks (flock locks go with its descriptors).
        for lock in self._locks.values():
            lock.held = False
        self._locks.clear()

    @property
    def held_locks(self) -> list[str]:
        """The paths locked now, sorted (for tests)."""
        return sorted(self._locks)

    def _walk_all(self, d: _Dir) -> Iterator[_File | _Dir]:
        seen: set[int] = set()
        stack: list[_File | _Dir] = [d]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            if isinstance(node, _Dir):
                stack.extend(node.entries.values())
                stack.extend(node.durable.values())

    def inject_fault(self, prefix: str, fault: Fault) -> None:
        """Fail calls on paths under ``prefix``: EIO fails all of them, ENOSPC fails writes;
        LOST_FSYNC fails none but leaves a file's fsync without effect."""
        self._faults[posixpath.normpath(prefix)] = fault

    def clear_fault(self, prefix: str) -> None:
        """Stop failing calls under ``prefix``."""
        self._faults.pop(posixpath.normpath(prefix), None)

    def _fault_check(self, path: str, write: bool) -> None:
        if not self._faults:
            return
        norm = posixpath.normpath(path)
        for prefix, fault in self._faults.items():
            if norm == prefix or norm.startswith(prefix + "/"):
                if fault is Fault.EIO:
                    raise OSError(errno.EIO, "Input/output error (injected)", path)
                if write and fault is Fault.ENOSPC:
                    raise OSError(errno.ENOSPC, "No space left on device (injected)", path)

    def loses_fsync(self, path: str) -> bool:
        """Whether a LOST_FSYNC fault covers ``path``."""
        if not self._faults:
            return False
        norm = posixpath.normpath(path)
        return any(fault is Fault.LOST_FSYNC and (norm == prefix or norm.startswith(prefix + "/"))
                   for prefix, fault in self._faults.items())

    def _tick(self) -> None:
        self.ops += 1
        if self.after_op is not None:
            self.after_op()
        if self._crash_at is not None and self.ops >= self._crash_at:
            self._crash_at = None
            raise SimulatedCrash(f"crash after operation {self.ops}", self)

    # ---- lookup -----------------------------------------------------------------------------

    def _lookup(self, path: str) -> _File | _Dir | None:
        node: _File | _Dir = self._root
        for part in _split(path):
            if not isinstance(node, _Dir):
                return None
            nxt = node.entries.get(part)
            if nxt is None:
                return None
            node = nxt
        return node

    def _parent(self, path: str) -> tuple[_Dir, str]:
        parts = _split(path)
        if not parts:
            raise OSError(errno.EINVAL, "Invalid argument", path)
        parent = self._lookup("/" + "/".join(parts[:-1]))
        if parent is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        if not isinstance(parent, _Dir):
            raise OSError(errno.ENOTDIR, "Not a directory", path)
        if len(parts[-1]) > 255:
            raise OSError(errno.ENAMETOOLONG, "File name too long", path)
        return parent, parts[-1]

    # ---- FileSystem -------------------------------------------------------------------------

    def lock(self, path: str) -> FileLock:
        """A held-locks set: a second ``lock`` of a held path fails with EWOULDBLOCK until
        ``unlock``, ``crash`` or ``kill_process``. The lock file is created like any file."""
        norm = posixpath.normpath(path)
        if norm in self._locks:
            raise OSError(errno.EWOULDBLOCK, "Resource temporarily unavailable (locked)", path)
        self.open(path, create=True).close()
        lock = FileLock(norm)
        self._locks[norm] = lock
        return lock

    def unlock(self, lock: FileLock) -> None:
        if lock.held and self._locks.get(lock.path) is lock:
            del self._locks[lock.path]
        lock.held = False

    def open(self, path: str, create: bool = False) -> FileHandle:
        self._fault_check(path, create)
        node = self._lookup(path)
        if node is None:
            if not create:
                raise OSError(errno.ENOENT, "No such file or directory", path)
            parent, name = self._parent(path)
            node = _File(self.clock.now_ms())
            parent.entries[name] = node
            self._tick()
        if isinstance(node, _Dir):
            raise OSError(errno.EISDIR, "Is a directory", path)
        return SimFileHandle(self, path, node)

    def exists(self, path: str) -> bool:
        self._fault_check(path, False)
        return self._lookup(path) is not None

    def is_dir(self, path: str) -> bool:
        self._fault_check(path, False)
        return isinstance(self._lookup(path), _Dir)

    def listdir(self, path: str) -> list[str]:
        self._fault_check(path, False)
        node = self._lookup(path)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        if not isinstance(node, _Dir):
            raise OSError(errno.ENOTDIR, "Not a directory", path)
        return sorted(node.entries)

    def durable_listdir(self, path: str) -> list[str]:
        """The names in dir ``path`` that a crash now would keep (as of its last fsync_dir);
        for checkers that compare what survives with what runs. Not a file system operation
        (no op is counted, no fault applies)."""
        node = self._lookup(path)
        if not isinstance(node, _Dir):
            raise OSError(errno.ENOTDIR, "Not a directory", path)
        return sorted(node.durable)

    def durable_bytes(self, path: str) -> bytes:
        """The contents of file ``path`` that a crash now would keep (as of its last fsync);
        read-only, for checkers, like :meth:`durable_listdir`."""
        node = self._lookup(path)
        if not isinstance(node, _File):
            raise OSError(errno.ENOENT, "No such file", path)
        return bytes(node.durable)

    def mkdir(self, path: str) -> None:
        self._fault_check(path, True)
        parent, name = self._parent(path)
        if name in parent.entries:
            raise OSError(errno.EEXIST, "File exists", path)
        parent.entries[name] = _Dir(self.clock.now_ms())
        self._tick()

    def rename(self, src: str, dst: str) -> None:
        self._fault_check(src, True)
        self._fault_check(dst, True)
        sparent, sname = self._parent(src)
        node = sparent.entries.get(sname)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", src)
        dparent, dname = self._parent(dst)
        existing = dparent.entries.get(dname)
        if existing is not None and existing is not node:
            if isinstance(node, _Dir) != isinstance(existing, _Dir):
                raise OSError(errno.EISDIR if isinstance(existing, _Dir) else errno.ENOTDIR,
                              "Cannot replace across file and directory", dst)
            if isinstance(existing, _Dir) and existing.entries:
                raise OSError(errno.ENOTEMPTY, "Directory not empty", dst)
        del sparent.entries[sname]
        dparent.entries[dname] = node
        self._tick()

    def remove(self, path: str) -> None:
        self._fault_check(path, True)
        parent, name = self._parent(path)
        node = parent.entries.get(name)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        if isinstance(node, _Dir):
            raise OSError(errno.EISDIR, "Is a directory", path)
        del parent.entries[name]
        self._tick()

    def rmtree(self, path: str) -> None:
        self._fault_check(path, True)
        parent, name = self._parent(path)
        node = parent.entries.get(name)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        if not isinstance(node, _Dir):
            raise OSError(errno.ENOTDIR, "Not a directory", path)
        # Like shutil.rmtree: children go first, each a separate (crashable) step.
        for child in sorted(node.entries):
            child_path = posixpath.join(path, child)
            if isinstance(node.entries[child], _Dir):
                self.rmtree(child_path)
            else:
                self.remove(child_path)
        node.durable = {}  # an rmdir'd directory's own entries are gone once it is unlinked
        del parent.entries[name]
        self._tick()

    def fsync_dir(self, path: str) -> None:
        self._fault_check(path, False)
        node = self._lookup(path)
        if not isinstance(node, _Dir):
            raise OSError(errno.ENOTDIR, "Not a directory", path)
        node.durable = dict(node.entries)
        self._tick()

    def file_size(self, path: str) -> int:
        self._fault_check(path, False)
        node = self._lookup(path)
        if not isinstance(node, _File):
            raise OSError(errno.ENOENT, "No such file", path)
        return node.size

    def mtime_ms(self, path: str) -> int:
        self._fault_check(path, False)
        node = self._lookup(path)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        return node.mtime_ms

    def disk_usage(self, path: str) -> tuple[int, int]:
        self._fault_check(path, False)
        used = sum(n.size for n in self._walk_all(self._root) if isinstance(n, _File))
        return self.capacity_bytes, max(0, self.capacity_bytes - used)

    # ---- inspection for tests ---------------------------------------------------------------

    def set_mtime_ms(self, path: str, mtime_ms: int) -> None:
        """Set a file's modification time (tests of age-based rules)."""
        node = self._lookup(path)
        if node is None:
            raise OSError(errno.ENOENT, "No such file or directory", path)
        node.mtime_ms = mtime_ms
