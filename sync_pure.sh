#!/bin/sh
# A pure-Python copy of impl/ (no .so files) for the pure-vs-compiled comparison.
rm -rf /tmp/pure-native-sim/impl && mkdir -p /tmp/pure-native-sim && cp -r /work/wt-sim/impl /tmp/pure-native-sim/impl && find /tmp/pure-native-sim/impl -name '*.so' -delete && find /tmp/pure-native-sim/impl -name __pycache__ -prune -exec rm -rf {} +
