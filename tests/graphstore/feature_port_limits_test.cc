// The feature port's connection caps and eviction (graphstore/internal/
// feature_port.h, connection_limits.h): a real FeaturePortServer, idle
// connections from several client addresses (127.0.0.x) and a fetching
// client from 127.0.0.1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graphstore/internal/feature_port.h"
#include "tests/graphstore/feature_port_fixture.h"
#include "tests/graphstore/server_testing.h"
#include "tests/testing/status_matchers.h"

namespace shardgnn {
namespace {

using testing::ClosedByServerWithin;
using testing::ConnectFrom;
using testing::FeaturePortTest;
using testing::kDim;

// Fetches the rows of `ids` over `client`; false on any failure.
bool Fetch(internal::FeaturePortClient& client, const std::vector<NodeId>& ids,
           bool* transport_failed) {
  std::vector<float> rows(ids.size() * kDim);
  *transport_failed = false;
  return client
      .Fetch(ids, kDim, rows.data(), nullptr, absl::Now() + absl::Seconds(5),
             transport_failed)
      .ok();
}

// Issue 51: the per-address cap could be the whole cap, and one address then
// held every connection.
TEST_P(FeaturePortTest, OneAddressLeavesRoomForOthers) {
  internal::FeaturePortLimits limits;
  limits.max_connections = 16;
  limits.max_connections_per_ip = 16;
  ASSERT_OK_AND_ASSIGN(auto port, internal::FeaturePortServer::Start(
                                      "127.0.0.1", 0, store_, limits, {}));
  std::vector<int> attacker;
  for (int i = 0; i < 20; ++i) {
    attacker.push_back(ConnectFrom("127.0.0.2", port->port()));
    ASSERT_GE(attacker.back(), 0);
  }
  internal::FeaturePortClient other("127.0.0.1", port->port());
  bool transport_failed = false;
  EXPECT_TRUE(Fetch(other, Owned(), &transport_failed));
  EXPECT_FALSE(transport_failed);
  int open = 0;
  for (int fd : attacker) {
    if (!ClosedByServerWithin(fd, absl::Milliseconds(50))) ++open;
    close(fd);
  }
  EXPECT_EQ(open, 8);  // Half of 16.
}

// Issue 51: a port full of idle connections turned newcomers away until the
// idle timeout. Now the connection idle longest between requests makes room
// once idle long enough; one with requests is never cut.
TEST_P(FeaturePortTest, FullPortEvictsTheConnectionIdleLongest) {
  internal::FeaturePortLimits limits;
  limits.max_connections = 4;  // 2 per address; 1 each here.
  limits.min_idle_to_evict = absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(auto port, internal::FeaturePortServer::Start(
                                      "127.0.0.1", 0, store_, limits, {}));
  // A client that keeps fetching holds the oldest connection.
  internal::FeaturePortClient busy("127.0.0.1", port->port());
  bool transport_failed = false;
  ASSERT_TRUE(Fetch(busy, Owned(), &transport_failed));
  std::vector<int> idle;
  const absl::Time first_idle = absl::Now();
  for (int a = 2; a <= 4; ++a) {
    idle.push_back(ConnectFrom(absl::StrCat("127.0.0.", a), port->port()));
    ASSERT_GE(idle.back(), 0);
    absl::SleepFor(absl::Milliseconds(20));  // Distinct idle times.
  }
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread fetcher([&] {
    while (!stop) {
      bool failed = false;
      if (!Fetch(busy, Owned(), &failed) || failed) ++failures;
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  absl::Cleanup join = [&] {
    stop = true;
    fetcher.join();
  };
  // Admits a newcomer from `source`: true once one is not closed at once.
  auto admitted_within = [&](const std::string& source, absl::Duration wait) {
    const absl::Time deadline = absl::Now() + wait;
    do {
      const int fd = ConnectFrom(source, port->port());
      if (fd >= 0 && !ClosedByServerWithin(fd, absl::Milliseconds(100))) {
        idle.push_back(fd);
        return true;
      }
      close(fd);
    } while (absl::Now() < deadline);
    return false;
  };
  EXPECT_FALSE(admitted_within("127.0.0.5", absl::ZeroDuration()));
  ASSERT_TRUE(admitted_within("127.0.0.5", absl::Seconds(3)));
  EXPECT_GE(absl::Now() - first_idle, absl::Seconds(1));
  // The first idle connection made room; the others stay.
  EXPECT_TRUE(ClosedByServerWithin(idle[0], absl::Seconds(1)));
  EXPECT_FALSE(ClosedByServerWithin(idle[1], absl::Milliseconds(1)));
  EXPECT_FALSE(ClosedByServerWithin(idle[2], absl::Milliseconds(1)));
  std::move(join).Invoke();
  EXPECT_EQ(failures.load(), 0);
  for (int fd : idle) close(fd);
  port->Shutdown(absl::Now() + absl::Seconds(5));
}

INSTANTIATE_TEST_SUITE_P(Modes, FeaturePortTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Memory" : "Disk";
                         });

}  // namespace
}  // namespace shardgnn
