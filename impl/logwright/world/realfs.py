"""The real file system: os calls, fsync of files and of directories."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat

from mypy_extensions import mypyc_attr

from logwright.world.fs import FileHandle, FileLock, FileSystem

_pwrite = os.pwrite  # one lookup less per append: the leader's hot path
_EUID = os.geteuid()  # who opens files: may a file of a given owner and mode be written?


class RealFileHandle(FileHandle):
    """A file descriptor opened read-write; positioned I/O only (pread/pwrite)."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self._fd = fd
        self._size = os.fstat(fd).st_size

    def append(self, data: bytes | bytearray | memoryview) -> int:
        position = self._size
        # One pwrite nearly always writes everything; the loop is for the rare short write.
        written = _pwrite(self._fd, data, position)
        size = data.nbytes if type(data) is memoryview else len(data)
        if written < size:
            self.write_rest(data, position, written)
        self._size = position + size
        return position

    def write_rest(self, data: bytes | bytearray | memoryview, position: int, written: int
                   ) -> None:
        """Write what a short ``pwrite`` of ``data`` at ``position`` left: all but its first
        ``written`` bytes. (The size is the caller's to update: see ``append``.)"""
        view = memoryview(data).cast("B")
        while written < len(view):
            written += os.pwrite(self._fd, view[written:], position + written)

    def write_at(self, position: int, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.pwrite(self._fd, view[written:], position + written)
        self._size = max(self._size, position + written)

    def read(self, position: int, size: int) -> bytes:
        if size <= 0 or position >= self._size:
            return b""
        return os.pread(self._fd, min(size, self._size - position), position)

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        """``preadv`` straight into ``buffer``: no bytes object, no copy but the kernel's."""
        size = min(len(buffer), self._size - position)
        if size <= 0:
            return 0
        view = memoryview(buffer)
        if size < len(view):
            view = view[:size]
        done = os.preadv(self._fd, [view], position)
        while 0 < done < size:  # short before the end of the file (a signal): read on
            more = os.preadv(self._fd, [view[done:]], position + done)
            if more == 0:
                break
            done += more
        return done

    def size(self) -> int:
        return self._size

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self._size = size

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _read_whole(fd: int) -> bytes:
    """The content of the open file ``fd`` (as a handle reads it: its size by fstat, one
    pread), which is then closed."""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, size, 0) if size > 0 else b""
    finally:
        os.close(fd)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False  # as os.path.isdir answers for a path it cannot stat


class _RealFileLock(FileLock):
    def __init__(self, path: str, fd: int) -> None:
        super().__init__(path)
        self.fd = fd


# Subclassed outside the package (a fixture builder without fsync in bench/), so the compiled
# build (docs/native.md) lets Python classes inherit from it.
@mypyc_attr(allow_interpreted_subclasses=True)
class RealFileSystem(FileSystem):
    """``FileSystem`` over the operating system's files."""

    def lock(self, path: str) -> FileLock:
        """``flock(LOCK_EX | LOCK_NB)`` on a descriptor of its own: it conflicts with any other
        holder, in another process or in this one, and goes when the process dies."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        return _RealFileLock(path, fd)

    def unlock(self, lock: FileLock) -> None:
        if isinstance(lock, _RealFileLock) and lock.held:
            lock.held = False
            try:
                fcntl.flock(lock.fd, fcntl.LOCK_UN)
            finally:
                os.close(lock.fd)

    def open(self, path: str, create: bool = False) -> FileHandle:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        return RealFileHandle(path, os.open(path, flags, 0o644))

    def read_file(self, path: str) -> bytes:
        # The calls of open + read + close through a handle, without building one: start-up
        # reads a few small files per partition.
        return _read_whole(os.open(path, os.O_RDWR))

    def read_or_create(self, path: str) -> bytes:
        # Start-up reads the offset index of every active segment, and many are empty (less
        # than index.interval.bytes appended since the segment rolled): one stat says so, where
        # an open, an fstat and a close did. The open is skipped only when its mode bits let
        # this process write the regular file (root, or the owner with the write bit), so the
        # errors are the open's, as before (but for an immutable flag or a security module's
        # veto on an empty file, then met at its first write). Any other file is opened and
        # read by the stat's size (the same count of calls as before for a non-empty one).
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return _read_whole(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        if not stat.S_ISREG(info.st_mode):
            return _read_whole(os.open(path, os.O_RDWR | os.O_CREAT, 0o644))
        if info.st_size == 0 and (_EUID == 0 or (info.st_uid == _EUID
                                                 and info.st_mode & stat.S_IWUSR)):
            return b""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            return os.pread(fd, info.st_size, 0)
        finally:
            os.close(fd)

    def abspath(self, path: str) -> str:
        return os.path.abspath(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def list_entries(self, path: str) -> list[tuple[str, bool | None]]:
        """One ``scandir``: the kinds come with the names (a stat only for an entry whose kind
        the file system does not report, or a symbolic link, followed as ``is_dir`` does)."""
        with os.scandir(path) as entries:
            found: list[tuple[str, bool | None]] = [(e.name, _is_dir(e)) for e in entries]
        found.sort()
        return found

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def remove(self, path: str) -> None:
        os.remove(path)

    def rmtree(self, path: str) -> None:
        shutil.rmtree(path)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def file_size(self, path: str) -> int:
        return os.stat(path).st_size

    def mtime_ms(self, path: str) -> int:
        return os.stat(path).st_mtime_ns // 1_000_000

    def disk_usage(self, path: str) -> tuple[int, int]:
        usage = shutil.disk_usage(path)
        return usage.total, usage.free
