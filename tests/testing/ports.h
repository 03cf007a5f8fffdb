// Free loopback ports for services that cannot bind port 0 themselves (c10d's TCPStore master).
#ifndef SHARDGNN_TESTS_TESTING_PORTS_H_
#define SHARDGNN_TESTS_TESTING_PORTS_H_

namespace shardgnn::testing {

// A port that was free on 127.0.0.1 a moment ago (bound to port 0 and released). Another process could take it
// in between; callers that can bind port 0 directly should do that instead.
int PickFreePort();

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_PORTS_H_
