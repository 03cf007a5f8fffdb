#!/usr/bin/env bash
# The main job. Installs what is missing, builds, then imports the bundled Cora dataset (reused if already
# imported), partitions it into 2 parts (reused if already done) and prints the partition summary.
# Outputs go to ./out (SHARDGNN_OUT overrides).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
shardgnn_install_deps
shardgnn_build
bin="$SHARDGNN_BUILD/cli/shardgnn"
out="${SHARDGNN_OUT:-$SHARDGNN_ROOT/out}"
mkdir -p "$out"
if [ ! -d "$out/cora" ]; then
  "$bin" dataset import --format ogb --input "$SHARDGNN_ROOT/datasets/cora/ogb-planetoid" --undirected \
    --name cora --out "$out/cora"
fi
if [ ! -d "$out/cora-2parts" ]; then
  "$bin" partition --dataset "$out/cora" --parts 2 --out "$out/cora-2parts"
fi
"$bin" info "$out/cora-2parts"
