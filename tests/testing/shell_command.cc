#include "tests/testing/shell_command.h"

#include <sys/wait.h>

#include <cstdlib>

#include "common/file_util.h"

namespace shardgnn::testing {

CommandResult RunShellCommand(const TempDir& tmp, const std::string& command) {
  const std::string redirected =
      command + " >" + tmp.Sub("stdout.txt") + " 2>" + tmp.Sub("stderr.txt");
  const int status = std::system(redirected.c_str());
  CommandResult run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFileToString(tmp.Sub("stdout.txt")).value_or("");
  run.err = ReadFileToString(tmp.Sub("stderr.txt")).value_or("");
  return run;
}

}  // namespace shardgnn::testing
