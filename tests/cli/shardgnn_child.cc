#include "tests/cli/shardgnn_child.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::testing {

std::unique_ptr<Subprocess> StartShardgnn(
    std::vector<std::string> args, const std::string& name,
    const std::vector<std::string>& prefix) {
  SubprocessOptions options;
  options.name = name;
  options.argv = prefix;
  options.argv.push_back(ShardgnnBinary());
  for (auto& a : args) options.argv.push_back(std::move(a));
  options.max_kept_lines = 100000;
  auto started = Subprocess::Start(std::move(options));
  EXPECT_TRUE(started.ok()) << started.status();
  return started.ok() ? std::move(started).value() : nullptr;
}

Finished RunShardgnn(std::vector<std::string> args,
                     const std::vector<std::string>& prefix) {
  auto child = StartShardgnn(std::move(args), "shardgnn", prefix);
  if (child == nullptr) return {};
  std::optional<int> status = child->Wait(kRunTimeout);
  Finished result;
  result.exit_status =
      status.value_or(child->Terminate(std::chrono::milliseconds(1000)));
  result.output = child->Tail(100000);
  return result;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

std::string LastErrorLine(const std::string& output) {
  std::string error;
  for (const auto& line : Lines(output)) {
    if (line.rfind("shardgnn: error:", 0) == 0) error = line;
  }
  return error;
}

double ReportedTestAccuracy(const std::string& output) {
  size_t at = output.rfind("test accuracy ");
  double value = -1;
  if (at == std::string::npos) return value;
  std::string rest = output.substr(at + 14);
  (void)absl::SimpleAtod(rest.substr(0, rest.find(' ')), &value);
  return value;
}

std::string ReadyAddress(const std::string& line) {
  std::string rest = line.substr(line.find("ready on ") + 9);
  return rest.substr(0, rest.find(' '));
}

}  // namespace shardgnn::testing
