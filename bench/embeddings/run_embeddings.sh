#!/usr/bin/env bash
# Learned embeddings (issue 15) on the 200k-node reference graph of
# bench/e2e (SBM, 128 features, 16 classes; generated and partitioned into 2
# with METIS unless already in --work), 2 storage servers + 2 trainers on
# loopback, all started here as separate processes:
#   1. embedding_bench against part 0's server: pushes and pulls per second
#      with 1, 2, 4 clients, and the update cost in process;
#   2. the same training (SAGE, --learn-embeddings 64 appended to the
#      features, 3 epochs) without embeddings and with --embedding-sync sync,
#      bounded:2 and async, once with both trainers alike and once with
#      trainer 1 slowed down (nice -n 19 on a 2-core machine, and one compute
#      thread): each run's epochs (seconds, validation accuracy, time to the
#      end of the epoch) from its metrics.jsonl, and its summary's embedding
#      figures.
# Prints one JSON object; progress on stderr.
#
# Usage: bench/embeddings/run_embeddings.sh [--work DIR] [--epochs E]
#          [--modes LIST] [--shardgnn BIN] [--bench BIN]
set -euo pipefail
bench_name=run_embeddings.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
work=/tmp/e2e
epochs=3
modes="none,sync,bounded:2,async"
bench_bin="${repo}/build/bench/embedding_bench"
while (($#)); do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --bench) bench_bin="$2"; shift 2 ;;
    *) echo "${bench_name}: unknown flag $1" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
nodes=200000
dataset="${work}/sbm-n${nodes}-d20-f128-c16-s0.1_0.1_0.8"
partition="${dataset}-metis2"
prepare_sbm "${dataset}" "${partition}" "${nodes}" 20 128 16 0.1,0.1,0.8
runs="${work}/embedding-runs"
rm -rf "${runs}"
mkdir -p "${runs}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
ports=("$(free_port)" "$(free_port)")
for p in 0 1; do
  "${shardgnn}" serve --partition "${partition}" --part "${p}" --memory \
    --listen "127.0.0.1:${ports[$p]}" > "${runs}/server-${p}.log" 2>&1 &
done
servers="127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}"
for p in 0 1; do
  for _ in $(seq 1 120); do
    grep -q "ready on" "${runs}/server-${p}.log" && break
    sleep 0.5
  done
done
log "servers ready: ${servers}"

log "embedding_bench against part 0"
"${bench_bin}" --server "127.0.0.1:${ports[0]}" --seconds 3 \
  > "${runs}/embedding_bench.json" 2> "${runs}/embedding_bench.log"

# train_pair NAME SLOW EXTRA...: 2 trainers, trainer 1 slowed when SLOW=1.
train_pair() {
  local name="$1" slow="$2"
  shift 2
  local port out="${runs}/${name}" pids=()
  port=$(free_port)
  for r in 0 1; do
    local prefix=() threads=()
    if [[ "${slow}" == 1 && "${r}" == 1 ]]; then
      prefix=(nice -n 19)
      threads=(--threads 1)
    fi
    RANK=${r} WORLD_SIZE=2 LOCAL_RANK=${r} LOCAL_WORLD_SIZE=2 \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} \
      "${prefix[@]}" "${shardgnn}" train --servers "${servers}" \
      --partition "${partition}" --model sage --fanouts 15,10 \
      --batch-size 1024 --hidden 256 --dropout 0.5 --epochs "${epochs}" \
      --checkpoint-every 0 --seed 0 "${threads[@]}" "$@" \
      $( ((r == 0)) && echo --out "${out}") \
      > "${runs}/${name}-trainer-${r}.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do wait "${pid}" || status=1; done
  if ((status != 0)); then
    log "${name} failed; see ${runs}/${name}-trainer-*.log"
    exit 1
  fi
  log "${name}: $(grep 'test accuracy' "${runs}/${name}-trainer-0.log")"
}

IFS=, read -r -a mode_list <<< "${modes}"
for slow in 0 1; do
  for mode in "${mode_list[@]}"; do
    name="${mode/:/}-slow${slow}"
    log "training: ${mode}, trainer 1 slowed: ${slow}"
    if [[ "${mode}" == none ]]; then
      train_pair "${name}" "${slow}"
    else
      train_pair "${name}" "${slow}" --learn-embeddings 64 \
        --embedding-sync "${mode}"
    fi
  done
done

python3 - "${runs}" "${modes}" "${epochs}" <<'PY'
import json, sys, os
runs, modes, epochs = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
out = {"graph": "sbm 200k nodes, 128 features, 16 classes, 2 parts (METIS)",
       "trainers": 2, "servers": 2, "epochs": epochs,
       "embedding_bench": json.load(open(os.path.join(runs, "embedding_bench.json"))),
       "runs": {}}
for slow in (0, 1):
    for mode in modes:
        name = f"{mode.replace(':', '')}-slow{slow}"
        d = os.path.join(runs, name)
        s = json.load(open(os.path.join(d, "summary.json")))
        curve, t = [], 0.0
        for line in open(os.path.join(d, "metrics.jsonl")):
            e = json.loads(line)
            t += e["epoch_seconds"]
            curve.append({"epoch": e["epoch"], "seconds": round(t, 2),
                          "epoch_seconds": round(e["epoch_seconds"], 2),
                          "val_acc": round(e["val_acc"], 4),
                          "embedding_pull_seconds": round(e.get("embedding_pull_seconds", 0), 2)})
        run = {"mode": mode, "trainer_1_slowed": bool(slow),
               "test_acc": s["test_acc"], "train_seconds": s["train_seconds"],
               "epoch_seconds_mean": s["epoch_time"]["epoch_seconds"],
               "step_seconds": s["epoch_time"]["step_seconds"],
               "minor_faults_per_step": s["epoch_time"].get("minor_faults_per_step"),
               "time_to_accuracy": curve}
        if "embeddings" in s:
            e = s["embeddings"]
            run["embeddings"] = {k: e[k] for k in (
                "rows_pulled_per_second", "rows_pushed_per_second",
                "pull_seconds", "push_wait_seconds")}
            run["embeddings"]["servers"] = [
                {k: v[k] for k in ("part", "pull_wait_seconds", "mean_staleness", "applied_steps")}
                for v in e["servers"]]
        out["runs"][name] = run
print(json.dumps(out, indent=2))
PY
