"""``logwright.frozen.fast_init``: a frozen dataclass keeps what its generated ``__init__`` gave
it (signature, defaults, factories, ``__post_init__``, frozenness, equality, hashing, repr,
``dataclasses.replace``), and the cases it does not handle are refused when the class is made.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logwright.broker.effects import ArmTask, Call, CancelTask
from logwright.frozen import fast_init
from logwright.protocol import (
    FetchPartition,
    FetchPartitionData,
    FetchRequest,
    FetchResponse,
    ProducePartitionResult,
    ProduceRequest,
    ProduceResponse,
)
from logwright.protocol.effects import Send


@dataclass(frozen=True)
class _Base:
    a: int


def _twins() -> tuple[type[Any], type[Any]]:
    """The same frozen dataclass twice, the second given ``fast_init``."""

    def make() -> type[Any]:
        @dataclass(frozen=True)
        class Sample(_Base):
            b: str
            c: int = -1
            d: tuple[int, ...] = field(default_factory=tuple)  # named as a local might be
            e: bytes = b""

            def __post_init__(self) -> None:
                if self.c < -1:
                    raise ValueError(f"c is {self.c}")
        return Sample

    return make(), fast_init(make())


PLAIN, FAST = _twins()


def test_the_signature_is_the_generated_one() -> None:
    assert str(inspect.signature(FAST)) == str(inspect.signature(PLAIN))
    assert FAST.__init__.__annotations__ == PLAIN.__init__.__annotations__


@given(a=st.integers(), b=st.text(max_size=5), c=st.integers(-3, 3),
       d=st.none() | st.tuples(st.integers()), e=st.none() | st.binary(max_size=3))
def test_the_same_instance_as_the_generated_init(a: int, b: str, c: int,
                                                 d: tuple[int, ...] | None,
                                                 e: bytes | None) -> None:
    kwargs: dict[str, Any] = {"c": c}
    if d is not None:
        kwargs["d"] = d
    if e is not None:
        kwargs["e"] = e
    try:
        plain = PLAIN(a, b, **kwargs)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)):
            FAST(a, b, **kwargs)
        return
    fast = FAST(a, b, **kwargs)
    assert vars(fast) == vars(plain)
    assert repr(fast).replace("FAST", "PLAIN") == repr(plain).replace("FAST", "PLAIN")
    assert fast == FAST(a, b, **kwargs) and hash(fast) == hash(FAST(a, b, **kwargs))
    assert hash(fast) == hash(plain)  # the same field values hash alike
    assert dataclasses.replace(fast, a=a + 1) == FAST(a + 1, b, **kwargs)
    with pytest.raises(FrozenInstanceError):
        fast.a = 1


def test_a_default_factory_makes_a_fresh_value_each_time() -> None:
    @fast_init
    @dataclass(frozen=True)
    class Holder:
        items: list[int] = field(default_factory=list)

    first, second = Holder(), Holder()
    assert first.items == [] and first.items is not second.items
    given_list = [1]
    assert Holder(given_list).items is given_list


def test_missing_arguments_fail_as_before() -> None:
    with pytest.raises(TypeError):
        FAST(1)
    with pytest.raises(TypeError):
        PLAIN(1)


def test_cases_it_does_not_handle_are_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclass(frozen=True)
    class KeywordOnly:
        a: int = field(kw_only=True)

    @dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: InitVar[int]

    @dataclass(frozen=True)
    class NotInInit:
        a: int
        b: int = field(init=False, default=0)

    @dataclass
    class NotFrozen:
        a: int

    for cls in (Slotted, KeywordOnly, WithInitVar, NotInInit, NotFrozen):
        with pytest.raises(AssertionError):
            fast_init(cls)


@pytest.mark.parametrize("cls", [FetchPartition, FetchRequest, FetchPartitionData, FetchResponse,
                                 ProduceRequest, ProducePartitionResult, ProduceResponse, Send,
                                 ArmTask, Call, CancelTask])
def test_the_classes_given_it_keep_their_fields_as_parameters(cls: type[Any]) -> None:
    """Every field a parameter, in order, with its default (a factory shows as <factory>)."""
    params = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default is f.default
        elif f.default_factory is not dataclasses.MISSING:
            assert repr(p.default) == "<factory>"
        else:
            assert p.default is inspect.Parameter.empty


def test_post_init_checks_still_run() -> None:
    with pytest.raises(AssertionError, match="in the past"):
        ArmTask("timer", -1, lambda: None)
    with pytest.raises(AssertionError, match="positive timeout"):
        Call("broker-1", lambda cid: ProduceResponse(cid), lambda message: None, 0)


def test_a_field_may_not_take_a_name_of_the_generated_code() -> None:
    @dataclass(frozen=True)
    class Clash:
        _fast_init_dict: int

    with pytest.raises(AssertionError, match="reserved"):
        fast_init(Clash)
