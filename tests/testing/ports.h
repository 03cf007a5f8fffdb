// Free loopback ports for services that cannot bind port 0 themselves (c10d's
// TCPStore master).
#ifndef SHARDGNN_TESTS_TESTING_PORTS_H_
#define SHARDGNN_TESTS_TESTING_PORTS_H_

namespace shardgnn::testing {

// common/ports.h's PickFreeLoopbackPort for tests: throws if no port can be
// had, so fixtures stay one line.
int PickFreePort();

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_PORTS_H_
