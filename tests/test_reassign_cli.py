"""``logwright reassign-partitions`` and ``logwright log-dirs --describe`` (docs/jbod.md): Kafka's
JSON in, Kafka's lines and JSON out, a bad file refused whole with nothing changed, exit codes.

A real cluster in a temporary dir, as a user runs it. Until the broker's dir-move engine (issue
12's AlterReplicaLogDirs handler) is merged, a move within one broker never completes: the tests
that need it are skipped with that reason, and the rest test what this side owns.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from logwright import Cluster
from logwright.cli import EXIT_FAILED, EXIT_IN_PROGRESS, EXIT_OK, EXIT_USAGE, main


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    with Cluster.real(str(path)) as c:
        c.controller.create_topic("t", 2, 2, assignment=[[1, 2], [2, 3]])
        c.controller.create_topic("u", 1, 1, assignment=[[3]])
        assert c.run_until_idle(30_000)
        c.produce("t", 0, [b"a", b"b", b"c"])
        c.produce("t", 1, [b"x"])
    return path.resolve()


def d(path: Path, broker: int, n: int) -> str:
    return str(path / f"broker-{broker}" / f"d{n}")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def reassign(data: Path, tmp_path: Path, mode: str, body: object,
             timeout_ms: int | None = None) -> tuple[int, str, str]:
    file = tmp_path / "reassign.json"
    file.write_text(body if isinstance(body, str) else json.dumps(body))
    extra = [] if timeout_ms is None else ["--timeout-ms", str(timeout_ms)]
    return run("reassign-partitions", str(data), f"--{mode}", "--reassignment-json-file",
               str(file), *extra)


def plan(*entries: dict[str, object]) -> dict[str, object]:
    return {"version": 1, "partitions": list(entries)}


def snapshot(data: Path) -> tuple[object, ...]:
    with Cluster.real(str(data)) as c:
        return (tuple(c.partition_state("t", p) for p in range(2)),
                tuple(c.store.reassignments()),
                tuple(sorted(str(p.relative_to(data)) for p in data.glob("broker-*/d*/t-*"))))


# ---- a bad file changes nothing ----------------------------------------------------------------

BAD = [
    ("{", "invalid JSON at line 1"),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}),
     "log_dirs must parallel replicas"),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "d2"]}),
     "neither an absolute path nor \"any\""),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2], "log_dir": ["any", "any"]}),
     "unknown field"),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 7]}), "unknown broker id 7"),
    (plan({"topic": "t", "partition": 5, "replicas": [1, 2]}), "5 does not exist"),
    (plan({"topic": "t", "partition": 0, "replicas": [1, 2],
           "log_dirs": ["/nowhere/d1", "any"]}), "broker 1 has no log dir '/nowhere/d1'"),
]


@pytest.mark.parametrize("body, words", BAD)
def test_a_bad_file_gets_one_error_line_exit_1_and_changes_nothing(
        data: Path, tmp_path: Path, body: object, words: str) -> None:
    before = snapshot(data)
    # Good first entry: the whole file is refused, not just the bad partition.
    if isinstance(body, dict):
        # A copy: the parameter is shared by every run of the test in this process.
        body = copy.deepcopy(body)
        body["partitions"].insert(0, {"topic": "t", "partition": 1, "replicas": [3, 1]})
    code, out, err = reassign(data, tmp_path, "execute", body)
    assert code == EXIT_FAILED and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err
    assert "nothing was changed" in err
    assert snapshot(data) == before


def test_usage_errors_exit_2(data: Path, tmp_path: Path) -> None:
    file = tmp_path / "r.json"
    file.write_text(json.dumps(plan({"topic": "t", "partition": 0, "replicas": [1, 2]})))
    code, _, err = run("reassign-partitions", str(data), "--reassignment-json-file", str(file))
    assert code == EXIT_USAGE and "give --execute or --verify" in err
    code, _, err = run("reassign-partitions", str(data), "--execute")
    assert code == EXIT_USAGE and "--reassignment-json-file" in err
    code, _, err = run("reassign-partitions", str(tmp_path / "none"), "--verify",
                       "--reassignment-json-file", str(file))
    assert code == EXIT_FAILED and "no logwright cluster here" in err
    code, _, err = run("reassign-partitions", str(data), "--verify",
                       "--reassignment-json-file", str(tmp_path / "missing.json"))
    assert code == EXIT_FAILED and "cannot read the reassignment JSON file" in err


# ---- execute and verify ------------------------------------------------------------------------


def test_execute_prints_the_rollback_json_and_completes_a_move_to_a_named_dir(
        data: Path, tmp_path: Path) -> None:
    body = plan({"topic": "t", "partition": 1, "replicas": [3, 1],
                 "log_dirs": ["any", d(data, 1, 2)]})
    code, out, err = reassign(data, tmp_path, "execute", body)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines() == [
        "Current partition replica assignment", "",
        '{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,3],'
        '"log_dirs":["any","any"]}]}', "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Successfully started partition reassignment for t-1",
        "Successfully started log directory move for: t-1-1"]
    code, out, _ = reassign(data, tmp_path, "verify", body)
    assert code == EXIT_OK
    assert out.splitlines() == ["Status of partition reassignment:",
                                "Reassignment of partition t-1 is completed.",
                                "Reassignment of replica t-1-1 completed successfully."]
    with Cluster.real(str(data)) as c:
        assert c.partition_state("t", 1).replicas == (3, 1)
        assert [r.value for r in c.fetch("t", 1, 0)] == [b"x"]
    assert (data / "broker-1" / "d2" / "t-1").is_dir()
    # The rollback file the tool printed puts it back.
    code, out, _ = reassign(data, tmp_path, "execute", plan(
        {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]}))
    assert code == EXIT_OK
    with Cluster.real(str(data)) as c:
        assert c.partition_state("t", 1).replicas == (2, 3)


def test_verify_says_when_the_replicas_differ_and_nothing_is_pending(
        data: Path, tmp_path: Path) -> None:
    code, out, _ = reassign(data, tmp_path, "verify", plan(
        {"topic": "t", "partition": 0, "replicas": [1, 3]},
        {"topic": "t", "partition": 1, "replicas": [2, 3]}), timeout_ms=0)
    assert code == EXIT_FAILED
    assert out.splitlines() == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition t-0, but replica set is 1,2 rather "
        "than 1,3.",
        "Reassignment of partition t-1 is completed."]
    code, out, _ = reassign(data, tmp_path, "verify", plan(
        {"topic": "t", "partition": 0, "replicas": [1, 2],
         "log_dirs": [d(data, 1, 1), d(data, 2, 1)]}), timeout_ms=0)
    lines = out.splitlines()
    assert lines[1] == "Reassignment of partition t-0 is completed."
    for b in (1, 2):  # the topic was created with the dir of fewest logs: d1 on both
        assert f"Reassignment of replica t-0-{b} completed successfully." in lines
    assert code == EXIT_OK


def test_a_same_broker_move_reports_in_progress_until_the_broker_moves_it(
        data: Path, tmp_path: Path) -> None:
    with Cluster.real(str(data)) as c:
        epoch = c.partition_state("t", 0).leader_epoch
    body = plan({"topic": "t", "partition": 0, "replicas": [1, 2],
                 "log_dirs": [d(data, 1, 2), "any"]})
    code, out, err = reassign(data, tmp_path, "execute", body, timeout_ms=0)
    assert out.splitlines()[-1] == "Successfully started log directory move for: t-0-1"
    assert code == EXIT_IN_PROGRESS and "still in progress" in err
    # The move runs while a later command holds the cluster open.
    code, out, _ = reassign(data, tmp_path, "verify", body, timeout_ms=30_000)
    assert code == EXIT_OK and "Reassignment of replica t-0-1 completed successfully." in out
    with Cluster.real(str(data)) as c:
        assert c.partition_state("t", 0).leader_epoch == epoch, "a dir move bumps no epoch"


def test_a_same_broker_move_completes_and_verify_says_so(data: Path, tmp_path: Path) -> None:
    body = plan({"topic": "t", "partition": 0, "replicas": [1, 2],
                 "log_dirs": [d(data, 1, 2), d(data, 2, 2)]})
    code, _, _ = reassign(data, tmp_path, "execute", body)
    assert code == EXIT_OK
    code, out, _ = reassign(data, tmp_path, "verify", body)
    assert code == EXIT_OK and out.splitlines()[1:] == [
        "Reassignment of partition t-0 is completed.",
        "Reassignment of replica t-0-1 completed successfully.",
        "Reassignment of replica t-0-2 completed successfully."]
    with Cluster.real(str(data)) as c:
        assert [r.value for r in c.fetch("t", 0, 0)] == [b"a", b"b", b"c"]
    assert (data / "broker-1" / "d2" / "t-0").is_dir()
    assert not (data / "broker-1" / "d1" / "t-0").exists()


# ---- log-dirs --describe -----------------------------------------------------------------------


def test_log_dirs_describe_prints_kafkas_json_filtered_by_broker_and_topic(data: Path) -> None:
    code, out, err = run("log-dirs", "--describe", str(data))
    assert code == EXIT_OK
    assert err.splitlines() == ["Querying brokers for log directories information",
                                "Received log directory information from brokers 1,2,3"]
    doc = json.loads(out)
    assert doc["version"] == 1 and [b["broker"] for b in doc["brokers"]] == [1, 2, 3]
    found = {(b["broker"], p["partition"]) for b in doc["brokers"] for x in b["logDirs"]
             for p in x["partitions"]}
    assert found == {(1, "t-0"), (2, "t-0"), (2, "t-1"), (3, "t-1"), (3, "u-0")}
    for b in doc["brokers"]:
        for x in b["logDirs"]:
            assert x["error"] is None and x["totalBytes"] >= x["usableBytes"] >= 0
            for p in x["partitions"]:
                assert set(p) == {"partition", "size", "offsetLag", "isFuture"}
                assert p["offsetLag"] == 0 and p["isFuture"] is False
                assert (p["size"] > 0) == (p["partition"] != "u-0"), "u-0 holds no record"
    code, out, err = run("log-dirs", "--describe", str(data), "--broker-list", "3,2",
                         "--topic-list", "u")
    assert code == EXIT_OK and err.splitlines()[1].endswith("brokers 2,3")
    doc = json.loads(out)
    assert [b["broker"] for b in doc["brokers"]] == [2, 3]
    assert [p["partition"] for b in doc["brokers"] for x in b["logDirs"]
            for p in x["partitions"]] == ["u-0"]


@pytest.mark.parametrize("args, code, words", [
    (["--broker-list", "1,x"], EXIT_USAGE, "not a comma-separated list of broker ids"),
    (["--topic-list", "t,"], EXIT_USAGE, "empty topic name"),
    (["--broker-list", "9"], EXIT_FAILED, "broker 9 is not in the cluster"),
])
def test_log_dirs_describe_refuses_bad_lists(data: Path, args: list[str], code: int,
                                             words: str) -> None:
    got, _, err = run("log-dirs", "--describe", str(data), *args)
    assert got == code and words in err


def test_log_dirs_needs_describe_or_the_subcommand(data: Path) -> None:
    code, _, err = run("log-dirs")
    assert code == EXIT_USAGE and "--describe" in err
    code, out, _ = run("log-dirs", "describe", str(data), "--json")
    assert code == EXIT_OK and json.loads(out)["version"] == 1
    code, _, err = run("log-dirs", "--broker-list", "1", "describe", str(data))
    assert code == EXIT_USAGE and "not of 'describe'" in err


# ---- the tool's words, from DescribeLogDirs answers ------------------------------------------


def test_each_replica_state_gets_kafkas_line() -> None:
    from logwright.cluster.reassign_tool import (
        execute_lines,
        replica_move_lines,
        replica_moves,
        verify_outcome,
    )
    from logwright.controller import parse_reassignment
    from logwright.controller.reassigning import ReassignmentStatus
    from logwright.errors import Errors
    from logwright.identity import TopicPartition
    from logwright.protocol.messages import (
        DescribeLogDirsPartition as P,
    )
    from logwright.protocol.messages import (
        DescribeLogDirsResponse,
        DescribeLogDirsResult,
        DescribeLogDirsTopic,
    )

    def dirs(*rows: tuple[str, list[tuple[int, bool]]],
             failed: str = "") -> DescribeLogDirsResponse:
        results = [DescribeLogDirsResult(path, Errors.NONE, (DescribeLogDirsTopic("t", tuple(
            P(p, 1, 0, future) for p, future in parts)),)) for path, parts in rows]
        if failed:
            results.append(DescribeLogDirsResult(failed, Errors.KAFKA_STORAGE_ERROR))
        return DescribeLogDirsResponse(0, Errors.NONE, tuple(results))

    text = json.dumps(plan(*({"topic": "t", "partition": p, "replicas": [1, 2],
                              "log_dirs": ["/b1/d2", "any"]} for p in range(5)),
                           {"topic": "t", "partition": 5, "replicas": [3], "log_dirs": ["/b3/d1"]},
                           {"topic": "t", "partition": 6, "replicas": [4], "log_dirs": ["/b4/d1"]}))
    parsed = parse_reassignment(text)
    answers = {1: dirs(("/b1/d1", [(1, False), (2, False), (3, False)]),
                       ("/b1/d2/", [(0, False), (1, True)]), ("/b1/d3", [(2, True)])),
               3: dirs(failed="/b3/d1")}  # broker 4 did not answer
    moves = replica_moves(parsed, answers)
    assert [(m.name, m.state) for m in moves] == [
        ("t-0-1", "completed"), ("t-1-1", "in progress"), ("t-2-1", "moving elsewhere"),
        ("t-3-1", "not moving"), ("t-4-1", "missing replica"), ("t-5-3", "missing log dir"),
        ("t-6-4", "missing replica")]
    assert replica_move_lines(moves) == [
        "Reassignment of replica t-0-1 completed successfully.",
        "Reassignment of replica t-1-1 is still in progress.",
        "Partition t-2 on broker 1 is being moved to log dir /b1/d3 instead of /b1/d2.",
        "Partition t-3 on broker 1 is not being moved from log dir /b1/d1 to /b1/d2.",
        "Partition t-4 cannot be found in any live log directory on broker 1.",
        "Partition t-5 is not found in any live log dir on broker 3. There is likely an "
        "offline log directory on the broker.",
        "Partition t-6 cannot be found in any live log directory on broker 4."]
    assert execute_lines(parsed) == [
        "Successfully started partition reassignments for t-0,t-1,t-2,t-3,t-4,t-5,t-6",
        "Successfully started log directory moves for: t-0-1,t-1-1,t-2-1,t-3-1,t-4-1,t-5-3,"
        "t-6-4"]

    def status(p: int, state: str) -> ReassignmentStatus:
        return ReassignmentStatus(TopicPartition("t", p), state, (1, 2), (1, 2), (1, 2), 1,
                                  (), (), ())

    done = [status(0, "complete")]
    assert verify_outcome(done, moves[:1]) == "complete"
    assert verify_outcome(done, moves[:2]) == "in progress"
    assert verify_outcome([status(0, "in progress")], moves[3:4]) == "in progress"
    for m in moves[2:]:
        assert verify_outcome(done, [moves[0], m]) in ("differs", "in progress")
    assert verify_outcome(done, moves[3:4]) == "differs"
    assert verify_outcome([status(0, "differs")], []) == "differs"
