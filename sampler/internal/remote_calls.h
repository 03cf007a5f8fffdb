// What the remote graph source's calls share (sampler/remote_graph_source.cc
// and remote_typed_calls.cc).
#ifndef SHARDGNN_SAMPLER_INTERNAL_REMOTE_CALLS_H_
#define SHARDGNN_SAMPLER_INTERNAL_REMOTE_CALLS_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/status.h"
#include "common/types.h"

namespace shardgnn::internal {

// The IDs a call reads: the caller's own, or, for a hedged call (whose
// losing attempt may still run after the caller returned), a copy that the
// call's attempts share.
struct CallIds {
  CallIds(absl::Span<const NodeId> ids, bool copy)
      : owned(copy ? std::make_shared<const std::vector<NodeId>>(ids.begin(),
                                                                 ids.end())
                   : nullptr),
        span(copy ? absl::MakeConstSpan(*owned) : ids) {}
  std::shared_ptr<const std::vector<NodeId>> owned;
  absl::Span<const NodeId> span;
};

// Calls `call(start, n)` for the consecutive pieces [start, start + n) of
// `size` items, each of at most `chunk` (the last may be shorter), in order;
// stops at the first error and returns it. REQUIRES: chunk >= 1.
template <typename Call>
absl::Status ForEachChunk(size_t size, size_t chunk, Call call) {
  for (size_t start = 0; start < size; start += chunk) {
    RETURN_IF_ERROR(call(start, std::min(chunk, size - start)));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_REMOTE_CALLS_H_
