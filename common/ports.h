// Free loopback ports, for services that cannot bind port 0 themselves (c10d's
// TCPStore master is given its port up front by whoever starts the trainers)
// and for servers that must come back on the address they had.
#ifndef SHARDGNN_COMMON_PORTS_H_
#define SHARDGNN_COMMON_PORTS_H_

#include <string>

#include "absl/status/statusor.h"

namespace shardgnn {

// A TCP port that was free on 127.0.0.1 a moment ago (bound and released),
// picked at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): no outgoing connection of any
// process is given such a port, so it stays free between the pick and the
// bind, and while a server on it is down and restarted. Only another caller
// picking the same way could take it. Falls back to a kernel-chosen port when
// the range leaves no room below it.
absl::StatusOr<int> PickFreeLoopbackPort();

// The host and port of "HOST:PORT" or "[V6]:PORT" (the brackets removed);
// false when `address` has no colon after a non-empty host.
bool SplitHostPort(const std::string& address, std::string* host,
                   std::string* port);

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_PORTS_H_
