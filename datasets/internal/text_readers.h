// Streaming readers for the text inputs of the importers: edge lists,
// one-value-per-line files (labels, split indices, counts) and feature rows.
// Each reads through LineReader (plain or gzip) and names the file and line in
// every error.
#ifndef SHARDGNN_DATASETS_INTERNAL_TEXT_READERS_H_
#define SHARDGNN_DATASETS_INTERNAL_TEXT_READERS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"

namespace shardgnn::datasets_internal {

// Field separator of an edge file: ',' or blanks; kAuto picks per line
// (',' if the line has one).
enum class EdgeSeparator { kComma, kBlank, kAuto };

// Appends the edges of `path` ("src<sep>dst" per line) to *src and *dst.
// Empty lines and lines starting with '#' or '%' are skipped. Every ID must
// be in [0, num_nodes). With `header`, a first line none of whose fields is
// an integer (column names: "src,dst") is skipped and returned there (at most
// 40 characters; empty if there was none).
absl::Status ReadEdgeText(const std::string& path, EdgeSeparator sep,
                          int64_t num_nodes, std::vector<NodeId>* src,
                          std::vector<NodeId>* dst,
                          std::string* header = nullptr);

// ReadEdgeText handing each edge to `sink` instead of holding them (the
// out-of-core import); a sink error stops the read and is returned as is.
absl::Status ForEachEdgeText(
    const std::string& path, EdgeSeparator sep, int64_t num_nodes,
    absl::FunctionRef<absl::Status(NodeId src, NodeId dst)> sink,
    std::string* header = nullptr);

// Reads a file with one integer per line (split indices, counts).
absl::StatusOr<std::vector<int64_t>> ReadIntColumn(const std::string& path);

// Reads one label per line (see ParseLabel); exactly `num_nodes` lines.
absl::StatusOr<std::vector<int64_t>> ReadLabelColumn(const std::string& path,
                                                     int64_t num_nodes);

// Streams `num_nodes` rows of comma-separated floats from `path` into
// `npy_path` (float32 [num_nodes, F], F taken from the first row). A NaN or
// infinite value is an error naming the line, node and column unless
// `allow_nonfinite`; then *nonfinite counts them. Stops early with
// CancelledError once *cancel is set.
absl::StatusOr<int64_t> StreamFeatureRows(
    const std::string& path, int64_t num_nodes, const std::string& npy_path,
    const std::atomic<bool>* cancel, bool allow_nonfinite, int64_t* nonfinite);

// Rows of comma-separated floats, all of the first row's width.
struct FloatRows {
  int64_t dim = 0;
  std::vector<float> values;  // rows * dim, row-major.
};

// Reads exactly `rows` feature rows of `what` ("node type paper", "relation
// paper___cites___paper", "the edges") from `path`; `edges` says whether a
// row is an edge's or a node's (in errors). Non-finite values fail (naming
// the line) unless `allow_nonfinite`; then *nonfinite counts them. Stops
// with CancelledError once *cancel (may be null) is set.
absl::StatusOr<FloatRows> ReadFloatRows(const std::string& path, int64_t rows,
                                        bool edges, const std::string& what,
                                        bool allow_nonfinite,
                                        const std::atomic<bool>* cancel,
                                        int64_t* nonfinite);

// Reads a split file of node indices, checks them against num_nodes and
// for repeats, and returns them sorted.
absl::StatusOr<std::vector<NodeId>> ReadSplitText(const std::string& path,
                                                  int64_t num_nodes);

}  // namespace shardgnn::datasets_internal

#endif  // SHARDGNN_DATASETS_INTERNAL_TEXT_READERS_H_
