// Ranking metrics of link prediction, on scores of positive and negative node
// pairs (higher = more likely an edge):
//  - GAE protocol (Kipf & Welling 2016): ROC-AUC and average precision over
//    all positives against all negatives;
//  - OGB protocol: each positive ranked against its own negatives: mean
//    reciprocal rank and Hits@K (the fraction of positives ranked in the top
//    K).
// Ties count half (AUC), or pessimistically for a positive (MRR, Hits: a
// negative scoring equal to the positive ranks above it), as OGB's evaluator
// does. Plain functions of their inputs; no torch.
#ifndef SHARDGNN_TRAINER_LINK_METRICS_H_
#define SHARDGNN_TRAINER_LINK_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace shardgnn {

// P(score of a random positive > score of a random negative), ties half.
// -1 if either list is empty. O((P + N) log(P + N)).
double RocAuc(absl::Span<const float> positive,
              absl::Span<const float> negative);

// Average precision as scikit-learn's average_precision_score (which the GAE
// figures use): sum over distinct scores t of (recall(t) - recall(t')) *
// precision(t), pairs scoring >= t counted as predicted edges. -1 without
// positives.
double AveragePrecision(absl::Span<const float> positive,
                        absl::Span<const float> negative);

// Rank of each positive among itself and its negatives: 1 + the negatives
// scoring at least as high. `negative` holds per_positive scores per
// positive, in order. REQUIRES: negative.size() == positive.size() *
// per_positive.
std::vector<int64_t> PositiveRanks(absl::Span<const float> positive,
                                   absl::Span<const float> negative,
                                   int64_t per_positive);

// Rank of each positive among itself and all the negatives (OGB's protocol
// for a shared negative set, as ogbl-collab and ogbl-ddi: Hits@K counts a
// positive scoring above the K-th best negative). O((P + N) log N).
std::vector<int64_t> PositiveRanksAgainstAll(absl::Span<const float> positive,
                                             absl::Span<const float> negative);

// Mean of 1 / rank, and the fraction of ranks <= k; -1 without ranks.
double MeanReciprocalRank(absl::Span<const int64_t> ranks);
double HitsAt(absl::Span<const int64_t> ranks, int64_t k);

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_LINK_METRICS_H_
