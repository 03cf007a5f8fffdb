// A command line run through /bin/sh, its output kept apart by stream: for
// tests that run the built binary (ShardgnnBinary()) as a user would.
#ifndef SHARDGNN_TESTS_TESTING_SHELL_COMMAND_H_
#define SHARDGNN_TESTS_TESTING_SHELL_COMMAND_H_

#include <string>

#include "tests/testing/temp_dir.h"

namespace shardgnn::testing {

struct CommandResult {
  int exit_code = -1;  // -1 if the shell did not exit normally.
  std::string out;
  std::string err;
};

// Runs `command` with /bin/sh, its stdout and stderr in files of `tmp`
// (stdout.txt, stderr.txt: overwritten by the next command).
CommandResult RunShellCommand(const TempDir& tmp, const std::string& command);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_SHELL_COMMAND_H_
