#include "sampler/internal/owner_groups.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/buffers.h"

namespace shardgnn::internal {

size_t OwnerGroups::capacity() const {
  return std::min({ids_.capacity(), positions_.capacity(), where_.capacity(),
                   owners_.capacity()});
}

absl::Status GroupByOwner(const PartitionBook& book,
                          absl::Span<const NodeId> nodes, OwnerGroups* groups) {
  const auto k = static_cast<size_t>(book.num_parts());
  const size_t n = nodes.size();
  std::vector<int>& owners = groups->owners_;
  owners.clear();
  ReserveWithHeadroom(&owners, n);
  std::vector<size_t>& begin = groups->begin_;
  begin.assign(k + 1, 0);
  for (NodeId v : nodes) {
    const int part = book.Owner(v);
    if (part < 0) {
      begin.assign(k + 1, 0);  // Empty, not half made.
      return absl::InvalidArgumentError(absl::StrCat(
          "node ", v, " is outside the graph's [0, ", book.num_nodes(), ")"));
    }
    owners.push_back(part);
    ++begin[static_cast<size_t>(part) + 1];
  }
  for (size_t p = 0; p < k; ++p) begin[p + 1] += begin[p];
  ReserveWithHeadroom(&groups->ids_, n);
  ReserveWithHeadroom(&groups->positions_, n);
  ReserveWithHeadroom(&groups->where_, n);
  // Kept at their largest size: later calls write over the elements instead
  // of value-initialising them again.
  if (groups->ids_.size() < n) groups->ids_.resize(n);
  if (groups->positions_.size() < n) groups->positions_.resize(n);
  if (groups->where_.size() < n) groups->where_.resize(n);
  std::vector<size_t>& next = groups->next_;
  next.assign(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = next[static_cast<size_t>(owners[i])]++;
    groups->ids_[at] = nodes[i];
    groups->positions_[at] = i;
  }
  return absl::OkStatus();
}

namespace {

// The groupings of threads that ended, for threads that begin (a loader's
// threads end before the next loader's start: validation's before the
// test's). Never destroyed: threads may end after static destruction.
BufferPool<OwnerGroups>& Spares() {
  static auto* spares = new BufferPool<OwnerGroups>(8);
  return *spares;
}

struct ThreadSlot {
  ThreadSlot() : groups(Spares().Take()) {}
  ~ThreadSlot() { Spares().Give(std::move(groups)); }
  ThreadSlot(const ThreadSlot&) = delete;
  ThreadSlot& operator=(const ThreadSlot&) = delete;

  OwnerGroups groups;
  bool in_use = false;
};

ThreadSlot& ThisThreadsSlot() {
  thread_local ThreadSlot slot;
  return slot;
}

}  // namespace

ThreadOwnerGroups::ThreadOwnerGroups() {
  ThreadSlot& slot = ThisThreadsSlot();
  if (slot.in_use) {
    nested_ = std::make_unique<OwnerGroups>();
    groups_ = nested_.get();
  } else {
    slot.in_use = true;
    groups_ = &slot.groups;
  }
}

ThreadOwnerGroups::~ThreadOwnerGroups() {
  if (nested_ == nullptr) ThisThreadsSlot().in_use = false;
}

}  // namespace shardgnn::internal
