"""The produce call's check of its values and keys: every item bytes (a subclass too) or None,
else InvalidArgument naming the first bad index; its fast path (one pass over the item types)
answers exactly as the item-by-item loop it stands in front of."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.cluster.validate import InvalidArgument, _record_parts


class _Bytes(bytes):
    pass


def _reference(name: str, items: list[object]) -> list[object]:
    out = []
    for i, item in enumerate(items):
        if item is not None and not isinstance(item, bytes):
            raise InvalidArgument(f"{name}[{i}] must be bytes or None, not "
                                  f"{type(item).__name__}")
        out.append(item)
    return out


_items = st.lists(st.none() | st.binary(max_size=3) | st.binary(max_size=3).map(_Bytes)
                  | st.sampled_from([bytearray(b"a"), "s", 1, memoryview(b"m"), True]))


@given(items=_items)
def test_same_answer_as_the_item_by_item_check(items: list[object]) -> None:
    try:
        expected: object = _reference("values", items)
    except InvalidArgument as exc:
        expected = str(exc).split(" not ")[0]
    try:
        got: object = _record_parts("values", items)
    except InvalidArgument as exc:
        got = str(exc).split(" not ")[0]
    assert got == expected


def test_a_bytes_subclass_passes_and_a_bytearray_does_not() -> None:
    assert _record_parts("keys", (None, _Bytes(b"x"), b"y")) == [None, b"x", b"y"]
    with pytest.raises(InvalidArgument, match=r"values\[2\] must be bytes or None, not "):
        _record_parts("values", [b"a", None, bytearray(b"b"), "c"])
