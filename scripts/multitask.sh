#!/usr/bin/env bash
# The seed design's multi-task variant against two separate models, on the same rows:
#   scripts/multitask.sh [OUT]    (default OUT=multitask-out; about a minute on 2 cores)
# Tile and flags datasets of the same zoo programs; a tile model and a flags model trained
# separately, and one multi-task model (one shared graph embedding, a tile head and a
# flags head: train --heads tile,flags) trained on both datasets. Same budget: every model
# sees each of its training rows EPOCHS times, with the same seed, split and settings.
# Each model is evaluated (learned and analytical) on the test part of each task's data;
# the table goes to OUT/multitask-table.md.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-multitask-out}
EPOCHS=${EPOCHS:-30}
# Every sixth inference model of the zoo (13, eleven families).
MODELS=${MODELS:-bert_base_s128_b8,bert_tiny_s128_b32,dlrm_bag4_d32_b8,gpt2_small_s128_b8,mlp_1000x4_b64,mobilenet_v1_075_192_b8,nmt_lstm_h512_s24_b32,resnet18v2_b16,resnet56v2_cifar_b32,ssdlite320_coco_b16,unet_d3_c32_r128_b8,vit_b16_384_b1,wavernn_h512_t24_b16}
mkdir -p "$OUT"
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost

for task in tile flags; do
  [ -d "$OUT/data/$task" ] || $T gen --task $task --models "$MODELS" --configs 32 --variants 2 --seed 1 --out "$OUT/data/$task"
done
common=(--epochs "$EPOCHS" --patience 0 --seed 1 --split random --split-seed 1 --loss rank-hinge)
for task in tile flags; do
  [ -f "$OUT/models/$task/model.json" ] || $T train --task $task --data "$OUT/data/$task" "${common[@]}" --out "$OUT/models/$task" > "$OUT/train-$task.txt"
done
[ -f "$OUT/models/multi/model.json" ] || $T train --task tile --heads tile,flags --data "$OUT/data/tile,$OUT/data/flags" "${common[@]}" --out "$OUT/models/multi" > "$OUT/train-multi.txt"
for task in tile flags; do
  $T eval --model "$OUT/models/$task" --data "$OUT/data/$task" --json > "$OUT/eval-separate-$task.json"
  $T eval --model "$OUT/models/multi" --data "$OUT/data/$task" --json > "$OUT/eval-multi-$task.json"
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = ["| task | model | test kernels | APE % | Kendall τ | slowdown@1 % | slowdown@5 % |", "|---|---|---|---|---|---|---|"]
for task in ["tile", "flags"]:
    for kind, label in [("separate", "separate"), ("multi", "multi-task"), ("separate", "analytical")]:
        r = json.load(open(f"{out}/eval-{kind}-{task}.json"))
        m = r["analytical" if label == "analytical" else "learned"]
        rows.append(f"| {task} | {label} | {r['kernels']} | {m['ape_pct']:.3f} | {m['kendall_tau']:.3f} | {100*m['slowdown_at']['1']:.3f} | {100*m['slowdown_at']['5']:.3f} |")
open(f"{out}/multitask-table.md", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
