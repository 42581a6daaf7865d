"""Pure vs compiled equivalence of the simulator set (sim_modules.txt).

Runs every scenario twice in fresh processes, once on the pure sources (/tmp/pure-native-sim/impl,
made by sync_pure.sh: impl/ without .so files) and once on the compiled build (/work/wt-sim/impl),
and compares their outputs byte for byte:

* ``seed-S-plain`` / ``seed-S-faults`` for S in 1 and 7: a simulated 3-broker cluster (seed S)
  with client traffic; ``faults`` adds message drops and duplicates, a network partition, a
  broker crash with power loss, its restart and a controller failover. The per-event log is one
  line per event the world runs (SimWorld.observe): virtual time, events so far, queue length and
  the names of the next three queued tasks; then each client call's result (or the error it
  raised), and the run's model trace (JSON Lines, recorded with ``trace=``).
* ``bench``: bench/cluster.py's ``_simulated_produce(300)`` event count (2,449 expected).
* ``fuzz``: ``logwright fuzz --seeds 8 --seed 1 --steps 60 --out DIR`` (one process), every
  file of DIR: the seed traces byte for byte, summary.json and the summary line without the
  wall time (and the directory's name).

Usage (from /work/wt-sim, after ./build_sim.sh and ./sync_pure.sh):
    /work/main/.venv/bin/python native_equiv_sim.py [SCENARIO...]
(a scenario ``fuzz:SEEDS:SEED:STEPS`` runs another fuzz campaign the same way).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SIDES = {"pure": "/tmp/pure-native-sim/impl", "compiled": "/work/wt-sim/impl"}
HERE = Path(__file__).resolve().parent

CHILD = r'''
import json, re, sys
sys.path.insert(0, "bench")
import logwright.world.scheduler as sched_mod
from logwright.cluster.cluster import Cluster

def scenario(seed, faults, trace, out):
    lines = []
    kw = dict(drop_rate=0.05, duplicate_rate=0.05) if faults else {}
    cluster = Cluster.simulated(brokers=3, log_dirs_per_broker=2, seed=seed, trace=trace, **kw)
    world = cluster.simulated_world
    sched = world.scheduler

    def observe():
        head = [t.name for t in sched.pending()[:3]]
        lines.append(f"E {world.clock.now_ms()} {world.events} {sched.queued} {head}")
    world.observe(observe)

    def call(label, fn, *args, **kwargs):
        try:
            got = fn(*args, **kwargs)
            lines.append(f"C {label} {re.sub(' at 0x[0-9a-f]+', '', repr(got))}")
        except Exception as exc:  # an error is part of the run's result
            lines.append(f"C {label} raised {type(exc).__name__}: {exc}")

    call("create", cluster.create_topic, "t", partitions=2, replication_factor=3)
    call("create2", cluster.create_topic, "u", partitions=1, replication_factor=2)
    for i in range(40):
        if faults and i == 10:
            call("cut", cluster.partition_network, 1, 3)
        if faults and i == 16:
            call("heal", cluster.heal_network)
        if faults and i == 20:
            call("crash", cluster.crash_broker, 2, power_loss=True)
        if faults and i == 26:
            call("restart", cluster.restart_broker, 2)
        if faults and i == 30:
            call("failover", cluster.fail_controller)
        values = [f"v{i}-{j}".encode() * (1 + j) for j in range(5)]
        call(f"produce{i}", cluster.produce, "t", i % 2, values, acks=-1 if i % 3 else 1)
        if i % 7 == 0:
            call(f"produce-u{i}", cluster.produce, "u", 0, values, acks=-1)
            call(f"fetch{i}", cluster.fetch, "t", 0, 0)
        if i % 5 == 0:
            call(f"advance{i}", cluster.advance_time, 1_000)
    call("latest", cluster.list_offsets, "t", 0, "latest")
    call("earliest", cluster.list_offsets, "t", 1, "earliest")
    call("delete", cluster.delete_records, {("t", 0): 10})
    call("idle", cluster.run_until_idle)
    call("close", cluster.close)
    lines.append(f"END {world.clock.now_ms()} {world.events}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")

what = sys.argv[1]
compiled = sched_mod.__file__.endswith(".so")
print("compiled" if compiled else "pure", file=sys.stderr)
if what == "bench":
    from cluster import _simulated_produce
    with open(sys.argv[2], "w") as f:
        f.write(f"events {_simulated_produce(300)[2]}\n")
else:
    seed, mode = what.split("-")[1:]
    scenario(int(seed), mode == "faults", sys.argv[2] + ".trace.jsonl", sys.argv[2])
'''

SCENARIOS = ["seed-1-plain", "seed-1-faults", "seed-7-plain", "seed-7-faults", "bench", "fuzz"]


def run(side: str, what: str, out: Path) -> None:
    env = {"PYTHONPATH": SIDES[side], "PATH": os.environ["PATH"]}
    if what.startswith("fuzz"):
        out.mkdir()
        # fuzz:SEEDS:SEED:STEPS for another campaign than the brief's 8 seeds from 1, 60 steps
        seeds, seed, steps = what.split(":")[1:] if ":" in what else ("8", "1", "60")
        cmd = [sys.executable, "-m", "logwright.cli", "fuzz", "--seeds", seeds, "--seed", seed,
               "--steps", steps, "--out", str(out), "--workers", "1"]
        proc = subprocess.run(cmd, env=env, cwd=HERE, capture_output=True, text=True)
        # The run's wall time and output path are not part of the run: left out of the
        # comparison (summary.json's "seconds", the time and directory on the summary line).
        text = re.sub(r" in [0-9.]+ s;", " in <s> s;", proc.stdout.replace(str(out), "<out>"))
        (out / "stdout.txt").write_text(text + f"exit {proc.returncode}\n")
        summary = out / "summary.json"
        if summary.exists():
            summary.write_text(re.sub(r'"seconds": [0-9.]+', '"seconds": <s>',
                                      summary.read_text()))
        return
    proc = subprocess.run([sys.executable, "-c", CHILD, what, str(out)], env=env, cwd=HERE,
                          capture_output=True, text=True)
    expected = "compiled" if side == "compiled" else "pure"
    assert proc.returncode == 0, (side, what, proc.stderr[-3000:])
    assert proc.stderr.strip().splitlines()[0] == expected, proc.stderr[:500]


def files(root: Path) -> dict[str, bytes]:
    if root.is_file():
        found = {root.name: root.read_bytes()}
        trace = root.with_name(root.name + ".trace.jsonl")
        if trace.exists():
            found[trace.name] = trace.read_bytes()
        return found
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def main() -> int:
    wanted = sys.argv[1:] or SCENARIOS
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what in wanted:
            got = {}
            for side in SIDES:
                out = Path(tmp) / side / what
                out.parent.mkdir(parents=True, exist_ok=True)
                run(side, what, out)
                got[side] = files(out)
            pure, comp = got["pure"], got["compiled"]
            same = pure == comp
            bad += not same
            digest = hashlib.sha256(json.dumps(
                {k: hashlib.sha256(v).hexdigest() for k, v in sorted(pure.items())}
            ).encode()).hexdigest()[:16]
            sizes = sum(len(v) for v in pure.values())
            print(f"{what}: {'IDENTICAL' if same else 'DIFFERENT'} ({len(pure)} files, "
                  f"{sizes:,} bytes, sha {digest})", flush=True)
            if what == "bench":
                print("  ", pure["bench"].decode().strip())
            if not same:
                for name in sorted(set(pure) | set(comp)):
                    a, b = pure.get(name, b""), comp.get(name, b"")
                    if a != b:
                        la, lb = a.decode().splitlines(), b.decode().splitlines()
                        k = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y),
                                 min(len(la), len(lb)))
                        print(f"  {name}: first difference at line {k + 1}")
                        print("    pure:    ", la[k][:300] if k < len(la) else "<end>")
                        print("    compiled:", lb[k][:300] if k < len(lb) else "<end>")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
