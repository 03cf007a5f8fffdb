#!/usr/bin/env bash
# bench/cluster/cluster.sh end to end (issue 54, item 1): a real emulated
# cluster of 2 hosts (network namespaces, sshd, cgroups with a CPU quota and
# a memory limit, a tbf-shaped link) and a real `shardgnn launch` into it on
# bundled Cora. Asserts the run trains, the limits and the link are in force,
# and that nothing of the cluster (namespace, interface, cgroup, process,
# file) is left after a success, a bad flag, a killed server, SIGINT to the
# harness, and SIGKILL to the harness followed by `down`.
#
#   cluster_smoke_test.sh SHARDGNN_BINARY
#
# Exits 77 (skipped) without root or network namespaces.
set -euo pipefail

binary=$1
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="${repo}/bench/cluster/cluster.sh"
id="t$$"
name="sgc-${id}"
started=${SECONDS}

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
step() { echo "--- $* ($((SECONDS - started)) s)"; }

[[ "$(id -u)" == 0 ]] || skip "needs root (network namespaces, cgroups, sshd)"
for tool in /usr/sbin/ip /usr/sbin/sshd /usr/sbin/tc ssh ssh-keygen rsync; do
  command -v "${tool}" >/dev/null || skip "${tool} is missing (scripts/test.sh installs it)"
done
if ! ip netns add "${name}-probe" 2>/dev/null; then skip "ip netns add fails here"; fi
ip netns del "${name}-probe"

work=$(mktemp -d "${TMPDIR:-/tmp}/cluster-smoke.XXXXXX")
# Whatever happens, the test leaves nothing: its cluster goes, its files go.
# (A test killed by ctest's timeout cannot clean up: the next run sweeps the
# clusters of test processes that no longer exist.)
cleanup() {
  local rc=$?
  local left
  left=$(jobs -p)
  # shellcheck disable=SC2086 # one pid per word
  [[ -z "${left}" ]] || kill -KILL ${left} 2>/dev/null || true
  "${cluster}" down --name "${id}" || true
  rm -rf "${work}"
  echo "--- done in $((SECONDS - started)) s, exit ${rc}"
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for stale in "${TMPDIR:-/tmp}"/sgc-t[0-9]*; do
  [[ -d "${stale}" ]] || continue
  pid=${stale##*/sgc-t}
  kill -0 "${pid}" 2>/dev/null || "${cluster}" down --name "t${pid}"
done

# Everything of this test's cluster still on the machine, one item a line.
leftovers() {
  ip netns list | awk '{ print $1 }' | grep "^${name}-" | sed 's/^/namespace /' || true
  ip -o link | grep -o "${name}[^:@ ]*" | sed 's/^/interface /' || true
  find /sys/fs/cgroup -maxdepth 8 -type d -name "${name}-*" 2>/dev/null | sed 's/^/cgroup /' || true
  [[ ! -e "${TMPDIR:-/tmp}/${name}" ]] || echo "directory ${TMPDIR:-/tmp}/${name}"
  local p pid
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [[ "${pid}" != "$$" && "${pid}" != "${BASHPID}" ]] || continue
    if { tr '\0' ' ' <"${p}/cmdline" | grep -q "${name}"; } 2>/dev/null ||
      { readlink "${p}/cwd" | grep -q "${name}"; } 2>/dev/null ||
      grep -q "${name}" "${p}/cgroup" 2>/dev/null; then
      echo "process ${pid} $({ tr '\0' ' ' <"${p}/cmdline" | cut -c1-100; } 2>/dev/null)"
    fi
  done
}
expect_clean() {
  local left
  left=$(leftovers)
  [[ -z "${left}" ]] || fail "after $1, left behind:"$'\n'"${left}"
  echo "nothing left after $1"
}

# Waits up to $4 s for a line matching $2 in file $1 while process $3 lives.
wait_for_line() {
  local deadline=$((SECONDS + $4))
  until grep -q "$2" "$1"; do
    kill -0 "$3" 2>/dev/null || fail "the harness exited before printing '$2':"$'\n'"$(tail -20 "$1")"
    ((SECONDS < deadline)) || fail "no '$2' after $4 s:"$'\n'"$(tail -20 "$1")"
    sleep 0.1
  done
}
# Waits up to $2 s for background process $1 to exit; sets `status`.
wait_exit() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "the harness still runs $2 s later"
    sleep 0.1
  done
  status=0
  wait "$1" || status=$?
}
# The pid of the `shardgnn $2` process running in host namespace $1.
remote_pid() {
  local pid
  for pid in $(ip netns pids "$1"); do
    if { tr '\0' ' ' <"/proc/${pid}/cmdline" | grep -q "^${binary} $2 "; } 2>/dev/null; then
      echo "${pid}"
      return 0
    fi
  done
  return 1
}
json_field() {
  /usr/bin/python3 -c 'import json, sys; v = json.load(open(sys.argv[1])).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}

step "partition bundled Cora in 2"
"${binary}" -q dataset import --format ogb --undirected \
  --input "${repo}/datasets/cora/ogb-planetoid" --out "${work}/cora" >/dev/null
"${binary}" -q partition --dataset "${work}/cora" --parts 2 --out "${work}/cora-2" >/dev/null
limits=(--cpus 1 --mem 1536M --link 1gbit)
mem_bytes=$((1536 * 1024 * 1024))

# --- (a) A cluster that is up; a run into it; down. -----------------------------
step "(a) up, limits, link, a launch, down"
"${cluster}" up --name "${id}" --hosts 2 "${limits[@]}"
for i in 1 2; do
  ns="${name}-h${i}"
  mapfile -t dirs < <(find /sys/fs/cgroup -maxdepth 8 -type d -name "${ns}")
  [[ ${#dirs[@]} -ge 1 ]] || fail "no cgroup ${ns}"
  for dir in "${dirs[@]}"; do
    if [[ -f "${dir}/cpu.cfs_quota_us" ]]; then
      [[ "$(cat "${dir}/cpu.cfs_quota_us")/$(cat "${dir}/cpu.cfs_period_us")" == 100000/100000 ]] ||
        fail "${dir}: CPU quota $(cat "${dir}/cpu.cfs_quota_us"), not 1 CPU"
    fi
    if [[ -f "${dir}/cpu.max" ]]; then
      [[ "$(cat "${dir}/cpu.max")" == "100000 100000" ]] || fail "${dir}/cpu.max: $(cat "${dir}/cpu.max")"
    fi
    for f in memory.limit_in_bytes memory.max; do
      [[ ! -f "${dir}/${f}" || "$(cat "${dir}/${f}")" == "${mem_bytes}" ]] ||
        fail "${dir}/${f}: $(cat "${dir}/${f}"), not ${mem_bytes}"
    done
    # Every process of the host (its sshd) is in the host's cgroup.
    for pid in $(ip netns pids "${ns}"); do
      grep -qx "${pid}" "${dir}/cgroup.procs" || fail "pid ${pid} of ${ns} is not in ${dir}"
    done
  done
  ip netns exec "${ns}" tc qdisc show dev eth0 | grep -q "tbf .*rate 1Gbit" ||
    fail "${ns} eth0 is not shaped: $(ip netns exec "${ns}" tc qdisc show dev eth0)"
done
# The memory limit holds for what ssh starts on a host: 2 GiB is killed.
oom=$("${cluster}" exec --name "${id}" -- ssh -F "${TMPDIR:-/tmp}/${name}/ssh_config" h1 \
  '/usr/bin/python3 -c "b = b\"x\" * (2 << 30)" 2>/dev/null; echo "exit $?"' || true)
[[ "${oom}" == "exit 137" ]] || fail "2 GiB on a host limited to 1.5 GiB: '${oom}', not killed (exit 137)"
# The link is shaped: 50 MB from the launcher to h1 over TCP take >= 0.4 s
# at 1 Gbit/s (a veth unshaped: a few tens of ms).
"${cluster}" exec --name "${id}" --host 1 -- /usr/bin/python3 -c '
import socket
s = socket.create_server(("10.78.0.1", 5099))
c, _ = s.accept()
n = 0
while n < 50_000_000:
    d = c.recv(1 << 20)
    if not d: break
    n += len(d)
c.sendall(b"k")' &
sink=$!
elapsed=$("${cluster}" exec --name "${id}" -- /usr/bin/python3 -c '
import socket, time
deadline = time.time() + 10
while True:
    try:
        c = socket.create_connection(("10.78.0.1", 5099)); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(0.05)
t = time.time()
c.sendall(b"\0" * 50_000_000)
assert c.recv(1) == b"k"
print(f"{time.time() - t:.3f}")')
wait "${sink}"
echo "50 MB to h1 in ${elapsed} s"
/usr/bin/python3 -c "import sys; sys.exit(not 0.4 <= float(sys.argv[1]) < 20)" "${elapsed}" ||
  fail "50 MB at 1 Gbit/s took ${elapsed} s: the link is not shaped"
"${cluster}" status --name "${id}" >"${work}/status.txt"
grep -q "^h2 10.78.0.2 " "${work}/status.txt" || fail "status: $(cat "${work}/status.txt")"
# A slower machine: h2's quota halved while up, h1's left; then back.
"${cluster}" cpus --name "${id}" --host 2 --cpus 0.5 2>/dev/null
"${cluster}" status --name "${id}" >"${work}/status.txt"
# (v1 prints quota/period, v2 cpu.max's "quota period".)
for want in "h1 .* cpu 100000[/ ]100000 us" "h2 .* cpu 50000[/ ]100000 us"; do
  grep -Eq "^${want}" "${work}/status.txt" || fail "cpus --host 2 --cpus 0.5: no '${want}' in $(cat "${work}/status.txt")"
done
"${cluster}" cpus --name "${id}" --host 2 --cpus 1 2>/dev/null
# A stalling machine: every process of h2 stopped for 2 s, then running again.
"${cluster}" stall --name "${id}" --host 2 --seconds 2 2>/dev/null &
staller=$!
sleep 1
stopped=0
for pid in $(ip netns pids "${name}-h2"); do
  grep -q "^State:.*T (stopped)" "/proc/${pid}/status" || fail "stall: pid ${pid} of h2 is not stopped: $(grep State "/proc/${pid}/status")"
  stopped=$((stopped + 1))
done
((stopped > 0)) || fail "stall: h2 has no process to stop"
wait "${staller}" || fail "cluster.sh stall failed"
for pid in $(ip netns pids "${name}-h2"); do
  grep -q "^State:.*T (stopped)" "/proc/${pid}/status" && fail "stall: pid ${pid} of h2 still stopped after it"
done
"${cluster}" run --name "${id}" --partition "${work}/cora-2" --out "${work}/run-a" \
  -- --epochs 2 >"${work}/a.log" 2>&1 || fail "the run failed:"$'\n'"$(tail -30 "${work}/a.log")"
for line in "ready on 10.78.0.1:" "\[h1 server 0\]" "\[h1 server 1\]" "\[h2 trainer 0\] epoch   2/2" \
  "summary: ${work}/run-a/summary.json"; do
  grep -q "${line}" "${work}/a.log" || fail "no '${line}' in the run's output:"$'\n'"$(cat "${work}/a.log")"
done
acc=$(json_field "${work}/run-a/summary.json" test_acc)
echo "test accuracy ${acc}"
/usr/bin/python3 -c "import sys; sys.exit(not float(sys.argv[1]) > 0.5)" "${acc:-0}" ||
  fail "summary.json: test_acc '${acc}'"
[[ "$(json_field "${work}/run-a/summary.json" epochs_run)" == 2 ]] || fail "summary.json: not 2 epochs"
"${cluster}" down --name "${id}"
expect_clean "(a) success"
"${cluster}" down --name "${id}" # idempotent

# --- (b) Failures: a bad flag, then a killed server. -----------------------------
step "(b) a bad flag"
status=0
"${cluster}" run --name "${id}" --partition "${work}/cora-2" --out "${work}/run-b" "${limits[@]}" \
  -- --epochs 1 --no-such-flag >"${work}/b.log" 2>&1 || status=$?
[[ ${status} -ne 0 ]] || fail "a run with --no-such-flag succeeded"
grep -q "unknown flag --no-such-flag" "${work}/b.log" || fail "$(cat "${work}/b.log")"
expect_clean "(b) a bad flag"

step "(b) a killed server"
"${cluster}" run --name "${id}" --partition "${work}/cora-2" --out "${work}/run-b2" "${limits[@]}" \
  -- --epochs 1000 --server-wait 5 >"${work}/b2.log" 2>&1 &
harness=$!
wait_for_line "${work}/b2.log" "epoch   1/1000" "${harness}" 60
server=$(remote_pid "${name}-h1" serve) || fail "no shardgnn serve in ${name}-h1"
kill -KILL "${server}"
wait_exit "${harness}" 60
[[ ${status} -ne 0 ]] || fail "the run went on after its server was killed"
grep -q "error: .*storage server .* on h1" "${work}/b2.log" ||
  fail "no error naming the server:"$'\n'"$(tail -20 "${work}/b2.log")"
expect_clean "(b) a killed server"

# --- (c) SIGINT to the harness mid-run. ------------------------------------------
step "(c) SIGINT mid-run"
set -m # the harness in its own process group, with SIGINT as a terminal sends it
"${cluster}" run --name "${id}" --partition "${work}/cora-2" --out "${work}/run-c" "${limits[@]}" \
  -- --epochs 1000 >"${work}/c.log" 2>&1 &
harness=$!
set +m
wait_for_line "${work}/c.log" "epoch   1/1000" "${harness}" 60
# The trainer runs on h2, inside h2's cgroups.
trainer=$(remote_pid "${name}-h2" train) || fail "no shardgnn train in ${name}-h2"
grep -q "${name}-h2" "/proc/${trainer}/cgroup" || fail "the trainer is not in h2's cgroup: $(cat "/proc/${trainer}/cgroup")"
kill -INT "${harness}"
wait_exit "${harness}" 40
[[ ${status} -eq 130 ]] || fail "exit ${status} after SIGINT, not 130:"$'\n'"$(tail -20 "${work}/c.log")"
grep -q "interrupted by signal" "${work}/c.log" || fail "the launch was not stopped: $(tail -20 "${work}/c.log")"
expect_clean "(c) SIGINT"

# --- (d) SIGKILL to the harness: what it left, `down` removes. ------------------
step "(d) SIGKILL mid-run, then down"
"${cluster}" run --name "${id}" --partition "${work}/cora-2" --out "${work}/run-d" "${limits[@]}" \
  -- --epochs 1000 >"${work}/d.log" 2>&1 &
harness=$!
wait_for_line "${work}/d.log" "epoch   1/1000" "${harness}" 60
kill -KILL "${harness}"
wait_exit "${harness}" 10
[[ -n "$(leftovers)" ]] || fail "SIGKILL left nothing to sweep: the leftovers check sees nothing"
"${cluster}" down --name "${id}"
expect_clean "(d) SIGKILL and down"
step "all passed"
