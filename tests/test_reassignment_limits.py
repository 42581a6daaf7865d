"""The reassignment document's limits and its refusals, at their boundaries: a document of
exactly the largest size or depth allowed is parsed, one character or one level more is refused
with INVALID_REQUEST and a message saying which limit; brackets inside strings and siblings at
one depth do not count as nesting; every refusal carries its code, the field it is about and
what is wrong."""

from __future__ import annotations

import json

import pytest

from logwright.controller.reassignment import (
    MAX_JSON_CHARS,
    MAX_JSON_DEPTH,
    MAX_PARTITIONS_PER_REASSIGNMENT,
    ReassignmentError,
    parse_reassignment,
)
from logwright.errors import Errors


def _refused(text: object) -> ReassignmentError:
    with pytest.raises(ReassignmentError) as info:
        parse_reassignment(text)  # type: ignore[arg-type]
    assert info.value.error is Errors.INVALID_REQUEST
    return info.value


def _plan(n: int = 1) -> dict[str, object]:
    return {"version": 1, "partitions": [{"topic": "t", "partition": p, "replicas": [1]}
                                          for p in range(n)]}


def _nested(depth: int) -> str:
    """A plan whose replica list nests ``depth`` levels down in all (the object, the partition
    list and an entry are 3; the replica list is the 4th)."""
    inner = "[1]"
    for _ in range(depth - 4):
        inner = f"[{inner}]"
    return '{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": ' \
           f'{inner}}}]}}'


def test_the_size_limit_is_exact() -> None:
    text = json.dumps(_plan())
    at_limit = text + " " * (MAX_JSON_CHARS - len(text))
    assert len(at_limit) == MAX_JSON_CHARS
    assert len(parse_reassignment(at_limit).moves) == 1
    e = _refused(at_limit + " ")
    assert e.path == "" and f"{MAX_JSON_CHARS + 1} characters long" in e.problem
    assert str(MAX_JSON_CHARS) in str(e)


def test_the_depth_limit_is_exact_and_counts_only_open_brackets_outside_strings() -> None:
    # At the limit the depth check passes; the parser then finds the replica list malformed
    # (a list of lists), which is a different refusal.
    e = _refused(_nested(MAX_JSON_DEPTH))
    assert "deep" not in e.problem and e.path.startswith("partitions[0]")
    e = _refused(_nested(MAX_JSON_DEPTH + 1))
    assert e.path == "" and f"more than {MAX_JSON_DEPTH} deep" in e.problem
    assert "at character" in e.problem
    # A closing bracket takes off one level, no more and no less.
    after_a_sibling = "[" * (MAX_JSON_DEPTH - 1) + "[1]," + "[[1]]" + "]" * (MAX_JSON_DEPTH - 1)
    assert "deep" in _refused(after_a_sibling).problem
    after_many = "[" + "[1]," * 20 + "[" * MAX_JSON_DEPTH + "1" + "]" * MAX_JSON_DEPTH + "]"
    assert "deep" in _refused(after_many).problem
    # Siblings at the same depth, however many, and brackets inside strings do not nest.
    many = json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": p, "replicas": [1], "log_dirs": ["any"]}
        for p in range(4 * MAX_JSON_DEPTH)]})
    assert len(parse_reassignment(many).moves) == 4 * MAX_JSON_DEPTH
    quoted = json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/" + "[{" * 40]}]})
    assert parse_reassignment(quoted).moves[0].log_dirs == ("/" + "[{" * 40,)


def test_the_partition_count_limit_is_exact() -> None:
    plan = _plan(MAX_PARTITIONS_PER_REASSIGNMENT)
    assert len(parse_reassignment(json.dumps(plan)).moves) == MAX_PARTITIONS_PER_REASSIGNMENT
    plan["partitions"].append(  # type: ignore[attr-defined]
        {"topic": "u", "partition": 0, "replicas": [1]})
    e = _refused(json.dumps(plan))
    assert e.path == "partitions"
    assert f"{MAX_PARTITIONS_PER_REASSIGNMENT + 1} entries" in e.problem
    assert str(MAX_PARTITIONS_PER_REASSIGNMENT) in e.problem


@pytest.mark.parametrize("text, path, words", [
    (b'{"version": 1}', "", "must be JSON text, not bytes"),
    (None, "", "must be JSON text, not null"),
    ("{", "", "invalid JSON at line 1"),
    ("1" * 5000, "", "invalid JSON"),
    ("[]", "", "top level must be an object"),
    ('{"partitions": []}', "version", "missing"),
    ('{"version": 2, "partitions": []}', "version", "supported: 1"),
    ('{"version": 1}', "partitions", "missing"),
    ('{"version": 1, "partitions": []}', "partitions", "is empty"),
])
def test_every_refusal_names_its_field_and_what_is_wrong(text: object, path: str,
                                                          words: str) -> None:
    e = _refused(text)
    assert e.path == path and words in e.problem, (e.path, e.problem)
    assert str(e).endswith(e.problem)


def _one(**fields: object) -> str:
    entry: dict[str, object] = {"topic": "t", "partition": 0, "replicas": [1]}
    entry.update(fields)
    return json.dumps({"version": 1, "partitions": [entry]})


def test_a_missing_or_unknown_field_is_named_with_what_is_allowed() -> None:
    e = _refused(json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0}]}))
    assert e.path == "partitions[0].replicas" and e.problem == "missing"
    e = _refused(json.dumps({"version": 1, "partitions": [], "extra": 1}))
    assert e.path == "extra", e.path
    assert e.problem == "unknown field; expected one of partitions, version"
    e = _refused(_one(replica=[1]))
    assert e.path == "partitions[0].replica" and "expected one of log_dirs, partition" in e.problem
