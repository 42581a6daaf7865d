"""An index answers as if every entry were on the heap, while the heap holds only its chunks'
first entries and the last chunk.

A seeded run of appends, truncations, flushes, closes and reloads, past several chunks, is
compared after every step with a plain list of the entries: every lookup, the last entry, the
count, and the file's contents after a close. A second test counts what stays on the heap.
"""

from __future__ import annotations

import random
from bisect import bisect_right

import pytest

from logwright.storage.index import CHUNK, OffsetIndex, TimeIndex
from logwright.world import SimFileSystem, VirtualClock

LOG_SIZE = 1 << 30


def _fs() -> SimFileSystem:
    fs = SimFileSystem(VirtualClock(1_000_000))
    fs.makedirs("/d")
    return fs


def _check_offsets(index: OffsetIndex, model: list[tuple[int, int]], base: int,
                   rng: random.Random) -> None:
    assert index.entries == len(model)
    assert index.last_entry == (model[-1] if model else (base, 0))
    top = model[-1][0] + 3 if model else base + 3
    for offset in [base, top, *(rng.randrange(base, top + 1) for _ in range(20))]:
        i = bisect_right([o for o, _ in model], offset)
        assert index.lookup(offset) == (model[i - 1] if i else (base, 0)), offset
    for entry in model[:: max(1, len(model) // 10)]:
        assert index.lookup(entry[0]) == entry
        assert index.batch_start_at_or_before(entry[1]) == entry[1]
        assert index.batch_start_at_or_before(entry[1] - 1) == next(
            (p for _, p in reversed(model) if p < entry[1]), 0)


@pytest.mark.parametrize("seed", range(6))
def test_an_offset_index_answers_like_a_list_across_chunks(seed: int) -> None:
    rng = random.Random(seed)
    fs, base, path = _fs(), 1000, "/d/x.index"
    index = OffsetIndex(fs, path, base)
    model: list[tuple[int, int]] = []
    offset, position = base, 0
    for _ in range(60):
        action = rng.choice(["append", "append", "append", "truncate", "flush", "close",
                             "reload"])
        if action == "append":
            for _ in range(rng.choice([1, 5, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK])):
                offset += rng.randint(1, 4)
                position += rng.randint(1, 90)
                index.append(offset, position)
                model.append((offset, position))
        elif action == "truncate" and model:
            cut = rng.randint(0, model[-1][1] + 1)
            index.truncate_to_position(cut)
            model = [e for e in model if e[1] < cut]
            offset, position = model[-1] if model else (base, 0)
        elif action == "flush":
            index.flush()
        elif action == "close":
            index.close()
            assert (fs.file_size(path) if fs.exists(path) else 0) == 8 * len(model)
        elif action == "reload":
            index.close()
            index = OffsetIndex(fs, path, base)
            index.load(LOG_SIZE)
        _check_offsets(index, model, base, rng)


@pytest.mark.parametrize("seed", range(4))
def test_a_time_index_answers_like_a_list_across_chunks(seed: int) -> None:
    rng = random.Random(seed)
    fs, base, path = _fs(), 50, "/d/x.timeindex"
    index = TimeIndex(fs, path, base)
    model: list[tuple[int, int]] = []
    ts, offset = 10_000, base
    for _ in range(60):
        action = rng.choice(["append", "append", "truncate", "close", "reload"])
        if action == "append":
            for _ in range(rng.choice([1, CHUNK, 2 * CHUNK + 3])):
                ts += rng.choice([0, 1, 7])  # equal timestamps are not entries
                offset += rng.choice([0, 1, 3])
                index.maybe_append(ts, offset)
                if not model or ts > model[-1][0]:
                    model.append((ts, offset))
        elif action == "truncate" and model:
            cut = rng.randint(base, model[-1][1] + 1)
            index.truncate_to_offset(cut)
            model = [e for e in model if e[1] < cut]
            if model:
                ts, offset = model[-1]
        elif action == "close":
            index.close()
            assert (fs.file_size(path) if fs.exists(path) else 0) == 12 * len(model)
        elif action == "reload":
            index.close()
            index = TimeIndex(fs, path, base)
            index.load()
        assert index.entries == len(model)
        assert index.last_timestamp == (model[-1][0] if model else None)
        assert index.last_offset == (model[-1][1] if model else None)
        for probe in [0, ts + 1, *(rng.randint(9_000, ts + 2) for _ in range(20))]:
            below = [o for t, o in model if t < probe]
            assert index.lookup(probe) == (below[-1] if below else base), probe


def test_the_heap_holds_one_entry_per_chunk_and_the_last_chunk() -> None:
    """The memory an index holds does not grow with its entries beyond one in CHUNK."""
    fs = _fs()
    index = OffsetIndex(fs, "/d/big.index", 0)
    n = 100 * CHUNK + 7
    for i in range(n):
        index.append(i + 1, 10 * (i + 1))
    held = sum(len(a) for a in (index._first_a, index._first_b, index._tail_a, index._tail_b))
    assert held == 2 * (101 + 7)
    assert fs.file_size("/d/big.index") == 8 * 100 * CHUNK  # complete chunks are written
    assert index.lookup(5 * CHUNK + 3) == (5 * CHUNK + 3, 10 * (5 * CHUNK + 3))


@pytest.mark.parametrize("seed", range(6))
def test_empty_indexes_share_nothing_they_write(seed: int) -> None:
    """Every empty index holds the same four empty arrays (start-up loads thousands of empty
    offset indexes); appending to, extending, truncating or resetting one of several never
    shows in another, and the shared arrays stay empty."""
    from array import array

    from logwright.storage import index as index_module
    rng = random.Random(seed)
    fs, base = _fs(), 0
    indexes = [OffsetIndex(fs, f"/d/{i}.index", base) for i in range(3)]
    models: list[list[tuple[int, int]]] = [[] for _ in indexes]
    for _ in range(80):
        i = rng.randrange(len(indexes))
        index, model = indexes[i], models[i]
        action = rng.choice(["append", "extend", "truncate", "reset", "reload"])
        last = model[-1] if model else (base, 0)
        if action == "append":
            for _ in range(rng.choice([1, 2, CHUNK, CHUNK + 1])):
                last = (last[0] + rng.randint(1, 3), last[1] + rng.randint(1, 50))
                index.append(*last)
                model.append(last)
        elif action == "extend":
            offsets, positions = array("q"), array("q")
            for _ in range(rng.choice([0, 1, CHUNK - 1, 2 * CHUNK + 1])):
                last = (last[0] + rng.randint(1, 3), last[1] + rng.randint(1, 50))
                offsets.append(last[0])
                positions.append(last[1])
                model.append(last)
            index.extend(offsets, positions)
        elif action == "truncate":
            cut = rng.choice([0, 1, last[1], last[1] + 1, rng.randint(0, last[1] + 1)])
            index.truncate_to_position(cut)
            models[i] = model = [e for e in model if e[1] < cut]
        elif action == "reset":
            index.reset()
            models[i] = model = []
        else:
            index.close()
            indexes[i] = index = OffsetIndex(fs, f"/d/{i}.index", base)
            index.load(LOG_SIZE)
        assert not index_module._NO_ENTRIES
        for other, other_model in zip(indexes, models, strict=True):
            _check_offsets(other, other_model, base, rng)
