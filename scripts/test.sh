#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (ctest). Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
shardgnn_install_deps
shardgnn_build
cd "$SHARDGNN_BUILD"
ctest --output-on-failure -j"$(nproc)" --timeout 900 "$@"
