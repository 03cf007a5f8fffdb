#include "graphstore/internal/connection_limits.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

// Milliseconds since the socket `fd` last received or sent data (the kernel
// counts from the connection's start before the first byte); -1 if `fd` is
// not a TCP socket.
int64_t IdleMs(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
  return std::min(info.tcpi_last_data_recv, info.tcpi_last_data_sent);
}

}  // namespace

int ConnectionsUnderFileLimit(int wanted) {
  const int64_t share = std::max<int64_t>(8, OpenFileLimit() / 4);
  return static_cast<int>(std::min<int64_t>(wanted, share));
}

int PerAddressCap(int max_total, int wanted, int parts) {
  return std::min(wanted, std::max(1, max_total / parts));
}

GrpcConnections::GrpcConnections(int max_total, int max_per_peer,
                                 absl::Duration min_idle_to_evict)
    : max_total_(max_total),
      max_per_peer_(PerAddressCap(max_total, max_per_peer, kGrpcAddressParts)),
      min_idle_ms_(absl::ToInt64Milliseconds(min_idle_to_evict)) {}

bool GrpcConnections::Admit(int fd, const std::string& peer) {
  absl::MutexLock lock(&mu_);
  if (PeerFull(peer) || TotalFull()) Prune();
  if (PeerFull(peer)) return false;
  if (TotalFull() && !EvictOne()) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  entries_.push_back({fd, st.st_dev, st.st_ino, peer});
  ++per_peer_[peer];
  return true;
}

int GrpcConnections::Open() {
  absl::MutexLock lock(&mu_);
  Prune();
  return static_cast<int>(entries_.size());
}

int64_t GrpcConnections::evicted() {
  absl::MutexLock lock(&mu_);
  return evicted_;
}

bool GrpcConnections::PeerFull(const std::string& peer) const {
  auto it = per_peer_.find(peer);
  return it != per_peer_.end() && it->second >= max_per_peer_;
}

bool GrpcConnections::TotalFull() const {
  return static_cast<int>(entries_.size()) >= max_total_;
}

void GrpcConnections::Prune() {
  for (size_t i = entries_.size(); i-- > 0;) {
    const Entry& e = entries_[i];
    struct stat st {};
    if (fstat(e.fd, &st) != 0 || st.st_dev != e.device ||
        st.st_ino != e.inode) {
      Forget(i);
    }
  }
}

bool GrpcConnections::EvictOne() {
  size_t victim = entries_.size();
  int64_t longest = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const int64_t idle = IdleMs(entries_[i].fd);
    if (idle >= min_idle_ms_ && idle > longest) {
      victim = i;
      longest = idle;
    }
  }
  if (victim == entries_.size()) return false;
  // gRPC may close the descriptor at any moment and the process reuse its
  // number: shut the socket down through a descriptor of our own, once it is
  // known to be the same socket.
  const Entry& e = entries_[victim];
  const int mine = fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0 && errno != EBADF) return false;  // No descriptor to spare.
  struct stat st {};
  if (mine >= 0 && fstat(mine, &st) == 0 && st.st_dev == e.device &&
      st.st_ino == e.inode) {
    shutdown(mine, SHUT_RDWR);
    ++evicted_;
  }  // Otherwise gRPC closed it meanwhile: its place is free all the same.
  if (mine >= 0) close(mine);
  Forget(victim);
  return true;
}

void GrpcConnections::Forget(size_t i) {
  auto it = per_peer_.find(entries_[i].peer);
  if (--it->second == 0) per_peer_.erase(it);
  entries_[i] = std::move(entries_.back());
  entries_.pop_back();
}

}  // namespace shardgnn::internal
