"""The simulated file system keeps exactly what a real disk promises after power loss."""

import errno
import random

import pytest

from logwright.world import (
    Fault,
    RealFileSystem,
    SimFileSystem,
    SimScheduler,
    SimulatedCrash,
    VirtualClock,
    write_file_atomic,
)
from logwright.world.fs import FileHandle
from logwright.world.network import SimNetwork


def test_unsynced_data_is_lost_and_synced_data_kept() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    h = fs.open("/d/f", create=True)
    h.append(b"abc")
    h.fsync()
    fs.fsync_dir("/d")
    h.append(b"def")
    fs.crash()
    assert fs.read_file("/d/f") == b"abc"


def test_creation_without_dir_fsync_is_lost() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    h = fs.open("/d/f", create=True)
    h.append(b"abc")
    h.fsync()
    fs.crash()
    assert not fs.exists("/d/f")


def test_rename_is_durable_only_after_dir_fsync() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    write_file_atomic(fs, "/d/f", b"one")
    h = fs.open("/d/g", create=True)
    h.append(b"two")
    h.fsync()
    fs.rename("/d/g", "/d/f")
    fs.crash()
    assert fs.read_file("/d/f") == b"one"
    assert not fs.exists("/d/g")


def test_atomic_write_survives_a_crash_at_every_step() -> None:
    for k in range(1, 10):
        fs = SimFileSystem()
        fs.makedirs("/d")
        write_file_atomic(fs, "/d/f", b"old")
        fs.crash_after(k)
        try:
            write_file_atomic(fs, "/d/f", b"new")
        except SimulatedCrash:
            pass
        fs.crash()
        assert fs.read_file("/d/f") in (b"old", b"new"), k


def test_handles_do_not_survive_a_crash() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    h = fs.open("/d/f", create=True)
    fs.crash()
    with pytest.raises(ValueError, match="survived a crash"):
        h.append(b"x")


def test_torn_tail_keeps_a_prefix_of_unsynced_data() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    h = fs.open("/d/f", create=True)
    fs.fsync_dir("/d")
    h.append(b"abc")
    h.fsync()
    h.append(b"defghi")
    fs.crash(random.Random(3))
    data = fs.read_file("/d/f")
    assert data.startswith(b"abc") and b"abcdefghi".startswith(data)


def test_faults_are_per_prefix() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d1")
    fs.makedirs("/d2")
    fs.inject_fault("/d1", Fault.EIO)
    with pytest.raises(OSError) as e:
        fs.open("/d1/f", create=True)
    assert e.value.errno == errno.EIO
    fs.open("/d2/f", create=True).append(b"ok")
    fs.inject_fault("/d2", Fault.ENOSPC)
    assert fs.read_file("/d2/f") == b"ok"
    with pytest.raises(OSError) as e:
        fs.open("/d2/f").append(b"more")
    assert e.value.errno == errno.ENOSPC
    fs.clear_fault("/d1")
    fs.open("/d1/f", create=True)


def test_a_lost_fsync_fails_nothing_and_keeps_nothing() -> None:
    """LOST_FSYNC: the disk acknowledges a file's fsync without doing it; every call succeeds,
    directories sync as usual, and a power loss takes what the file's owner believed synced."""
    fs = SimFileSystem()
    fs.makedirs("/d/p")
    fs.fsync_dir("/d")
    for name in ("lost", "kept"):
        h = fs.open(f"/d/p/{name}", create=True)
        h.append(b"synced")
        h.fsync()
    fs.fsync_dir("/d/p")
    fs.inject_fault("/d/p/lost", Fault.LOST_FSYNC)
    h = fs.open("/d/p/lost")
    h.append(b" and more")
    h.fsync()
    assert fs.read_file("/d/p/lost") == b"synced and more"
    fs.open("/d/p/kept").append(b" too")
    fs.crash()
    assert fs.read_file("/d/p/lost") == b"synced"  # the acknowledged fsync was not done
    assert fs.read_file("/d/p/kept") == b"synced"  # never synced: lost as always
    fs.clear_fault("/d/p/lost")
    h = fs.open("/d/p/lost")
    h.append(b"!")
    h.fsync()
    fs.crash()
    assert fs.read_file("/d/p/lost") == b"synced!"


def test_name_over_255_characters_is_refused() -> None:
    fs = SimFileSystem()
    fs.makedirs("/d")
    with pytest.raises(OSError) as e:
        fs.mkdir("/d/" + "x" * 256)
    assert e.value.errno == errno.ENAMETOOLONG


def test_real_fs_atomic_write(tmp_path: object) -> None:
    fs = RealFileSystem()
    path = f"{tmp_path}/f"
    write_file_atomic(fs, path, b"one")
    write_file_atomic(fs, path, b"two")
    assert fs.read_file(path) == b"two"
    assert not fs.exists(path + ".tmp")


def test_scheduler_is_seeded_and_periodic() -> None:
    def run(seed: int) -> list[str]:
        sched = SimScheduler(VirtualClock(0), seed=seed)
        log: list[str] = []
        for name in "abcdef":
            sched.schedule(name, lambda n=name: log.append(n), delay_ms=10)
        sched.schedule("p", lambda: log.append("p"), delay_ms=0, period_ms=4)
        sched.advance(10)
        return log

    assert run(1) == run(1)
    assert run(1).count("p") == 3
    assert sorted(x for x in run(1) if x != "p") == list("abcdef")
    assert any(run(s) != run(1) for s in range(2, 10))


def test_cancelled_tasks_leave_the_queue_and_let_go_of_their_work() -> None:
    """Issue 16's soak: completed acks=all produces stayed alive until their request timeout,
    held by their cancelled expiry timers still queued. A cancelled task drops its work at
    once, and the queue is rebuilt once cancelled tasks are most of it; what runs, and in
    which order, is what a queue that kept them would run (the same seed, a random mix of
    schedules and cancellations, checked against the order of the entries' keys)."""
    import gc
    import weakref

    class Work:
        def __call__(self) -> None:
            ran.append(self)

    for seed in range(5):
        rng = random.Random(seed)
        keys = random.Random(seed)  # the scheduler draws one tie-breaker per push, as here
        sched = SimScheduler(VirtualClock(0), seed=seed)
        ran: list[Work] = []
        tasks = []
        for i in range(3000):
            work = Work()
            delay = rng.randrange(0, 30_000)
            tasks.append((sched.schedule(f"t{i}", work, delay), (delay, keys.random(), i, work)))
            if rng.random() < 0.9:  # most timers are cancelled, as a completed request's is
                task, _ = tasks.pop(rng.randrange(len(tasks)))
                task.cancel()
                task.cancel()  # twice is once
            assert sched.queued <= max(2 * len(tasks) + 2, len(tasks) + 258)
        live = [entry for _, entry in tasks]
        sched.advance(30_000)
        assert [id(w) for w in ran] == [id(e[3]) for e in sorted(live, key=lambda e: e[:3])]
        assert sched.queued == 0

    sched = SimScheduler(VirtualClock(0), seed=1)
    work = Work()
    gone = weakref.ref(work)
    task = sched.schedule("expiry", work, 30_000)
    del work
    task.cancel()
    gc.collect()
    assert gone() is None, "a cancelled task still holds its work"


class _Inbox:
    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.got: list[tuple[str, object]] = []

    def receive(self, src: str, message: object) -> None:
        self.got.append((src, message))


def test_an_intercepted_message_goes_to_the_handler_not_the_node() -> None:
    """``SimNetwork.intercept``: every matching message is handed over instead of sent (the
    others still arrive), until the returned function ends it."""
    sched = SimScheduler(VirtualClock(), seed=1)
    net = SimNetwork(sched, seed=1, duplicate_rate=1.0)
    a, b = _Inbox("a"), _Inbox("b")
    net.register(a)
    net.register(b)
    held: list[tuple[str, str, object]] = []
    stop = net.intercept(lambda src, dst, m: dst == "b" and m == "kept",
                         lambda src, dst, m: held.append((src, dst, m)))
    net.send("a", "b", "kept")
    net.send("a", "b", "passes")
    net.send("b", "a", "kept")
    sched.advance(1_000)
    assert held == [("a", "b", "kept")]
    assert [m for _, m in b.got] == ["passes", "passes"]  # duplicated, as the rate says
    assert [m for _, m in a.got] == ["kept", "kept"]
    stop()
    net.send("a", "b", "kept")
    sched.advance(1_000)
    assert held == [("a", "b", "kept")] and [m for _, m in b.got].count("kept") == 2


def test_the_simulated_disk_shows_what_a_crash_would_keep_without_changing_it() -> None:
    """``durable_listdir`` and ``durable_bytes`` read what a crash now would keep; they are no
    operations (``after_op`` is not called, ``ops`` does not move), unlike every mutation."""
    fs = SimFileSystem()
    seen: list[int] = []
    fs.mkdir("/d")
    fs.fsync_dir("/")
    fs.after_op = lambda: seen.append(fs.ops)
    fs.mkdir("/d/a")
    h = fs.open("/d/a/f", create=True)
    h.append(b"one")
    assert fs.listdir("/d") == ["a"] and fs.durable_listdir("/d") == []
    fs.fsync_dir("/d")
    fs.fsync_dir("/d/a")
    h.fsync()
    h.append(b"two")
    ops = fs.ops
    assert fs.durable_listdir("/d") == ["a"] and fs.durable_listdir("/d/a") == ["f"]
    assert fs.durable_bytes("/d/a/f") == b"one" and h.read(0, 100) == b"onetwo"
    assert fs.ops == ops, "reading what survives is no operation"
    assert seen == list(range(seen[0], seen[0] + len(seen))) and len(seen) >= 5
    fs.after_op = None
    fs.crash()
    assert fs.open("/d/a/f").read(0, 100) == b"one"


def test_list_entries_tells_directories_as_is_dir_does(tmp_path: object) -> None:
    """The real disk's one-call listing (scandir) answers as ``listdir`` + ``is_dir`` per entry:
    sorted names, a symbolic link followed (a dangling one is no directory); the simulated
    disk leaves every kind to ``is_dir``."""
    import os
    root = str(tmp_path)
    os.mkdir(os.path.join(root, "t-1"))
    os.mkdir(os.path.join(root, "a-0"))
    with open(os.path.join(root, "t-0"), "wb"):
        pass
    os.symlink(os.path.join(root, "a-0"), os.path.join(root, "link-0"))
    os.symlink(os.path.join(root, "gone"), os.path.join(root, "dangling-0"))
    fs = RealFileSystem()
    expected = [(n, fs.is_dir(os.path.join(root, n))) for n in fs.listdir(root)]
    assert fs.list_entries(root) == expected
    assert [d for n, d in expected] == [True, False, True, False, True]
    sim = SimFileSystem()
    sim.makedirs("/d/x-0")
    assert sim.list_entries("/d") == [("x-0", None)]


@pytest.mark.parametrize("real", [False, True])
def test_read_or_create_reads_a_file_or_leaves_an_empty_one(tmp_path: object, real: bool
                                                            ) -> None:
    """As an ``open`` with ``create``, a read and a close: on both disks alike."""
    import os
    fs = RealFileSystem() if real else SimFileSystem()
    root = str(tmp_path) if real else "/d"
    if not real:
        fs.makedirs(root)
    present, missing = os.path.join(root, "f"), os.path.join(root, "g")
    write_file_atomic(fs, present, b"abc")
    assert fs.read_or_create(present) == b"abc" == fs.read_file(present)
    assert fs.read_or_create(missing) == b""
    assert fs.exists(missing) and fs.read_file(missing) == b""
    with pytest.raises(FileNotFoundError):
        fs.read_file(os.path.join(root, "h"))


def _interface_read_or_create(fs: RealFileSystem, path: str) -> bytes:
    """The interface's own ``read_or_create`` (open with create, read, close), for reference."""
    from logwright.world.fs import FileSystem
    return FileSystem.read_or_create(fs, path)


@pytest.mark.parametrize("euid", ["root", "owner", "stranger"])
def test_read_or_create_on_a_real_disk_answers_as_open_read_close(
        tmp_path: object, euid: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real disk skips the open of an empty file it may write (start-up reads an empty
    offset index per active segment): same content, same file left behind, the same error for
    what cannot be opened, and the open still made when it might have failed (a file of
    another owner, or one without the owner's write bit, when not root)."""
    import os
    import stat as stat_mod

    from logwright.world import realfs
    fs = RealFileSystem()
    root = str(tmp_path)
    owner = 4321  # every file's owner (set below); this process plays root, it, or another
    monkeypatch.setattr(realfs, "_EUID", {"root": 0, "owner": owner, "stranger": owner + 1}[euid])
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: str, flags: int, mode: int = 0o777) -> int:
        opened.append(path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(realfs.os, "open", counting_open)
    cases = {"empty": b"", "full": b"x" * 5000, "one": b"\0"}
    for name, content in cases.items():
        for twin in (name + "-a", name + "-b"):
            with open(os.path.join(root, twin), "wb") as f:
                f.write(content)
    os.chmod(os.path.join(root, "empty-a"), 0o444)  # no write bit for the owner either
    os.chmod(os.path.join(root, "empty-b"), 0o444)
    with open(os.path.join(root, "plain-a"), "wb"), open(os.path.join(root, "plain-b"), "wb"):
        pass
    os.mkfifo(os.path.join(root, "fifo-a"))
    os.mkfifo(os.path.join(root, "fifo-b"))
    os.mkdir(os.path.join(root, "dir-a"))
    os.mkdir(os.path.join(root, "dir-b"))
    if os.geteuid() != 0:
        pytest.skip("needs root: the files are given to another owner")
    for entry in os.listdir(root):
        os.chown(os.path.join(root, entry), owner, owner)
    for name in ("empty", "full", "one", "plain", "fifo", "dir", "missing"):
        a, b = os.path.join(root, name + "-a"), os.path.join(root, name + "-b")
        opened.clear()
        try:
            got: object = fs.read_or_create(a)
        except OSError as exc:
            got = type(exc)
        opened_a = list(opened)
        try:
            want: object = _interface_read_or_create(fs, b)
        except OSError as exc:
            want = type(exc)
        assert got == want, name
        assert os.path.exists(a) == os.path.exists(b), name
        if os.path.exists(a):
            assert stat_mod.S_IFMT(os.stat(a).st_mode) == stat_mod.S_IFMT(os.stat(b).st_mode)
        may_skip = euid == "root" or (euid == "owner" and name == "plain")
        skipped = name in ("empty", "plain") and may_skip
        assert (opened_a == []) == skipped, (name, opened_a)


@pytest.mark.parametrize("parent", ["", "/", "/d", "/d/", "d", "d//", "/d/t-0"])
@pytest.mark.parametrize("name", ["f", "partition.metadata", "/abs", "", "a/b"])
def test_child_path_is_posixpath_join(parent: str, name: str) -> None:
    import posixpath

    from logwright.world.fs import child_path
    assert child_path(parent, name) == posixpath.join(parent, name)


@pytest.mark.parametrize("real", [False, True])
def test_read_into_reads_what_read_reads(tmp_path: object, real: bool) -> None:
    """Into a buffer, the bytes ``read`` returns, short only at the end of the file and with
    nothing written past them; on the simulated disk no operation is counted and an injected
    EIO fails it as it fails ``read``. The interface's own version (a read and a copy) agrees."""
    fs = RealFileSystem() if real else SimFileSystem()
    if not real:
        fs.makedirs("/d")
    path = f"{tmp_path}/f" if real else "/d/f"
    handle = fs.open(path, create=True)
    content = random.Random(7).randbytes(20_000)
    handle.append(content[:6_000])
    handle.append(content[6_000:])  # the simulated file holds it as two chunks
    buffer = bytearray(b"x" * 16_384)
    view = memoryview(buffer)
    ops = None if real else fs.ops
    for position in (0, 1, 4_095, 5_000, 6_000, 9_000, 19_999, 20_000, 30_000):
        for size in (0, 1, 100, 4_096, 16_384):
            for read_into in (handle.read_into, lambda p, b: FileHandle.read_into(handle, p, b)):
                buffer[:] = b"x" * 16_384
                n = read_into(position, view[:size])
                assert n == len(handle.read(position, size))
                assert buffer[:n] == content[position:position + size]
                assert buffer[n:] == b"x" * (16_384 - n), "nothing written past what was read"
    if isinstance(fs, SimFileSystem):
        assert fs.ops == ops, "a read is no operation"
        fs.inject_fault("/d", Fault.EIO)
        with pytest.raises(OSError) as raised:
            handle.read_into(0, view)
        assert raised.value.errno == errno.EIO
    handle.close()
