#!/usr/bin/env bash
# Link prediction quality (issue 14), GAE protocol: Cora's edges split 85/5/10
# (seed 1; valid/test edges removed from the graph, one uniform negative pair
# per positive), a model trained with DEFAULT link flags (`--task link`) for
# each seed, in one process (1 trainer) and by `shardgnn run` (2 storage
# servers, 2 trainers). Prints one JSON object (stdout): per configuration the
# test ROC-AUC and AP of every seed, their mean and standard deviation, the
# published GAE figures (Kipf & Welling 2016: 0.910 / 0.920), and whether the
# targets hold (mean AUC >= 0.91 and AP >= 0.92; 2 trainers within 1 point of
# 1 trainer).
#
# Usage: bench/quality/run_link_quality.sh [--seeds N] [--model M]
#   [--work DIR] [--shardgnn BIN] [--extra "FLAGS"]. About 6 minutes for 5
#   seeds on 2 cores.
set -euo pipefail
bench_name=run_link_quality.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=/tmp/shardgnn-link-quality seeds=5 model=sage extra=""
while (($#)); do
  case "$1" in
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --extra) extra="$2"; shift 2 ;;
    -h | --help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "run_link_quality.sh: unknown flag '$1'" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
mkdir -p "${work}/runs"
dataset="${work}/cora-links"
if [[ ! -f "${dataset}/manifest.json" ]]; then
  log "importing Cora with a GAE edge split"
  "${shardgnn}" -q dataset import --format ogb --undirected \
    --input "${repo}/datasets/cora/ogb-planetoid" --out "${dataset}" \
    --edge-split 0.85,0.05,0.10 --seed 1 >&2
fi
# shellcheck disable=SC2206
flags=(--task link --model "${model}" ${extra})
results="${work}/results.jsonl"
: > "${results}"
for ((seed = 1; seed <= seeds; ++seed)); do
  for trainers in 1 2; do
    out="${work}/runs/t${trainers}-s${seed}"
    rm -rf "${out}" "${work}/runs/work-${seed}"
    if ((trainers == 1)); then
      cmd=("${shardgnn}" train --dataset "${dataset}" --out "${out}")
    else
      cmd=("${shardgnn}" run --dataset "${dataset}" --trainers 2 --parts 2
        --work-dir "${work}/runs/work-${seed}" --out "${out}")
    fi
    log "seed ${seed}, ${trainers} trainer(s): ${cmd[*]} ${flags[*]}"
    "${cmd[@]}" "${flags[@]}" --seed "${seed}" > "${out}.log" 2>&1 || {
      tail -20 "${out}.log" >&2; exit 1; }
    python3 - "${out}/summary.json" "${trainers}" "${seed}" >> "${results}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"trainers": int(sys.argv[2]), "seed": int(sys.argv[3]),
                  "test_auc": s["test_auc"], "test_ap": s["test_ap"],
                  "test_mrr": s["test_mrr"], "best_epoch": s["best_epoch"],
                  "train_seconds": s["train_seconds"]}))
PY
    tail -1 "${results}" >&2
  done
done
python3 - "${results}" "${model}" "${extra}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = {"protocol": "GAE: Cora, edges 85/5/10 (split seed 1), 1 negative per "
                   "positive", "model": sys.argv[2], "extra_flags": sys.argv[3],
       "published_gae": {"auc": 0.910, "ap": 0.920}, "by_trainers": {}}
for t in (1, 2):
    r = [x for x in rows if x["trainers"] == t]
    auc = [x["test_auc"] for x in r]; ap = [x["test_ap"] for x in r]
    out["by_trainers"][str(t)] = {
        "seeds": len(r), "test_auc": auc, "test_ap": ap,
        "auc_mean": statistics.mean(auc),
        "auc_std": statistics.pstdev(auc),
        "ap_mean": statistics.mean(ap), "ap_std": statistics.pstdev(ap)}
one, two = out["by_trainers"]["1"], out["by_trainers"]["2"]
out["targets"] = {
    "auc_at_least_0.91": min(one["auc_mean"], two["auc_mean"]) >= 0.91,
    "ap_at_least_0.92": min(one["ap_mean"], two["ap_mean"]) >= 0.92,
    "two_trainers_within_1_point": abs(one["auc_mean"] - two["auc_mean"]) <= 0.01
        and abs(one["ap_mean"] - two["ap_mean"]) <= 0.01}
print(json.dumps(out, indent=2))
PY
