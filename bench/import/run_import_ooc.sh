#!/usr/bin/env bash
# Out-of-core import (issue 55, item 3): imports one generated R-MAT edge
# list twice with `shardgnn dataset import --format edgelist`, in memory and
# with --memory-limit, each under /usr/bin/time -v, checks that the two
# dataset directories are equal file by file (cmp), and prints one JSON
# object: the graph, the limit, each import's peak RSS and wall time, the
# in-memory peak over the limit, whether the out-of-core peak stayed under
# it, and whether the outputs are identical. Exits 1 if they differ or the
# out-of-core peak is over the limit.
#
#   bench/import/run_import_ooc.sh [--work DIR] [--nodes N] [--edges E]
#       [--limit BYTES] [--format npy|text] [--directed] [--shardgnn BIN]
#
# Defaults: 4M nodes, 60M edges (edges.npy, [E, 2] int64), stored undirected,
# --memory-limit 512M. The input is generated once (bench/import/
# gen_edges.py) into the work dir and reused; the outputs are removed at the
# end. The generator needs numpy ($PYTHON, default /usr/bin/python3).
set -euo pipefail
bench_name=run_import_ooc.sh
# shellcheck source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

work=/tmp/import-ooc
# The generator needs numpy: $PYTHON, else the system's python3.
python="${PYTHON:-/usr/bin/python3}"
[[ -x "${python}" ]] || python=python3
nodes=4000000
edges=60000000
limit=512M
format=npy
undirected=--undirected
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --edges) edges="$2"; shift 2 ;;
    --limit) limit="$2"; shift 2 ;;
    --format) format="$2"; shift 2 ;;
    --directed) undirected=; shift ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    *) echo "${bench_name}: unknown argument $1" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
[[ "${format}" == npy || "${format}" == text ]] || {
  echo "${bench_name}: --format npy or text, not ${format}" >&2; exit 2; }
[[ -x /usr/bin/time ]] || {
  echo "${bench_name}: needs /usr/bin/time (GNU time) for peak RSS" >&2
  exit 2; }

input="${work}/rmat-${nodes}-${edges}"
edge_file="${input}/edges.npy"
[[ "${format}" == text ]] && edge_file="${input}/edges.txt"
if [[ -f "${edge_file}" && -f "${input}/labels.npy" ]]; then
  log "reusing ${input}"
else
  log "generating ${nodes} nodes, ${edges} edges into ${input}"
  text_flag=()
  [[ "${format}" == text ]] && text_flag=(--text)
  "${python}" "${repo}/bench/import/gen_edges.py" "${input}" "${nodes}" \
    "${edges}" "${text_flag[@]}"
fi

# run_import NAME [FLAGS...]: one import into ${work}/NAME under /usr/bin/time;
# leaves NAME.time (time -v) and NAME.log (its output) and prints the
# seconds it took.
run_import() {
  local name="$1" t0
  shift
  rm -rf "${work:?}/${name}"
  t0=$(date +%s.%N)
  if ! /usr/bin/time -v -o "${work}/${name}.time" "${shardgnn}" dataset \
      import --format edgelist --edges "${edge_file}" \
      --features "${input}/features.npy" --labels "${input}/labels.npy" \
      ${undirected} --out "${work}/${name}" "$@" \
      > "${work}/${name}.log" 2>&1; then
    log "${name} import failed:"
    tail -5 "${work}/${name}.log" >&2
    exit 1
  fi
  seconds_since "${t0}"
}
peak_kib() {
  awk -F': ' '/Maximum resident set size/ {print $2}' "$1"
}

log "in-memory import"
mem_seconds=$(run_import in-memory)
log "out-of-core import, --memory-limit ${limit}"
ooc_seconds=$(run_import out-of-core --memory-limit "${limit}")

identical=true
for f in "${work}/in-memory"/*; do
  if ! cmp -s "${f}" "${work}/out-of-core/$(basename "${f}")"; then
    log "$(basename "${f}") differs"
    identical=false
  fi
done
[[ "$(ls "${work}/in-memory")" == "$(ls "${work}/out-of-core")" ]] ||
  identical=false

status=0
python3 - "${work}" "${limit}" "${nodes}" "${edges}" "${format}" \
  "${undirected:-directed}" "${mem_seconds}" "${ooc_seconds}" \
  "$(peak_kib "${work}/in-memory.time")" \
  "$(peak_kib "${work}/out-of-core.time")" "${identical}" <<'EOF' || status=$?
import json, re, sys
(work, limit, nodes, edges, fmt, mode, mem_s, ooc_s, mem_kib, ooc_kib,
 identical) = sys.argv[1:]
mem_peak, ooc_peak = int(mem_kib) * 1024, int(ooc_kib) * 1024
units = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
m = re.fullmatch(r"(\d+)([KMGT]?)", limit.upper().rstrip("B").rstrip("I"))
limit_bytes = int(m.group(1)) << units[m.group(2)]
manifest = json.load(open(f"{work}/out-of-core/manifest.json"))
note = [l.strip() for l in open(f"{work}/out-of-core.log")
        if "built out of core" in l]
report = {
    "nodes": int(nodes), "input_edges": int(edges),
    "stored_edges": manifest["num_edges"], "input_format": fmt,
    "stored": "both directions" if mode == "--undirected" else "directed",
    "memory_limit_bytes": limit_bytes,
    "in_memory": {"peak_rss_bytes": int(mem_peak), "seconds": float(mem_s)},
    "out_of_core": {"peak_rss_bytes": int(ooc_peak), "seconds": float(ooc_s),
                    "build": note[0] if note else ""},
    "in_memory_peak_over_limit": round(int(mem_peak) / limit_bytes, 2),
    "out_of_core_peak_over_limit": round(int(ooc_peak) / limit_bytes, 3),
    "out_of_core_under_limit": int(ooc_peak) < limit_bytes,
    "time_ratio": round(float(ooc_s) / float(mem_s), 2),
    "identical": identical == "true",
}
print(json.dumps(report, indent=2))
sys.exit(0 if report["identical"] and report["out_of_core_under_limit"]
         else 1)
EOF
rm -rf "${work:?}/in-memory" "${work:?}/out-of-core"
exit "${status}"
