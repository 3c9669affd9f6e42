#!/usr/bin/env bash
# The design's strategy comparison on graph-level autotuning (issue 14): every strategy,
# the same measurement budget, several seeds, on zoo programs the rl policy never saw
# (held out by model variant: no test program is a training program's inference graph,
# training step or other batch size; `tune --strategy rl` refuses one too).
#   scripts/strategies.sh [--small] [OUT]     (default OUT=strategies-out)
#   POLICY=DIR scripts/strategies.sh ...      (use a trained policy instead of training one)
#   KINDS=fusion scripts/strategies.sh ...    (the space; default layout,fusion)
# Full: a policy trained 150 episodes on 12 programs; 10 seeds x 12 held-out programs x 7
# strategies at budget 50 (about 25 minutes on 2 cores). --small: 40 episodes; 3 seeds x
# 10 small held-out programs at budget 30 (a few minutes).
# The non-xtat strategies, rl included, search the configs of --kinds $KINDS (layout and
# fusion jointly by default, what the rl policy decides); xtat runs its own schedule
# (layout+fusion annealing, then tiles and flags) on the same budget, for reference.
# Prints one row per strategy: runs, mean speedup over the default compile (noiseless
# simulated times of the tuned and default programs), its standard deviation over runs,
# the spread of the per-seed means, min, max, and the share of runs slower than default.
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=0
if [[ "${1:-}" == "--small" ]]; then SMALL=1; shift; fi
OUT=${1:-strategies-out}
KINDS=${KINDS:-layout,fusion}
mkdir -p "$OUT/runs"
make -s build >&2   # the default build: OpenBLAS when the machine has it
T=bin/tpucost

TRAIN=mlp_1000x4_b64,dlrm_small_b32,mlp_96x2_b1_train,lstm_lm_h256_t16_b32,mlp_768x3_b8_train,dlrm_bag4_d32_b8,resnet18_b1,bert_tiny_s128_b32,unet_d3_c32_r128_b8,mobilenet_v1_050_160_b16,gpt2_tiny_s128_b8,rnn_char_h96_t24_b1
if (( SMALL )); then
  EPISODES=40 SEEDS=3 BUDGET=30
  TEST=mlp_lenet300_b32,mlp_1024x6_b16,dlrm_criteo_b64,dlrm_mlperf_b16,resnet18v2_b16,resnet20_cifar_b64,unet_d3_c48_r160_b32,ssd300_voc_b32,mobilenet_v1_100_224_b1,lstm2_lm_h1024_t8_b64
else
  EPISODES=150 SEEDS=10 BUDGET=50
  TEST=mlp_lenet300_b32,mlp_1024x6_b16,dlrm_criteo_b64,dlrm_mlperf_b16,resnet18v2_b16,unet_d4_c16_r96_b16,ssd300_coco_b1,lstm2_lm_h1024_t8_b64,mobilenet_v1_100_224_b1,resnet34_b8,convdraw_s8_c32_r32_b16,bert_mini_s128_b16
fi
{ echo "train: $TRAIN"; echo "test:  $TEST"; echo "kinds $KINDS, episodes $EPISODES, seeds $SEEDS, budget $BUDGET"; } > "$OUT/setup.txt"

# The test programs must be unseen by the policy, by model variant (gym.Variant: the
# name without "_train" and the batch suffix "_bN").
variant() { local v=${1%_train}; [[ $v =~ ^(.+)_b[0-9]+$ ]] && v=${BASH_REMATCH[1]}; echo "$v"; }
for p in ${TEST//,/ }; do
  for q in ${TRAIN//,/ }; do
    if [[ $(variant "$p") == $(variant "$q") ]]; then echo "test program $p is the model variant $(variant "$p") of training program $q" >&2; exit 1; fi
  done
done

if [[ -n "${POLICY:-}" ]]; then
  echo "policy: $POLICY (given)" >> "$OUT/setup.txt"
else
  POLICY=$OUT/policy
  $T tune train-policy --programs "$TRAIN" --kinds "$KINDS" --out "$POLICY" --episodes "$EPISODES" --samples 16 --seed 1 --json > "$OUT/policy-train.json"
fi

for st in rl xtat exhaustive random sa evo mbo; do
  args=(--strategy "$st")
  case $st in
    xtat) ;;
    rl) args+=(--kinds "$KINDS" --policy "$POLICY") ;;
    *) args+=(--kinds "$KINDS") ;;
  esac
  for seed in $(seq 1 "$SEEDS"); do
    $T tune --models "$TEST" "${args[@]}" --budget "$BUDGET" --seed "$seed" --json > "$OUT/runs/$st-$seed.json" 2> "$OUT/runs/$st-$seed.err"
  done
done

python3 - "$OUT" "$SEEDS" <<'EOF' | tee "$OUT/table.txt"
import json, os, statistics as st, sys
out, seeds = sys.argv[1], int(sys.argv[2])
names = ["xtat", "exhaustive", "random", "sa", "evo", "mbo", "rl"]
names = [s for s in names if all(os.path.exists(f"{out}/runs/{s}-{k}.json") for k in range(1, seeds + 1))]
per_prog = {}
print(f"{'STRATEGY':<11}{'RUNS':>5}{'MEAN_SPEEDUP':>14}{'SD':>8}{'SEED_SD':>9}{'MIN':>8}{'MAX':>8}{'SLOWER':>8}{'WALL_S':>8}")
for s in names:
    sp, per_seed, wall = [], [], 0.0
    for seed in range(1, seeds + 1):
        b = json.load(open(f"{out}/runs/{s}-{seed}.json"))
        xs = [r["speedup"] for r in b["reports"]]
        for r in b["reports"]:
            per_prog.setdefault(r["program"], {}).setdefault(s, []).append(r["speedup"])
        sp += xs
        per_seed.append(st.mean(xs))
        wall += b["wall_s"]
    sd = st.stdev(sp) if len(sp) > 1 else 0.0
    ssd = st.stdev(per_seed) if len(per_seed) > 1 else 0.0
    slower = sum(x < 1 for x in sp) / len(sp)
    print(f"{s:<11}{len(sp):>5}{st.mean(sp):>14.4f}{sd:>8.4f}{ssd:>9.4f}{min(sp):>8.4f}{max(sp):>8.4f}{slower:>8.2f}{wall:>8.1f}")
print()
print("mean speedup per program (over seeds)")
print(f"{'PROGRAM':<26}" + "".join(f"{s:>11}" for s in names))
for prog, d in per_prog.items():
    print(f"{prog:<26}" + "".join(f"{st.mean(d[s]):>11.4f}" for s in names))
EOF
