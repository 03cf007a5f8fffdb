#!/usr/bin/env bash
# Attack while training (issue 12): a real distributed training run
# (`shardgnn run --servers A,B --trainers T`) against 2 storage servers
# (`shardgnn serve`, on [::] with an auth token, as a cluster deploys them),
# once quiet and once under each attack of bench/load (load_bench --clients 0:
# only the attacker, from [::1], against server 0). Prints one JSON object:
# per run its exit status, test accuracy, parameters checksum (an attack must
# not change what is trained: equal to the quiet run's), mean step and epoch
# seconds (the epochs after the first), their ratios to the quiet run, and how
# the servers answered the attack. bench/load/check_attack_training.py checks
# such a report (CI runs this on Cora with 2 epochs).
#
#   bench/load/run_attack_training.sh [--work DIR] [--nodes N] [--epochs E]
#       [--trainers T] [--attacks all|a,b,...] [--shardgnn BIN]
#       [--load-bench BIN] [--extra "TRAIN FLAGS"]
#
# Without --nodes the graph is the bundled Cora; with it an SBM graph of N
# nodes (64 features, 8 classes). The dataset and partition are kept in the
# work dir and reused.
set -euo pipefail
bench_name=run_attack_training.sh
# shellcheck source=../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

work=/tmp/attack-training
nodes=0
epochs=5
trainers=2
attacks=all
load_bench="${repo}/build/bench/load_bench"
extra=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --trainers) trainers="$2"; shift 2 ;;
    --attacks) attacks="$2"; shift 2 ;;
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --load-bench) load_bench="$2"; shift 2 ;;
    --extra) extra="$2"; shift 2 ;;
    *) echo "${bench_name}: unknown flag $1" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"
if [[ ! -x "${load_bench}" ]]; then
  echo "${bench_name}: ${load_bench}: no load_bench binary (build bench/)" >&2
  exit 2
fi
if [[ "${attacks}" == all ]]; then
  attacks=idle,amplify,flood,bigfeatures,unauth
fi
mkdir -p "${work}"
work="$(cd "${work}" && pwd)"

# The graph and its 2 parts.
if [[ "${nodes}" -gt 0 ]]; then
  dataset="${work}/sbm-${nodes}"
  partition="${work}/sbm-${nodes}-2parts"
  prepare_sbm "${dataset}" "${partition}" "${nodes}" 10 64 8 0.1,0.1,0.8
else
  dataset="${work}/cora"
  partition="${work}/cora-2parts"
  if [[ ! -f "${dataset}/manifest.json" ]]; then
    "${shardgnn}" -q dataset import --format ogb --undirected \
      --input "${repo}/datasets/cora/ogb-planetoid" --out "${dataset}" >&2
  fi
  if [[ ! -f "${partition}/partition.json" ]]; then
    "${shardgnn}" -q partition --dataset "${dataset}" --parts 2 \
      --method metis --out "${partition}" >&2
  fi
fi

# The servers: [::] (so the attacker reaches them from ::1 while the trainers
# come from 127.0.0.1), with a token.
token="${work}/token"
python3 -c "import secrets; print(secrets.token_hex(32))" > "${token}"
chmod 600 "${token}"
addresses=()
server_pids=()
for part in 0 1; do
  log="${work}/server-${part}.log"
  "${shardgnn}" serve --partition "${partition}" --part "${part}" \
    --listen "[::]:0" --memory --auth-token-file "${token}" > "${log}" 2>&1 &
  server_pids+=($!)
  for _ in $(seq 1 600); do
    grep -q "ready on" "${log}" && break
    kill -0 "${server_pids[-1]}" 2>/dev/null ||
      { cat "${log}" >&2; exit 1; }
    sleep 0.1
  done
  port=$(sed -n 's/.*ready on [^ ]*:\([0-9]*\) .*/\1/p' "${log}" | head -1)
  [[ -n "${port}" ]] || { echo "${bench_name}: server ${part} not ready" >&2; exit 1; }
  addresses+=("127.0.0.1:${port}")
done
servers=$(IFS=,; echo "${addresses[*]}")
log "servers ${servers}"

# train LABEL: one training run into ${work}/LABEL; its exit status in
# ${work}/LABEL.status.
train() {
  local label="$1" status=0
  rm -rf "${work:?}/${label}" "${work}/${label}-work"
  # shellcheck disable=SC2086
  "${shardgnn}" run --servers "${servers}" --partition "${partition}" \
    --trainers "${trainers}" --auth-token-file "${token}" --epochs "${epochs}" \
    --checkpoint-every 0 --work-dir "${work}/${label}-work" \
    --out "${work}/${label}" ${extra} > "${work}/${label}.log" 2>&1 || status=$?
  echo "${status}" > "${work}/${label}.status"
  log "${label}: exit ${status}, $(grep -E '^test' "${work}/${label}.log" | tail -1 || true)"
}

log "quiet run"
train quiet
for attack in ${attacks//,/ }; do
  log "run under attack: ${attack}"
  "${load_bench}" --servers "${servers}" --auth-token-file "${token}" \
    --server-pid "${server_pids[0]}" --clients 0 --attacks "${attack}" \
    --seconds 3600 > "${work}/attack-${attack}.json" \
    2> "${work}/attack-${attack}.log" &
  attacker=$!
  sleep 2  # Connected, and the attack under way.
  train "under-${attack}"
  kill -INT "${attacker}" 2>/dev/null || true
  wait "${attacker}" || true
done
kill "${server_pids[@]}" 2>/dev/null || true
wait "${server_pids[@]}" 2>/dev/null || true

python3 - "${work}" "${attacks}" "${epochs}" "${trainers}" "${servers}" <<'PY'
import json, os, sys
work, attacks, epochs, trainers, servers = sys.argv[1:6]

def run(label):
    out = {"exit_status": int(open(os.path.join(work, label + ".status")).read())}
    path = os.path.join(work, label, "summary.json")
    if os.path.exists(path):
        s = json.load(open(path))
        t = s.get("epoch_time", {})
        out.update(test_acc=s.get("test_acc"),
                   parameters_checksum=s.get("parameters_checksum"),
                   step_seconds=t.get("step_seconds"),
                   epoch_seconds=t.get("epoch_seconds"),
                   waiting_seconds=t.get("waiting_seconds"),
                   failovers=s.get("remote", {}).get("failovers"))
    return out

quiet = run("quiet")
report = {"config": {"epochs": int(epochs), "trainers": int(trainers),
                     "servers": servers.split(","), "attacker": "::1 -> server 0",
                     "cores": os.cpu_count()},
          "quiet": quiet, "attacked": {}}
for attack in attacks.split(","):
    r = run("under-" + attack)
    for key in ("step_seconds", "epoch_seconds"):
        if r.get(key) and quiet.get(key):
            r[key.replace("_seconds", "_ratio_to_quiet")] = r[key] / quiet[key]
    try:
        phases = json.load(open(os.path.join(work, "attack-%s.json" % attack)))["phases"]
        r["attack"] = phases[0].get("attack") if phases else None
        r["attack_seconds"] = phases[0]["seconds"] if phases else 0
    except (OSError, ValueError, KeyError) as e:
        r["attack"] = {"error": str(e)}
    report["attacked"][attack] = r
print(json.dumps(report, indent=2))
PY
