#!/usr/bin/env bash
# End-to-end benchmark (issue 6): the same GraphSAGE training
#   (a) in one process with the graph in memory  (shardgnn train --dataset),
#   (b) 2 storage servers + 1 trainer on loopback (shardgnn run --trainers 1),
#   (c) 2 storage servers + 2 trainers             (shardgnn run --trainers 2),
#   (bcalls) (b) with --no-shared-memory: every feature row through calls
#            (over the servers' feature ports, as between machines),
#   (bgrpc) (bcalls) with --no-feature-port: every feature row through gRPC,
# each with dropout 0.5 and 0, on a generated SBM graph; prints ONE JSON object
# with every configuration's summary figures (docs/formats.md, summary.json),
# the peak RSS of every server and trainer process (VmHWM, read from /proc while
# they run), and the ratios of each configuration's epoch time to (a)'s. See
# docs/benchmarks.md.
#
# Usage: bench/e2e/run_e2e.sh [--small] [--work DIR] [--nodes N] ...
#   (--help lists every flag). Progress goes to stderr, the JSON to stdout.
set -euo pipefail

usage() {
  cat <<'EOF'
run_e2e.sh: end-to-end benchmark, in-process vs 2 servers + 1 / 2 trainers.
  --shardgnn BIN        shardgnn binary (default: $SHARDGNN, else
                        build/cli/shardgnn next to this script's repo)
  --work DIR            datasets, partitions, run dirs and logs (default
                        /tmp/shardgnn-e2e); an existing dataset/partition of
                        the same size is reused
  --nodes N             graph nodes (1000000)
  --avg-degree D        stored edges per node (20)
  --features F          feature dimension (128)
  --classes C           classes (32)
  --split T,V,X         train,valid,test fractions (0.1,0.1,0.8)
  --epochs E            epochs per run; the first is warm-up (3)
  --dropouts LIST       dropout rates, comma-separated (0.5,0)
  --threads T           LibTorch intra-op threads per trainer (0 = default)
  --sampler-threads S   sampler threads per trainer (0: chosen from measurement)
  --prefetch P          minibatches prefetched (4)
  --configs LIST        subset of a,b,c,bcalls,bgrpc (a,b,c,bcalls); bcalls
                        is (b) with --no-shared-memory: features through
                        calls to the feature ports; bgrpc is bcalls with
                        --no-feature-port: features through gRPC
  --task node|link      what is trained (node); link: the graph's edges are
                        split 85/5/10 at generation and the runs train link
                        prediction (throughput: positive edges per second)
  --extra "FLAGS"       training flags added to every run (e.g. to compare
                        a default with its former value side by side)
  --pin T:S             cross-host emulation on one machine: the trainer runs
                        on CPUs T and the storage servers on CPUs S (taskset
                        lists, e.g. 1:0), so that the servers' work does not
                        come out of the trainer's cores, as between machines;
                        (a) runs on T alone, the servers are started apart
                        (shardgnn serve) and the runs given --servers, and
                        --threads defaults to the number of CPUs in T
  --small               20k nodes, 16 features, 8 classes, 2 epochs,
                        dropout 0.5 only (a smoke run, well under a minute)
EOF
}

invocation="$0 $*"
bench_name=run_e2e.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
work=/tmp/shardgnn-e2e
nodes=1000000 avg_degree=20 features=128 classes=32 split=0.1,0.1,0.8
extra=""
task=node
pin=""
epochs=3 dropouts=0.5,0 threads=0 sampler_threads=0 prefetch=4 configs=a,b,c,bcalls
while (($#)); do
  case "$1" in
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --avg-degree) avg_degree="$2"; shift 2 ;;
    --features) features="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --split) split="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --dropouts) dropouts="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --sampler-threads) sampler_threads="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --configs) configs="$2"; shift 2 ;;
    --extra) extra="$2"; shift 2 ;;
    --task) task="$2"; shift 2 ;;
    --pin) pin="$2"; shift 2 ;;
    --small)
      nodes=20000 features=16 classes=8 epochs=2 dropouts=0.5
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run_e2e.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
trainer_cpus=""
server_cpus=""
if [[ -n "${pin}" ]]; then
  if [[ ! "${pin}" =~ ^([0-9,-]+):([0-9,-]+)$ ]]; then
    echo "run_e2e.sh: --pin '${pin}': expected TRAINER_CPUS:SERVER_CPUS" \
      "(e.g. 1:0)" >&2
    exit 2
  fi
  trainer_cpus="${BASH_REMATCH[1]}"
  server_cpus="${BASH_REMATCH[2]}"
  command -v taskset >/dev/null || {
    echo "run_e2e.sh: --pin needs taskset (util-linux)" >&2; exit 2; }
  if [[ "${threads}" == 0 ]]; then
    threads=$(taskset -c "${trainer_cpus}" nproc)
  fi
fi
command -v python3 >/dev/null || {
  echo "run_e2e.sh: python3 is needed to assemble the JSON" >&2; exit 2; }

mkdir -p "${work}"
name="sbm-n${nodes}-d${avg_degree}-f${features}-c${classes}-s${split//,/_}"
edge_split=""
case "${task}" in
  node) ;;
  link) edge_split=0.85,0.05,0.10; name="${name}-links" ;;
  *) echo "run_e2e.sh: unknown task '${task}' (node or link)" >&2; exit 2 ;;
esac
dataset="${work}/${name}"
partition="${work}/${name}-metis2"
runs="${work}/runs"
mkdir -p "${runs}"

prep_json="${runs}/prep.json"
prepare_sbm "${dataset}" "${partition}" "${nodes}" "${avg_degree}" \
  "${features}" "${classes}" "${split}" "${prep_json}" "${edge_split}"

# Peak RSS (VmHWM, bytes) of every process under $1 (and of the PIDs after
# $2) that serves or trains, sampled each 0.5 s while $1 lives; written as
# "pid role bytes" lines to $2.
watch_rss() {
  local root="$1" out="$2"
  shift 2
  local others=("$@")
  declare -A peak role
  while kill -0 "${root}" 2>/dev/null; do
    for pid in $(pgrep -P "${root}" 2>/dev/null) "${root}" "${others[@]}"; do
      local cmd hwm
      cmd=$(tr '\0' ' ' < "/proc/${pid}/cmdline" 2>/dev/null) || continue
      hwm=$(awk '/^VmHWM:/ {printf "%.0f\n", $2 * 1024}' "/proc/${pid}/status" \
        2>/dev/null) || continue
      [[ -n "${hwm}" ]] || continue
      case "${cmd}" in
        *" serve "*) role[${pid}]="server" ;;
        *" train "*) role[${pid}]="trainer" ;;
        *) continue ;;
      esac
      if ((hwm > ${peak[${pid}]:-0})); then peak[${pid}]=${hwm}; fi
    done
    sleep 0.5
  done
  : > "${out}"
  for pid in "${!peak[@]}"; do
    echo "${pid} ${role[${pid}]} ${peak[${pid}]}" >> "${out}"
  done
}

train_flags=(--model sage --fanouts 15,10 --batch-size 1024 --hidden 256
  --epochs "${epochs}" --threads "${threads}"
  --sampler-threads "${sampler_threads}" --prefetch "${prefetch}"
  --task "${task}")
# shellcheck disable=SC2206
[[ -n "${extra}" ]] && train_flags+=(${extra})

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_servers OUT: with --pin, the 2 storage servers of a run on the
# server CPUs, fresh for each run; sets server_list and server_pids.
start_servers() {
  local out="$1" p port
  server_list=""
  server_pids=()
  for p in 0 1; do
    port=$(free_port)
    taskset -c "${server_cpus}" "${shardgnn}" serve --partition "${partition}" \
      --part "${p}" --memory --listen "127.0.0.1:${port}" \
      > "${out}.server-${p}.log" 2>&1 &
    server_pids+=($!)
    server_list+="${server_list:+,}127.0.0.1:${port}"
  done
  for p in 0 1; do
    for _ in $(seq 1 240); do
      grep -q "ready on" "${out}.server-${p}.log" && continue 2
      kill -0 "${server_pids[$p]}" 2>/dev/null || break
      sleep 0.5
    done
    log "server ${p} did not start; the last lines of ${out}.server-${p}.log:"
    tail -20 "${out}.server-${p}.log" >&2
    exit 1
  done
}

stop_servers() {
  ((${#server_pids[@]} == 0)) && return 0
  kill "${server_pids[@]}" 2>/dev/null || true
  wait "${server_pids[@]}" 2>/dev/null || true
  server_pids=()
}

# run_config CONFIG DROPOUT: one run; its directory is ${runs}/CONFIG-dDROPOUT.
run_config() {
  local config="$1" dropout="$2" out="${runs}/$1-d$2"
  rm -rf "${out}" "${out}.log" "${out}.rss" "${out}".server-*.log
  local cmd prefix=()
  server_pids=()
  [[ -n "${trainer_cpus}" ]] && prefix=(taskset -c "${trainer_cpus}")
  case "${config}" in
    a) mkdir -p "${out}"
       cmd=("${prefix[@]}" "${shardgnn}" train --dataset "${dataset}"
         --out "${out}") ;;
    b | c | bcalls | bgrpc)
      local trainers=1; [[ "${config}" == c ]] && trainers=2
      cmd=("${prefix[@]}" "${shardgnn}" run --partition "${partition}"
        --trainers "${trainers}" --work-dir "${runs}/work" --out "${out}")
      if [[ -n "${server_cpus}" ]]; then
        start_servers "${out}"
        cmd+=(--servers "${server_list}")
      fi
      # (b) with every feature row through GetFeatures calls: the network
      # path, as between machines.
      [[ "${config}" == bcalls || "${config}" == bgrpc ]] &&
        cmd+=(--no-shared-memory)
      [[ "${config}" == bgrpc ]] && cmd+=(--no-feature-port) ;;
  esac
  log "(${config}) dropout ${dropout}: ${cmd[*]} ${train_flags[*]}"
  local t0; t0=$(date +%s.%N)
  "${cmd[@]}" "${train_flags[@]}" --dropout "${dropout}" \
    > "${out}.log" 2>&1 &
  local pid=$!
  watch_rss "${pid}" "${out}.rss" "${server_pids[@]}" &
  local watcher=$!
  if ! wait "${pid}"; then
    wait "${watcher}" || true
    stop_servers
    log "(${config}) failed; the last lines of ${out}.log:"
    tail -20 "${out}.log" >&2
    exit 1
  fi
  wait "${watcher}" || true
  stop_servers
  echo "$(seconds_since "${t0}")" > "${out}.wall"
  grep -E "^(\[trainer 0\] )?(epoch|test)" "${out}.log" >&2 || true
}

IFS=, read -r -a dropout_list <<< "${dropouts}"
IFS=, read -r -a config_list <<< "${configs}"
for config in "${config_list[@]}"; do
  case "${config}" in
    a | b | c | bcalls | bgrpc) ;;
    *) echo "run_e2e.sh: unknown configuration '${config}'" \
         "(a, b, c, bcalls, bgrpc)" >&2
       exit 2 ;;
  esac
done
for dropout in "${dropout_list[@]}"; do
  for config in "${config_list[@]}"; do
    run_config "${config}" "${dropout}"
  done
done

python3 - "${runs}" "${dataset}" "${partition}" "${dropouts}" "${configs}" \
  "${prep_json}" "${invocation}" "${pin}" <<'PY'
import json, os, sys
runs, dataset, partition, dropouts, configs, prep, command, pin = sys.argv[1:9]
names = {"a": "a_in_process", "b": "b_2servers_1trainer",
         "c": "c_2servers_2trainers",
         "bcalls": "b_2servers_1trainer_no_shared_memory",
         "bgrpc": "b_2servers_1trainer_no_shared_memory_no_feature_port"}
manifest = json.load(open(os.path.join(dataset, "manifest.json")))
result = {
    "dataset": {k: manifest.get(k) for k in
                ("name", "num_nodes", "num_edges", "feature_dim",
                 "num_classes", "splits")},
    "dataset_dir": dataset, "partition_dir": partition,
    "preparation": json.load(open(prep)),
    "model": "sage, 2 layers, hidden 256, fanouts 15,10, batch 1024",
    "task": "link" if dataset.endswith("-links") else "node",
    "by_dropout": {},
}
if pin:
    trainer_cpus, server_cpus = pin.split(":")
    result["pinned"] = {"trainer_cpus": trainer_cpus,
                        "server_cpus": server_cpus}
for dropout in dropouts.split(","):
    block = {}
    for c in configs.split(","):
        out = os.path.join(runs, f"{c}-d{dropout}")
        s = json.load(open(os.path.join(out, "summary.json")))
        rss = {"server": [], "trainer": []}
        for line in open(out + ".rss"):
            _, role, peak = line.split()
            rss[role].append(int(peak))
        t = s["epoch_time"]
        block[names[c]] = {
            "task": s.get("task", "node"),
            "test_acc": s.get("test_acc"),
            "test_auc": s.get("test_auc"),
            "test_ap": s.get("test_ap"),
            "world_size": s["world_size"],
            "wall_seconds": float(open(out + ".wall").read()),
            "epoch_time": t,
            "test_time": s.get("test_time"),
            "wait_fraction_of_step": t["wait_fraction"],
            "process": s["process"],
            "remote": s.get("remote"),
            "cache": s.get("cache"),
            "peak_rss_bytes": {"servers": sorted(rss["server"]),
                               "trainers": sorted(rss["trainer"])},
            "run_dir": out,
        }
    if "a_in_process" in block:
        a = block["a_in_process"]["epoch_time"]
        ratios = {}
        for c in configs.split(","):
            key = names[c]
            if c != "a":
                t = block[key]["epoch_time"]
                ratios[f"{c}_over_a_epoch_seconds"] = (
                    t["epoch_seconds"] / a["epoch_seconds"])
                ratios[f"{c}_over_a_step_seconds"] = (
                    t["step_seconds"] / a["step_seconds"])
                if "positive_edges_per_second" in t:
                    # Link throughput: (a)'s rate over this one's (>= 1:
                    # slower than in process).
                    ratios[f"a_over_{c}_positive_edges_per_second"] = (
                        a["positive_edges_per_second"] /
                        t["positive_edges_per_second"])
        block["ratios"] = ratios
    block["dropout"] = float(dropout)
    result["by_dropout"][dropout] = block
result["command"] = command
print(json.dumps(result, indent=2))
PY
