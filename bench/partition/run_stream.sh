#!/usr/bin/env bash
# The streaming partitioner against METIS (issue 55, item 2): partitions each
# graph into K parts with `shardgnn partition --method metis` and
# `--method stream`, and prints one JSON object per (graph, K): each method's
# edge cut (fraction of the adjacency entries), largest imbalance over the
# balance constraints, wall time of the whole command, partition time
# (timing.json: the assignment stage) and peak RSS (timing.json), the
# stream's cut and peak over METIS's, and the dataset's size on disk.
#
#   bench/partition/run_stream.sh [--work DIR] [--graphs LIST] [--parts LIST]
#       [--shardgnn BIN]
#
# Graphs (comma-separated): the bundled cora, amazon-computers,
# facebook-page-page, twitch-en (imported once, undirected), and generated
# sbm1m / rmat1m / sbm10m / rmat10m (N nodes, average degree 20, 16
# features, 32 classes; generated once into the work dir). Defaults: the
# four bundled graphs and sbm1m, rmat1m; K = 2,4,8,16. Partitions are
# removed after they are measured.
set -euo pipefail
bench_name=run_stream.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

work=/tmp/shardgnn-partition
graphs=cora,amazon-computers,facebook-page-page,twitch-en,sbm1m,rmat1m
parts=2,4,8,16
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --graphs) graphs="$2"; shift 2 ;;
    --parts) parts="$2"; shift 2 ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) log "unknown flag $1"; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
mkdir -p "${work}/datasets" "${work}/logs"

# Imports or generates graph $1 into ${work}/datasets/$1 once.
prepare() {
  local name="$1" dir="${work}/datasets/$1"
  [[ -f "${dir}/manifest.json" ]] && return 0
  log "preparing ${name}"
  case "${name}" in
    cora)
      "${shardgnn}" dataset import --format ogb --undirected --name cora \
        --input "${repo}/datasets/cora/ogb-planetoid" --out "${dir}" ;;
    amazon-computers|facebook-page-page|twitch-en|cora-ml)
      "${shardgnn}" dataset import --format ogb --undirected --name "${name}" \
        --input "${repo}/datasets/${name}" --out "${dir}" ;;
    sbm1m|rmat1m|sbm10m|rmat10m)
      local kind="${name%%[0-9]*}" nodes
      nodes=$(( ${name//[!0-9]/} * 1000000 ))
      "${shardgnn}" dataset generate --kind "${kind}" --nodes "${nodes}" \
        --avg-degree 20 --features 16 --classes 32 --out "${dir}" ;;
    *) log "unknown graph ${name}"; exit 2 ;;
  esac >"${work}/logs/prepare-${name}.log" 2>&1 || {
    log "preparing ${name} failed:"; tail -3 "${work}/logs/prepare-${name}.log" >&2
    exit 1
  }
}

# Partitions graph $1 into $2 parts with method $3; prints one JSON object.
measure() {
  local graph="$1" k="$2" method="$3" out="${work}/p-$1-$2-$3" start wall
  rm -rf "${out}"
  start=$(date +%s.%N)
  "${shardgnn}" partition --dataset "${work}/datasets/${graph}" --parts "${k}" \
    --method "${method}" --out "${out}" \
    >"${work}/logs/partition-${graph}-${k}-${method}.log" 2>&1 || {
    log "partitioning ${graph} (${method}, ${k} parts) failed:"
    tail -3 "${work}/logs/partition-${graph}-${k}-${method}.log" >&2
    exit 1
  }
  wall=$(seconds_since "${start}")
  python3 - "${out}" "${wall}" <<'PY' || exit 1
import json, sys
out, wall = sys.argv[1], float(sys.argv[2])
m = json.load(open(out + "/partition.json"))
t = json.load(open(out + "/timing.json"))
print(json.dumps({
    "method": m["method"],
    "edge_cut": round(m["edge_cut"]["fraction"], 5),
    "max_imbalance": round(max(b["imbalance"] for b in m["balance"].values()), 4),
    "wall_seconds": wall, "assign_seconds": round(t["assign_seconds"], 3),
    "peak_rss_bytes": t["peak_rss_after_write"]}))
PY
  rm -rf "${out}"
}

IFS=, read -r -a graph_list <<<"${graphs}"
IFS=, read -r -a part_list <<<"${parts}"
for graph in "${graph_list[@]}"; do
  prepare "${graph}"
  size=$(du -sb "${work}/datasets/${graph}" | cut -f1)
  for k in "${part_list[@]}"; do
    metis=$(measure "${graph}" "${k}" metis)
    stream=$(measure "${graph}" "${k}" stream)
    python3 - "${graph}" "${k}" "${size}" "${metis}" "${stream}" <<'PY'
import json, sys
graph, k, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
metis, stream = json.loads(sys.argv[4]), json.loads(sys.argv[5])
print(json.dumps({
    "graph": graph, "parts": k, "dataset_bytes": size,
    "metis": metis, "stream": stream,
    "cut_ratio": round(stream["edge_cut"] / metis["edge_cut"], 3)
                 if metis["edge_cut"] else None,
    "peak_rss_ratio": round(stream["peak_rss_bytes"] / metis["peak_rss_bytes"], 3)}),
    flush=True)
PY
  done
done
