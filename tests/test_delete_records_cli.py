"""``logwright delete-records`` (docs/delete-records.md): Kafka's JSON in, Kafka's lines out, a bad
file refused whole in one line with nothing deleted, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logwright import Cluster
from logwright.cli import main, parse_offset_json
from logwright.errors import InvalidArgument


@pytest.fixture(scope="module")
def data_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cluster") / "data"
    with Cluster.real(str(path)) as c:
        c.create_topic("t", partitions=2, replication_factor=3)
        c.produce("t", 0, [b"a", b"b", b"c", b"d", b"e"])
        c.produce("t", 1, [b"x", b"y"])
    return path


def _earliest(path: Path) -> list[int]:
    with Cluster.real(str(path)) as c:
        return [c.list_offsets("t", p, "earliest") for p in range(2)]


def _run(path: Path, tmp_path: Path, body: object) -> tuple[int, str, str]:
    file = tmp_path / "offsets.json"
    file.write_text(body if isinstance(body, str) else json.dumps(body))
    result = CliRunner().invoke(main, ["delete-records", str(path), "--offset-json-file",
                                       str(file)])
    return result.exit_code, result.stdout, result.stderr


BAD = [
    ("{", "not valid JSON"),
    ({"version": 1}, '"partitions": [...]'),
    ({"partitions": [], "version": 1}, "is empty"),
    ({"partitions": [{"topic": "t", "partition": 0}], "version": 1}, 'missing "offset"'),
    ({"partitions": [{"partition": 0, "offset": 1}], "version": 1}, 'missing "topic"'),
    ({"partitions": [{"topic": "t", "offset": 1}], "version": 1}, 'missing "partition"'),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1},
                     {"topic": "t", "partition": 0, "offset": 2}], "version": 1}, "named twice"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": -2}], "version": 1}, "below -1"),
    ({"partitions": [{"topic": "t", "partition": "0", "offset": 1}], "version": 1},
     "partition must be an integer"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1.5}], "version": 1},
     "offset must be an integer"),
    ({"partitions": [{"topic": "a/b", "partition": 0, "offset": 1}], "version": 1}, "bad topic"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1}], "version": 2},
     "unsupported version"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1},
                     {"topic": "t", "partition": 7, "offset": 1}], "version": 1},
     "partition t-7 does not exist"),
    ({"partitions": [{"topic": "t", "partition": 0, "offset": 1},
                     {"topic": "nope", "partition": 0, "offset": 1}], "version": 1},
     "partition nope-0 does not exist"),
]


def test_a_bad_file_gets_one_clear_error_and_changes_nothing(data_path: Path,
                                                             tmp_path: Path) -> None:
    for body, words in BAD:
        code, out, err = _run(data_path, tmp_path, body)
        assert (code, out) == (1, ""), (body, out, err)
        assert err.startswith("error: ") and err.count("\n") == 1 and words in err, (body, err)
    assert _earliest(data_path) == [0, 0]


def test_deletes_and_prints_kafkas_lines_then_an_error_line_with_exit_1(
        data_path: Path, tmp_path: Path) -> None:
    code, out, err = _run(data_path, tmp_path, {"partitions": [
        {"topic": "t", "partition": 0, "offset": 3},
        {"topic": "t", "partition": 1, "offset": -1}], "version": 1})
    assert (code, err) == (0, "")
    assert out == "partition: t-0\tlow_watermark: 3\npartition: t-1\tlow_watermark: 2\n"
    assert _earliest(data_path) == [3, 2]
    code, out, _ = _run(data_path, tmp_path, {"partitions": [
        {"topic": "t", "partition": 0, "offset": 99},
        {"topic": "t", "partition": 1, "offset": 1}], "version": 1})
    assert code == 1
    assert out == ("partition: t-0\terror: OFFSET_OUT_OF_RANGE (1)\n"
                   "partition: t-1\tlow_watermark: 2\n")          # never moves back
    assert _earliest(data_path) == [3, 2]


def test_no_cluster_or_no_file_is_one_error_line(tmp_path: Path) -> None:
    code, out, err = _run(tmp_path / "none", tmp_path, {"partitions": [
        {"topic": "t", "partition": 0, "offset": 1}]})
    assert (code, out) == (1, "") and "no logwright cluster here" in err
    result = CliRunner().invoke(main, ["delete-records", str(tmp_path), "--offset-json-file",
                                       str(tmp_path / "missing.json")])
    assert result.exit_code == 1 and "cannot read the offset JSON file" in result.stderr
    result = CliRunner().invoke(main, ["delete-records", str(tmp_path)])
    assert result.exit_code == 2 and "--offset-json-file" in result.stderr


def test_the_parser_keeps_the_files_order_and_accepts_a_missing_version() -> None:
    assert parse_offset_json(json.dumps({"partitions": [
        {"topic": "b", "partition": 1, "offset": -1},
        {"topic": "a", "partition": 0, "offset": 0}]})) == {("b", 1): -1, ("a", 0): 0}
    with pytest.raises(InvalidArgument):
        parse_offset_json("[]")
