#!/usr/bin/env bash
# Partition fusion against XLA-style fusion on the whole zoo (issue 23):
#   scripts/partition.sh [--tune] [OUT]     (default OUT=partition-out)
# Default tiles: every zoo model simulated (noiseless) under `sim --fusion xla` and
# `sim --fusion partition` (about a minute on 2 cores). --tune also runs the XTAT
# schedule (`tune`, budget $BUDGET, default 100, seed 1) from each start (`tune --fusion
# xla|partition`) and compares the tuned times (about 10 minutes).
# Prints the geometric mean speedup of partition over xla (xla ns / partition ns) over
# the inference models, the training models and all, the min and the max; OUT holds one
# line per model: name, kind, xla ns, partition ns (and tuned ns of both with --tune).
set -euo pipefail
cd "$(dirname "$0")/.."
TUNE=0
if [[ "${1:-}" == "--tune" ]]; then TUNE=1; shift; fi
OUT=${1:-partition-out}
BUDGET=${BUDGET:-100}
mkdir -p "$OUT"
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost
ns() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
$T zoo list --json | python3 -c "import json,sys; [print(e['name'], e['kind']) for e in json.load(sys.stdin)]" > "$OUT/models.txt"
: > "$OUT/default.txt"
: > "$OUT/xtat.txt"
while read -r m kind; do
  echo "$m $kind $($T sim "$m" --json | ns total_ns) $($T sim "$m" --fusion partition --json | ns total_ns)" >> "$OUT/default.txt"
  if (( TUNE )); then
    echo "$m $kind $($T tune "$m" --budget "$BUDGET" --seed 1 --json | ns tuned_ns) $($T tune "$m" --fusion partition --budget "$BUDGET" --seed 1 --json | ns tuned_ns)" >> "$OUT/xtat.txt"
  fi
done < "$OUT/models.txt"
summary() {
  python3 - "$1" "$2" <<'PY'
import math, sys
rows = [l.split() for l in open(sys.argv[2]) if l.strip()]
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
parts = [("inference", [r for r in rows if r[1] == "inference"]), ("training", [r for r in rows if r[1] == "training"]), ("all", rows)]
for name, rs in parts:
    if not rs:
        continue
    s = [float(r[2]) / float(r[3]) for r in rs]
    print("%-8s %-9s %3d models  geomean %.3f  min %.3f  max %.3f  slower than xla %d" % (sys.argv[1], name, len(s), g(s), min(s), max(s), sum(x < 1 for x in s)))
PY
}
summary default "$OUT/default.txt"
if (( TUNE )); then summary xtat "$OUT/xtat.txt"; fi
