// A call's node IDs grouped by the part that owns them, in arrays kept from
// call to call (RemoteGraphSource pools them: sampler/remote_graph_source.h).
#ifndef SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_
#define SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/types.h"
#include "partition/partition_book.h"

namespace shardgnn::internal {

// Part p's nodes, in the call's order: their IDs, their positions in the
// call, and room for where their rows go (the caller's, one part per thread
// at a time). One array of each for all parts, ordered by part (a counting
// sort), so a kept grouping holds as many nodes however they split among the
// parts (an unshuffled validation batch falls mostly in one, a shuffled
// training batch evenly): it never reallocates for a call no larger than its
// capacity(). The arrays are written (touched) only as far as the largest
// call so far; the headroom past that is touched by the first call reaching
// into it.
class OwnerGroups {
 public:
  int num_parts() const { return static_cast<int>(begin_.size()) - 1; }
  absl::Span<const NodeId> ids(int p) const {
    return {ids_.data() + begin_[p], count(p)};
  }
  absl::Span<const size_t> positions(int p) const {
    return {positions_.data() + begin_[p], count(p)};
  }
  absl::Span<size_t> where(int p) {
    return {where_.data() + begin_[p], count(p)};
  }
  // The part owning the call's i-th node.
  int owner(size_t i) const { return owners_[i]; }
  // The most nodes a call may have without any array growing.
  size_t capacity() const;

 private:
  friend absl::Status GroupByOwner(const PartitionBook& book,
                                   absl::Span<const NodeId> nodes,
                                   OwnerGroups* groups);
  size_t count(int p) const { return begin_[p + 1] - begin_[p]; }

  std::vector<NodeId> ids_;
  std::vector<size_t> positions_;
  std::vector<size_t> where_;
  std::vector<int> owners_;    // Per node, in order.
  std::vector<size_t> begin_;  // Part p's nodes: [begin_[p], begin_[p + 1]).
  std::vector<size_t> next_;   // Per part (scratch).
};

// Groups `nodes` by owner into *groups, reusing its memory; INVALID_ARGUMENT
// naming a node outside the graph.
absl::Status GroupByOwner(const PartitionBook& book,
                          absl::Span<const NodeId> nodes, OwnerGroups* groups);

// The calling thread's grouping, for one call: kept by the thread from call
// to call (a thread's calls are one at a time), so it grows to that thread's
// largest call once, however other threads' calls overlap it. A loader's kept
// threads each have theirs: training's grows in the first epoch,
// validation's in the first validation. When a thread ends its grouping is
// kept for the next thread to begin (a few are kept, process-wide): the test
// loader's threads start with the validation loader's. (Shared in a pool,
// a grouping grew again whenever more large calls than ever before were in
// flight at once, such as the first validation that overlapped the next
// epoch's sampling.) A use nested in another on the same thread gets a
// grouping of its own, made for it.
class ThreadOwnerGroups {
 public:
  ThreadOwnerGroups();
  ~ThreadOwnerGroups();
  ThreadOwnerGroups(const ThreadOwnerGroups&) = delete;
  ThreadOwnerGroups& operator=(const ThreadOwnerGroups&) = delete;

  OwnerGroups& operator*() { return *groups_; }
  OwnerGroups* operator->() { return groups_; }
  OwnerGroups* get() { return groups_; }

 private:
  OwnerGroups* groups_;
  std::unique_ptr<OwnerGroups> nested_;  // A nested use's own.
};

}  // namespace shardgnn::internal

#endif  // SHARDGNN_SAMPLER_INTERNAL_OWNER_GROUPS_H_
