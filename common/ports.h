// Free loopback ports, for services that cannot bind port 0 themselves (c10d's
// TCPStore master is given its port up front by whoever starts the trainers).
#ifndef SHARDGNN_COMMON_PORTS_H_
#define SHARDGNN_COMMON_PORTS_H_

#include "absl/status/statusor.h"

namespace shardgnn {

// A TCP port that was free on 127.0.0.1 a moment ago (bound to port 0 and
// released). Another process could take it in between; callers that can bind
// port 0 directly should do that instead.
absl::StatusOr<int> PickFreeLoopbackPort();

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PORTS_H_
