#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (ctest). Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# Only the tests need a browser: the run report is rendered by headless
# chromium (tests/cli/report_test.cc).
SHARDGNN_PACKAGES+=(chromium)
# `shardgnn launch` is tested against Debian's sshd in network namespaces
# (tests/cli/launch_test.cc).
SHARDGNN_PACKAGES+=(openssh-server)
shardgnn_install_deps
# Warnings are errors here: the suite's build stays warning-free.
shardgnn_build -DSHARDGNN_WERROR=ON
cd "$SHARDGNN_BUILD"
ctest --output-on-failure -j"$(nproc)" --timeout 900 "$@"
# The whole suite (no ctest arguments) also runs every fuzz target briefly
# (tests/fuzz/README.md): SHARDGNN_FUZZ_SECONDS each, 0 to skip.
if [ $# -eq 0 ] && [ "${SHARDGNN_FUZZ_SECONDS:-5}" -gt 0 ]; then
  "$SHARDGNN_ROOT/tests/fuzz/run_fuzz.sh" "${SHARDGNN_FUZZ_SECONDS:-5}"
fi
