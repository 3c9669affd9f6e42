#!/usr/bin/env bash
# VMEM staging on the zoo (issue 23): every zoo model (or those given) simulated at
# default tiles with --staging off, auto and on; prints one row per model (simulated
# time per mode, HBM bytes moved with staging off and avoided by auto and on) and, per
# kind (inference, training, all), the geomean speedup of auto and on over off, the
# share of HBM traffic avoided and the number of models slower than off (must be 0).
#   scripts/staging.sh [--chip v4] [MODEL...]      (default: every zoo model, chip v4)
# With --tune (first), it compares tuned programs instead: `tune --staging off` against
# `tune --staging auto` (XTAT, budget $BUDGET, default 100, seed 1; staging edges are
# annealed with layout and fusion), one row per model and the geomean of the tuned times.
#   scripts/staging.sh --tune [--chip v4] [MODEL...]
set -euo pipefail
cd "$(dirname "$0")/.."
TUNE=0
if [[ "${1:-}" == "--tune" ]]; then TUNE=1; shift; fi
BUDGET=${BUDGET:-100}
CHIP=v4
if [[ "${1:-}" == "--chip" ]]; then CHIP=$2; shift 2; fi
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost
if (( $# )); then MODELS=("$@"); else mapfile -t MODELS < <($T zoo list --json | python3 -c 'import json,sys; [print(m["name"]) for m in json.load(sys.stdin)]'); fi
KINDS=$($T zoo list --json | python3 -c 'import json,sys; print(" ".join(m["name"]+"="+m["kind"] for m in json.load(sys.stdin)))')
if (( TUNE )); then
  for m in "${MODELS[@]}"; do
    printf '%s ' "$m"
    for mode in off auto; do
      $T tune "$m" --chip "$CHIP" --staging "$mode" --budget "$BUDGET" --seed 1 --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["default_ns"], r["tuned_ns"], end=" ")'
    done
    echo
  done | KINDS="$KINDS" python3 -c '
import math, os, sys
kind = dict(kv.split("=") for kv in os.environ["KINDS"].split())
rows = []
for line in sys.stdin:
    f = line.split()
    print(line.rstrip(), flush=True)
    rows.append((f[0], float(f[2]), float(f[4])))  # model, tuned off, tuned auto
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
for name in ("inference", "training", "all"):
    rs = [r for r in rows if name == "all" or kind.get(r[0]) == name]
    if rs:
        s = [off / auto for _, off, auto in rs]
        print("tuned %-9s %3d models  geomean speedup of staging auto over off %.3f  min %.3f  max %.3f  slower %d" % (name, len(s), g(s), min(s), max(s), sum(x < 1 for x in s)))
'
  exit 0
fi
for m in "${MODELS[@]}"; do
  for mode in off auto on; do
    printf '%s %s %s ' "$m" "$mode" "$CHIP"
    $T sim "$m" --chip "$CHIP" --staging "$mode" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["total_ns"], r.get("hbm_bytes", "nan"), r.get("staged_bytes", 0))'
  done
done | KINDS="$KINDS" python3 -c '
import math, os, sys
kind = dict(kv.split("=") for kv in os.environ["KINDS"].split())
rows = {}
for line in sys.stdin:
    m, mode, chip, ns, hbm, staged = line.split()
    rows.setdefault(m, {})[mode] = (float(ns), float(hbm), float(staged))
# sim --json has hbm_bytes only with staging: the traffic with staging off is what a
# staged run moves plus what it avoids (tpusim TestStagingNeverSlower checks the sum).
for r in rows.values():
    r["off"] = (r["off"][0], r["auto"][1] + r["auto"][2], 0.0)
print("%-32s %-9s %12s %12s %12s %10s %10s %10s" % ("MODEL", "KIND", "OFF_NS", "AUTO_NS", "ON_NS", "HBM_OFF_MB", "AVOID_AUTO", "AVOID_ON"))
for m, r in rows.items():
    print("%-32s %-9s %12.0f %12.0f %12.0f %10.1f %9.1f%% %9.1f%%" % (m, kind.get(m, "?"), r["off"][0], r["auto"][0], r["on"][0], r["off"][1] / 1e6,
          100 * r["auto"][2] / r["off"][1], 100 * r["on"][2] / r["off"][1]))
print()
print("%-10s %6s %14s %14s %12s %12s %10s" % ("KIND", "MODELS", "GEOMEAN_AUTO", "GEOMEAN_ON", "AVOIDED_AUTO", "AVOIDED_ON", "SLOWER"))
for k in ("inference", "training", "all"):
    sel = [r for m, r in rows.items() if k == "all" or kind.get(m) == k]
    if not sel:
        continue
    g = lambda mode: math.exp(sum(math.log(r["off"][0] / r[mode][0]) for r in sel) / len(sel))
    av = lambda mode: 100 * sum(r[mode][2] for r in sel) / sum(r["off"][1] for r in sel)
    slower = sum(1 for r in sel for mode in ("auto", "on") if r[mode][0] > r["off"][0] * (1 + 1e-9))
    print("%-10s %6d %13.4fx %13.4fx %11.1f%% %11.1f%% %10d" % (k, len(sel), g("auto"), g("on"), av("auto"), av("on"), slower))
'
