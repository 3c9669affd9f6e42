#!/usr/bin/env bash
# Reproduces the quality numbers of the evaluation and tuning issues on this machine:
#   scripts/quality.sh [OUT]      (default OUT=quality-out; about 40 minutes on 2 cores)
#   QUALITY_SKIP_TUNE=1 skips step 2.
# 1. Datasets of 36 zoo programs (tile, fusion, layout); tile and fusion models with the
#    paper's features (graph + raw tile and flags, the default) and with the plan
#    features, on random, held-out-program and held-out-family splits, each evaluated
#    against the analytical model on the same rows (eval-table.md).
# 2. Tuning of 12 other zoo models: every strategy at one budget; model-guided (the
#    fusion+layout model and the tile model) at a fifth of it, vs simulator-only.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-quality-out}
mkdir -p "$OUT"
go build -o bin/tpucost ./cmd/tpucost
T=bin/tpucost

# Every other inference model of the zoo (36) trains; 12 of the rest are tuned.
mapfile -t INF < <($T zoo list --json | python3 -c 'import json,sys; [print(m["name"]) for m in json.load(sys.stdin) if m["kind"]=="inference"]')
TRAIN=$(printf '%s\n' "${INF[@]}" | awk 'NR%2==1' | head -36 | paste -sd,)
TUNE=$(printf '%s\n' "${INF[@]}" | awk 'NR%2==0' | awk 'NR%3==1' | head -12 | paste -sd,)
echo "train models: $TRAIN" > "$OUT/models.txt"
echo "tune models:  $TUNE" >> "$OUT/models.txt"

$T gen --task tile   --models "$TRAIN" --configs 32 --variants 3 --out "$OUT/data/tile"
$T gen --task fusion --models "$TRAIN" --configs 12 --out "$OUT/data/fusion"
$T gen --task layout --models "$TRAIN" --configs 12 --out "$OUT/data/layout"

for feats in paper plan; do
  for split in random program family; do
    for task in tile fusion; do
      name="$task-$feats-$split"
      # A finished model is kept, so that a re-run redoes only what is missing.
      [ -f "$OUT/models/$name/model.json" ] ||
        $T train --task $task --data "$OUT/data/$task" --features $feats --split "$split" --epochs 20 --out "$OUT/models/$name"
      $T eval --model "$OUT/models/$name" --plots "$OUT/plots/$name" > "$OUT/eval-$name.txt"
      $T eval --model "$OUT/models/$name" --json > "$OUT/eval-$name.json"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
rows = ["| task | split | features | learned | analytical |", "|---|---|---|---|---|"]
def fmt(task, m):
    if m is None:
        return "—"
    if task == "tile":
        return f"APE {m['ape_pct']:.2f}%, τ {m['kendall_tau']:.3f}, slowdown@1 {100*m['slowdown_at']['1']:.2f}%"
    return f"MAPE {m['mape_pct']:.2f}%, τ {m['kendall_tau']:.3f}"
for task in ["tile", "fusion"]:
    for split in ["random", "program", "family"]:
        for feats in ["paper", "plan"]:
            r = json.load(open(f"{out}/eval-{task}-{feats}-{split}.json"))
            rows.append(f"| {task} | {split} | {feats} | {fmt(task, r['learned'])} | {fmt(task, r['analytical'])} |")
open(f"{out}/eval-table.md", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
[ -n "${QUALITY_SKIP_TUNE:-}" ] && exit 0
# The program-level model that guides tuning: fusion and layout data together.
$T train --task fusion --data "$OUT/data/fusion,$OUT/data/layout" --epochs 20 --out "$OUT/models/graph"
$T eval --model "$OUT/models/graph" > "$OUT/eval-graph-fusion.txt"
$T eval --model "$OUT/models/graph" --data "$OUT/data/layout" > "$OUT/eval-graph-layout.txt"

for st in xtat exhaustive random sa evo mbo; do
  $T tune --models "$TUNE" --strategy "$st" --budget 300 --json > "$OUT/tune-$st.json"
done
$T tune --models "$TUNE" --budget 60 --model "$OUT/models/graph,$OUT/models/tile-paper-random" --json > "$OUT/tune-model.json"

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    return json.load(open(f"{out}/{name}"))
sts = ["xtat", "exhaustive", "random", "sa", "evo", "mbo"]
runs = {st: load(f"tune-{st}.json") for st in sts}
model = load("tune-model.json")
lines = ["| model | default µs | " + " | ".join(sts) + " | model-guided (budget 60) | gain share | measurement share |",
         "|---|---|" + "---|" * len(sts) + "---|---|---|"]
shares = []
for i, r in enumerate(runs["xtat"]["reports"]):
    cells = [f"{runs[st]['reports'][i]['speedup']:.3f}" for st in sts]
    m = model["reports"][i]
    sim = r["speedup"]
    share = (m["speedup"] - 1) / (sim - 1) if sim > 1 else float("nan")
    shares.append(share)
    lines.append(f"| {r['program']} | {r['default_ns']/1e3:.1f} | " + " | ".join(cells) +
                 f" | {m['speedup']:.3f} | {100*share:.0f}% | {100*m['measurements']/r['measurements']:.0f}% |")
lines.append("| mean | | " + " | ".join(f"{runs[st]['mean_speedup']:.3f}" for st in sts) + f" | {model['mean_speedup']:.3f} | | |")
lines.append("| max | | " + " | ".join(f"{runs[st]['max_speedup']:.3f}" for st in sts) + f" | {model['max_speedup']:.3f} | | |")
hw = sum(r["hardware_s"] for r in runs["xtat"]["reports"]); hwm = sum(r["hardware_s"] for r in model["reports"])
lines.append(f"\nhardware time: xtat {hw:.0f} s, model-guided {hwm:.0f} s ({100*hwm/hw:.0f}%); "
             f"gain share ≥ 90% on {sum(1 for x in shares if x == x and x >= 0.9)} of {sum(1 for x in shares if x == x)} models with a gain "
             f"(min {100*min(x for x in shares if x == x):.0f}%), "
             f"mean of model-guided / simulator-only speedup {sum(m['speedup']/r['speedup'] for m, r in zip(model['reports'], runs['xtat']['reports']))/len(shares):.3f}")
open(f"{out}/tune-table.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
for f in "$OUT"/eval-*.txt; do echo "== $f"; tail -4 "$f"; done
