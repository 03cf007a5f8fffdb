#!/usr/bin/env bash
# A cluster whose machines differ (issue 54, item 4): trains on T trainer
# hosts of bench/cluster/cluster.sh, first all at the same CPU quota, then
# with the last trainer host at a lower quota (a slower machine), each once
# with equal shares of every step's seeds (plain synchronous data
# parallelism) and once with speed-proportional shares (`--shares speed`),
# through the real `shardgnn launch --cluster`. Prints one JSON object per
# run, then a table: epoch training time (summary.json
# `epoch_time.step_seconds`: the mean over the epochs after the first, rank
# 0's), its ratio to the all-equal cluster's, the allreduce (with its wait
# for the slowest trainer), rank 0's share of the seeds in the last epoch,
# test accuracy.
#
#   bench/scaling/run_hetero.sh [--work DIR] [--nodes N] [--trainers T]
#       [--servers S] [--cpus C] [--slow-cpus C] [--mem SIZE] [--epochs E]
#       [--settings LIST] [--stall S:EVERY] [--target-val A]
#       [--shardgnn BIN] [--name ID] [-- TRAIN FLAGS...]
#
# --settings: HOSTS:SHARES pairs, HOSTS equal, slow (the last trainer host at
# --slow-cpus) or stall (every host at --cpus, the last trainer host stopped
# for S seconds every EVERY seconds: cluster.sh stall), SHARES equal or speed.
# The table also gives the training time until validation accuracy first
# reached --target-val (epochs' time with validation, summed).
# Defaults: the graph of bench/scaling/run_scaling.sh (SBM, 200k nodes, made
# in the work dir if missing), 2 server hosts, 4 trainer hosts at 0.25 CPU
# and 3G, the slow one at 0.125, 4 epochs, settings
# equal:equal,equal:speed,slow:equal,slow:speed, stall 3:10, target 0.97.
# Needs root (cluster.sh).
set -euo pipefail
bench_name=run_hetero.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

work=/tmp/shardgnn-scaling
nodes=200000
trainers=4
servers=2
cpus=0.25
slow_cpus=0.125
mem=3G
epochs=4
name=het
settings=equal:equal,equal:speed,slow:equal,slow:speed
stall=3:10
target_val=0.97
train_flags=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --trainers) trainers="$2"; shift 2 ;;
    --servers) servers="$2"; shift 2 ;;
    --cpus) cpus="$2"; shift 2 ;;
    --slow-cpus) slow_cpus="$2"; shift 2 ;;
    --mem) mem="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --settings) settings="$2"; shift 2 ;;
    --stall) stall="$2"; shift 2 ;;
    --target-val) target_val="$2"; shift 2 ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --) shift; train_flags=("$@"); break ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) log "unknown flag $1"; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
cluster="${repo}/bench/cluster/cluster.sh"
trap '"${cluster}" down --name "${name}" >/dev/null 2>&1 || true; stop_jobs' EXIT

mkdir -p "${work}/logs" "${work}/runs"
# shellcheck source=SCRIPTDIR/scaling_graph.sh
source "${repo}/bench/scaling/scaling_graph.sh"
make_scaling_graph "${work}" "${nodes}" "${servers}"

"${cluster}" down --name "${name}" >/dev/null 2>&1 || true
"${cluster}" up --name "${name}" --hosts $((servers + trainers)) --cpus "${cpus}" \
  --mem "${mem}" >"${work}/logs/hetero-up.log" 2>&1
slow_host=$((servers + trainers))  # Launch puts trainers after the servers.
results="${work}/results-hetero.jsonl"
: >"${results}"
stall_seconds=${stall%%:*} stall_every=${stall##*:}
stall_loop() {
  while sleep "${stall_every}"; do
    "${cluster}" stall --name "${name}" --host "${slow_host}" --seconds "${stall_seconds}" 2>/dev/null || true
  done
}
IFS=, read -r -a setting_list <<<"${settings}"
for setting in "${setting_list[@]}"; do
  hosts_kind=${setting%%:*} shares=${setting##*:}
  host_cpus=${cpus}
  [[ "${hosts_kind}" == slow ]] && host_cpus=${slow_cpus}
  "${cluster}" cpus --name "${name}" --host "${slow_host}" --cpus "${host_cpus}" 2>/dev/null
  staller=""
  if [[ "${hosts_kind}" == stall ]]; then
    stall_loop &
    staller=$!
  fi
  run="${work}/runs/hetero-${hosts_kind}-${shares}"
  rm -rf "${run}"
  log "hosts ${hosts_kind}, shares ${shares}"
  status=0
  "${cluster}" run --name "${name}" --partition "${scaling_partition}" \
    --server-hosts "${servers}" --trainer-hosts "${trainers}" --out "${run}" \
    --shardgnn "${shardgnn}" -- --epochs "${epochs}" --patience 0 --shares "${shares}" \
    "${train_flags[@]}" >"${work}/logs/hetero-${hosts_kind}-${shares}.log" 2>&1 || status=$?
  if [[ -n "${staller}" ]]; then
    kill "${staller}" 2>/dev/null || true
    wait "${staller}" 2>/dev/null || true
  fi
  if ((status != 0)); then
    log "the run failed:"; tail -5 "${work}/logs/hetero-${hosts_kind}-${shares}.log" >&2
    exit 1
  fi
  python3 - "${run}" "${hosts_kind}" "${shares}" "${trainers}" "${target_val}" >>"${results}" <<'PY'
import json, os, sys
run, hosts, shares, trainers, target = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
s = json.load(open(os.path.join(run, "summary.json")))
t = s["epoch_time"]
epochs = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl")) if l.strip()]
to_target, elapsed = None, 0.0
for e in epochs:
    elapsed += e["epoch_seconds"] + e.get("eval_seconds", 0)
    if to_target is None and e.get("val_acc", 0) >= target:
        to_target = round(elapsed, 2)
print(json.dumps({
    "hosts": hosts, "shares": shares, "trainers": trainers,
    "step_seconds": t["step_seconds"], "allreduce_seconds": t["allreduce_seconds"],
    "epoch_seconds": [round(e["epoch_seconds"], 3) for e in epochs],
    "val_acc": [e.get("val_acc") for e in epochs], "seconds_to_target_val": to_target,
    "rank0_share": [round(e.get("share", 0), 4) for e in epochs],
    "test_acc": s.get("test_acc")}))
PY
done

python3 - "${results}" "${trainers}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
trainers = int(sys.argv[2])
base = next((r for r in rows if r["hosts"] == "equal" and r["shares"] == "equal"), rows[0])["step_seconds"]
print("| hosts | shares | epoch s | ratio | allreduce s | rank 0's share (last epoch) | s to target val | test acc |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['hosts']} | {r['shares']} | {r['step_seconds']:.2f} | {r['step_seconds'] / base:.2f} | "
          f"{r['allreduce_seconds']:.2f} | {r['rank0_share'][-1]:.3f} (equal {1 / trainers:.3f}) | "
          f"{r['seconds_to_target_val']} | {r['test_acc']:.4f} |")
PY
