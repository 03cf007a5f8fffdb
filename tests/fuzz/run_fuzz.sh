#!/bin/bash
# Builds the libFuzzer targets (clang-14, ASan + UBSan) and runs each for
# SECONDS, starting from the seed corpora in tests/fuzz/corpus/<target>.
#
#   tests/fuzz/run_fuzz.sh SECONDS [--only TARGET] [--build DIR]
#
# New inputs found go to DIR/corpus/<target> (the repository's seeds are
# read, never written). Prints one line per target and a JSON summary; exits 1
# if any target crashed, with the crashing input's path and how to re-run it.
set -euo pipefail

usage() { echo "usage: $0 SECONDS [--only TARGET] [--build DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
SECONDS_EACH="$1"; shift
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || usage
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build-fuzz"
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    *) usage ;;
  esac
done

TARGETS=(npy_fuzz manifest_fuzz text_fuzz feature_port_server_fuzz
         feature_port_client_fuzz grpc_server_fuzz grpc_client_fuzz)
if [ -n "$ONLY" ]; then TARGETS=("$ONLY"); fi

# clang and its libFuzzer/sanitizer runtimes are Debian packages.
missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDGNN_FUZZ=ON > "$BUILD.cmake.log" 2>&1 ||
    { cat "$BUILD.cmake.log"; exit 1; }
fi
echo "run_fuzz.sh: building ${#TARGETS[@]} fuzz target(s) in $BUILD"
ninja -C "$BUILD" -j"$(nproc)" "${TARGETS[@]}" > "$BUILD/ninja.log" 2>&1 ||
  { tail -40 "$BUILD/ninja.log"; exit 1; }

# Leaks are reported by the targets' own tests; LeakSanitizer at exit would
# flag the servers the targets keep for the whole process.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
failed=0
json="["
for t in "${TARGETS[@]}"; do
  work="$BUILD/corpus/$t"
  artifacts="$BUILD/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  seeds="$ROOT/tests/fuzz/corpus/$t"
  log="$BUILD/$t.log"
  status=0
  "$BUILD/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$artifacts/" \
    "$work" "$seeds" > "$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  corpus=$(ls "$work" | wc -l)
  crash=$(grep -o "Test unit written to [^ ]*" "$log" | head -1 | sed 's/Test unit written to //' || true)
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "run_fuzz.sh: $t FAILED after $execs executions: ${crash:-see $log}"
    echo "  re-run: $BUILD/tests/fuzz/$t ${crash:-<input>}"
    grep -m5 -E "ERROR: |runtime error|SUMMARY" "$log" | sed 's/^/  /' || true
  else
    echo "run_fuzz.sh: $t ok: $execs executions in ${SECONDS_EACH}s, corpus $corpus inputs"
  fi
  [ "$json" = "[" ] || json+=","
  json+="{\"target\":\"$t\",\"seconds\":$SECONDS_EACH,\"executions\":${execs:-0},\"corpus\":$corpus,\"crashed\":$([ "$status" -ne 0 ] && echo true || echo false)}"
done
echo "$json]"
exit $failed
