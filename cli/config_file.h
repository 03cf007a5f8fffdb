// TOML files of flags, read and written with toml++: `--config FILE` (a table
// per subcommand, [train], [dataset.import], keys named as the flags,
// `epochs = 30`, `fanouts = [10, 5]`) and the config.toml a run directory
// keeps, which --config reads back.
//
// Reading is strict, as the cluster file's is (cluster_file.h): malformed
// TOML, a table that names no subcommand, a key that names no flag, or a
// value the flag refuses is one error naming the file, line and column.
#ifndef SHARDGNN_CLI_CONFIG_FILE_H_
#define SHARDGNN_CLI_CONFIG_FILE_H_

#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shardgnn::cli {

// CLI11's reader and writer of config files (`app.config_formatter(...)`),
// for TOML. Installed on the main command before its subcommands are added
// (CLI11 copies it into each). Not thread-safe: CLI11 parses on one thread.
//
// A value is text, as given on the command line: a string as it is, a number
// or boolean as written; a list (`fanouts = [10, 5]`) is several values for
// a flag taking several (--split-file), else its items joined by commas
// ("10,5"). A flag given on the command line keeps its value.
class TomlConfig : public CLI::Config {
 public:
  // `root`: the main command, whose --config option names the file in
  // errors; it outlives this.
  explicit TomlConfig(CLI::App* root) : root_(root) {}

  // The flags of `app` (options given, or with a default: defaults too with
  // `default_also`) as a TOML table at `app`'s place (a subcommand's
  // [train]), and those of the subcommands given, each in its own table.
  // `write_description` and `prefix` are not used.
  std::string to_config(const CLI::App* app, bool default_also,
                        bool write_description,
                        std::string prefix) const override;

  // Sets the flags the file names, itself, and returns no items for CLI11 to
  // set: CLI11 knows no line of an item, so a value a flag refuses would be
  // reported without one. Throws CLI::ConfigError "FILE:LINE:COLUMN: what".
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

 private:
  CLI::App* root_;
};

// A run directory's config.toml for subcommand `cmd` (train, run, launch):
// its table ([train]) of every flag given or with a default, as --config
// reads it back. Flags left unset (a default chosen later, from the model)
// are left out, so that reading the file back leaves them unset; `resolved`,
// what some of those resolved to for this run (flag name, value), follow as
// comment lines "# lr = 0.01", after a comment saying what they are.
std::string RunConfigToml(
    const CLI::App& cmd,
    const std::vector<std::pair<std::string, std::string>>& resolved);

// A config.toml read back (for the run report): the flags of its table as
// text (as TomlConfig passes them to the flags), by name, and the values
// unset flags resolved to, from the comment lines RunConfigToml writes.
struct RunConfig {
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::pair<std::string, std::string>> resolved;
};

// INVALID_ARGUMENT "PATH:LINE:COLUMN: what" when `text` is not TOML of one
// table of flags; `path` only names the file.
absl::StatusOr<RunConfig> ParseRunConfig(absl::string_view text,
                                         const std::string& path);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_CONFIG_FILE_H_
