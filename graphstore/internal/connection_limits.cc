#include "graphstore/internal/connection_limits.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace shardgnn::internal {
namespace {

int64_t OpenFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
    return int64_t{1} << 20;
  }
  return static_cast<int64_t>(rl.rlim_cur);
}

}  // namespace

int ConnectionsUnderFileLimit(int wanted) {
  const int64_t share = std::max<int64_t>(8, OpenFileLimit() / 4);
  return static_cast<int>(std::min<int64_t>(wanted, share));
}

bool GrpcConnections::Admit(int fd, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (Full(peer)) {
    Prune();
    if (Full(peer)) return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  entries_.push_back({fd, st.st_ino, peer});
  ++per_peer_[peer];
  return true;
}

int GrpcConnections::Open() {
  absl::MutexLock lock(&mu_);
  Prune();
  return static_cast<int>(entries_.size());
}

bool GrpcConnections::Full(const std::string& peer) const {
  auto it = per_peer_.find(peer);
  return static_cast<int>(entries_.size()) >= max_total_ ||
         (it != per_peer_.end() && it->second >= max_per_peer_);
}

void GrpcConnections::Prune() {
  std::vector<Entry> alive;
  for (Entry& e : entries_) {
    struct stat st {};
    if (fstat(e.fd, &st) == 0 && st.st_ino == e.inode) {
      alive.push_back(std::move(e));
    } else if (--per_peer_[e.peer] == 0) {
      per_peer_.erase(e.peer);
    }
  }
  entries_ = std::move(alive);
}

}  // namespace shardgnn::internal
