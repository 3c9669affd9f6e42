#!/usr/bin/env bash
# Reproduces the "How faithful is the simulator" numbers of the learned model on real TPU
# runs (docs/simulator.md): a tile model trained on tpucost's simulated v3 data scores TpuGraphs' real
# tile runs zero-shot, then is fine-tuned on half the real kernels (train --init) and
# compared with its zero-shot self, the simulator and XLA's default on the other half,
# for three seeds of the kernel split (leave-kernels-out). A few minutes on 2 cores.
#   scripts/realruns.sh [OUT]      (default OUT=realruns-out)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-realruns-out}
mkdir -p "$OUT"
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost
PB=dataset/tpugraphs/testdata/op_tuning_data.pb
# The zoo's convolutional and MLP training steps: the real kernels come from one.
MODELS=$($T zoo list --json | python3 -c 'import json,sys,re; print(",".join([m["name"] for m in json.load(sys.stdin) if m["kind"]=="training" and re.search("resnet|mlp|mobilenet|convdraw", m["name"])][:14]))')
echo "simulated training models: $MODELS" > "$OUT/models.txt"
[ -e "$OUT/sim-data/tile-0of1.manifest.json" ] || $T gen --task tile --chip v3 --configs 24 --seed 5 --models "$MODELS" --out "$OUT/sim-data"
[ -e "$OUT/zero-shot/model.json" ] || $T train --task tile --data "$OUT/sim-data" --out "$OUT/zero-shot"
[ -e "$OUT/real/tile-0of1.manifest.json" ] || $T validate "$PB" --rows "$OUT/real" > /dev/null
$T validate "$PB" --model "$OUT/zero-shot" --json > "$OUT/zero-shot.json"
for s in 1 2 3; do
  [ -e "$OUT/fine-tuned-$s/model.json" ] || $T train --task tile --data "$OUT/real" --out "$OUT/fine-tuned-$s" --init "$OUT/zero-shot" \
    --split program --test-fraction 0.5 --val-fraction 0.3 --split-seed "$s" --epochs 30 --patience off
  $T validate "$PB" --model "$OUT/fine-tuned-$s" --json > "$OUT/fine-tuned-$s.json"
done
python3 - "$OUT" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys
out = sys.argv[1]
zs = {k["name"]: k for k in json.load(open(f"{out}/zero-shot.json"))["tile_replay"]["per_kernel"] if k["scored"]}
rows = {"simulator": [], "analytical": [], "learned zero-shot": [], "learned fine-tuned": [], "XLA's default": []}
for s in (1, 2, 3):
    trained = set(json.load(open(f"{out}/fine-tuned-{s}/model.json"))["trained_on"]["train_programs"])
    ft = {k["name"]: k for k in json.load(open(f"{out}/fine-tuned-{s}.json"))["tile_replay"]["per_kernel"]}
    held = [n for n in zs if n not in trained]
    def mean(f):
        return [statistics.mean(f(n)[0] for n in held), statistics.mean(f(n)[1] for n in held)]
    m = lambda k, p: (k[p]["kendall_tau"], k[p]["top1_slowdown"])
    rows["simulator"].append(mean(lambda n: m(zs[n], "sim")))
    rows["analytical"].append(mean(lambda n: m(zs[n], "analytical")))
    rows["learned zero-shot"].append(mean(lambda n: m(zs[n], "learned")))
    rows["learned fine-tuned"].append(mean(lambda n: m(ft[n], "learned")))
    rows["XLA's default"].append(mean(lambda n: (float("nan"), zs[n]["default"]["top1_slowdown"])))
    print(f"<!-- seed {s}: held-out kernels {', '.join(sorted(held))} -->")
print("| predictor (held-out real kernels, 3 seeds) | Kendall τ mean ± sd | top-1 slowdown mean ± sd |")
print("|---|---|---|")
for name, v in rows.items():
    taus, tops = [x[0] for x in v], [x[1] for x in v]
    tau = "" if any(t != t for t in taus) else f"{statistics.mean(taus):.3f} ± {statistics.stdev(taus):.3f}"
    print(f"| {name} | {tau} | {100*statistics.mean(tops):.2f}% ± {100*statistics.stdev(tops):.2f}% |")
PY
