#!/usr/bin/env bash
# What failures cost a run (issue 13): `shardgnn run --replicas 2 --trainers 2`
# on a generated graph, with features through calls (--no-shared-memory, as
# between machines), in scenarios run back to back on one machine:
#   healthy    no failure;
#   kill       one replica of part 1 SIGKILLed mid-epoch 2;
#   stop       one replica of part 1 SIGSTOPped mid-epoch 2 (alive, silent);
#   stop_hedge the same with --hedge-after-ms H (if this shardgnn has it);
#   trainer    trainer 1 SIGKILLed mid-epoch 2 (the group restarts from its
#              checkpoints).
# Prints one JSON object: per scenario the wall time, every epoch's time, the
# failovers and restarts, and whether the final parameters equal the healthy
# run's (parameters_checksum); plus each scenario's extra seconds against the
# healthy run. Progress goes to stderr.
set -euo pipefail

usage() {
  cat <<'EOF'
run_failover.sh: what a dead or silent replica and a dead trainer cost a run.
  --shardgnn BIN     shardgnn binary (default: $SHARDGNN, else build/cli/shardgnn)
  --work DIR         dataset, partition, runs (default /tmp/shardgnn-failover);
                     an existing dataset/partition of the same size is reused
  --nodes N          graph nodes (200000)
  --classes C        classes (16)
  --epochs E         epochs per run (3)
  --hedge-ms H       the hedged scenario's --hedge-after-ms (20)
  --scenarios LIST   subset of healthy,kill,stop,stop_hedge,trainer (all)
  --small            20k nodes, 8 classes (a smoke run)
  --extra "ARGS"     more flags for every run (e.g. "--learn-embeddings 64":
                     the replicas then also hold copies of a learned table)
EOF
}

bench_name=run_failover.sh
# shellcheck source=SCRIPTDIR/../lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
work=/tmp/shardgnn-failover
nodes=200000 classes=16 epochs=3 hedge_ms=20
scenarios=healthy,kill,stop,stop_hedge,trainer
extra=""
while (($#)); do
  case "$1" in
    --shardgnn) shardgnn="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --classes) classes="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --hedge-ms) hedge_ms="$2"; shift 2 ;;
    --scenarios) scenarios="$2"; shift 2 ;;
    --small) nodes=20000 classes=8; shift ;;
    --extra) extra="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run_failover.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
require_shardgnn "${shardgnn}"

mkdir -p "${work}/runs"
dataset="${work}/sbm-n${nodes}-c${classes}"
partition="${dataset}-metis2"
prepare_sbm "${dataset}" "${partition}" "${nodes}" 20 128 "${classes}" \
  0.1,0.1,0.8
has_hedge=0
# (Not a pipe into grep -q: under pipefail its early exit fails the pipe.)
run_help="$("${shardgnn}" run --help 2>/dev/null || true)"
[[ "${run_help}" == *"--hedge-after-ms"* ]] && has_hedge=1

# The pid of the first process whose command line matches $1 (extended
# regexp), among those mentioning this scenario's run dir.
pid_of() { pgrep -f -- "$1" | head -1; }

# run_scenario NAME: one run in ${work}/runs/NAME.
run_scenario() {
  local name="$1" out="${work}/runs/$1"
  rm -rf "${out}" "${out}.log"
  local cmd=("${shardgnn}" run --partition "${partition}" --replicas 2
    --trainers 2 --no-shared-memory --epochs "${epochs}" --patience 0
    --work-dir "${work}/runs/work" --out "${out}")
  [[ "${name}" == stop_hedge ]] && cmd+=(--hedge-after-ms "${hedge_ms}")
  # shellcheck disable=SC2206  # Word-split on purpose: several flags.
  [[ -z "${extra}" ]] || cmd+=(${extra})
  log "(${name}) ${cmd[*]}"
  local t0; t0=$(date +%s.%N)
  "${cmd[@]}" > "${out}.log" 2>&1 &
  local run=$!
  local stopped=""
  if [[ "${name}" != healthy ]]; then
    # Mid-epoch 2: a moment after epoch 1's line.
    until grep -q "^epoch   1/" "${out}.log" 2>/dev/null; do
      kill -0 "${run}" 2>/dev/null || break
      sleep 0.05
    done
    sleep "${mid_delay}"
    local victim
    case "${name}" in
      kill | stop | stop_hedge)
        victim=$(pid_of "serve --partition ${partition} --part 1 ") ;;
      trainer)
        victim=$(pgrep -f -- "train --servers .*--out ${out} " | sort -n |
          tail -1) ;;
    esac
    if [[ -n "${victim}" ]]; then
      case "${name}" in
        stop | stop_hedge) kill -STOP "${victim}"; stopped="${victim}" ;;
        *) kill -KILL "${victim}" ;;
      esac
      date +%s.%N > "${out}.failed_at"
      log "(${name}) signalled pid ${victim}"
    fi
  fi
  local status=0
  wait "${run}" || status=$?
  [[ -z "${stopped}" ]] || kill -CONT "${stopped}" 2>/dev/null || true
  python3 -c "import time,sys; print(time.time()-float(sys.argv[1]))" \
    "${t0}" > "${out}.wall"
  if ((status != 0)); then
    log "(${name}) failed with status ${status}; last lines:"
    tail -15 "${out}.log" >&2
    exit 1
  fi
  grep -E "^(epoch|test accuracy|shardgnn run: .*restart)" "${out}.log" >&2 ||
    true
}

IFS=, read -r -a list <<< "${scenarios}"
done_list=()
mid_delay=1  # Seconds into epoch 2, until the healthy run says better.
for s in "${list[@]}"; do
  case "${s}" in
    healthy | kill | stop | trainer) ;;
    stop_hedge)
      if ((!has_hedge)); then
        log "(stop_hedge) skipped: this shardgnn has no --hedge-after-ms"
        continue
      fi ;;
    *) echo "run_failover.sh: unknown scenario '${s}'" >&2; exit 2 ;;
  esac
  run_scenario "${s}"
  done_list+=("${s}")
  if [[ "${s}" == healthy ]]; then
    # Later scenarios strike 40% into epoch 2, as the healthy run timed it.
    mid_delay=$(python3 -c "import json,sys
e=[json.loads(l)['epoch_seconds'] for l in open(sys.argv[1])]
print(round(max(0.1, 0.4*e[min(1, len(e)-1)]), 3))" \
      "${work}/runs/healthy/metrics.jsonl")
    log "failures strike ${mid_delay} s into epoch 2"
  fi
done

python3 - "${work}/runs" "${nodes}" "${epochs}" "${hedge_ms}" \
  "$(IFS=,; echo "${done_list[*]}")" "${extra}" <<'PY'
import json, os, sys
runs, nodes, epochs, hedge_ms, names, extra = sys.argv[1:7]
out = {"nodes": int(nodes), "epochs": int(epochs), "replicas": 2, "extra": extra,
       "trainers": 2, "features": "through calls (--no-shared-memory)",
       "hedge_after_ms": float(hedge_ms), "cores": os.cpu_count(),
       "scenarios": {}}
for name in names.split(","):
    d = os.path.join(runs, name)
    s = json.load(open(os.path.join(d, "summary.json")))
    epochs_s = [json.loads(l)["epoch_seconds"]
                for l in open(os.path.join(d, "metrics.jsonl"))]
    remote = s.get("remote", {})
    out["scenarios"][name] = {
        "wall_seconds": round(float(open(d + ".wall").read()), 2),
        "epoch_seconds": [round(e, 3) for e in epochs_s],
        "failovers": remote.get("failovers"),
        "hedges_sent": remote.get("hedges_sent"),
        "hedges_won": remote.get("hedges_won"),
        "restarts": s.get("restarts", 0),
        "embedding_copies_dropped":
            s.get("embeddings", {}).get("copies_dropped"),
        "test_acc": s["test_acc"],
        "parameters_checksum": s["parameters_checksum"],
    }
base = out["scenarios"].get("healthy")
if base:
    for name, r in out["scenarios"].items():
        r["same_parameters_as_healthy"] = (
            r["parameters_checksum"] == base["parameters_checksum"])
        r["extra_wall_seconds"] = round(r["wall_seconds"] - base["wall_seconds"], 2)
        if len(r["epoch_seconds"]) > 1 and len(base["epoch_seconds"]) > 1:
            r["extra_epoch2_seconds"] = round(
                r["epoch_seconds"][1] - base["epoch_seconds"][1], 3)
print(json.dumps(out, indent=2))
PY
