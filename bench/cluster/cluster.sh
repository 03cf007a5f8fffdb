#!/usr/bin/env bash
# An emulated cluster on one machine (docs/operations.md, "An emulated
# cluster"): N hosts as network namespaces on a bridge, each with its own
# address (10.78.0.I) and its own sshd, each host's processes in a cgroup with
# a CPU quota and a memory limit, links shaped with tc. Runs go through the
# real `shardgnn launch --cluster` over ssh, from a launcher namespace on the
# same bridge (10.78.0.254).
#
#   cluster.sh up     [--name ID] [--hosts N] [--cpus C] [--mem SIZE] [--link RATE[:DELAY]]
#   cluster.sh status [--name ID]
#   cluster.sh exec   [--name ID] [--host I] -- COMMAND...
#   cluster.sh cpus   [--name ID] --host I --cpus C   (one host's quota, while up)
#   cluster.sh stall  [--name ID] --host I --seconds S (stops every process of host I for S seconds)
#   cluster.sh run    [--name ID] --partition DIR [--server-hosts S] [--trainer-hosts T]
#                     [--colocate] [--trainers-per-host K] [--out DIR] [--shardgnn BIN]
#                     [up's flags] [-- LAUNCH FLAGS...]
#   cluster.sh down   [--name ID] | --all
#
# Every name it makes starts with "sgc-ID-" (namespaces sgc-ID-sw and
# sgc-ID-hI, cgroups sgc-ID-hI) and its files are in ${TMPDIR:-/tmp}/sgc-ID;
# `down` removes all of it, whatever state a crashed run left. `run` on a
# cluster that is not up brings one up for the run and tears it down at the
# end, on failure and on SIGINT/SIGTERM.
set -euo pipefail

readonly PREFIX=sgc
readonly SUBNET=10.78.0
readonly LAUNCHER_ADDRESS="${SUBNET}.254"
readonly MAX_HOSTS=250
readonly CPU_PERIOD_US=100000
IP=$(command -v ip || echo /usr/sbin/ip)
readonly IP
readonly SSHD=/usr/sbin/sshd
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly REPO
STATE_ROOT="${TMPDIR:-/tmp}"
readonly STATE_ROOT

die() {
  echo "cluster.sh: error: $*" >&2
  exit 1
}
log() { echo "cluster.sh: $*" >&2; }

usage() {
  sed -n '/^#   cluster.sh/,/^#$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- Names --------------------------------------------------------------------

id="main"
set_names() {
  [[ "${id}" =~ ^[a-z0-9]{1,12}$ ]] ||
    die "--name '${id}': use 1 to 12 lowercase letters or digits"
  base="${PREFIX}-${id}"
  switch_ns="${base}-sw"
  state="${STATE_ROOT}/${base}"
}
host_ns() { echo "${base}-h$1"; }
host_address() { echo "${SUBNET}.$1"; }
# Whether $1 is a whole number from $2 to $3.
in_range() { [[ "$1" =~ ^[0-9]{1,6}$ ]] && (($1 >= $2 && $1 <= $3)); }

check_cpus() {
  if ! [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v c="$1" 'BEGIN { exit !(c >= 0.01) }'; then
    die "--cpus '$1': give a number of CPUs, 0.01 or more (1.5)"
  fi
}
# The CFS quota (us per CPU_PERIOD_US) of $1 CPUs.
quota_of() { awk -v c="$1" -v p="${CPU_PERIOD_US}" 'BEGIN { printf "%d", c * p }'; }

# --- Cgroups: v1 (cpu and memory hierarchies) or v2 (one unified tree) --------

# Sets cg_mode (v1|v2) and the parents new cgroups go under: v1 nests them in
# this shell's own cgroups (so any limit the machine already puts on us still
# holds); v2 puts them at the root (the only cgroup that may hold processes
# and enable controllers for its children).
detect_cgroups() {
  local cpu_mount="" mem_mount="" v2_mount="" line fields opts
  while read -r line; do
    # mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPEROPTS
    read -ra fields <<<"${line}"
    local n=${#fields[@]}
    local fstype=${fields[$((n - 3))]} mountpoint=${fields[4]}
    opts=",${fields[$((n - 1))]},"
    if [[ "${fstype}" == cgroup ]]; then
      [[ "${opts}" == *,cpu,* ]] && cpu_mount="${mountpoint}"
      [[ "${opts}" == *,memory,* ]] && mem_mount="${mountpoint}"
    elif [[ "${fstype}" == cgroup2 ]]; then
      v2_mount="${mountpoint}"
    fi
  done </proc/self/mountinfo
  if [[ -n "${cpu_mount}" && -n "${mem_mount}" ]]; then
    cg_mode=v1
    cg_cpu_parent="${cpu_mount}$(own_cgroup_v1 cpu)"
    cg_mem_parent="${mem_mount}$(own_cgroup_v1 memory)"
  elif [[ -n "${v2_mount}" ]] &&
    grep -qw cpu "${v2_mount}/cgroup.controllers" 2>/dev/null &&
    grep -qw memory "${v2_mount}/cgroup.controllers" 2>/dev/null; then
    cg_mode=v2
    cg_cpu_parent="${v2_mount}"
    cg_mem_parent="${v2_mount}"
  else
    die "no cgroup cpu and memory controllers (neither cgroup v1 hierarchies nor cgroup v2 with cpu and memory)"
  fi
}

# This shell's cgroup path in the v1 hierarchy of controller $1 ("" for /).
own_cgroup_v1() {
  local path
  path=$(awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup)
  [[ "${path}" == / ]] && path=""
  echo "${path}"
}

# The cgroup directories of host $1 (one per hierarchy; one in v2).
host_cgroups() {
  local name="${base}-h$1"
  if [[ "${cg_mode}" == v1 ]]; then
    echo "${cg_cpu_parent}/${name}" "${cg_mem_parent}/${name}"
  else
    echo "${cg_cpu_parent}/${name}"
  fi
}

make_host_cgroups() {
  local i=$1 cpus=$2 mem_bytes=$3 dir quota
  quota=$(quota_of "${cpus}")
  if [[ "${cg_mode}" == v1 ]]; then
    local cpu_dir mem_dir
    read -r cpu_dir mem_dir <<<"$(host_cgroups "${i}")"
    mkdir "${cpu_dir}" "${mem_dir}"
    echo "${cpu_dir}" >>"${state}/cgroups"
    echo "${mem_dir}" >>"${state}/cgroups"
    echo "${CPU_PERIOD_US}" >"${cpu_dir}/cpu.cfs_period_us"
    echo "${quota}" >"${cpu_dir}/cpu.cfs_quota_us"
    echo "${mem_bytes}" >"${mem_dir}/memory.limit_in_bytes"
  else
    dir=$(host_cgroups "${i}")
    grep -qw cpu "${cg_cpu_parent}/cgroup.subtree_control" ||
      echo +cpu >"${cg_cpu_parent}/cgroup.subtree_control"
    grep -qw memory "${cg_cpu_parent}/cgroup.subtree_control" ||
      echo +memory >"${cg_cpu_parent}/cgroup.subtree_control"
    mkdir "${dir}"
    echo "${dir}" >>"${state}/cgroups"
    echo "${quota} ${CPU_PERIOD_US}" >"${dir}/cpu.max"
    echo "${mem_bytes}" >"${dir}/memory.max"
    echo 0 >"${dir}/memory.swap.max" 2>/dev/null || true
  fi
}

# --- Links --------------------------------------------------------------------

# --link RATE[:DELAY], tc units: RATE like 10gbit, 1gbit, 500mbit; DELAY like
# 50us, 500us, 2ms. Each host's link is shaped both ways: RATE out of the
# host (its eth0) and RATE into it (its port on the bridge), so a host sends
# and receives at most RATE; DELAY is added once, on the way out of a host,
# so DELAY is the one-way latency between two hosts (netem, when the kernel
# has it).
parse_link() {
  link_rate="" link_delay=""
  [[ -z "$1" ]] && return 0
  local rate="${1%%:*}" delay=""
  [[ "$1" == *:* ]] && delay="${1#*:}"
  [[ "${rate}" =~ ^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit|tbit)$ ]] ||
    die "--link '$1': the rate must be a number and bit|kbit|mbit|gbit|tbit (10gbit:50us)"
  [[ -z "${delay}" || "${delay}" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
    die "--link '$1': the delay must be a number and us|ms|s (10gbit:50us)"
  link_rate="${rate}"
  link_delay="${delay}"
}

# Bytes per second of a tc rate.
rate_bytes() {
  awk -v r="$1" 'BEGIN {
    n = r + 0; u = r; sub(/^[0-9.]+/, "", u)
    m = (u == "bit") ? 1 : (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : 1e12
    printf "%d", n * m / 8 }'
}

# Shapes device $2 in namespace $1: rate $3, and delay $4 if not empty.
shape() {
  local ns=$1 dev=$2 rate=$3 delay=$4 bytes burst limit
  bytes=$(rate_bytes "${rate}")
  # A burst of 1 ms of traffic (at least 64 KiB, so a GSO packet passes) and a
  # queue of 10 ms of it.
  burst=$((bytes / 1000 > 65536 ? bytes / 1000 : 65536))
  limit=$((bytes / 100 > 4 * burst ? bytes / 100 : 4 * burst))
  if [[ -n "${delay}" ]]; then
    "${IP}" netns exec "${ns}" tc qdisc add dev "${dev}" root netem \
      delay "${delay}" rate "${rate}" limit 100000 2>/dev/null ||
      die "cannot add a delay: this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM); use --link ${rate} (rate only, tbf)"
  else
    "${IP}" netns exec "${ns}" tc qdisc add dev "${dev}" root tbf \
      rate "${rate}" burst "${burst}" limit "${limit}"
  fi
}

# --- up -----------------------------------------------------------------------

preflight() {
  [[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, cgroups, sshd)"
  local tool
  for tool in "${IP}" "${SSHD}" ssh ssh-keygen rsync setsid numfmt; do
    command -v "${tool}" >/dev/null ||
      die "${tool} is missing (Debian: iproute2, openssh-server, openssh-client, rsync)"
  done
  if [[ -n "${link_rate}" ]]; then
    command -v tc >/dev/null || die "tc is missing (Debian: iproute2)"
  fi
  [[ -d /run/netns || -w /run ]] || die "no /run/netns: cannot make network namespaces"
}

# Whether anything of cluster ${id} exists (up, half made or left by a crash).
exists() {
  [[ -e "${state}" ]] || "${IP}" netns list 2>/dev/null | grep -q "^${base}-" ||
    [[ -n "$(find /sys/fs/cgroup -maxdepth 8 -type d -name "${base}-h*" -print -quit 2>/dev/null)" ]]
}
is_up() { [[ -f "${state}/cluster.env" ]] && "${IP}" netns list | grep -q "^${switch_ns}\b"; }

# Brings cluster ${id} up. On any failure it removes what it made.
cmd_up() {
  local hosts=$1 cpus=$2 mem=$3 link=$4 mem_bytes i
  in_range "${hosts}" 1 "${MAX_HOSTS}" || die "--hosts '${hosts}': give 1 to ${MAX_HOSTS}"
  check_cpus "${cpus}"
  mem_bytes=$(numfmt --from=iec "${mem}" 2>/dev/null) || mem_bytes=0
  ((mem_bytes >= 64 * 1024 * 1024)) || die "--mem '${mem}': give a size of at least 64M (512M, 2G)"
  parse_link "${link}"
  preflight
  detect_cgroups
  exists && die "cluster ${base} exists (or a crashed run left it): cluster.sh down --name ${id}"
  up_done=0
  trap 'if [[ "${up_done}" != 1 ]]; then teardown; fi' EXIT
  # A step that fails is one line naming it (the EXIT trap removes the rest).
  set -E
  trap 'die "up: \`${BASH_COMMAND}\` failed (line ${LINENO})"' ERR
  trap 'exit 130' INT
  trap 'exit 143' TERM
  mkdir -p "${state}"
  : >"${state}/cgroups"
  {
    echo "hosts=${hosts}"
    echo "cpus=${cpus}"
    echo "mem=${mem}"
    echo "link=${link}"
    echo "cg_mode=${cg_mode}"
  } >"${state}/cluster.env"

  # The switch: a bridge in the launcher's namespace.
  "${IP}" netns add "${switch_ns}" 2>/dev/null ||
    die "ip netns add fails here: no network namespaces (needs CAP_SYS_ADMIN and a writable /run/netns)"
  "${IP}" -n "${switch_ns}" link set lo up
  "${IP}" -n "${switch_ns}" link add br0 type bridge
  "${IP}" -n "${switch_ns}" addr add "${LAUNCHER_ADDRESS}/24" dev br0
  "${IP}" -n "${switch_ns}" link set br0 up
  for ((i = 1; i <= hosts; i++)); do
    local ns
    ns=$(host_ns "${i}")
    "${IP}" netns add "${ns}"
    # Both ends are made inside the namespaces: no interface of the cluster
    # ever exists in this machine's own namespace.
    "${IP}" -n "${switch_ns}" link add "p${i}" type veth peer name eth0 netns "${ns}"
    "${IP}" -n "${switch_ns}" link set "p${i}" master br0 up
    "${IP}" -n "${ns}" addr add "$(host_address "${i}")/24" dev eth0
    "${IP}" -n "${ns}" link set eth0 up
    "${IP}" -n "${ns}" link set lo up
    if [[ -n "${link_rate}" ]]; then
      shape "${ns}" eth0 "${link_rate}" "${link_delay}"
      shape "${switch_ns}" "p${i}" "${link_rate}" ""
    fi
    make_host_cgroups "${i}" "${cpus}" "${mem_bytes}"
  done

  # ssh: one host key for all hosts, one client key, a config naming h1..hN.
  ssh-keygen -q -t ed25519 -N '' -C "${base}" -f "${state}/host_key"
  ssh-keygen -q -t ed25519 -N '' -C "${base}" -f "${state}/id"
  cp "${state}/id.pub" "${state}/authorized_keys"
  mkdir -p /run/sshd # sshd's privilege separation directory
  local key address
  key=$(cut -d' ' -f1,2 "${state}/host_key.pub")
  : >"${state}/known_hosts"
  : >"${state}/ssh_config"
  for ((i = 1; i <= hosts; i++)); do
    address=$(host_address "${i}")
    cat >"${state}/sshd_config_${i}" <<EOF
ListenAddress ${address}
Port 22
HostKey ${state}/host_key
PidFile none
AuthorizedKeysFile ${state}/authorized_keys
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
EOF
    echo "${address} ${key}" >>"${state}/known_hosts"
    cat >>"${state}/ssh_config" <<EOF
Host h${i}
  HostName ${address}
  User root
  IdentityFile ${state}/id
  IdentitiesOnly yes
  UserKnownHostsFile ${state}/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
EOF
    mkdir -p "${state}/work-h${i}"
    start_sshd "${i}"
  done
  for ((i = 1; i <= hosts; i++)); do wait_ssh "${i}"; done
  up_done=1
  trap - EXIT INT TERM ERR
  set +E
  log "cluster ${base} is up: ${hosts} hosts (${SUBNET}.1-${hosts}), ${cpus} CPUs and ${mem} each (cgroup ${cg_mode}), link ${link:-unshaped}; launcher ${LAUNCHER_ADDRESS} in namespace ${switch_ns}; ssh -F ${state}/ssh_config hI"
}


# sshd of host $1, put in the host's cgroups before it execs, so that
# everything ssh starts there (servers, trainers) inherits them. setsid: it
# outlives this shell and a Ctrl-C at the terminal that started `up`.
start_sshd() {
  local i=$1 cg
  local -a procs=()
  for cg in $(host_cgroups "${i}"); do procs+=("${cg}/cgroup.procs"); done
  # shellcheck disable=SC2016 # $$ and $1.. belong to the inner shell
  setsid bash -c '
    ip=$1 ns=$2 sshd=$3 config=$4
    shift 4
    for f in "$@"; do echo $$ >"$f"; done
    exec "$ip" netns exec "$ns" "$sshd" -D -e -f "$config"' \
    "${base}-sshd" "${IP}" "$(host_ns "${i}")" "${SSHD}" "${state}/sshd_config_${i}" "${procs[@]}" \
    </dev/null >"${state}/sshd_${i}.log" 2>&1 &
}

wait_ssh() {
  local i=$1 deadline=$((SECONDS + 20))
  until "${IP}" netns exec "${switch_ns}" ssh -F "${state}/ssh_config" \
    -o ConnectTimeout=2 "h${i}" true 2>/dev/null; do
    ((SECONDS < deadline)) ||
      die "sshd on h${i} ($(host_address "${i}")) does not answer after 20 s: $(tail -3 "${state}/sshd_${i}.log" 2>/dev/null | tr '\n' ' ')"
    sleep 0.1
  done
}

# --- down ---------------------------------------------------------------------

# The pids in namespaces and cgroups $@ (namespace names, cgroup dirs).
member_pids() {
  local x
  for x in "$@"; do
    if [[ "${x}" == /* ]]; then
      cat "${x}/cgroup.procs" 2>/dev/null || true
    else
      "${IP}" netns pids "${x}" 2>/dev/null || true
    fi
  done | sort -un
}

# Removes every cluster whose ID matches the regex $1: kills every process
# in its namespaces and cgroups, deletes the namespaces (and with them every
# interface: none is ever in this machine's namespace), removes the cgroups
# and the files. Idempotent; a missing piece is no error.
teardown_matching() {
  local regex=$1 x deadline pids
  local -a namespaces cgroups dirs
  mapfile -t namespaces < <("${IP}" netns list 2>/dev/null | awk '{ print $1 }' |
    grep -E "^${PREFIX}-${regex}-(sw|h[0-9]+)$" || true)
  mapfile -t cgroups < <(find /sys/fs/cgroup -maxdepth 8 -type d -name "${PREFIX}-*-h*" 2>/dev/null |
    grep -E "/${PREFIX}-${regex}-h[0-9]+$" || true)
  deadline=$((SECONDS + 20))
  while pids=$(member_pids "${namespaces[@]}" "${cgroups[@]}") && [[ -n "${pids}" ]]; do
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL ${pids} 2>/dev/null || true
    if ((SECONDS >= deadline)); then
      log "warning: processes still there 20 s after SIGKILL: $(echo "${pids}" | tr '\n' ' ')"
      break
    fi
    sleep 0.05
  done
  for x in "${namespaces[@]}"; do
    "${IP}" netns del "${x}" 2>/dev/null || log "warning: cannot delete namespace ${x}"
  done
  for x in "${cgroups[@]}"; do
    deadline=$((SECONDS + 10))
    while [[ -d "${x}" ]] && ! rmdir "${x}" 2>/dev/null; do
      if ((SECONDS >= deadline)); then
        log "warning: cannot remove cgroup ${x}"
        break
      fi
      sleep 0.05
    done
  done
  mapfile -t dirs < <(find "${STATE_ROOT}" -maxdepth 1 -type d -name "${PREFIX}-*" 2>/dev/null |
    grep -E "/${PREFIX}-${regex}$" || true)
  for x in "${dirs[@]}"; do rm -rf "${x}"; done
}

teardown() { teardown_matching "${id}"; }

# --- status and exec ------------------------------------------------------------

load_env() {
  is_up || die "cluster ${base} is not up (cluster.sh up --name ${id})"
  # shellcheck disable=SC1091
  source "${state}/cluster.env"
  detect_cgroups
}

cmd_status() {
  load_env
  echo "cluster ${base}: ${hosts} hosts, ${cpus} CPUs and ${mem} each (cgroup ${cg_mode}), link ${link:-unshaped}"
  echo "launcher: ${LAUNCHER_ADDRESS} in namespace ${switch_ns}; ssh -F ${state}/ssh_config h1..h${hosts}"
  local i ns cg pids quota usage limit
  for ((i = 1; i <= hosts; i++)); do
    ns=$(host_ns "${i}")
    pids=$(member_pids "${ns}" | wc -l)
    if [[ "${cg_mode}" == v1 ]]; then
      read -r cg x <<<"$(host_cgroups "${i}")"
      quota="$(cat "${cg}/cpu.cfs_quota_us")/$(cat "${cg}/cpu.cfs_period_us") us"
      usage=$(cat "${x}/memory.usage_in_bytes")
      limit=$(cat "${x}/memory.limit_in_bytes")
    else
      cg=$(host_cgroups "${i}")
      quota="$(cat "${cg}/cpu.max") us"
      usage=$(cat "${cg}/memory.current")
      limit=$(cat "${cg}/memory.max")
    fi
    echo "h${i} $(host_address "${i}") namespace ${ns}: ${pids} processes; cpu ${quota}; memory $(numfmt --to=iec "${usage}") of $(numfmt --to=iec "${limit}")"
    "${IP}" netns exec "${ns}" tc qdisc show dev eth0 | sed 's/^/  eth0 out: /'
    "${IP}" netns exec "${switch_ns}" tc qdisc show dev "p${i}" | sed 's/^/  eth0 in:  /'
  done
}

# Sets host $1's CPU quota to $2 CPUs on a running cluster (a slow machine).
cmd_cpus() {
  # Not named cpus: load_env sets the cluster's own.
  local host=$1 host_cpus=$2 quota cpu_dir
  load_env
  in_range "${host}" 1 "${hosts}" || die "cpus: --host must be 1 to ${hosts}"
  check_cpus "${host_cpus}"
  quota=$(quota_of "${host_cpus}")
  if [[ "${cg_mode}" == v1 ]]; then
    read -r cpu_dir _ <<<"$(host_cgroups "${host}")"
    echo "${quota}" >"${cpu_dir}/cpu.cfs_quota_us"
  else
    echo "${quota} ${CPU_PERIOD_US}" >"$(host_cgroups "${host}")/cpu.max"
  fi
  log "h${host}: ${host_cpus} CPUs (${quota} us per ${CPU_PERIOD_US} us)"
}

# Stops every process of host $1 (SIGSTOP) for $2 seconds, then lets them
# go on (SIGCONT): a machine that stalls (swapping, a hypervisor's pause).
cmd_stall() {
  local host=$1 seconds=$2 pids
  load_env
  in_range "${host}" 1 "${hosts}" || die "stall: --host must be 1 to ${hosts}"
  [[ "${seconds}" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "stall: --seconds '${seconds}': give a number"
  pids=$(member_pids "$(host_ns "${host}")")
  [[ -n "${pids}" ]] || die "stall: host ${host} runs no process"
  # shellcheck disable=SC2086  # One pid a word.
  kill -STOP ${pids} 2>/dev/null || true
  sleep "${seconds}"
  # shellcheck disable=SC2086
  kill -CONT ${pids} 2>/dev/null || true
  log "h${host}: $(wc -w <<<"${pids}") processes stopped for ${seconds} s"
}

cmd_exec() {
  local host=$1
  shift
  load_env
  [[ $# -gt 0 ]] || die "exec: give a command after --"
  if [[ -z "${host}" ]]; then
    exec "${IP}" netns exec "${switch_ns}" "$@"
  fi
  in_range "${host}" 1 "${hosts}" || die "--host '${host}': give 1 to ${hosts}"
  # Into the host's cgroups first, as its sshd went, then into its namespace.
  local cg
  for cg in $(host_cgroups "${host}"); do echo $$ >"${cg}/cgroup.procs"; done
  exec "${IP}" netns exec "$(host_ns "${host}")" "$@"
}

# --- run ------------------------------------------------------------------------

# Writes cluster file $1 for `shardgnn launch`: servers on hosts 1..S (parts
# dealt round-robin), trainers on hosts S+1..S+T (with --colocate: on 1..T).
write_cluster_file() {
  local file=$1 parts=$2 servers=$3 trainers=$4 colocate=$5 per_host=$6 binary=$7
  local i first_trainer=$((servers + 1)) last
  ((colocate)) && first_trainer=1
  last=$((first_trainer + trainers - 1))
  ((servers > last)) && last=${servers}
  {
    echo "# Written by bench/cluster/cluster.sh for cluster ${base}."
    echo "ssh_config = \"${state}/ssh_config\""
    echo "binary = \"${binary}\""
    echo "connect_timeout = 5"
    echo
    echo "[train]"
    echo "# The hosts share this machine's boot ID: without this, trainers would"
    echo "# read the servers' features from shared memory instead of the network."
    echo "no-shared-memory = true"
    for ((i = 1; i <= last; i++)); do
      local list=() p n=0
      if ((i <= servers)); then
        for ((p = i - 1; p < parts; p += servers)); do list+=("${p}"); done
      fi
      if ((i >= first_trainer && i < first_trainer + trainers)); then n=${per_host}; fi
      echo
      echo "[[host]]"
      echo "ssh = \"h${i}\""
      echo "address = \"$(host_address "${i}")\""
      local joined="${list[*]}"
      echo "parts = [${joined// /, }]"
      echo "trainers = ${n}"
      echo "work_dir = \"${state}/work-h${i}\""
    done
  } >"${file}"
  echo "${last}"
}

launch_pid=""
own_cluster=0
# SIGINT/SIGTERM/SIGHUP during a run: the launch is asked to stop (it stops every
# remote process and says so), given 20 s, then the EXIT trap removes the
# rest. The launch runs in the background (bash defers traps while a
# foreground child runs, and starts background jobs with SIGINT ignored), so
# the signal is forwarded as SIGTERM.
on_signal() {
  trap '' INT TERM HUP
  log "$1: stopping the launch"
  if [[ -n "${launch_pid}" ]] && kill -TERM "${launch_pid}" 2>/dev/null; then
    local deadline=$((SECONDS + 20))
    while kill -0 "${launch_pid}" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  fi
  case "$1" in
    SIGINT) exit 130 ;;
    SIGHUP) exit 129 ;;
    *) exit 143 ;;
  esac
}
on_exit() {
  local rc=$?
  trap '' INT TERM HUP
  if ((own_cluster)); then
    teardown
    log "cluster ${base} torn down"
  elif [[ -n "${launch_pid}" ]]; then
    kill -KILL "${launch_pid}" 2>/dev/null || true
  fi
  exit "${rc}"
}

cmd_run() {
  local partition=$1 servers=$2 trainers=$3 colocate=$4 per_host=$5 out=$6 binary=$7
  shift 7
  local up_args=("$1" "$2" "$3")
  shift 3
  [[ -n "${partition}" ]] || die "run: give --partition DIR (a partition made by shardgnn partition)"
  [[ -f "${partition}/partition.json" ]] || die "--partition ${partition}: no partition.json there"
  partition=$(cd "${partition}" && pwd)
  [[ -x "${binary}" ]] || die "${binary}: no shardgnn binary (build it, or give --shardgnn)"
  binary="$(cd "$(dirname "${binary}")" && pwd)/$(basename "${binary}")"
  local n
  for n in "${servers}" "${trainers}" "${per_host}"; do
    [[ "${n}" =~ ^[1-9][0-9]*$ ]] || die "--server-hosts, --trainer-hosts and --trainers-per-host take a number, 1 or more ('${n}')"
  done
  local parts
  parts=$(grep -o '"num_parts": *[0-9]*' "${partition}/partition.json" | grep -o '[0-9]*$')
  [[ -n "${parts}" ]] || die "${partition}/partition.json: no num_parts"
  ((servers <= parts)) || die "--server-hosts ${servers}: the partition has only ${parts} parts"
  local needed=$((servers + trainers))
  ((colocate)) && needed=$((servers > trainers ? servers : trainers))

  trap on_exit EXIT
  trap 'on_signal SIGINT' INT
  trap 'on_signal SIGTERM' TERM
  trap 'on_signal SIGHUP' HUP
  if is_up; then
    load_env
    ((hosts >= needed)) || die "cluster ${base} has ${hosts} hosts; this run needs ${needed}"
    log "using cluster ${base}, which is up (it stays up)"
  else
    exists && die "cluster ${base} is not up but parts of it exist (a crashed run?): cluster.sh down --name ${id}"
    own_cluster=1
    # Its own EXIT trap removes a half-made cluster; ours then runs again.
    (cmd_up "${needed}" "${up_args[@]}") || exit 1
    load_env
  fi
  [[ -n "${out}" ]] || out="${PWD}/out/cluster/${base}-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$(dirname "${out}")"
  out="$(cd "$(dirname "${out}")" && pwd)/$(basename "${out}")"
  local file
  file="${state}/cluster-$(date +%s%N).toml"
  write_cluster_file "${file}" "${parts}" "${servers}" "${trainers}" "${colocate}" "${per_host}" "${binary}" >/dev/null
  local layout="${servers} server hosts, then ${trainers} trainer hosts"
  ((colocate)) && layout="${servers} server hosts, ${trainers} trainer hosts, from h1 (colocated)"
  log "launch: ${layout}, ${parts} parts, ${per_host} trainers a host; cluster file ${file}"
  "${IP}" netns exec "${switch_ns}" "${binary}" launch --cluster "${file}" \
    --partition "${partition}" --out "${out}" "$@" </dev/null &
  launch_pid=$!
  local rc=0
  wait "${launch_pid}" || rc=$?
  launch_pid=""
  if ((rc != 0)); then
    die "shardgnn launch failed (exit ${rc})"
  fi
  [[ -f "${out}/summary.json" ]] || die "shardgnn launch succeeded but wrote no ${out}/summary.json"
  log "summary: ${out}/summary.json"
  echo "${out}/summary.json"
}

# --- main -----------------------------------------------------------------------

main() {
  [[ $# -ge 1 ]] || usage
  local command=$1
  shift
  case "${command}" in -h | --help | help) usage ;; esac
  local hosts=2 cpus=1 mem=2G link="" all=0 host="" partition="" servers=1 trainers=1
  local colocate=0 per_host=1 out="" seconds=1 binary="${SHARDGNN:-${REPO}/build/cli/shardgnn}"
  local -a rest=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --name | --hosts | --cpus | --mem | --link | --host | --partition | --server-hosts | \
        --trainer-hosts | --trainers-per-host | --out | --shardgnn | --seconds)
        [[ $# -ge 2 ]] || die "$1 needs a value"
        ;;&
      --name) id=$2 ;;
      --hosts) hosts=$2 ;;
      --cpus) cpus=$2 ;;
      --mem) mem=$2 ;;
      --link) link=$2 ;;
      --host) host=$2 ;;
      --partition) partition=$2 ;;
      --server-hosts) servers=$2 ;;
      --trainer-hosts) trainers=$2 ;;
      --trainers-per-host) per_host=$2 ;;
      --out) out=$2 ;;
      --shardgnn) binary=$2 ;;
      --seconds) seconds=$2 ;;
      --colocate) colocate=1 ;;
      --all) all=1 ;;
      --) shift; rest=("$@"); break ;;
      -h | --help) usage ;;
      *) die "unknown flag '$1' for '${command}' (cluster.sh --help)" ;;
    esac
    case "$1" in --colocate | --all) shift ;; *) shift 2 ;; esac
  done
  set_names
  case "${command}" in
    up) cmd_up "${hosts}" "${cpus}" "${mem}" "${link}" ;;
    down)
      [[ "$(id -u)" == 0 ]] || die "needs root (network namespaces, cgroups)"
      if ((all)); then teardown_matching '[a-z0-9]{1,12}'; else teardown; fi
      ;;
    status) cmd_status ;;
    exec) cmd_exec "${host}" "${rest[@]}" ;;
    cpus) cmd_cpus "${host}" "${cpus}" ;;
    stall) cmd_stall "${host}" "${seconds}" ;;
    run)
      cmd_run "${partition}" "${servers}" "${trainers}" "${colocate}" "${per_host}" "${out}" \
        "${binary}" "${cpus}" "${mem}" "${link}" "${rest[@]}"
      ;;
    *) die "unknown command '${command}': up, down, status, exec, cpus, stall or run" ;;
  esac
}

main "$@"
