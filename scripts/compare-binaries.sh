#!/usr/bin/env bash
# Behaviour unchanged (issue 32): run a sample of ~100 command lines, covering every
# command (help, refused flags and arguments, text, --json, files written), on two
# tpucost binaries and report every difference in stdout, stderr, exit status or the
# files a command wrote.
#   scripts/compare-binaries.sh OLD NEW [OUTDIR]      (default OUTDIR=compare-out)
# Build the old binary from a commit without touching the work tree, e.g.
#   mkdir -p /tmp/old && git archive a8dc6e9 | tar -C /tmp/old -xf - &&
#   (cd /tmp/old && go build -o /tmp/tpucost-old ./cmd/tpucost)
#   go build -o /tmp/tpucost-new ./cmd/tpucost
#   scripts/compare-binaries.sh /tmp/tpucost-old /tmp/tpucost-new
# Build both the same way (both pure Go, or both -tags blas): training outputs are
# pinned per backend, not across backends.
# Each binary runs the whole list in order in its own empty work directory (later lines
# read what earlier ones wrote: gen -> train -> eval/predict/tune --model), with
# relative paths, so the two runs print the same names. Wall-clock values (JSON keys
# *_s, *_per_s, wall_ns, *_wall_ns; text "in 1.2s", "12.3 ms/step", rates "/s") are
# masked before comparing; everything else must agree byte for byte. Files written are
# compared by SHA-256 after every line (a file that differs is diffed when it is text).
# Exit status: 0 when every line agrees, 1 otherwise. About 5 minutes on 2 cores.
set -uo pipefail
if (( $# < 2 )); then
  echo "usage: scripts/compare-binaries.sh OLD NEW [OUTDIR]" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OLD=$(realpath "$1") NEW=$(realpath "$2") OUT=${3:-compare-out}
for b in "$OLD" "$NEW"; do
  [[ -x $b ]] || { echo "compare-binaries: $b is not an executable" >&2; exit 2; }
done
HLO=${HLO:-/work/shared/testdata/hlo}
TG=${TG:-/work/shared/testdata/tpugraphs}
[[ -d $HLO ]] || HLO=$ROOT/compiler/hlo/testdata
[[ -d $TG ]] || TG=$ROOT/dataset/tpugraphs/testdata
rm -rf "$OUT" && mkdir -p "$OUT"/{old,new}/wd "$OUT/res"
OUT=$(realpath "$OUT")
ln -s "$HLO" "$OUT/old/wd/hlo"; ln -s "$HLO" "$OUT/new/wd/hlo"
ln -s "$TG" "$OUT/old/wd/tg"; ln -s "$TG" "$OUT/new/wd/tg"

# The command lines: tpucost's arguments, shell-quoted; one per line; # starts a comment.
read -r -d '' LINES <<'CMDS'
--help
--version
--version --json
help tune
nosuchcommand
zoo list
zoo list --json
zoo list --shapes
zoo list --bogus
compile --help
compile
compile mlp_96x2_b1
compile mlp_96x2_b1 --json
compile bert_tiny_s128_b32 --chip v5e
compile bert_tiny_s128_b32 --shapes seq=64 --json
compile mlp_96x2_b1 --dump-after fusion
compile mlp_96x2_b1 --dump-after nosuchpass
compile mlp_96x2_b1 --passes algsimp,cse,dce --check --json
compile mlp_96x2_b1 --out cfg.json
compile mlp_96x2_b1 --fusion partition
compile mlp_96x2_b1 --fusion nope
compile gpt2_tiny_s128_b8 --lengths 8,512
compile hlo/graphsage_tf.hlo --json
compile hlo/real/cholesky.hlo
compile nosuchmodel
compile bert_tny_s128_b32
sim --help
sim mlp_96x2_b1
sim mlp_96x2_b1 --json
sim bert_tiny_s128_b32 --chip v4
sim bert_tiny_s128_b32 --chip v9
sim bert_tiny_s128_b32 --shapes seq=64 --json
sim bert_tiny_s128_b32 --lengths 37,64,200,512
sim bert_tiny_s128_b32 --lengths zipf:16-128:16:1 --json
sim mlp_96x2_b1 --config cfg.json
sim mlp_96x2_b1 --staging auto --json
sim mlp_96x2_b1 --staging maybe
sim hlo/graphsage_tf.hlo --chip v5e --json
sim mlp_96x2_b1 --workers 2000
gen --help
gen --task tile --models mlp_96x2_b1,dlrm_bag4_d32_b8 --configs 8 --out data/tile
gen --task flags --models mlp_96x2_b1 --configs 8 --out data/flags --json
gen --task fusion --models mlp_96x2_b1,mlp_lenet300_b32 --configs 6 --out data/fusion
gen --task layout --models mlp_96x2_b1 --configs 6 --out data/layout --format parquet
gen --task nope --models mlp_96x2_b1 --out data/x
gen --task tile --out data/y
gen --task tile --models mlp_96x2_b1 --configs 4 --shard 2/1 --out data/z
inspect data/tile
inspect data/flags --json
inspect data/layout
inspect nosuchdir
train --help
train --task tile --data data/tile --out models/tile --steps 20 --hidden 8
train --task flags --data data/flags --out models/flags --steps 20 --hidden 8 --loss listmle --json
train --task fusion --data data/fusion --out models/fusion --steps 20 --hidden 8
train --task tile --data data/tile --out models/tile-log --steps 20 --hidden 8 --loss rank-logistic
train --task tile --data data/tile --out models/tile-hinge --steps 20 --hidden 8 --loss rank-hinge --json
train --task fusion --data data/fusion --out models/fusion-hinge --steps 20 --hidden 8 --loss rank-hinge-gap
train --task tile --data data/tile --out models/bad --loss nope
train --task nope --data data/tile --out models/bad
train --task tile --data data/tile --out data/fusion
eval --help
eval --model models/tile
eval --model models/flags --json
eval --model models/nope
predict mlp_96x2_b1 --model models/tile
predict mlp_96x2_b1 --model models/tile --json
predict --help
tune --help
tune mlp_96x2_b1 --budget 20
tune mlp_96x2_b1 --budget 20 --json --out tuned.json
tune mlp_96x2_b1 --strategy random --budget 15 --seed 3
tune mlp_96x2_b1 --strategy sa --kinds layout,fusion --budget 15 --json
tune mlp_96x2_b1 --strategy evo --budget 15
tune mlp_96x2_b1 --strategy exhaustive --kinds fusion --budget 15
tune mlp_96x2_b1 --strategy mbo --budget 15
tune mlp_96x2_b1 --strategy partition --budget 10
tune mlp_96x2_b1 --strategy SA --kinds staging,fusion --staging auto --budget 12
tune mlp_96x2_b1 --kinds layout --strategy xtat
tune mlp_96x2_b1 --strategy nope
tune mlp_96x2_b1 --strategy random --kinds layout,nope
tune mlp_96x2_b1 --kinds layout
tune mlp_96x2_b1 --strategy rl
tune mlp_96x2_b1 --strategy rl --kinds tile --policy policy
tune mlp_96x2_b1 --strategy random --policy policy
tune mlp_96x2_b1 --budget 10 --model models/fusion,models/tile
tune bert_tiny_s128_b32 --shapes seq=64,128 --budget 10 --json
tune bert_tiny_s128_b32 --lengths 37,64 --budget 10
sim mlp_96x2_b1 --config tuned.json --json
tune train-policy --help
tune train-policy --programs mlp_96x2_b1,mlp_lenet300_b32 --episodes 2 --samples 2 --out policy
tune train-policy --programs mlp_96x2_b1 --kinds tile --out policy2
tune mlp_lenet300_b32 --strategy rl --policy policy --budget 10 --json
gym --help
gym serve --help
gym train --programs mlp_96x2_b1 --iterations 2 --samples 2 --max-steps 4 --agent agent
gym train --programs mlp_96x2_b1 --iterations 2 --samples 1 --agent agent2
gym eval --agent agent --programs mlp_lenet300_b32 --json
gym eval --agent agent --programs mlp_lenet300_b32
gym serve --programs mlp_96x2_b1
gym eval --agent nosuchagent --programs mlp_96x2_b1
import tpugraphs tg/op_tuning_data.pb --out data/tg
import tpugraphs tg/module_tuning_data_layout.pb --out data/tgl --json
export tpugraphs data/tile --out npz-out/tile
export tpugraphs data/tile --out npz-out/tile2 --json
validate tg/op_tuning_data.pb
validate tg/op_tuning_data.pb --json --min-configs 2
validate tg/op_tuning_data.pb --chip v9
calibrate tg/op_tuning_data.pb --out v3-fit.json --max-evals 40
calibrate tg/op_tuning_data.pb --out v3-fit2.json --max-evals 40 --json
calibrate tg/op_tuning_data.pb
sim mlp_96x2_b1 --chip-file v3-fit.json
bitserial --help
bitserial --pool 3
demo --help
demo --quick --seed 0 --chip v9
demo --quick --out demo-out
completion bash
completion nosuchshell
CMDS

# mask hides wall-clock values (they differ run to run, on one binary too): JSON keys
# *_s, *_per_s, *_wall_ns, wall_ns, the values of an object keyed *_s (demo's stage_wall_s)
# and a checksum over them; "1.2s", "0.02 s wall", "19 s in all"; rates "123.4/s", "9633
# samples/s"; progress lines (a snapshot in time, as many as the run took seconds: "tune X
# model: 1305/2000 (..., eta 3s)"); and the columns of a text table whose header names a time
# or a rate (WALL_S, KERNELS_PER_S).
mask() {
  sed -E \
    -e 's/("[a-z0-9_]*(_s|_per_s|wall_ns))": ?-?[0-9][0-9.eE+-]*/\1": WALL/g' \
    -e 's/("checksum"): ?"[0-9a-f]+"/\1: CHECKSUM/g' \
    -e 's/[0-9][0-9.,]*(\.[0-9]+)? ?([a-z]+)?\/s\b/RATE/g' \
    -e '/\(RATE, eta/d' \
    -e 's/\b[0-9]+(\.[0-9]+)? s( wall\b| in all\b|$)/DUR\2/g' \
    -e 's/\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m)([0-9.]+(ms|s))*\b( ?(\/step|\/epoch))?/DUR/g' |
    awk '
      /^[A-Z0-9_@ ]+$/ && / / { delete col; nc = 0; nf = NF
        for (i = 1; i <= NF; i++) if ($i ~ /(_S|_PER_S)$|^WALL/) { col[i] = 1; nc++ }
        print; next }
      nc > 0 && NF >= nf { for (i in col) $i = "X"; print; next }
      /"[a-z0-9_]*_s": \{$/ { inobj = 1; print; next }
      inobj && /^ *\}/ { inobj = 0 }
      inobj { sub(/: -?[0-9][0-9.eE+-]*/, ": WALL") }
      { nc = 0; print }'
}

# manifest lists the files under the work directory with a SHA-256 each: of the masked
# text for a text file, of the bytes otherwise.
manifest() {
  ( cd "$1" && find . -path ./hlo -prune -o -path ./tg -prune -o -type f -print | sort | while IFS= read -r f; do
      if grep -Iq . "$f" 2>/dev/null; then h=$(mask <"$f" | sha256sum); else h=$(sha256sum <"$f"); fi
      echo "${h%% *}  $f"
    done )
}

run() { # run WHICH BIN ID LINE
  local which=$1 bin=$2 line=$4 d=$OUT/res/$3
  mkdir -p "$d"
  ( cd "$OUT/$which/wd" && eval "\"\$bin\" $line" </dev/null >"$d/$which.out" 2>"$d/$which.err"; echo $? >"$d/$which.rc" )
  sed -i "s#$OUT/$which/wd#WD#g; s#$bin#tpucost#g" "$d/$which.out" "$d/$which.err"
  manifest "$OUT/$which/wd" >"$d/$which.files"
}

n=0 same=0 differ=0
: >"$OUT/old.prev"; : >"$OUT/new.prev"
: >"$OUT/report.txt"
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  n=$((n + 1)); id=$(printf %03d $n)
  run old "$OLD" "$id" "$line"
  run new "$NEW" "$id" "$line"
  d=$OUT/res/$id diff=""
  for part in out err; do
    if ! cmp -s <(mask <"$d/old.$part") <(mask <"$d/new.$part"); then
      diff+=$'\n'"  std$part:"$'\n'"$(diff <(mask <"$d/old.$part") <(mask <"$d/new.$part") | head -20 | sed 's/^/    /')"
    fi
  done
  cmp -s "$d/old.rc" "$d/new.rc" || diff+=$'\n'"  exit: $(cat "$d/old.rc") -> $(cat "$d/new.rc")"
  # The files this line wrote or changed (a difference left by an earlier line is not
  # reported again).
  for w in old new; do
    comm -13 <(sort "$OUT/$w.prev") <(sort "$d/$w.files") >"$d/$w.delta"
    cp "$d/$w.files" "$OUT/$w.prev"
  done
  if ! cmp -s "$d/old.delta" "$d/new.delta"; then
    diff+=$'\n'"  files:"$'\n'"$(diff "$d/old.delta" "$d/new.delta" | grep '^[<>]' | head -20 | sed 's/^/    /')"
    while read -r f; do
      if grep -Iq . "$OUT/old/wd/$f" 2>/dev/null && [[ -f $OUT/new/wd/$f ]]; then
        diff+=$'\n'"    $f:"$'\n'"$(diff <(mask <"$OUT/old/wd/$f") <(mask <"$OUT/new/wd/$f") | head -10 | sed 's/^/      /')"
      fi
    done < <(diff "$d/old.delta" "$d/new.delta" | grep '^[<>]' | awk '{print $3}' | sort -u)
  fi
  if [[ -z $diff ]]; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    printf '%s tpucost %s%s\n' "$id" "$line" "$diff" >>"$OUT/report.txt"
  fi
done <<<"$LINES"
cat "$OUT/report.txt"
echo "compare-binaries: $n command lines, $same agree, $differ differ (outputs in $OUT/res)"
(( differ == 0 ))
