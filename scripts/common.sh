# Shared by scripts/run.sh and scripts/test.sh: install what is missing, configure, build.
# Sourced, not run. Idempotent: a second run installs nothing and rebuilds only what changed.

SHARDGNN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARDGNN_BUILD="${SHARDGNN_BUILD:-$SHARDGNN_ROOT/build}"

# Every dependency is a Debian 12 package.
SHARDGNN_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libabsl-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libtorch-dev libgloo-dev libopenblas0-pthread librocksdb-dev libmetis-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev zlib1g-dev libxxhash-dev
  libtomlplusplus-dev  # the cluster file of `shardgnn launch`
  openssh-client rsync # `shardgnn launch` reaches its hosts with ssh and rsync
  libssl-dev  # HMAC-SHA256 for the feature port's challenge-response
  prometheus-cpp-dev  # `shardgnn serve --metrics-listen` (Prometheus metrics over HTTP)
  openssl     # the tests make TLS certificates with it
  iproute2  # ip netns, for the multi-host tests
  # `shardgnn partition --distributed`: PT-Scotch on MPI ranks, run with mpirun
  libptscotch-dev libopenmpi-dev openmpi-bin
  # The Python package (build/python/shardgnn) and model scripts: Debian's torch
  # is the trainer's LibTorch release.
  pybind11-dev python3-dev python3-torch python3-numpy
)

shardgnn_install_deps() {
  local missing=()
  for p in "${SHARDGNN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "shardgnn: installing ${#missing[@]} missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Arguments are cmake -D settings ("-DSHARDGNN_WERROR=ON"): applied at the
# first configure, and to an existing build whose cache does not hold them.
shardgnn_build() {
  if [ ! -f "$SHARDGNN_BUILD/build.ninja" ]; then
    cmake -S "$SHARDGNN_ROOT" -B "$SHARDGNN_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
  else
    local setting
    for setting in "$@"; do
      # -DNAME=VALUE is cached as NAME:TYPE=VALUE.
      local name="${setting#-D}" value="${setting#*=}"
      name="${name%%=*}"
      if ! grep -q "^${name}:[A-Z]*=${value}\$" "$SHARDGNN_BUILD/CMakeCache.txt"; then
        cmake -S "$SHARDGNN_ROOT" -B "$SHARDGNN_BUILD" "$@"
        break
      fi
    done
  fi
  # Two cores: LibTorch translation units need ~1.5 GB each, so -j2 is safe on the 24 GiB machines.
  cmake --build "$SHARDGNN_BUILD" -- -j"$(nproc)"
  shardgnn_python_path
}

# Makes the built Python package importable by Debian's /usr/bin/python3 without
# PYTHONPATH: a .pth file naming build/python in the user's site-packages
# (rewritten only when it names another build).
shardgnn_python_path() {
  [ -d "$SHARDGNN_BUILD/python/shardgnn" ] && [ -x /usr/bin/python3 ] || return 0
  local site
  site="$(/usr/bin/python3 -m site --user-site 2>/dev/null)" || return 0
  local pth="$site/shardgnn.pth"
  if [ "$(cat "$pth" 2>/dev/null)" != "$SHARDGNN_BUILD/python" ]; then
    mkdir -p "$site" && echo "$SHARDGNN_BUILD/python" > "$pth" &&
      echo "shardgnn: /usr/bin/python3 imports shardgnn from $SHARDGNN_BUILD/python ($pth)"
  fi
}
