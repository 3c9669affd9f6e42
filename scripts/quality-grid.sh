#!/usr/bin/env bash
# Does train's default hold beyond the setups scripts/quality.sh was tuned on? (issue 31)
#   scripts/quality-grid.sh [OUT]      (default OUT=quality-grid-out; about 18 min on 2 cores shared
#   with other jobs, 48 trains; with TRAIN_FLAGS="--ensemble 3" about 3 times that)
# A grid of 4 model subsets x 3 seeds x 2 config counts (24 cells). Per cell: tile and
# fusion data of that subset (gen --seed S), one model each trained with train's DEFAULTS
# (what a user runs): tile `--split family`, fusion `--split program`, `--split-seed S
# --seed S`, and eval against the analytical model on the held-out rows. Prints one table
# of every cell (OUT/grid-TAG.md; OUT/grid-TAG.json adds the per-program numbers) and the
# cost per train (wall and CPU seconds). Results: docs/training.md, "The quality grid".
# Goals: tile APE learned < analytical on held-out families; fusion MAPE(>= 5 us) learned /
# analytical <= 0.33 on held-out programs.
# None of the subsets is quality.sh's (its odd-numbered inference models):
#   even      every other of the zoo's even-numbered inference models (the half quality.sh never uses)
#   balanced  one inference model per family (the median by node count)
#   train     training-step programs: per family the smallest (families with one <= 2,500 nodes)
#   small     every inference model of <= 250 nodes
# Environment: GRID_SUBSETS, GRID_SEEDS (default "4 5 6"), GRID_COUNTS ("TILE:FUSION" configs,
# default "16:8 32:16"); TRAIN_FLAGS (extra flags for both trains), TILE_FLAGS, FUSION_FLAGS
# with GRID_TAG naming the variant (models in OUT/models-TAG, the data shared); GRID_TASKS
# (default "tile fusion"; the table shows — for a task not run); TPUCOST a prebuilt binary
# instead of `make -s build`. A re-run keeps every finished cell.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-quality-grid-out}
mkdir -p "$OUT"
if [ -n "${TPUCOST:-}" ]; then T=$TPUCOST; else make -s build >&2; T=bin/tpucost; fi
SUBSETS=${GRID_SUBSETS:-even balanced train small}
SEEDS=${GRID_SEEDS:-4 5 6}
COUNTS=${GRID_COUNTS:-16:8 32:16}
TAG=${GRID_TAG:-default}
M=$OUT/models-$TAG
mkdir -p "$M" "$OUT/data"

# The subsets as they were derived from the zoo when the documented grid was measured
# (the rules above), written out so that a zoo that grows does not change them.
cat > "$OUT/subsets.txt" <<'SUBSETS'
even bert_base_s384_b1,bert_small_s128_b8,convdraw_s8_c128_r64_b1,dlrm_criteo_b64,gpt2_small_s1024_b1,lstm2_lm_h650_t20_b32,mlp_1024x6_b16,mobilenet_v1_050_160_b16,mobilenet_v2_100_224_b32,resnet101_b8,resnet18_b32,resnet50_b1,rnn_char_h96_t24_b1,ssd512_coco_b1,transformer_big_s128_b4,unet_d3_c48_r160_b32,vit_b16_224_b8,vit_s16_224_b16,wavernn_h896_t16_b1
balanced bert_medium_s256_b8,convdraw_s8_c128_r64_b1,gpt2_small_s1024_b1,dlrm_bag4_d32_b8,lstm2_lm_h1024_t8_b64,mlp_1000x4_b64,mobilenet_v1_075_192_b8,transformer_base_s128_b16,resnet34_b8,resnet56v2_cifar_b32,ssd300_voc_b8,unet_d4_c64_r256_b1,vit_b16_384_b1,wavernn_h896_t16_b1
train bert_tiny_s128_b32_train,convdraw_s8_c32_r32_b16_train,gpt2_tiny_s128_b8_train,dlrm_small_b32_train,rnn_char_h96_t24_b1_train,mlp_96x2_b1_train,mobilenet_v1_050_160_b16_train,resnet20_cifar_b64_train,resnet18v2_b16_train,ssd300_voc_b8_train,unet_d3_c32_r128_b8_train,wavernn_h512_t24_b16_train
small dlrm_bag4_d32_b8,dlrm_criteo_b64,dlrm_mlperf_b16,dlrm_small_b32,mlp_1000x4_b64,mlp_1024x6_b16,mlp_768x3_b8,mlp_96x2_b1,mlp_lenet300_b32,resnet18_b1,resnet18_b32,resnet18v2_b16,resnet20_cifar_b64,rnn_char_h96_t24_b1,ssd300_coco_b1,ssd300_voc_b32,ssd300_voc_b8,ssd512_coco_b1,unet_d3_c32_r128_b8,unet_d3_c48_r160_b32,unet_d4_c16_r96_b16,unet_d4_c64_r256_b1
SUBSETS

start=$(date +%s)
for sub in $SUBSETS; do
  models=$(awk -v s="$sub" '$1 == s {print $2}' "$OUT/subsets.txt")
  [ -n "$models" ] || { echo "unknown subset $sub" >&2; exit 2; }
  for seed in $SEEDS; do
    for c in $COUNTS; do
      tc=${c%%:*} fc=${c#*:}
      cell=$sub-s$seed-c$tc
      td=$OUT/data/tile-$sub-s$seed-c$tc fd=$OUT/data/fusion-$sub-s$seed-c$fc
      [ -f "$td/tile-0of1.manifest.json" ] || nice -n 10 $T gen --task tile --models "$models" --configs "$tc" --variants 2 --seed "$seed" --out "$td" > "$td.gen.log" 2>&1 || { tail -3 "$td.gen.log" >&2; exit 1; }
      [ -f "$fd/fusion-0of1.manifest.json" ] || nice -n 10 $T gen --task fusion --models "$models" --configs "$fc" --seed "$seed" --out "$fd" > "$fd.gen.log" 2>&1 || { tail -3 "$fd.gen.log" >&2; exit 1; }
      for task in ${GRID_TASKS:-tile fusion}; do
        m=$M/$task-$cell
        [ -f "$m.eval.json" ] && continue
        if [ $task = tile ]; then data=$td split=family flags=${TILE_FLAGS:-}; else data=$fd split=program flags=${FUSION_FLAGS:-}; fi
        rm -rf "$m"
        # shellcheck disable=SC2086
        # The cost of the train: wall, user and system seconds (bash's time, children included).
        { TIMEFORMAT='%R %U %S'; time nice -n 10 $T train --task $task --data "$data" --split $split --split-seed "$seed" --seed "$seed" ${TRAIN_FLAGS:-} $flags --out "$m" > "$m.log" 2>&1; } 2> "$m.time" ||
          { tail -3 "$m.log" >&2; exit 1; }
        nice -n 10 $T eval --model "$m" --json > "$m.eval.json"
      done
      echo "$(date +%T) $cell done ($(( $(date +%s) - start )) s)" >&2
    done
  done
done

python3 - "$OUT" "$M" "$SUBSETS" "$SEEDS" "$COUNTS" "$TAG" "${TRAIN_FLAGS:-} | ${TILE_FLAGS:-} | ${FUSION_FLAGS:-}" <<'PY' | tee "$OUT/grid-$TAG.md"
import json, statistics, sys
from math import isnan, nan
out, m, subsets, seeds, counts, tag, flags = sys.argv[1:]
GOAL = 0.33
rows, cells, cost = [], [], {"tile": [], "fusion": []}
for sub in subsets.split():
    for seed in seeds.split():
        for c in counts.split():
            tc, fc = c.split(":")
            cell = f"{sub}-s{seed}-c{tc}"
            try:
                t = json.load(open(f"{m}/tile-{cell}.eval.json"))
            except FileNotFoundError:
                t = dict(learned=dict(ape_pct=nan), analytical=dict(ape_pct=nan), held_out_families=["—"], per_program=[])
            try:
                f = json.load(open(f"{m}/fusion-{cell}.eval.json"))
            except FileNotFoundError:
                f = dict(learned=dict(mape_ge5us_pct=nan), analytical=dict(mape_ge5us_pct=nan), per_program=[])
            tl, ta = t["learned"]["ape_pct"], t["analytical"]["ape_pct"]
            fl, fa = f["learned"]["mape_ge5us_pct"], f["analytical"]["mape_ge5us_pct"]
            for task in ("tile", "fusion"):
                try:
                    wall, user, sys_ = map(float, open(f"{m}/{task}-{cell}.time").read().split()[-3:])
                    cost[task].append((wall, user + sys_))
                except FileNotFoundError:
                    pass
            tok, fok = tl < ta, fl / fa <= GOAL
            progs = sorted({p["program"] for p in f["per_program"] or []})
            cells.append(dict(cell=cell, subset=sub, seed=int(seed), tile_configs=int(tc), fusion_configs=int(fc),
                              tile_families=t["held_out_families"], tile_learned=tl, tile_analytical=ta, tile_ok=tok,
                              fusion_programs=progs, fusion_learned=fl, fusion_analytical=fa, fusion_ratio=fl / fa, fusion_ok=fok,
                              tile_per_program=t["per_program"], fusion_per_program=f["per_program"]))
            yes = lambda ok, x: "—" if isnan(x) else "yes" if ok else "**no**"
            rows.append(f"| {sub} | {seed} | {tc} / {fc} | {', '.join(t['held_out_families'])} | {tl:.2f} vs {ta:.2f} ({tl/ta:.2f}×) | {yes(tok, tl)} |"
                        f" {', '.join(progs)} | {fl:.2f} vs {fa:.2f} | {fl/fa:.2f}× | {yes(fok, fl)} |")
json.dump(cells, open(f"{out}/grid-{tag}.json", "w"), indent=1)
print(f"variant {tag}; extra train flags (all | tile | fusion): {flags}\n")
print("| subset | seed | configs tile / fusion | tile: held-out families | tile APE %, learned vs analytical | tile goal | fusion: held-out programs | fusion MAPE(≥5 µs) %, learned vs analytical | ratio | fusion goal (≤ 0.33×) |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
nt, nf = sum(c["tile_ok"] for c in cells), sum(c["fusion_ok"] for c in cells)
gm = lambda xs: statistics.geometric_mean([x for x in xs if not isnan(x)] or [nan])
print(f"\ncells: {len(cells)}; tile goal met in {nt}, fusion goal met in {nf}, both in {sum(c['tile_ok'] and c['fusion_ok'] for c in cells)}")
print(f"tile learned/analytical APE: geometric mean {gm([c['tile_learned']/c['tile_analytical'] for c in cells]):.2f}×, worst {max((c['tile_learned']/c['tile_analytical'] for c in cells), key=lambda x: -1 if isnan(x) else x):.2f}×;"
      f" fusion ratio: geometric mean {gm([c['fusion_ratio'] for c in cells]):.2f}×, worst {max((c['fusion_ratio'] for c in cells), key=lambda x: -1 if isnan(x) else x):.2f}×")
for task in [k for k in cost if cost[k]]:
    w = [x[0] for x in cost[task]]; cpu = [x[1] for x in cost[task]]
    print(f"cost per {task} train: wall mean {statistics.mean(w):.1f} s (max {max(w):.1f} s), CPU mean {statistics.mean(cpu):.1f} s (max {max(cpu):.1f} s)")
PY
echo "grid: $(( $(date +%s) - start )) s" >&2
