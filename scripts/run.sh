#!/usr/bin/env bash
# The main job. Installs what is missing, builds, then runs `shardgnn run` with the embedded default: the bundled
# Cora dataset (imported once), 2 partitions (made once), 2 storage servers and 2 trainers on 127.0.0.1,
# GraphSAGE, ending with the test accuracy. Extra arguments go to `shardgnn run` (see `shardgnn run --help`).
# Outputs go to ./out (SHARDGNN_OUT overrides): datasets/, partitions/ and one runs/<time>/ per run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
shardgnn_install_deps
shardgnn_build
exec "$SHARDGNN_BUILD/cli/shardgnn" run --work-dir "${SHARDGNN_OUT:-$SHARDGNN_ROOT/out}" "$@"
