"""A real Spark cluster manager, not only local mode: a standalone master and one worker on
127.0.0.1, started with the scripts that ship with pyspark (``bin/spark-class``), run
``logwright traces check`` and ``logwright fuzz --seeds`` through ``--master spark://...`` as a
user would (the command line; the package is shipped to the executors by the command), and
their verdicts must equal the single-process ones. The master and the worker are stopped at the
end, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from logwright.verify.seed_runs import run_seeds
from logwright.verify.trace_suite import plant_mismatch
from logwright.verify.traces import check_paths

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark_cluster  # make spark-cluster; outside make test's budget

ROOT = Path(__file__).resolve().parent.parent
SPARK_HOME = Path(pyspark.__file__).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(path: Path, words: str, proc: subprocess.Popen[bytes], what: str) -> None:
    for _ in range(600):  # polled every 0.1 s: up to a minute for a JVM on a busy machine
        if path.exists() and words in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"the Spark {what} did not start: {path.read_text(errors='replace')[-2000:]}")


@pytest.fixture(scope="module")
def master_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("java") is None:
        pytest.skip("Java 17 is not installed (Spark needs it)")
    logs = tmp_path_factory.mktemp("spark-standalone")
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(logs), "SPARK_WORKER_DIR": str(logs / "work")}
    port = _port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs / "master.log", "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(logs / "master.log", "I have been elected leader", procs[0], "master")
        with open(logs / "worker.log", "wb") as out:
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--cores", "2",
                 "--memory", "2g", "--webui-port", str(_port()), "--work-dir",
                 str(logs / "work"), url],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True))
        _wait_for(logs / "worker.log", "Successfully registered with master", procs[1],
                  "worker")
        yield url
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def _logwright(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "logwright.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_traces_check_and_fuzz_on_a_standalone_cluster(master_url: str, tmp_path: Path) -> None:
    # traces check: the corpus and a planted mismatch, through the cluster.
    inputs = tmp_path / "in"
    shutil.copytree(ROOT / "traces" / "corpus", inputs)
    plant_mismatch(inputs / "demo.jsonl", inputs / "planted.jsonl")
    out = tmp_path / "out"
    done = _logwright("traces", "check", str(inputs), "--master", master_url, "--out",
                      str(out), "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert f"Spark {master_url}: session started" in done.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"] == "spark" and summary["master"] == master_url
    single = check_paths([inputs])
    assert summary["violations"] == len(single.failures) == 1
    assert summary["traces"] == single.traces and summary["events"] == single.events
    assert summary["model_steps"] == single.steps
    import pyarrow.parquet as pq

    [violation] = pq.read_table(out / "violations.parquet").to_pylist()
    [expected] = single.failures
    assert (violation["trace"], violation["seq"], violation["where"], violation["kind"]) == (
        expected.trace, expected.seq, expected.where, expected.kind)
    # fuzz --seeds: the same seeds give the same results as in one process.
    seeds_out = tmp_path / "seeds"
    done = _logwright("fuzz", "--seeds", "3", "--seed", "5", "--steps", "10", "--out",
                      str(seeds_out), "--master", master_url, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert f"(spark {master_url})" in done.stdout
    on_cluster = json.loads((seeds_out / "summary.json").read_text())["results"]
    local = run_seeds(range(5, 8), 10, tmp_path / "local", workers=1)
    assert on_cluster == [dict(zip(("seed", "steps", "failure", "trace", "trace_events",
                                    "trace_violations", "trace_bad_input"), v, strict=True))
                          for v in local.verdicts()]
