#include "cli/suggestions.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"

namespace shardgnn::cli {
namespace {

// Edits from `a` to `b`: insertions, deletions, replacements and swaps of two
// adjacent characters ("trian" is one swap from "train"), each counting one
// (the optimal string alignment distance).
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t replace = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// "shardgnn dataset import": how `cmd` is typed, for hints.
std::string CommandLine(const CLI::App& cmd) {
  std::string line = cmd.get_name();
  for (const CLI::App* p = cmd.get_parent(); p != nullptr; p = p->get_parent())
    line = absl::StrCat(p->get_name(), " ", line);
  return line;
}

// The flags `cmd` takes, "--epochs" and "-q", its parents' too (their flags
// may follow a subcommand: main.cc's fallthrough).
std::vector<std::string> FlagNames(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::App* app = &cmd; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options()) {
      for (const std::string& name : option->get_lnames())
        names.push_back("--" + name);
      for (const std::string& name : option->get_snames())
        names.push_back("-" + name);
    }
  }
  return names;
}

std::string UnknownFlag(const CLI::App& cmd, absl::string_view argument) {
  const absl::string_view flag = argument.substr(0, argument.find('='));
  // Compared without their dashes: "-epochs" is a typo of "--epochs" too.
  std::vector<std::string> names = FlagNames(cmd);
  std::vector<std::string> bare;
  for (const std::string& name : names)
    bare.push_back(name.substr(name.find_first_not_of('-')));
  const size_t dashes = std::min(flag.find_first_not_of('-'), flag.size());
  const std::string nearest = NearestName(flag.substr(dashes), bare);
  if (nearest.empty()) {
    return absl::StrCat("unknown flag ", flag, " (", CommandLine(cmd),
                        " --help lists the flags)");
  }
  const auto it = std::find(bare.begin(), bare.end(), nearest);
  return absl::StrCat("unknown flag ", flag, "; did you mean ",
                      names[static_cast<size_t>(it - bare.begin())], "?");
}

std::string UnknownSubcommand(const CLI::App& cmd, absl::string_view word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : cmd.get_subcommands({}))
    names.push_back(sub->get_name());
  const std::string nearest = NearestName(word, names);
  if (nearest.empty()) {
    return absl::StrCat("unknown subcommand '", word, "' (", CommandLine(cmd),
                        " --help lists the subcommands)");
  }
  return absl::StrCat("unknown subcommand '", word, "'; did you mean '",
                      nearest, "'?");
}

}  // namespace

std::string NearestName(absl::string_view word,
                        const std::vector<std::string>& names) {
  const size_t most =
      word.size() < 3 ? 0 : std::min<size_t>(3, word.size() / 3);
  std::string nearest;
  size_t best = most + 1;
  for (const std::string& name : names) {
    const size_t distance = EditDistance(word, name);
    if (distance < best) {
      best = distance;
      nearest = name;
    }
  }
  return nearest;
}

std::string UnknownArgumentMessage(const CLI::App& app) {
  // The subcommand given last (`dataset import`), or the main command.
  const CLI::App* cmd = &app;
  while (!cmd->get_subcommands().empty()) cmd = cmd->get_subcommands().front();
  const bool wants_subcommand = cmd->get_require_subcommand_min() > 0 &&
                                !cmd->get_subcommands({}).empty();
  for (const std::string& argument : app.remaining(/*recurse=*/true)) {
    if (argument.size() > 1 && argument[0] == '-' && argument != "--")
      return UnknownFlag(*cmd, argument);
    if (wants_subcommand) return UnknownSubcommand(*cmd, argument);
  }
  return "";
}

}  // namespace shardgnn::cli
