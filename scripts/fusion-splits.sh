#!/usr/bin/env bash
# Fusion models on held-out programs (issue 20): the five program splits of two datasets
# that docs/training.md measures every fusion-model change on, and a random split.
#   scripts/fusion-splits.sh [OUT]      (default OUT=fusion-splits-out; ~10 min on 2 cores)
# Data (seed 3): `fus`, 12 programs of five families (splits 1, 7, 2; one default model
# per train seed 1-3, their mean reported) and `fusF`, 20 programs (splits 1, 7; the
# default ensemble of 3). Prints, per split, the MAPE of kernels >= 5 us, learned and its
# ratio to the analytical model's on the same rows, the mean ratio and the worst held-out
# program's program-time error. Extra `train` flags come from $TRAIN_FLAGS (e.g. --prior 1).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-fusion-splits-out}
mkdir -p "$OUT"
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost
M=mlp_96x2_b1,mlp_lenet300_b32,mlp_768x3_b8,dlrm_small_b32,dlrm_bag4_d32_b8,dlrm_criteo_b64,dlrm_mlperf_b16,resnet18_b1,resnet20_cifar_b64,rnn_char_h96_t24_b1,lstm_cls_h300_t32_b8,unet_d3_c32_r128_b8
F=mlp_96x2_b1,mlp_lenet300_b32,mlp_1024x6_b16,mlp_768x3_b8,dlrm_small_b32,dlrm_bag4_d32_b8,dlrm_criteo_b64,dlrm_mlperf_b16,resnet18_b1,resnet20_cifar_b64,resnet34_b8,resnet50_b1,unet_d3_c32_r128_b8,unet_d3_c48_r160_b32,unet_d4_c64_r256_b1,unet_d4_c16_r96_b16,rnn_char_h96_t24_b1,lstm_lm_h256_t16_b32,lstm2_lm_h1024_t8_b64,lstm_cls_h300_t32_b8
# The data is generated once per OUT (after a feature-schema change, use a new OUT: train
# refuses data of another schema).
for d in fus:$M fusF:$F; do
  name=${d%%:*}
  [ -f "$OUT/$name/fusion-0of1.manifest.json" ] || $T gen --task fusion --models "${d#*:}" --configs 12 --seed 3 --out "$OUT/$name" > "$OUT/$name.gen.log" 2>&1 ||
    { tail -3 "$OUT/$name.gen.log" >&2; exit 1; }
done
train() { # OUT-NAME TRAIN-ARGS...
  local m=$OUT/models/$1; shift
  rm -rf "$m"
  # shellcheck disable=SC2086
  $T train --task fusion "$@" ${TRAIN_FLAGS:-} --out "$m" > "$m.log" 2>&1 || { tail -3 "$m.log" >&2; return 1; }
  $T eval --model "$m" --json > "$m.json"
}
mkdir -p "$OUT/models"
for ss in 1 7 2; do for s in 1 2 3; do
  train fus-p$ss-s$s --data "$OUT/fus" --split program --split-seed $ss --seed $s
done; done
for ss in 1 7; do
  train fusF-p$ss --data "$OUT/fusF" --split program --split-seed $ss --seed 1 --ensemble 3
done
for s in 1 2 3; do
  train fus-r-s$s --data "$OUT/fus" --split random --split-seed 1 --seed $s
done
python3 - "$OUT/models" <<'PY' | tee "$OUT/table.md"
import glob, json, statistics, sys
d = sys.argv[1]
def load(pattern):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{d}/{pattern}.json"))]
    learned = statistics.mean(r["learned"]["mape_ge5us_pct"] for r in rs)
    worst = max((p["learned_ape_pct"] for r in rs for p in (r["per_program"] or [])), default=0)
    return learned, rs[0]["analytical"]["mape_ge5us_pct"], worst
cols = [("fus split 1", "fus-p1-s*"), ("fus split 7", "fus-p7-s*"), ("fus split 2", "fus-p2-s*"),
        ("fusF split 1", "fusF-p1"), ("fusF split 7", "fusF-p7")]
res = [load(p) for _, p in cols]
rnd = load("fus-r-s*")
print("| " + " | ".join(c for c, _ in cols) + " | mean ratio | worst program | fus random |")
print("|" + "---|" * (len(cols) + 3))
print("| " + " | ".join(f"{l:.2f} vs {a:.2f} ({l/a:.2f}×)" for l, a, _ in res) +
      f" | {statistics.mean(l/a for l, a, _ in res):.2f}× | {max(w for _, _, w in res):.1f}% |" +
      f" {rnd[0]:.2f} vs {rnd[1]:.2f} ({rnd[0]/rnd[1]:.2f}×) |")
PY
