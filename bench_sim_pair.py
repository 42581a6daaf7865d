"""Paired, alternated CPU-time runs of bench/cluster.py's _simulated_produce(300), pure vs compiled.

Usage: python bench_sim_pair.py [ROUNDS]  (run from /work/wt-sim; the pure copy is made by
sync_pure.sh in /tmp/pure-native-sim/impl). Each run is a fresh process; the median events/s
(CPU, time.process_time) of each side is printed.
"""

import statistics
import subprocess
import sys

SNIPPET = ("import sys; sys.path.insert(0, 'bench'); from cluster import _simulated_produce;"
           "import logwright.world.scheduler as s; w, c, e = _simulated_produce(300);"
           "print(e, e / c, s.__file__.endswith('.so'))")
SIDES = {"pure": "/tmp/pure-native-sim/impl", "compiled": "/work/wt-sim/impl"}
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
got: dict[str, list[float]] = {k: [] for k in SIDES}
for _ in range(rounds):
    for side, path in SIDES.items():
        out = subprocess.run([sys.executable, "-c", SNIPPET], env={"PYTHONPATH": path},
                             capture_output=True, text=True, check=True).stdout.split()
        events, rate, compiled = int(out[0]), float(out[1]), out[2] == "True"
        assert compiled == (side == "compiled"), (side, compiled)
        got[side].append(rate)
        print(side, events, f"{rate:,.0f}", flush=True)
for side, rates in got.items():
    print(f"{side}: median {statistics.median(rates):,.0f} events/s CPU over {len(rates)} runs")
