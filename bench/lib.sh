# shellcheck shell=bash
# Shared by the end-to-end benchmark scripts (bench/e2e/run_e2e.sh,
# bench/failover/run_failover.sh). Source it with bench_name set to the
# script's name (for messages):
#
#   bench_name=run_e2e.sh
#   source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
#
# It sets `repo` (this repository) and the default `shardgnn` binary
# ($SHARDGNN, else build/cli/shardgnn of this repository), and stops the
# script's background jobs when it exits or is interrupted.

bench_name="${bench_name:-bench}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shardgnn="${SHARDGNN:-${repo}/build/cli/shardgnn}"

log() { echo "${bench_name}: $*" >&2; }

# Exits 2 with one line unless $1 is an executable file.
require_shardgnn() {
  if [[ ! -x "$1" ]]; then
    echo "${bench_name}: $1: no shardgnn binary (build it, or give" \
      "--shardgnn)" >&2
    exit 2
  fi
}

# Interrupted or done: stop the jobs still running (`shardgnn run` stops its
# own servers and trainers on SIGTERM).
stop_jobs() {
  local left
  left=$(jobs -p)
  [[ -z "${left}" ]] || kill ${left} 2>/dev/null || true
}
trap stop_jobs EXIT
trap 'exit 130' INT TERM

# Seconds since $1 (a `date +%s.%N`), to the millisecond.
seconds_since() {
  python3 -c "import time,sys; print(round(time.time()-float(sys.argv[1]),3))" "$1"
}

# prepare_sbm DATASET PARTITION NODES AVG_DEGREE FEATURES CLASSES SPLIT [PREP]
#   [EDGE_SPLIT]
# Generates an SBM graph into DATASET and partitions it into 2 with METIS
# into PARTITION, each unless it is there already (then a line says it is
# reused). With PREP, a JSON file: {} then the seconds each step made here
# took (generate_seconds, partition_seconds). With EDGE_SPLIT (T,V,X), the
# graph's edges are split for link prediction too.
prepare_sbm() {
  local dataset="$1" partition="$2" nodes="$3" avg_degree="$4" features="$5"
  local classes="$6" split="$7" prep="${8:-/dev/null}" edge_split="${9:-}" t0
  local edge_flags=()
  [[ -n "${edge_split}" ]] && edge_flags=(--edge-split "${edge_split}")
  echo '{}' > "${prep}"
  if [[ -f "${dataset}/manifest.json" ]]; then
    log "reusing dataset ${dataset}"
  else
    log "generating ${dataset}"
    t0=$(date +%s.%N)
    "${shardgnn}" -q dataset generate --kind sbm --nodes "${nodes}" \
      --avg-degree "${avg_degree}" --features "${features}" \
      --classes "${classes}" --split "${split}" "${edge_flags[@]}" \
      --out "${dataset}" >&2
    echo "{\"generate_seconds\": $(seconds_since "${t0}")}" > "${prep}"
  fi
  if [[ -f "${partition}/partition.json" ]]; then
    log "reusing partition ${partition}"
  else
    log "partitioning into 2 (metis)"
    t0=$(date +%s.%N)
    "${shardgnn}" -q partition --dataset "${dataset}" --parts 2 \
      --method metis --out "${partition}" >&2
    if [[ "${prep}" != /dev/null ]]; then
      python3 - "${prep}" "$(seconds_since "${t0}")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["partition_seconds"] = float(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
    fi
  fi
}
