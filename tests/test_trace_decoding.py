"""The trace checker's fast paths give what the plain code they replace gives.

``loads`` (orjson, with the standard library where orjson would differ) must decode every line
to the value ``json.loads`` gives, of the same types, and refuse what it refuses with the same
message; ``_canon`` (the canonical form a state's fingerprint is taken of) must build exactly
what the straightforward recursion builds, whatever the values nest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from logwright.verify.traces import _canon, decode_line, loads

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats()
           | st.text(alphabet=st.characters(codec="utf-8")))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)


def _decoded(text: str) -> str:
    """What ``json.loads`` makes of ``text``: the value's repr (types and NaN included), or
    the error's message."""
    try:
        return repr(json.loads(text))
    except json.JSONDecodeError as exc:
        return f"error: {exc.msg}"


def _fast(text: str, long_numbers: bool = True) -> str:
    try:
        return repr(loads(text, long_numbers))
    except json.JSONDecodeError as exc:
        return f"error: {exc.msg}"


@given(JSON, st.booleans())
def test_loads_decodes_every_value_as_the_standard_library(value: Any, ascii_only: bool) -> None:
    """Big integers stay integers (orjson would make them floats), NaN and Infinity (which
    ``json.dumps`` writes) are read, strings keep every character."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert _fast(text) == _decoded(text)


@given(st.integers(min_value=2**63 - 2, max_value=2**70) | st.integers(max_value=-(2**63) + 2,
                                                                       min_value=-(2**70)))
def test_integers_beyond_64_bits_stay_integers(n: int) -> None:
    text = json.dumps({"seq": n, "args": {"o": [n]}})
    assert _fast(text) == _decoded(text) == repr({"seq": n, "args": {"o": [n]}})


@given(st.text(alphabet=st.sampled_from('{}[]":,0123456789.eE-+ ntrufalsNIiy\\u')
               | st.characters(), max_size=40))
def test_loads_refuses_what_the_standard_library_refuses(text: str) -> None:
    """Any text: the same value, or an error with the standard library's message."""
    assert _fast(text) == _decoded(text)


def test_the_long_number_check_may_be_skipped_only_when_there_is_none() -> None:
    """``long_numbers=False`` is the caller's word that no run of 19 digits is in the line: with
    one there, orjson's float is what comes back (the reason the check exists)."""
    text = '{"o": 123456789012345678901}'
    assert _fast(text) == _decoded(text) == "{'o': 123456789012345678901}"
    assert _fast(text, long_numbers=False) == "{'o': 1.2345678901234568e+20}"
    assert _fast('{"o": 1234567890123456789}', long_numbers=False) == \
        "{'o': 1234567890123456789}"


def test_decode_line_puts_one_depth_limit_on_both_decoders() -> None:
    """64 levels pass; 65 are refused with the value kept (orjson decoded it); beyond orjson's
    own limit the standard library is asked and its RecursionError becomes the same reason."""
    for depth, kept in ((64, True), (65, True), (1000, True), (5000, False)):
        value, reason = decode_line("[" * depth + "]" * depth)
        assert bool(reason) == (depth > 64), depth
        assert (value is not None) == kept, depth
        if reason:
            assert reason == "not JSON of this schema: nested deeper than 64 levels"
    # Many brackets, shallow: the count alone does not refuse it.
    assert decode_line(json.dumps([[]] * 100)) == ([[]] * 100, "")


def _reference_canon(x: Any) -> Any:
    """The canonical form as first written: every set sorted by repr, every mapping in key
    order, every sequence a tuple, recursively."""
    if isinstance(x, (set, frozenset)):
        return ("set", sorted((_reference_canon(v) for v in x), key=repr))
    if isinstance(x, Mapping):
        return ("map", sorted(((_reference_canon(k), _reference_canon(v))
                               for k, v in x.items()), key=repr))
    if isinstance(x, (tuple, list)):
        return tuple(_reference_canon(v) for v in x)
    return x


class _Pair(NamedTuple):
    a: Any
    b: Any


HASHABLE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.frozensets(inner, max_size=4) | st.tuples(inner, inner)
    | st.builds(_Pair, inner, inner), max_leaves=10)
STATES = st.recursive(
    HASHABLE, lambda inner: st.lists(inner, max_size=4) | st.sets(HASHABLE, max_size=4)
    | st.dictionaries(HASHABLE, inner, max_size=3) | st.builds(_Pair, inner, inner),
    max_leaves=16)


@given(STATES)
def test_canon_builds_what_the_plain_recursion_builds(state: Any) -> None:
    """Same structure, same types, same order: the fingerprints (a hash of the repr) stay."""
    assert repr(_canon(state)) == repr(_reference_canon(state))
