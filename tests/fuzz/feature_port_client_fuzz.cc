// The feature port's client side (graphstore/internal/feature_port.h) on
// arbitrary answers: a loopback listener reads each request and answers it
// with the input's bytes, then closes; the client fetches 5 rows of width 8,
// then samples the same 5 IDs (the same bytes as the answer). It must return
// rows of the asked shape (a count per ID and at most the neighbors it
// allows) or a status, never read or write out of bounds, never wait past
// its deadline.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graphstore/internal/feature_port.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/socket_util.h"

namespace {

std::mutex mu;
std::string answer;

// Accepts forever on a loopback port; answers each connection's first
// request with `answer`.
int ListenerPort() {
  static int port = [] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::perror("listener");
      std::abort();
    }
    std::thread([fd] {
      for (;;) {
        int conn = accept(fd, nullptr, nullptr);
        if (conn < 0) continue;
        // The request: a 16-byte header and 5 IDs.
        char request[16 + 5 * 8];
        size_t got = 0;
        while (got < sizeof(request)) {
          pollfd p{conn, POLLIN, 0};
          if (poll(&p, 1, 2000) <= 0) break;
          ssize_t n = recv(conn, request + got, sizeof(request) - got, 0);
          if (n <= 0) break;
          got += static_cast<size_t>(n);
        }
        std::string reply;
        {
          std::lock_guard<std::mutex> lock(mu);
          reply = answer;
        }
        shardgnn::fuzz::WriteSome(
            conn, reinterpret_cast<const uint8_t*>(reply.data()), reply.size());
        close(conn);
      }
    }).detach();
    return static_cast<int>(ntohs(addr.sin_port));
  }();
  return port;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::lock_guard<std::mutex> lock(mu);
    answer.assign(reinterpret_cast<const char*>(data), size);
  }
  shardgnn::internal::FeaturePortClient client("127.0.0.1", ListenerPort());
  const std::vector<shardgnn::NodeId> ids = {0, 1, 2, 3, 149};
  std::vector<float> rows(ids.size() * 8);
  bool transport_failed = false;
  const absl::Time start = absl::Now();
  (void)client.Fetch(ids, 8, rows.data(), nullptr, start + absl::Seconds(3),
                     &transport_failed);
  if (absl::Now() - start > absl::Seconds(10)) {
    std::fprintf(stderr, "Fetch ran 7 s past its deadline\n");
    std::abort();
  }
  // The same bytes as the answer to a sample: at most 40 neighbors taken.
  shardgnn::SampledNeighbors sample;
  const absl::Time sample_start = absl::Now();
  const absl::Status s =
      client.Sample(ids, 8, false, 1, 40, &sample,
                    sample_start + absl::Seconds(3), &transport_failed);
  if (s.ok() &&
      (sample.counts.size() != ids.size() || sample.neighbors.size() > 40)) {
    std::fprintf(stderr, "Sample took %zu counts and %zu neighbors\n",
                 sample.counts.size(), sample.neighbors.size());
    std::abort();
  }
  if (absl::Now() - sample_start > absl::Seconds(10)) {
    std::fprintf(stderr, "Sample ran 7 s past its deadline\n");
    std::abort();
  }
  return 0;
}
