#!/usr/bin/env bash
# Scale-out on the emulated cluster (issue 54, item 2): trains on 1, 2, 4, ...
# trainer hosts of bench/cluster/cluster.sh, each host (servers' and
# trainers') with the same CPU quota and memory limit, the storage servers on
# hosts of their own, through the real `shardgnn launch --cluster`, and prints
# one JSON object per run, then a table: trainers, link, epoch training time
# (summary.json `epoch_time.step_seconds`: without validation, the mean over
# the epochs after the first), seeds per second, scaling efficiency, the time
# split per step (sampling, fetch, compute, allreduce, waiting: rank 0's) and
# the bytes rank 0 received per training step (features and neighbors, its
# validation and test passes included).
#
#   bench/scaling/run_scaling.sh [--work DIR] [--nodes N] [--trainers LIST]
#       [--servers S] [--cpus C] [--mem SIZE] [--links LIST] [--epochs E]
#       [--mode strong|weak] [--shardgnn BIN] [--name ID] [-- TRAIN FLAGS...]
#
# Strong scaling: one pass over the train nodes per epoch, shared by the N
# trainers; E(N) = T(1) / (N * T(N)). Weak: every trainer takes as many steps
# per epoch as the single trainer did (--steps-per-epoch), so N trainers do N
# times the work; E(N) = T(1) / T(N). Links: `unshaped` or tc rates as
# cluster.sh takes them (e.g. 10gbit, 1gbit). Defaults: an SBM graph of 200k
# nodes (20 edges a node, 128 features, 16 classes, split 0.2/0.02/0.02:
# validation and the test pass, which every run also makes, stay small)
# generated into the work dir, 2 server hosts (METIS, 2 parts), trainers
# 1,2,4, 0.25 CPU and 3G a host, links unshaped,1gbit, 3 epochs, strong.
# Needs root (cluster.sh).
set -euo pipefail
bench_name=run_scaling.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

work=/tmp/shardgnn-scaling
nodes=200000
trainers=1,2,4
servers=2
cpus=0.25
mem=3G
links=unshaped,1gbit
epochs=3
mode=strong
name=scale
train_flags=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --trainers) trainers="$2"; shift 2 ;;
    --servers) servers="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --links) links="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --) shift; train_flags=("$@"); break ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) log "unknown flag $1"; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
[[ "${mode}" == strong || "${mode}" == weak ]] || { log "--mode strong or weak"; exit 2; }
cluster="${repo}/bench/cluster/cluster.sh"
# A run interrupted here leaves no cluster behind.
trap '"${cluster}" down --name "${name}" >/dev/null 2>&1 || true; stop_jobs' EXIT

mkdir -p "${work}/logs" "${work}/runs"
# shellcheck source=SCRIPTDIR/scaling_graph.sh
source "${repo}/bench/scaling/scaling_graph.sh"
make_scaling_graph "${work}" "${nodes}" "${servers}"
partition="${scaling_partition}"

results="${work}/results-${mode}.jsonl"
: >"${results}"
IFS=, read -r -a trainer_list <<<"${trainers}"
IFS=, read -r -a link_list <<<"${links}"
for link in "${link_list[@]}"; do
  steps=0
  for n in "${trainer_list[@]}"; do
    run="${work}/runs/${mode}-${link}-${n}"
    rm -rf "${run}"
    link_flags=()
    [[ "${link}" == unshaped ]] || link_flags=(--link "${link}")
    steps_flags=()
    [[ "${mode}" == weak && "${steps}" -gt 0 ]] && steps_flags=(--steps-per-epoch "${steps}")
    log "${mode}: ${n} trainer host(s), link ${link}"
    start=$(date +%s.%N)
    if ! "${cluster}" run --name "${name}" --partition "${partition}" \
      --server-hosts "${servers}" --trainer-hosts "${n}" --cpus "${cpus}" \
      --mem "${mem}" "${link_flags[@]}" --out "${run}" --shardgnn "${shardgnn}" \
      -- --epochs "${epochs}" --patience 0 "${steps_flags[@]}" "${train_flags[@]}" \
      >"${work}/logs/${mode}-${link}-${n}.log" 2>&1; then
      log "the run failed:"; tail -5 "${work}/logs/${mode}-${link}-${n}.log" >&2
      exit 1
    fi
    wall=$(seconds_since "${start}")
    python3 - "${run}/summary.json" "${n}" "${link}" "${mode}" "${cpus}" "${wall}" \
      >>"${results}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
n, link, mode, cpus, wall = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6])
t = s["epoch_time"]
r = s.get("remote", {})
steps = s["steps_per_epoch"] * s["epochs_run"]
print(json.dumps({
    "mode": mode, "trainers": n, "link": link, "cpus_per_host": float(cpus),
    "world_size": s["world_size"], "steps_per_epoch": s["steps_per_epoch"],
    "step_seconds": t["step_seconds"], "seeds_per_second": t["seeds_per_second"],
    "train_seeds_per_epoch": t["train_seeds_per_epoch"],
    "sampling_seconds": t["sampling_seconds"], "fetch_seconds": t["fetch_seconds"],
    "compute_seconds": t["compute_seconds"], "allreduce_seconds": t["allreduce_seconds"],
    "waiting_seconds": t["waiting_seconds"],
    "bytes_per_step": (r.get("feature_bytes", 0) + r.get("neighbor_bytes", 0)) / max(1, steps),
    "test_acc": s.get("test_acc"), "wall_seconds": wall}))
PY
    [[ "${steps}" -gt 0 ]] || steps=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])['steps_per_epoch'])" "${results}")
  done
done

python3 - "${results}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
base = {}
print("| trainers | link | epoch s | seeds/s | efficiency | sampling | fetch | compute | allreduce | waiting | KB/step |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    key = r["link"]
    if r["trainers"] == 1: base[key] = r["step_seconds"]
    t1 = base.get(key)
    n = r["trainers"]
    if t1 is None: eff = None
    elif r["mode"] == "strong": eff = t1 / (n * r["step_seconds"])
    else: eff = t1 / r["step_seconds"]
    r["efficiency"] = eff
    print(f"| {n} | {r['link']} | {r['step_seconds']:.2f} | {r['seeds_per_second']:.0f} | "
          f"{'-' if eff is None else f'{eff:.2f}'} | {r['sampling_seconds']:.2f} | {r['fetch_seconds']:.2f} | "
          f"{r['compute_seconds']:.2f} | {r['allreduce_seconds']:.2f} | {r['waiting_seconds']:.2f} | "
          f"{r['bytes_per_step'] / 1024:.0f} |")
with open(sys.argv[1], "w") as f:
    for r in rows: f.write(json.dumps(r) + "\n")
PY
