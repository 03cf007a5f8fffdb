#!/usr/bin/env bash
# Exact layer-wise inference (issue 14): `shardgnn infer` on a generated SBM
# graph, both ways:
#   distributed  2 storage servers (METIS, 2 parts, --memory) and 2 infer
#                processes (--world-size 2 --rank 0/1, meeting through a store
#                file), as a trained model is used against a running cluster;
#   in-process   one `infer --dataset` process with the graph in memory;
# after training a GraphSAGE model briefly against the same servers
# (`shardgnn run --servers ... --trainers 2 --epochs 1`). Prints ONE JSON
# object: the graph's size, the wall time of each infer (and the seconds
# infer.json reports for the computation alone), the peak RSS of every
# process (the infer processes' from /usr/bin/time -v; the servers' VmHWM from
# /proc, reset after training so that it is the peak while serving the
# inference), each infer.json's accuracies, and how far apart the two
# logits.npy are. With --torch-check, also trains in one process (`shardgnn
# train --dataset`), infers in one process, and checks that against stock
# PyTorch (examples/predict_with_torch.py, and every node's logits). See
# docs/benchmarks.md, "Inference (issue 14)".
#
# Usage: bench/infer/run_infer.sh [--small] [--work DIR] [--nodes N] ...
#   (--help lists every flag). Progress goes to stderr, the JSON to stdout.
set -euo pipefail

usage() {
  cat <<'EOF'
run_infer.sh: `shardgnn infer`, 2 servers + 2 ranks against one process.
  --shardgnn BIN    shardgnn binary (default: $SHARDGNN, else build/cli/shardgnn
                    next to this script's repo)
  --work DIR        dataset, partition, runs and logs (default
                    /tmp/shardgnn-infer); an existing dataset/partition of the
                    same size is reused
  --nodes N         graph nodes (1000000)
  --features F      feature dimension (128)
  --classes C       classes (16)
  --chunk-nodes K   infer's --chunk-nodes (its default, 4096)
  --in-process-threads T
                    the in-process infer's --threads (0: its default, every
                    core; each of the 2 ranks gets 1 thread, LOCAL_WORLD_SIZE=2)
  --python PY       Python with numpy (and torch for --torch-check)
                    (/usr/bin/python3)
  --reuse-run       keep the model a previous invocation trained in WORK
                    (its runs/<graph>/train) instead of training again
  --torch-check     also train and infer in one process and check the logits
                    against examples/predict_with_torch.py (stock PyTorch,
                    full graph in memory: fine at 100k nodes, not at 1M)
  --small           20k nodes, 16 features, 8 classes (a smoke run)
EOF
}

invocation="$0 $*"
bench_name=run_infer.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
work=/tmp/shardgnn-infer
nodes=1000000 features=128 classes=16 avg_degree=20 split=0.1,0.1,0.8
chunk_nodes="" python=/usr/bin/python3 torch_check=0 reuse_run=0 local_threads=0
while (($#)); do
  case "$1" in
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --features) features="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --chunk-nodes) chunk_nodes="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --torch-check) torch_check=1; shift ;;
    --reuse-run) reuse_run=1; shift ;;
    --in-process-threads) local_threads="$2"; shift 2 ;;
    --small) nodes=20000 features=16 classes=8; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run_infer.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
[[ -x /usr/bin/time ]] || {
  echo "run_infer.sh: /usr/bin/time (GNU time) is needed for peak RSS" >&2
  exit 2; }
"${python}" -c "import numpy" 2>/dev/null || {
  echo "run_infer.sh: ${python} cannot import numpy (--python)" >&2; exit 2; }

mkdir -p "${work}"
name="sbm-n${nodes}-d${avg_degree}-f${features}-c${classes}-s${split//,/_}"
dataset="${work}/${name}"
partition="${work}/${name}-metis2"
runs="${work}/runs/${name}"
mkdir -p "${runs}"
infer_flags=()
[[ -z "${chunk_nodes}" ]] || infer_flags+=(--chunk-nodes "${chunk_nodes}")

prep_json="${runs}/prep.json"
prepare_sbm "${dataset}" "${partition}" "${nodes}" "${avg_degree}" \
  "${features}" "${classes}" "${split}" "${prep_json}"

# The storage servers, and the /usr/bin/time wrappers of infer processes
# (whose shardgnn child a signal to the wrapper would leave running).
server_pids=()
timed_pids=()
declare -A watcher
cleanup() {
  local pid
  for pid in "${timed_pids[@]}"; do
    kill $(pgrep -P "${pid}" 2>/dev/null) 2>/dev/null || true
  done
  for pid in "${server_pids[@]}"; do
    kill "${pid}" 2>/dev/null || true
  done
  for pid in "${server_pids[@]}"; do
    wait "${pid}" 2>/dev/null || true
  done
  server_pids=()
  stop_jobs
}
trap cleanup EXIT

# VmHWM of pid $1 in bytes.
peak_rss() { awk '/^VmHWM:/ {printf "%.0f\n", $2 * 1024}' "/proc/$1/status"; }
# CPU seconds (user + system) pid $1 has used so far.
cpu_seconds() {
  awk -v tck="$(getconf CLK_TCK)" '{print ($14 + $15) / tck}' "/proc/$1/stat"
}
# The 1-minute load average, before a measurement (others share the cores).
load_before() { cut -d' ' -f1 /proc/loadavg > "${runs}/$1.load"; }

# Starts the server of part $1; sets `server_address` once it is ready.
start_server() {
  local part="$1" log="${runs}/server-$1.log"
  "${shardgnn}" serve --partition "${partition}" --part "${part}" \
    --listen 127.0.0.1:0 --memory > "${log}" 2>&1 &
  local pid=$!
  server_pids+=("${pid}")
  server_address=""
  until [[ -n "${server_address}" ]]; do
    if ! kill -0 "${pid}" 2>/dev/null; then
      log "server of part ${part} exited; ${log}:"
      tail -20 "${log}" >&2
      exit 1
    fi
    sleep 0.2
    server_address=$(sed -n 's/.* ready on \([^ ]*\) .*/\1/p' "${log}" |
      head -1)
  done
  log "server of part ${part} (pid ${pid}) ready on ${server_address}"
}

# watch_rss PID OUT: while PID (a /usr/bin/time) lives, samples its child's
# resident memory by kind every 0.2 s and writes the largest of each, in kB,
# to OUT as "anon file shmem": anonymous (the process's own), file-backed
# (here mostly the mapped scratch layers, page cache) and shared memory (a
# co-located server's feature matrix). VmHWM, which /usr/bin/time reports,
# is their sum at its peak.
watch_rss() {
  local parent="$1" out="$2" pid="" anon=0 file=0 shmem=0 a f m
  while kill -0 "${parent}" 2>/dev/null; do
    [[ -n "${pid}" ]] || pid=$(pgrep -P "${parent}" | head -1) || true
    if [[ -n "${pid}" ]] &&
      read -r a f m < <(awk '/^RssAnon:/ {a = $2} /^RssFile:/ {f = $2}
          /^RssShmem:/ {m = $2} END {print a + 0, f + 0, m + 0}' \
          "/proc/${pid}/status" 2>/dev/null); then
      ((a > anon)) && anon=${a}
      ((f > file)) && file=${f}
      ((m > shmem)) && shmem=${m}
    fi
    sleep 0.2
  done
  echo "${anon} ${file} ${shmem}" > "${out}"
}

# timed NAME CMD...: runs CMD under /usr/bin/time -v in the background,
# its output in ${runs}/NAME.log, the report in ${runs}/NAME.time, its
# memory by kind in ${runs}/NAME.rss (watch_rss); sets `timed_pid`.
timed() {
  local name="$1"; shift
  /usr/bin/time -v -o "${runs}/${name}.time" "$@" > "${runs}/${name}.log" 2>&1 &
  timed_pid=$!
  timed_pids+=("${timed_pid}")
  watch_rss "${timed_pid}" "${runs}/${name}.rss" &
  watcher[${timed_pid}]=$!
}

# finish NAME PID: waits for a timed run; on failure shows its log and exits.
finish() {
  if ! wait "$2"; then
    log "${1} failed; the last lines of ${runs}/${1}.log:"
    tail -20 "${runs}/${1}.log" >&2
    exit 1
  fi
  wait "${watcher[$2]}" || true
}

log "starting 2 storage servers"
t0=$(date +%s.%N)
start_server 0; address0="${server_address}"
start_server 1; address1="${server_address}"
servers="${address0},${address1}"
seconds_since "${t0}" > "${runs}/servers.wall"

run_dir="${runs}/train"
if ((reuse_run)) && [[ -f "${run_dir}/model.json" && -f "${runs}/train.wall" ]]
then
  log "reusing the model trained in ${run_dir}"
  echo 1 > "${runs}/train.reused"
else
  rm -rf "${run_dir}" "${runs}/train.log" "${runs}/train.wall"
  train_cmd=("${shardgnn}" run --servers "${servers}" --partition "${partition}"
    --trainers 2 --epochs 1 --work-dir "${runs}/work" --out "${run_dir}")
  log "training: ${train_cmd[*]}"
  t0=$(date +%s.%N)
  if ! "${train_cmd[@]}" > "${runs}/train.log" 2>&1; then
    log "training failed; the last lines of ${runs}/train.log:"
    tail -20 "${runs}/train.log" >&2
    exit 1
  fi
  seconds_since "${t0}" > "${runs}/train.wall"
  echo 0 > "${runs}/train.reused"
  grep -E "^(\[trainer 0\] )?(epoch|test accuracy)" "${runs}/train.log" >&2 ||
    true
fi

# The servers' peaks so far (loading, training if it ran), then reset (writing 5 to
# clear_refs resets VmHWM to the current RSS) for the peak while inferring.
: > "${runs}/servers.rss"
for pid in "${server_pids[@]}"; do
  echo "${pid} before $(peak_rss "${pid}") $(cpu_seconds "${pid}")" \
    >> "${runs}/servers.rss"
  echo 5 > "/proc/${pid}/clear_refs" 2>/dev/null ||
    log "cannot reset VmHWM of ${pid}: its infer peak includes training"
done

dist_out="${runs}/infer-distributed"
store="${runs}/infer-store"
rm -rf "${dist_out}" "${store}"
log "distributed infer: 2 ranks against ${servers}"
load_before infer-distributed
t0=$(date +%s.%N)
rank_pids=()
for rank in 0 1; do
  LOCAL_RANK=${rank} LOCAL_WORLD_SIZE=2 timed "infer-rank${rank}" \
    "${shardgnn}" infer "${run_dir}" --servers "${servers}" \
    --partition "${partition}" --out "${dist_out}" --world-size 2 \
    --rank "${rank}" --store-file "${store}" "${infer_flags[@]}"
  rank_pids+=("${timed_pid}")
done
finish infer-rank0 "${rank_pids[0]}"
finish infer-rank1 "${rank_pids[1]}"
seconds_since "${t0}" > "${runs}/infer-distributed.wall"
grep -E "accuracy|nodes in" "${runs}/infer-rank0.log" >&2 || true

for pid in "${server_pids[@]}"; do
  echo "${pid} infer $(peak_rss "${pid}") $(cpu_seconds "${pid}")" \
    >> "${runs}/servers.rss"
done
log "stopping the servers"
for pid in "${server_pids[@]}"; do kill "${pid}"; done
for pid in "${server_pids[@]}"; do wait "${pid}" || true; done
server_pids=()

local_out="${runs}/infer-in-process"
rm -rf "${local_out}"
log "in-process infer over ${dataset}"
load_before infer-in-process
t0=$(date +%s.%N)
timed infer-in-process "${shardgnn}" infer "${run_dir}" --dataset "${dataset}" \
  --out "${local_out}" --threads "${local_threads}" "${infer_flags[@]}"
finish infer-in-process "${timed_pid}"
seconds_since "${t0}" > "${runs}/infer-in-process.wall"
grep -E "accuracy|nodes in" "${runs}/infer-in-process.log" >&2 || true

: > "${runs}/torch-check.txt"
if ((torch_check)); then
  local_run="${runs}/train-in-process"
  local_run_out="${runs}/infer-train-in-process"
  rm -rf "${local_run}" "${local_run_out}"
  log "torch check: training in one process, then infer --dataset"
  "${shardgnn}" train --dataset "${dataset}" --out "${local_run}" \
    --epochs 1 > "${runs}/train-in-process.log" 2>&1 || {
    tail -20 "${runs}/train-in-process.log" >&2; exit 1; }
  "${shardgnn}" infer "${local_run}" --dataset "${dataset}" \
    --out "${local_run_out}" "${infer_flags[@]}" \
    > "${runs}/infer-train-in-process.log" 2>&1 || {
    tail -20 "${runs}/infer-train-in-process.log" >&2; exit 1; }
  log "torch check: examples/predict_with_torch.py --check"
  "${python}" "${repo}/examples/predict_with_torch.py" "${local_run}" \
    "${dataset}" --check "${local_run_out}" > "${runs}/torch-check.log" 2>&1 ||
    log "predict_with_torch.py reports a mismatch (exit status $?)"
  tail -1 "${runs}/torch-check.log" | tee "${runs}/torch-check.txt" >&2
  # The same forward pass, every node's logits (not only the script's 20).
  "${python}" - "${repo}/examples" "${local_run}" "${dataset}" \
    "${local_run_out}" > "${runs}/torch-check-all.json" <<'PY'
import json, os, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
import predict_with_torch as p
run, dataset, out = sys.argv[2:5]
config = json.load(open(os.path.join(run, "model.json")))
params = torch.load(os.path.join(run, config["parameters"]))
x, src, dst, degree = p.load_graph(dataset)
with torch.no_grad():
    logits = p.forward(config, params, x, src, dst, degree).numpy()
theirs = np.load(os.path.join(out, "logits.npy"))
pred = np.load(os.path.join(out, "predictions.npy"))
print(json.dumps({
    "nodes": int(logits.shape[0]),
    "max_abs_logit_difference": float(np.abs(theirs - logits).max()),
    "predictions_differing": int((pred != logits.argmax(1)).sum())}))
PY
  log "torch check, every node: $(cat "${runs}/torch-check-all.json")"
fi

"${python}" - "${runs}" "${dataset}" "${partition}" "${invocation}" \
  "${torch_check}" "${local_threads}" <<'PY'
import json, os, re, subprocess, sys
import numpy as np
runs, dataset, partition, command, torch_check, local_threads = sys.argv[1:7]
mib = lambda b: round(b / 2**20, 1)
def rd(*p): return json.load(open(os.path.join(runs, *p)))
def wall(name): return float(open(os.path.join(runs, name + ".wall")).read())
def time_report(name):
    text = open(os.path.join(runs, name + ".time")).read()
    field = lambda label: re.search(label + r": ([0-9.]+)", text).group(1)
    report = {
        "peak_rss_mib": mib(int(field(r"Maximum resident set size \(kbytes\)"))
                            * 1024),
        "cpu_seconds": round(float(field(r"User time \(seconds\)")) +
                             float(field(r"System time \(seconds\)")), 2)}
    anon, file, shmem = (int(x) * 1024 for x in
                         open(os.path.join(runs, name + ".rss")).read().split())
    report["largest_rss_mib_by_kind"] = {
        "anonymous": mib(anon), "file_mapped": mib(file),
        "shared_memory": mib(shmem)}
    return report
def load(name): return float(open(os.path.join(runs, name + ".load")).read())
manifest = json.load(open(os.path.join(dataset, "manifest.json")))
def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        return m.group(1).strip() if m else None
    except OSError:
        return None
def accs(j):
    return {k: j.get(k) for k in ("train_acc", "valid_acc", "test_acc")}
dist = rd("infer-distributed", "infer.json")
local = rd("infer-in-process", "infer.json")
servers = {"before": {}, "infer": {}}
for line in open(os.path.join(runs, "servers.rss")):
    pid, phase, peak, cpu = line.split()
    servers[phase][pid] = (int(peak), float(cpu))
server_pids = list(servers["infer"])
rank = {r: time_report(f"infer-rank{r}") for r in (0, 1)}
a = np.load(os.path.join(runs, "infer-distributed", "logits.npy"))
b = np.load(os.path.join(runs, "infer-in-process", "logits.npy"))
pa = np.load(os.path.join(runs, "infer-distributed", "predictions.npy"))
pb = np.load(os.path.join(runs, "infer-in-process", "predictions.npy"))
train_summary = rd("train", "summary.json")
result = {
    "nodes": manifest.get("num_nodes"),
    "edges": manifest.get("num_edges"),
    "feature_dim": manifest.get("feature_dim"),
    "num_classes": manifest.get("num_classes"),
    "dataset_dir": dataset, "partition_dir": partition,
    "preparation": rd("prep.json"),
    "machine": {"nproc": os.cpu_count(), "cpu_model": lscpu_model()},
    "model": f"{dist.get('model')}, embedding dim {dist.get('embedding_dim')}",
    "train": {"wall_seconds": wall("train"),
              "reused_from_an_earlier_invocation":
                  open(os.path.join(runs, "train.reused")).read().strip() == "1",
              "test_acc_sampled": train_summary.get("test_acc"),
              "run_dir": os.path.join(runs, "train")},
    "distributed": {
        "wall_seconds": wall("infer-distributed"),
        "infer_seconds": dist.get("seconds"),
        **accs(dist),
        "edges_read_rank0": dist.get("edges_read"),
        "scratch_mib_rank0": mib(dist.get("scratch_bytes", 0)),
        "load_average_before": load("infer-distributed"),
        "peak_rss_mib": {
            "rank0": rank[0]["peak_rss_mib"],
            "rank1": rank[1]["peak_rss_mib"],
            "rank0_largest_by_kind": rank[0]["largest_rss_mib_by_kind"],
            "rank1_largest_by_kind": rank[1]["largest_rss_mib_by_kind"],
            "servers_while_inferring": [
                mib(servers["infer"][p][0]) for p in server_pids],
            "servers_before_inferring": [
                mib(servers["before"][p][0]) for p in server_pids]},
        "cpu_seconds": {
            "rank0": rank[0]["cpu_seconds"],
            "rank1": rank[1]["cpu_seconds"],
            "servers": [round(servers["infer"][p][1] -
                              servers["before"][p][1], 2)
                        for p in server_pids]},
    },
    "in_process": {
        "wall_seconds": wall("infer-in-process"),
        "infer_seconds": local.get("seconds"),
        **accs(local),
        "edges_read": local.get("edges_read"),
        "scratch_mib": mib(local.get("scratch_bytes", 0)),
        "load_average_before": load("infer-in-process"),
        "threads_flag": int(local_threads),
        **time_report("infer-in-process"),
    },
    "logits_agree": {
        "max_abs_difference": float(np.abs(a - b).max()),
        "predictions_differing": int((pa != pb).sum()),
        "shape": list(a.shape),
    },
}
if torch_check == "1":
    result["torch_check"] = {
        "predict_with_torch": open(os.path.join(runs, "torch-check.txt"))
            .read().strip(),
        "every_node": rd("torch-check-all.json"),
    }
result["command"] = command
print(json.dumps(result, indent=2))
PY
