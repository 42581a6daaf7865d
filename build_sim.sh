#!/bin/sh
# Compile the simulator set (sim_modules.txt) in place, in one mypyc invocation.
# MYPYC_OPT_LEVEL=0 ./build_sim.sh for a quicker build while testing.
cd /work/wt-sim && find impl -name '*.so' -delete && /work/main/.venv/bin/mypyc $(cat sim_modules.txt) > /tmp/sim_build.log 2>&1
rc=$?; grep -E "error:|Error" /tmp/sim_build.log | head -20; find impl -name '*.so' | wc -l; exit $rc
