// The real `shardgnn` binary as a child process, for the CLI tests.
#ifndef SHARDGNN_TESTS_CLI_SHARDGNN_CHILD_H_
#define SHARDGNN_TESTS_CLI_SHARDGNN_CHILD_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/subprocess.h"

namespace shardgnn::testing {

inline constexpr std::chrono::milliseconds kRunTimeout =
    std::chrono::seconds(120);

// `prefix... shardgnn <args>` as a child process (prefix: e.g. "ip netns exec
// NS"; argv[0] must be a path). nullptr (and a test failure) if it cannot
// start.
std::unique_ptr<Subprocess> StartShardgnn(
    std::vector<std::string> args, const std::string& name,
    const std::vector<std::string>& prefix = {});

struct Finished {
  int exit_status = -1;
  std::string output;  // stdout and stderr, interleaved.
};

// Runs `prefix... shardgnn <args>` to completion (killed after kRunTimeout).
Finished RunShardgnn(std::vector<std::string> args,
                     const std::vector<std::string>& prefix = {});

std::vector<std::string> Lines(const std::string& text);

// The last line of `output` that starts "shardgnn: error:", or "".
std::string LastErrorLine(const std::string& output);

// The value after "test accuracy " in the output, or -1.
double ReportedTestAccuracy(const std::string& output);

// The "HOST:PORT" after "ready on " in `line`.
std::string ReadyAddress(const std::string& line);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_CLI_SHARDGNN_CHILD_H_
