"""The file system interface every storage component goes through.

Two implementations: ``RealFileSystem`` (os calls, fsync, rename, directory fsync) and
``SimFileSystem`` (durable and volatile state kept apart, crash points and per-dir faults).
Paths are POSIX strings. Errors are ``OSError`` with the errno a real kernel would give.
"""

from __future__ import annotations

import errno
import posixpath
from abc import ABC, abstractmethod


class FileHandle(ABC):
    """An open file, readable and writable at any position."""

    path: str

    @abstractmethod
    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end of the file; returns the position it was written at."""

    @abstractmethod
    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``position`` (the file grows if needed)."""

    @abstractmethod
    def read(self, position: int, size: int) -> bytes:
        """Read up to ``size`` bytes at ``position`` (short at the end of the file)."""

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        """Read up to ``len(buffer)`` bytes at ``position`` into the start of ``buffer`` (a
        writable byte buffer); returns how many: the bytes ``read(position, len(buffer))``
        would return, short only at the end of the file. Lets a long scan reuse one buffer
        instead of allocating a fresh one per read; here, by way of ``read``."""
        data = self.read(position, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    @abstractmethod
    def size(self) -> int:
        """The file's current size in bytes."""

    @abstractmethod
    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes."""

    @abstractmethod
    def fsync(self) -> None:
        """Make the file's data durable."""

    @abstractmethod
    def close(self) -> None:
        """Release the handle."""


class FileLock:
    """An exclusive lock on a file, held until ``FileSystem.unlock`` (or the process dies)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.held = True

    def __repr__(self) -> str:
        return f"FileLock({self.path!r}, held={self.held})"


class FileSystem(ABC):
    """Directory and file operations; names and semantics follow POSIX."""

    def lock(self, path: str) -> FileLock:
        """Take an exclusive, non-blocking lock on file ``path`` (created if missing).

        ``OSError(EWOULDBLOCK)`` if another holder has it: another process, or another lock
        taken through a separate ``lock`` call in this process (locks conflict per call, as
        ``flock`` does between open file descriptions). Released by ``unlock`` or when the
        process holding it dies. File systems that cannot lock raise ``OSError(ENOTSUP)``.
        """
        raise OSError(errno.ENOTSUP, "locking is not supported by this file system", path)

    def unlock(self, lock: FileLock) -> None:
        """Release ``lock`` (idempotent). The lock file stays where it is."""
        lock.held = False

    @abstractmethod
    def open(self, path: str, create: bool = False) -> FileHandle:
        """Open ``path`` for reading and writing; create it empty if ``create`` and missing."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` names a file or directory."""

    @abstractmethod
    def is_dir(self, path: str) -> bool:
        """Whether ``path`` names a directory."""

    @abstractmethod
    def listdir(self, path: str) -> list[str]:
        """The names in directory ``path``, sorted."""

    def list_entries(self, path: str) -> list[tuple[str, bool | None]]:
        """The names in directory ``path``, sorted, each with whether it names a directory
        when the listing itself tells (as ``is_dir`` of its path would answer), None when it
        does not (the caller asks ``is_dir`` if it needs to know). Here: None for every one."""
        return [(name, None) for name in self.listdir(path)]

    @abstractmethod
    def mkdir(self, path: str) -> None:
        """Create directory ``path``; its parent must exist."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Atomically rename ``src`` to ``dst``, replacing a file at ``dst``."""

    @abstractmethod
    def remove(self, path: str) -> None:
        """Delete the file ``path``."""

    @abstractmethod
    def rmtree(self, path: str) -> None:
        """Delete directory ``path`` and everything below it."""

    @abstractmethod
    def fsync_dir(self, path: str) -> None:
        """Make the entries of directory ``path`` (creations, renames, deletions) durable."""

    @abstractmethod
    def file_size(self, path: str) -> int:
        """The size of file ``path`` in bytes."""

    @abstractmethod
    def mtime_ms(self, path: str) -> int:
        """When file ``path`` was last written, in milliseconds."""

    @abstractmethod
    def disk_usage(self, path: str) -> tuple[int, int]:
        """``(total_bytes, usable_bytes)`` of the volume holding ``path``."""

    def abspath(self, path: str) -> str:
        """``path`` made absolute and normalized (the simulated working directory is ``/``)."""
        return posixpath.normpath(posixpath.join("/", path))

    def makedirs(self, path: str) -> None:
        """Create ``path`` and any missing parents (each parent's entry is fsynced)."""
        if self.exists(path):
            return
        parent = posixpath.dirname(path.rstrip("/"))
        if parent and parent != path and not self.exists(parent):
            self.makedirs(parent)
        self.mkdir(path)
        if parent:
            self.fsync_dir(parent)

    def read_file(self, path: str) -> bytes:
        """The whole content of file ``path``."""
        handle = self.open(path)
        try:
            return handle.read(0, handle.size())
        finally:
            handle.close()

    def read_or_create(self, path: str) -> bytes:
        """The whole content of file ``path``, created empty first if missing (an ``open`` with
        ``create``, a read, a close)."""
        handle = self.open(path, create=True)
        try:
            return handle.read(0, handle.size())
        finally:
            handle.close()


def child_path(parent: str, name: str) -> str:
    """``posixpath.join(parent, name)`` for a relative ``name`` (a file of a dir), in one step
    when ``parent`` is neither empty nor ends with a '/' (start-up names a few per partition)."""
    if parent and parent[-1] != "/" and name and name[0] != "/":
        return parent + "/" + name
    return posixpath.join(parent, name)


def write_file_atomic(fs: FileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content.

    The one way every metadata file is written (hazard 11): ``<path>.tmp``, fsync, rename over
    the old file, then fsync the directory so the rename itself is durable.
    """
    tmp = path + ".tmp"
    handle = fs.open(tmp, create=True)
    try:
        handle.truncate(0)
        handle.append(data)
        handle.fsync()
    finally:
        handle.close()
    fs.rename(tmp, path)
    fs.fsync_dir(posixpath.dirname(path) or ".")
