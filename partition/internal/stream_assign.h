// The streaming partitioner (--method stream): restreaming FENNEL.
// Internal to partition/.
//
// Each pass reads every node's row once, in breadth-first order (each search
// from the lowest node not yet reached: a node's neighbors come soon after
// it, so the first pass already sees most of them placed), and puts the node
// in the part that maximizes
//   (neighbors already in p) - 4 * alpha * gamma * x_p^(gamma - 1),
// gamma = 1.5, where x_p is p's load in this pass, in nodes: n times the
// largest, over the balance constraints, of p's share of that constraint's
// total (a part heavy in any one constraint is avoided before it reaches
// that cap, so late nodes are not left without a part under every cap), and
// alpha = sqrt(K) * m / n^1.5 (FENNEL's, m = adjacency entries / 2; 4 times
// FENNEL's penalty keeps the parts level through a pass, so that the last
// nodes of a pass still find room beside their neighbors). A part
// is eligible only while every constraint (nodes, or each node type's nodes;
// train nodes; adjacency entries: METIS's three) stays under tolerance *
// total / K; when none is, the least loaded takes the node. The first pass
// counts only the neighbors placed so far; later passes ("restreaming",
// Nishimura and Ugander, KDD 2013) count every neighbor at its latest part,
// so each pass refines the last while the loads start again from zero.
// Passes stop early when two in a row fail to cut 0.1% fewer edges than the
// best so far. The best pass's assignment is then repaired: a pass's
// caps hold unless a node finds no part with room in every constraint at
// once (a part full of nodes while another is full of edges; then the part
// left least over takes it), so nodes of a part over a cap move to the part
// holding most of their neighbors among those where the move lowers the
// total overload, first where that costs no cut, then anywhere.
//
// Memory beside the CSR: the order (8 bytes a node), the part of every node
// and the best pass's (4 bytes each), K counters per constraint. Time:
// passes * (entries + N * K * constraints), the rows read in breadth-first
// order. Deterministic: no seed.
#ifndef SHARDGNN_PARTITION_INTERNAL_STREAM_ASSIGN_H_
#define SHARDGNN_PARTITION_INTERNAL_STREAM_ASSIGN_H_

#include <cstdint>
#include <vector>

#include "datasets/dataset.h"

namespace shardgnn::partition_internal {

inline constexpr double kStreamPenaltyScale = 4.0;

struct StreamAssignOptions {
  int num_parts = 2;
  int passes = 10;          // At most; >= 1: one stream, then refinements.
  double tolerance = 1.05;  // Allowed max / avg per constraint.
};

struct StreamAssignStats {
  // Edge cut (entries whose ends are in different parts) after each pass.
  std::vector<int64_t> cut_after_pass;
  int best_pass = 0;  // The pass whose assignment was repaired and returned.
  int64_t balance_moves = 0;     // Nodes the balance repair moved.
  int64_t cut_after_repair = 0;  // The edge cut of the returned assignment.
};

// REQUIRES: the dataset's shape was checked; 1 <= num_parts <= N;
// passes >= 1.
std::vector<int32_t> StreamAssignment(const Dataset& dataset,
                                      const StreamAssignOptions& options,
                                      StreamAssignStats* stats = nullptr);

}  // namespace shardgnn::partition_internal

#endif  // SHARDGNN_PARTITION_INTERNAL_STREAM_ASSIGN_H_
