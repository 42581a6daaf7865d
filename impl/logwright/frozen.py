"""A cheaper ``__init__`` for frozen dataclasses built on every simulated message.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__`` (its
own ``__setattr__`` refuses), about 0.1 us a field; the messages of replication traffic are
built several times per simulated event. ``fast_init`` gives such a class an ``__init__`` with
the same signature (parameters, defaults, annotations) and the same effect that stores the
fields straight into the instance's ``__dict__``, then calls ``__post_init__`` if the class has
one. The class stays frozen (assignment still raises ``FrozenInstanceError``); equality,
hashing, ``repr`` and ``dataclasses.replace`` are the dataclass's own.

Only plain cases are rewritten: a class with slots, ``InitVar`` or keyword-only fields, a field
left out of ``__init__``, or a field shadowed by a descriptor of the class keeps the generated
``__init__`` (checked when the class is decorated, so nothing silently differs).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fast_init"]

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass ``cls`` an ``__init__`` that fills ``__dict__`` directly."""
    params = getattr(cls, "__dataclass_params__", None)
    assert params is not None and params.frozen, f"{cls.__name__}: not a frozen dataclass"
    assert "__slots__" not in cls.__dict__, f"{cls.__name__}: a slots class has no __dict__"
    every = cls.__dataclass_fields__  # type: ignore[attr-defined]
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    assert len(fields) == len(every), f"{cls.__name__}: InitVar or ClassVar pseudo-fields"
    # Every name the generated code uses besides the fields' starts with _fast_init_, which
    # no field's may (a parameter would shadow it).
    namespace: dict[str, Any] = {"_fast_init_factory": _FactorySentinel()}
    params_src: list[str] = []
    body: list[str] = ["    _fast_init_dict = self.__dict__"]
    for i, f in enumerate(fields):
        assert not f.name.startswith("_fast_init_"), f"{cls.__name__}.{f.name}: a reserved name"
        assert f.init and not f.kw_only, f"{cls.__name__}.{f.name}: not a plain init field"
        assert not hasattr(getattr(cls, f.name, None), "__set__"), (
            f"{cls.__name__}.{f.name}: shadowed by a descriptor")
        if f.default is not dataclasses.MISSING:
            namespace[f"_fast_init_default_{i}"] = f.default
            params_src.append(f"{f.name}=_fast_init_default_{i}")
            body.append(f"    _fast_init_dict[{f.name!r}] = {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_fast_init_make_{i}"] = f.default_factory
            params_src.append(f"{f.name}=_fast_init_factory")
            body.append(f"    _fast_init_dict[{f.name!r}] = (_fast_init_make_{i}() if {f.name} "
                        f"is _fast_init_factory else {f.name})")
        else:
            params_src.append(f.name)
            body.append(f"    _fast_init_dict[{f.name!r}] = {f.name}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params_src)}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)
    init = namespace["__init__"]
    generated = cls.__dict__["__init__"]
    init.__annotations__ = dict(generated.__annotations__)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = generated.__doc__
    setattr(cls, "__init__", init)  # noqa: B010 - replacing the generated method
    return cls


class _FactorySentinel:
    """The default of a field with a default factory (as the generated ``__init__`` has)."""

    def __repr__(self) -> str:
        return "<factory>"
