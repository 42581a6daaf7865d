"""A reader of TLC configuration (.cfg) files, so that a Python twin runs on the same constants.

What it upholds: the Python model and TLC read one file, so they cannot silently check different
models. It understands what TLC's configuration language offers for our modules:

* ``CONSTANT`` / ``CONSTANTS`` assignments ``Name = value``, the value an integer (negative too),
  ``TRUE``/``FALSE``, a string ``"..."``, a model value (a bare identifier, e.g. ``Bug = none`` or
  ``r1``), a set ``{...}`` or a tuple ``<<...>>`` of those; and substitutions ``Name <- Op``;
* ``INIT``, ``NEXT``, ``SPECIFICATION``, ``VIEW``, ``ALIAS`` (one name each);
* ``INVARIANT(S)``, ``PROPERTY`` / ``PROPERTIES``, ``CONSTRAINT(S)``, ``ACTION_CONSTRAINT(S)``,
  ``SYMMETRY``, ``POSTCONDITION`` (lists of names);
* ``CHECK_DEADLOCK TRUE|FALSE``;
* ``\\*`` line comments and ``(* ... *)`` block comments.

:func:`parse_cfg` returns a plain dict (see its docstring); anything else is a :class:`CfgError`
naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class CfgError(ValueError):
    """A .cfg file outside TLC's configuration language (or beyond what this reader knows)."""


@dataclass(frozen=True, order=True)
class ModelValue:
    """A TLC model value: an uninterpreted constant equal only to itself (``Bug = none``)."""

    name: str

    def __str__(self) -> str:
        return self.name


CfgValue = int | bool | str | ModelValue | frozenset[Any] | tuple[Any, ...]
"""What a constant can be assigned in a .cfg file."""

_LIST_SECTIONS = {
    "INVARIANT": "invariants", "INVARIANTS": "invariants",
    "PROPERTY": "properties", "PROPERTIES": "properties",
    "CONSTRAINT": "constraints", "CONSTRAINTS": "constraints",
    "ACTION_CONSTRAINT": "action_constraints", "ACTION_CONSTRAINTS": "action_constraints",
    "SYMMETRY": "symmetry", "POSTCONDITION": "postconditions",
}
_ONE_NAME_SECTIONS = {"INIT": "init", "NEXT": "next", "SPECIFICATION": "specification",
                      "VIEW": "view", "ALIAS": "alias"}
_CONSTANT_SECTIONS = {"CONSTANT", "CONSTANTS"}
_KEYWORDS = set(_LIST_SECTIONS) | set(_ONE_NAME_SECTIONS) | _CONSTANT_SECTIONS | {"CHECK_DEADLOCK"}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>\\\*[^\n]*)
  | (?P<block>\(\*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<int>-?\d+)
  | (?P<op><-|<<|>>|[{}=,])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_!]*)
""", re.VERBOSE)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    line: int


def _tokenize(text: str, path: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CfgError(f"{path}:{line}: unexpected {text[pos:pos + 20]!r}")
        kind = m.lastgroup or ""
        if kind == "block":  # block comments nest in TLA+
            depth, i = 1, m.end()
            while depth and i < len(text):
                if text.startswith("(*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*)", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            if depth:
                raise CfgError(f"{path}:{line}: unterminated (* comment")
            line += text.count("\n", pos, i)
            pos = i
            continue
        if kind not in ("ws", "comment"):
            toks.append(_Tok(kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return toks


class _Parser:
    def __init__(self, toks: list[_Tok], path: str) -> None:
        self.toks, self.i, self.path = toks, 0, path

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise CfgError(f"{self.path}: unexpected end of file")
        self.i += 1
        return tok

    def error(self, tok: _Tok, what: str) -> CfgError:
        return CfgError(f"{self.path}:{tok.line}: {what}, got {tok.text!r}")

    def at_name(self) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "ident" and tok.text not in _KEYWORDS

    def name(self) -> str:
        tok = self.next()
        if tok.kind != "ident" or tok.text in _KEYWORDS:
            raise self.error(tok, "expected a name")
        return tok.text

    def value(self) -> CfgValue:
        tok = self.next()
        if tok.kind == "int":
            return int(tok.text)
        if tok.kind == "string":
            return bytes(tok.text[1:-1], "utf-8").decode("unicode_escape")
        if tok.kind == "ident" and tok.text in ("TRUE", "FALSE"):
            return tok.text == "TRUE"
        if tok.kind == "ident" and tok.text not in _KEYWORDS:
            return ModelValue(tok.text)
        if tok.text in ("{", "<<"):
            close = "}" if tok.text == "{" else ">>"
            items: list[CfgValue] = []
            while True:
                nxt = self.peek()
                if nxt is not None and nxt.text == close:
                    self.next()
                    break
                items.append(self.value())
                sep = self.next()
                if sep.text == close:
                    break
                if sep.text != ",":
                    raise self.error(sep, f"expected ',' or {close!r}")
            return frozenset(items) if close == "}" else tuple(items)
        raise self.error(tok, "expected a value")


def parse_cfg(path: str | Path) -> dict[str, Any]:
    """Read a TLC .cfg file.

    Returns a dict with keys ``constants`` (name -> :data:`CfgValue`), ``substitutions``
    (name -> operator name, from ``Name <- Op``), ``init``, ``next``, ``specification``, ``view``,
    ``alias`` (a name or None), ``invariants``, ``properties``, ``constraints``,
    ``action_constraints``, ``symmetry``, ``postconditions`` (lists of names, in file order) and
    ``check_deadlock`` (bool or None).
    """
    p = Path(path)
    parser = _Parser(_tokenize(p.read_text(encoding="utf-8"), str(p)), str(p))
    out: dict[str, Any] = {"constants": {}, "substitutions": {}, "check_deadlock": None}
    out.update(dict.fromkeys(_ONE_NAME_SECTIONS.values()))
    out.update({key: [] for key in _LIST_SECTIONS.values()})
    while parser.peek() is not None:
        tok = parser.next()
        if tok.kind != "ident" or tok.text not in _KEYWORDS:
            raise parser.error(tok, "expected a section keyword (CONSTANTS, INIT, INVARIANT...)")
        if tok.text in _CONSTANT_SECTIONS:
            while parser.at_name():
                name = parser.name()
                op = parser.next()
                if op.text == "=":
                    out["constants"][name] = parser.value()
                elif op.text == "<-":
                    out["substitutions"][name] = parser.name()
                else:
                    raise parser.error(op, f"expected '=' or '<-' after {name}")
        elif tok.text in _ONE_NAME_SECTIONS:
            key = _ONE_NAME_SECTIONS[tok.text]
            if out[key] is not None:
                raise parser.error(tok, f"{tok.text} given twice")
            out[key] = parser.name()
        elif tok.text == "CHECK_DEADLOCK":
            value = parser.value()
            if not isinstance(value, bool):
                raise CfgError(f"{p}:{tok.line}: CHECK_DEADLOCK takes TRUE or FALSE")
            out["check_deadlock"] = value
        else:
            names = out[_LIST_SECTIONS[tok.text]]
            if not parser.at_name():
                raise CfgError(f"{p}:{tok.line}: {tok.text} names nothing")
            while parser.at_name():
                names.append(parser.name())
    return out
