"""Paired, alternated runs of bench/storage.py's 1 KiB append figure, pure vs compiled.

Usage: python bench_storage_pair.py [ROUNDS]  (from /work/wt-sim, after sync_pure.sh). Each run
is a fresh process running ``bench_append_small`` (200,000 batches of 1 KiB, one repetition:
the appends, then ``dd bs=1k`` of as many blocks); printed per run and as medians: the append
rate (wall), its ratio to dd, and the append rate from CPU time.
"""

import statistics
import subprocess
import sys

SNIPPET = ("import sys; sys.path.insert(0, 'bench'); import dataclasses, storage as s;"
           "import logwright.storage.log as m;"
           "r = s.bench_append_small(dataclasses.replace(s.FULL, repeats=1));"
           "print(r.figure, r.ratio, r.cpu_figure, m.__file__.endswith('.so'))")
SIDES = {"pure": "/tmp/pure-native-sim/impl", "compiled": "/work/wt-sim/impl"}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
got: dict[str, list[tuple[float, float, float]]] = {k: [] for k in SIDES}
for _ in range(rounds):
    for side, path in SIDES.items():
        out = subprocess.run([sys.executable, "-c", SNIPPET], env={"PYTHONPATH": path},
                             capture_output=True, text=True, check=True).stdout.split()
        assert (out[3] == "True") == (side == "compiled"), side
        row = (float(out[0]), float(out[1]), float(out[2]))
        got[side].append(row)
        print(side, f"{row[0]:,.0f} batches/s, ratio to dd {row[1]:.3f}, CPU {row[2]:,.0f}/s",
              flush=True)
for side, rows in got.items():
    med = [statistics.median(r[i] for r in rows) for i in range(3)]
    print(f"{side}: median {med[0]:,.0f} batches/s, ratio to dd {med[1]:.3f}, "
          f"CPU {med[2]:,.0f} batches/s over {len(rows)} runs")
