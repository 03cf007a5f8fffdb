# shellcheck shell=bash
# shellcheck disable=SC2154  # shardgnn: set by bench/lib.sh
# The scaling studies' graph (sourced by run_scaling.sh and run_hetero.sh,
# after bench/lib.sh): make_scaling_graph WORK NODES PARTS generates an SBM
# graph of NODES nodes (20 edges a node, 128 features, 16 classes, split
# 0.2/0.02/0.02) into WORK/sbm-NODES unless it is there, and partitions it
# with METIS into WORK/sbm-NODES-pPARTS; sets scaling_dataset and
# scaling_partition.
make_scaling_graph() {
  local work=$1 nodes=$2 parts=$3
  scaling_dataset="${work}/sbm-${nodes}"
  scaling_partition="${work}/sbm-${nodes}-p${parts}"
  mkdir -p "${work}/logs"
  if [[ ! -f "${scaling_dataset}/manifest.json" ]]; then
    log "generating ${scaling_dataset}"
    "${shardgnn}" dataset generate --kind sbm --nodes "${nodes}" --avg-degree 20 \
      --features 128 --classes 16 --split 0.2,0.02,0.02 --out "${scaling_dataset}" \
      >"${work}/logs/generate.log" 2>&1
  fi
  if [[ ! -f "${scaling_partition}/partition.json" ]]; then
    log "partitioning into ${parts} parts"
    "${shardgnn}" partition --dataset "${scaling_dataset}" --parts "${parts}" \
      --out "${scaling_partition}" >"${work}/logs/partition.log" 2>&1
  fi
}
