"""The batched fast path of the checker: states packed into integers, frontiers expanded at once.

What it upholds: the same exploration as :func:`logwright.model.checker.check_generic`, with the
same distinct states, depth, generated count and (for a violation) the same shortest trace, only
faster. A spec opts in by subclassing :class:`PackedSpec`: it gives a mixed-radix
:class:`Layout` of its state (each variable a digit), ``encode``/``decode`` between its states
and codes, and a vectorized twin of each action (:meth:`PackedSpec.packed_successors`) that maps a
whole frontier of codes to successor codes with numpy. The generic engine stays the reference:
tests compare the two engines' state sets on every module that has both.

Breadth-first order is kept exactly: every successor carries the key (parent position in the
frontier, action index, branch index), and the new states of a level are ordered by the key of
their first occurrence, which is the order one-state-at-a-time expansion discovers them in.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from logwright.model.core import (
    INITIAL,
    CheckResult,
    Counterexample,
    ProgressFn,
    SearchProgress,
    Spec,
    State,
)

_T = TypeVar("_T")

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Codes = npt.NDArray[np.int64]
    Mask = npt.NDArray[np.bool_]
else:
    Codes = Any
    Mask = Any


def numpy_available() -> bool:
    """Whether numpy can be imported (the fast path needs it; the generic engine does not)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


class Layout:
    """A mixed-radix encoding of a state: one digit per variable, digit ``i`` in ``0..radix-1``.

    ``code = sum(digit_i * weight_i)``, so changing one variable is one add on the code, which is
    what makes vectorized actions cheap.
    """

    def __init__(self, fields: Sequence[tuple[str, int]]) -> None:
        self.names = [name for name, _ in fields]
        self.radix: dict[str, int] = {}
        self.weight: dict[str, int] = {}
        size = 1
        for name, radix in fields:
            if radix < 1:
                raise ValueError(f"field {name}: radix must be >= 1, got {radix}")
            if name in self.radix:
                raise ValueError(f"field {name} appears twice")
            self.radix[name] = radix
            self.weight[name] = size
            size *= radix
        if size >= 2**63:
            raise ValueError(f"state space of {size} codes does not fit in int64")
        self.size = size

    def pack(self, values: Mapping[str, int]) -> int:
        """The code of one state given every field's value."""
        code = 0
        for name in self.names:
            v = values[name]
            if not 0 <= v < self.radix[name]:
                raise ValueError(f"field {name}={v} outside 0..{self.radix[name] - 1}")
            code += v * self.weight[name]
        return code

    def unpack(self, code: int) -> dict[str, int]:
        """Every field's value in one code."""
        return {n: (code // self.weight[n]) % self.radix[n] for n in self.names}

    def column(self, codes: Codes, name: str) -> Codes:
        """One field's value in each of ``codes`` (vectorized)."""
        return (codes // self.weight[name]) % self.radix[name]


class Branch(NamedTuple):
    """Successors of a batch of frontier states by one action with one choice of its parameters.

    ``parents[i]`` is the frontier position of the state whose successor is ``codes[i]``.
    ``branch`` orders the branches of one action for one state the way the action's Python
    method yields them; each (parent, action, branch) must occur at most once.
    """

    action: int
    branch: int
    parents: Codes
    codes: Codes


class PackedSpec(Spec):
    """A spec that also offers the batched fast path. The generic methods remain the reference."""

    layout: Layout
    fits_int64: bool = True  # False: the constants are too large, the generic engine only

    def use_layout(self, fields: Sequence[tuple[str, int]]) -> None:
        """Pack states with these (name, radix) fields, or, when the constants are too large
        for one int64 code, leave the spec to the generic engine."""
        try:
            self.layout = Layout(fields)
            self.fits_int64 = True
        except ValueError:
            self.fits_int64 = False

    @abstractmethod
    def encode(self, s: State) -> int:
        """The code of a state."""

    @abstractmethod
    def decode(self, code: int) -> State:
        """The state of a code: ``decode(encode(s)) == s``."""

    @abstractmethod
    def packed_successors(self, frontier: Codes) -> Iterable[Branch]:
        """Every successor of every frontier state, as branches (vectorized ``actions()``)."""

    @abstractmethod
    def packed_invariants(self, codes: Codes) -> Sequence[tuple[str, Mask]]:
        """Each invariant of ``invariants()``, same order, evaluated on each code."""

    def packed_constraint(self, codes: Codes) -> Mask | None:
        """The constraint on each code; None means every state is within it."""
        return None

    def packed_available(self) -> bool:
        """Whether the fast path can run here: the states fit one int64 code and numpy is
        importable."""
        return self.fits_int64 and numpy_available()


class CodeSet:
    """A set of non-negative int64 codes, queried and filled a whole array at a time.

    An open-addressing hash table (Fibonacci hashing, linear probing, at most half full) in one
    numpy array: finding a code costs about one random memory access, where a binary search of
    a sorted visited array cost one per level of the search (the packed engine spent most of
    its time there). Memory: 8 to 32 bytes per code (the table doubles when it is half full).
    The codes are exact, so unlike TLC's fingerprints two states never collide.
    """

    _EMPTY = -1
    _MULTIPLIER = 0x9E3779B97F4A7C15  # 2**64 / golden ratio, odd

    def __init__(self, capacity: int = 1 << 12) -> None:
        import numpy as np

        self._bits = max(4, (max(capacity, 1) - 1).bit_length() + 1)
        self._table = np.full(1 << self._bits, self._EMPTY, dtype=np.int64)
        self.size = 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the table."""
        return int(self._table.nbytes)

    def _slots(self, codes: Codes) -> Codes:
        import numpy as np

        # Views, not copies: the codes are non-negative, so their bits read the same unsigned.
        mixed = codes.view(np.uint64) * np.uint64(self._MULTIPLIER)  # wraps modulo 2**64
        mixed >>= np.uint64(64 - self._bits)
        return mixed.view(np.int64)

    def _reserve(self, more: int) -> None:
        """Grow (and rehash) so that ``more`` codes can be added with the table half full."""
        import numpy as np

        if 2 * (self.size + more) <= self._table.size:
            return
        held = self._table[self._table != self._EMPTY]
        self._bits = (2 * (self.size + more)).bit_length() + 1
        self._table = np.full(1 << self._bits, self._EMPTY, dtype=np.int64)
        self._place(held)

    def _place(self, codes: Codes) -> None:
        """Put distinct codes, none of them in the table, into it."""
        import numpy as np

        table, mask = self._table, (1 << self._bits) - 1
        slot, pending = self._slots(codes), codes
        while pending.size:
            free = np.take(table, slot) == self._EMPTY  # np.take: over twice table[slot]'s speed
            table[slot[free]] = pending[free]  # codes racing for one slot: one of them wins
            won = free.copy()
            won[free] = np.take(table, slot[free]) == pending[free]
            pending, slot = pending[~won], (slot[~won] + 1) & mask

    def contains(self, codes: Codes) -> Mask:
        """For each code, whether the set holds it."""
        import numpy as np

        table, mask = self._table, (1 << self._bits) - 1
        slot = self._slots(codes)
        held = np.take(table, slot)
        found: Mask = held == codes
        # Most codes are settled by their first slot; the few that collided probe on.
        where = np.flatnonzero((held != self._EMPTY) & ~found)
        slot, wanted = (slot[where] + 1) & mask, codes[where]
        while where.size:
            held = np.take(table, slot)
            hit = held == wanted
            found[where[hit]] = True
            go_on = (held != self._EMPTY) & ~hit
            where, wanted = where[go_on], wanted[go_on]
            slot = (slot[go_on] + 1) & mask
        return found

    def add(self, codes: Codes) -> None:
        """Add ``codes``: distinct, none of them in the set already."""
        self._reserve(int(codes.size))
        self._place(codes)
        self.size += int(codes.size)


def _joined(parts: list[tuple[Codes, Codes]]) -> tuple[Codes, Codes]:
    """Pairs of arrays, each concatenated (one pair is returned as it is, not copied)."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    return (np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts]))


def check_packed(spec: PackedSpec, max_states: int | None = None, *, workers: int = 1,
                 progress: ProgressFn | None = None) -> CheckResult:
    """Breadth-first search over packed codes, one numpy pass per action per level.

    With ``workers`` > 1 each level is spread over that many threads (numpy's sorting, searching
    and arithmetic release the interpreter lock): the frontier is cut into contiguous slices,
    one per thread, for the successors, and the visited set into classes by code modulo
    ``workers``, each thread owning one class, for the duplicate search and the visited-set
    update. Keys carry the global frontier position, so the merged result is the one ``workers=1``
    computes: the same states in the same order, counts, depth and trace. ``progress`` is called
    after each level.
    """
    import numpy as np

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    started = time.perf_counter()
    names = [name for name, _ in spec.invariants()]
    action_names = [name for name, _ in spec.actions()]
    n_actions = max(len(action_names), 1)
    generated = 0
    limit = max_states if max_states is not None else -1
    pool = ThreadPoolExecutor(workers) if workers > 1 else None

    def each(fn: Callable[[int], _T], n: int) -> list[_T]:
        """``fn(i)`` for i in range(n), on the pool's threads when there is one."""
        return list(pool.map(fn, range(n))) if pool is not None else [fn(i) for i in range(n)]

    # Per BFS level: the codes in discovery order, and for each its parent's position in the
    # previous level and the action index that produced it (the BFS tree, for traces).
    level_codes: list[Codes] = []
    level_parent: list[Codes] = []
    level_action: list[npt.NDArray[np.int16]] = []

    def trace(level: int, index: int) -> list[tuple[str, State]]:
        steps: list[tuple[str, State]] = []
        while level >= 0:
            code = int(level_codes[level][index])
            action = int(level_action[level][index])
            steps.append((action_names[action] if action >= 0 else INITIAL, spec.decode(code)))
            index = int(level_parent[level][index])
            level -= 1
        steps.reverse()
        return steps

    def result(violation: Counterexample | None = None, complete: bool = True,
               left: int = 0) -> CheckResult:
        depth = len(violation) if violation is not None else len(level_codes)
        return CheckResult(spec.name, generated, distinct, depth, time.perf_counter() - started,
                           violation, complete, "packed", left)

    def first_bad(codes: Codes) -> tuple[int, str] | None:
        """Position of the first code violating an invariant, and that invariant's name."""
        if codes.size == 0:
            return None
        verdicts = spec.packed_invariants(codes)
        assert [n for n, _ in verdicts] == names, "packed_invariants must mirror invariants()"
        best: tuple[int, str] | None = None
        for name, ok in verdicts:
            bad = np.flatnonzero(~ok)
            if bad.size and (best is None or int(bad[0]) < best[0]):
                best = (int(bad[0]), name)  # earlier invariants win ties, as in the .cfg order
        return best

    # Initial states: few, so handled one by one, exactly as the generic engine does.
    init_codes: list[int] = []
    seen_init: set[int] = set()
    distinct = 0
    for s in spec.init_states():
        generated += 1
        code = spec.encode(s)
        arr = np.array([code], dtype=np.int64)
        in_model = spec.packed_constraint(arr)
        if in_model is None or bool(in_model[0]):
            if code in seen_init:
                continue
            seen_init.add(code)
            init_codes.append(code)
        bad = first_bad(arr)
        if bad is not None:
            distinct = len(init_codes)
            return result(Counterexample(bad[1], [(INITIAL, s)]))
    frontier = np.array(init_codes, dtype=np.int64)
    # The visited set, one hash set per owner class (code modulo ``workers``).
    visited = [CodeSet(max(frontier.size, 1 << 12)) for _ in range(workers)]
    for o in range(workers):
        visited[o].add(frontier[frontier % workers == o])
    distinct = int(frontier.size)
    if frontier.size:
        level_codes.append(frontier)
        level_parent.append(np.full(frontier.size, -1, dtype=np.int64))
        level_action.append(np.full(frontier.size, -1, dtype=np.int16))
        if progress is not None:
            progress(SearchProgress(1, generated, distinct, int(frontier.size),
                                    time.perf_counter() - started))

    try:
        while frontier.size:
            cuts = [frontier.size * i // workers for i in range(workers + 1)]

            def expand(i: int, frontier: Codes = frontier, cuts: list[int] = cuts
                       ) -> list[Branch]:
                lo = cuts[i]
                return [b._replace(parents=b.parents.astype(np.int64) + lo) for b in
                        spec.packed_successors(frontier[lo:cuts[i + 1]])]

            parts = each(expand, workers)
            if not any(parts):
                break
            n_branches = max(b.branch for part in parts for b in part) + 1
            stride = n_actions * n_branches

            def sift(i: int, parts: list[list[Branch]] = parts, stride: int = stride,
                     n_branches: int = n_branches
                     ) -> tuple[int, list[tuple[Codes, Codes]], Codes, Codes]:
                """Slice ``i``'s successors: how many, the in-model ones by owner class (codes,
                keys) and the ones outside the constraint in key order (codes, keys)."""
                branches = parts[i]
                if not branches:
                    empty = np.zeros(0, dtype=np.int64)
                    return 0, [(empty, empty)] * workers, empty, empty
                keys = np.concatenate([b.parents * stride + b.action * n_branches + b.branch
                                       for b in branches])
                codes = np.concatenate([b.codes.astype(np.int64, copy=False) for b in branches])
                in_model = spec.packed_constraint(codes)
                if in_model is None:
                    cand_codes, cand_keys = codes, keys
                    out_codes, out_keys = codes[:0], keys[:0]
                else:
                    cand_codes, cand_keys = codes[in_model], keys[in_model]
                    out_order = np.argsort(keys[~in_model])  # generation order
                    out_codes, out_keys = codes[~in_model][out_order], keys[~in_model][out_order]
                if workers == 1:
                    return int(codes.size), [(cand_codes, cand_keys)], out_codes, out_keys
                owner = cand_codes % workers
                by_owner = [(cand_codes[owner == o], cand_keys[owner == o])
                            for o in range(workers)]
                return int(codes.size), by_owner, out_codes, out_keys

            sifted = each(sift, workers)
            generated += sum(n for n, _, _, _ in sifted)
            # Slices are contiguous in the frontier, so their keys are ordered slice by slice.
            out_codes = np.concatenate([oc for _, _, oc, _ in sifted])
            out_keys = np.concatenate([ok for _, _, _, ok in sifted])

            def fresh(o: int, sifted: list[tuple[int, list[tuple[Codes, Codes]], Codes, Codes]]
                      = sifted) -> tuple[Codes, Codes]:
                """Owner class ``o``'s new states, each at its first occurrence in generation
                order (its least key), in that order: the order one-at-a-time expansion
                discovers them in."""
                cand_codes, cand_keys = _joined([by_owner[o] for _, by_owner, _, _ in sifted])
                # Most successors were seen before: drop them with one hash lookup each, so
                # that only the few left are sorted (sorting every successor of a level, then a
                # binary search of each in the sorted visited states, dominated the run time).
                unseen = ~visited[o].contains(cand_codes)
                cand_codes, cand_keys = cand_codes[unseen], cand_keys[unseen]
                by_code = np.lexsort((cand_keys, cand_codes))
                cand_codes, cand_keys = cand_codes[by_code], cand_keys[by_code]
                first = np.ones(cand_codes.size, dtype=bool)
                first[1:] = cand_codes[1:] != cand_codes[:-1]
                by_discovery = np.argsort(cand_keys[first])
                return cand_codes[first][by_discovery], cand_keys[first][by_discovery]

            owned = each(fresh, workers)
            if workers == 1:
                new, new_keys = owned[0]
            else:
                new_keys = np.concatenate([k for _, k in owned])
                merge = np.argsort(new_keys)  # keys are unique: one order, as with one worker
                new, new_keys = np.concatenate([c for c, _ in owned])[merge], new_keys[merge]

            truncated = False
            if limit >= 0 and distinct + new.size >= limit:
                keep = limit - distinct
                new, new_keys = new[:keep], new_keys[:keep]
                truncated = True
            cutoff = int(new_keys[-1]) if truncated and new.size else None

            # The first violation in generation order: a new in-model state (checked once, when
            # first found) or any occurrence of a state outside the constraint (checked every
            # time).
            bad_new = first_bad(new)
            if cutoff is not None:
                keep_out = out_keys <= cutoff
                out_codes, out_keys = out_codes[keep_out], out_keys[keep_out]
            bad_out = first_bad(out_codes)
            parent_of = new_keys // stride
            action_of = ((new_keys // n_branches) % n_actions).astype(np.int16)
            if bad_new is not None or bad_out is not None:
                key_new = int(new_keys[bad_new[0]]) if bad_new is not None else None
                key_out = int(out_keys[bad_out[0]]) if bad_out is not None else None
                level_codes.append(new)
                level_parent.append(parent_of)
                level_action.append(action_of)
                depth = len(level_codes) - 1
                first_key = min(k for k in (key_new, key_out) if k is not None)
                distinct += int(np.count_nonzero(new_keys <= first_key))
                if key_out is None or (key_new is not None and key_new < key_out):
                    assert bad_new is not None
                    return result(Counterexample(bad_new[1], trace(depth, bad_new[0])))
                assert bad_out is not None and key_out is not None
                steps = trace(depth - 1, key_out // stride)
                action = (key_out // n_branches) % n_actions
                steps.append((action_names[action], spec.decode(int(out_codes[bad_out[0]]))))
                return result(Counterexample(bad_out[1], steps))

            distinct += int(new.size)
            if new.size:
                level_codes.append(new)
                level_parent.append(parent_of)
                level_action.append(action_of)

                def remember(o: int, owned: list[tuple[Codes, Codes]] = owned,
                             cutoff: int | None = cutoff) -> None:
                    added = owned[o][0] if cutoff is None else owned[o][0][owned[o][1] <= cutoff]
                    visited[o].add(added)

                each(remember, workers)
            if progress is not None and new.size:
                progress(SearchProgress(len(level_codes), generated, distinct, int(new.size),
                                        time.perf_counter() - started))
            if truncated:
                return result(complete=False, left=int(new.size))
            frontier = new
        return result()
    finally:
        if pool is not None:
            pool.shutdown()
