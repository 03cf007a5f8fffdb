#include "cli/config_file.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <locale>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/suggestions.h"
#include "toml++/toml.h"

namespace shardgnn::cli {
namespace {

// The comment RunConfigToml puts before the values unset flags resolved to;
// ParseRunConfig reads the comment lines after it.
constexpr absl::string_view kResolvedComment =
    "# Left unset above (--config leaves them to the model's defaults); this "
    "run's:";

// What toml++ writes: plain "double quoted" strings with escapes, so that a
// value is always one line (a newline in it is "\n"), no indentation, and
// floats with 6 significant digits (0.005, not 0.0050000000000000001: Debian's
// toml++ writes 17 otherwise); AddValue writes a float only when those hold
// it exactly.
constexpr toml::format_flags kFormat =
    toml::format_flags::relaxed_float_precision;

// "FILE:LINE:COLUMN" of a node or key.
std::string At(const std::string& file, const toml::source_region& source) {
  if (source.begin.line == 0) return file;
  return absl::StrCat(file, ":", source.begin.line, ":", source.begin.column);
}

// The table of `app`'s flags, ["dataset", "import"]; [] for the main command.
std::vector<std::string> TablePath(const CLI::App& app) {
  std::vector<std::string> path;
  for (const CLI::App* a = &app; a->get_parent() != nullptr;
       a = a->get_parent()) {
    path.insert(path.begin(), a->get_name());
  }
  return path;
}

// "[dataset.import]" (`path` and then `name`, if given).
std::string TableName(std::vector<std::string> path,
                      const std::string& name = "") {
  if (!name.empty()) path.push_back(name);
  return absl::StrCat("[", absl::StrJoin(path, "."), "]");
}

// Where `app`'s flags are: "in [train]", or "at the top level".
std::string Where(const CLI::App& app) {
  const std::vector<std::string> path = TablePath(app);
  return path.empty() ? "at the top level"
                      : absl::StrCat("in ", TableName(path));
}

// `value` with 6 significant digits, as a stream writes it, and toml++ with
// relaxed_float_precision (kFormat).
std::string SixDigitText(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << value;
  return out.str();
}

// A float's text: SixDigitText when it holds the value exactly ("0.0005"),
// else the shortest text that does ("0.30000000000000004"; "0.005", not
// 0.0050000000000000001).
std::string FloatText(double value) {
  const std::string six = SixDigitText(value);
  double back;
  const char* end = six.data() + six.size();
  if (std::isnan(value) ||
      (std::from_chars(six.data(), end, back).ptr == end && back == value)) {
    return six;
  }
  char text[64];
  const std::to_chars_result shortest =
      std::to_chars(text, text + sizeof(text), value);
  return std::string(text, shortest.ptr);
}

// A scalar's text as a flag value (as it would be typed); nullopt for a
// table, an array, a date or a time.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) {
    return std::string(b->get() ? "true" : "false");
  }
  if (const auto* f = node.as_floating_point()) return FloatText(f->get());
  return std::nullopt;
}

// A value as flag values: a scalar's text, or a list's items' texts.
std::optional<std::vector<std::string>> ValueTexts(const toml::node& node) {
  if (std::optional<std::string> text = ScalarText(node)) {
    return std::vector<std::string>{*text};
  }
  const toml::array* list = node.as_array();
  if (list == nullptr) return std::nullopt;
  std::vector<std::string> texts;
  for (const toml::node& item : *list) {
    std::optional<std::string> text = ScalarText(item);
    if (!text) return std::nullopt;
    texts.push_back(*text);
  }
  return texts;
}

// Calls `add` with `text` as the TOML value that reads back as the same text:
// an integer when `text` is its spelling of one ("2"), a float when it is
// its exact spelling with 6 significant digits, as toml++ writes it
// ("0.0005"), a boolean for "true" and "false", else a string (so "007",
// "1e-3" and "0.30000000000000004" stay strings, and come back as typed).
template <typename Add>
void AddValue(const std::string& text, Add add) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  int64_t integer;
  if (std::from_chars(begin, end, integer).ptr == end && !text.empty() &&
      std::to_string(integer) == text) {
    add(integer);
    return;
  }
  double real;
  if (std::from_chars(begin, end, real).ptr == end && !text.empty() &&
      !std::isnan(real) && SixDigitText(real) == text &&
      FloatText(real) == text) {
    add(real);
    return;
  }
  if (text == "true" || text == "false") {
    add(text == "true");
    return;
  }
  add(text);
}

// Whether `option` takes several values (--split-file A --split-file B).
bool TakesSeveral(const CLI::Option& option) {
  return option.get_items_expected_max() > 1;
}

// Adds `option`'s values to `table`, if it has any: given, or with
// `default_also` its default ("false" for a flag). An option that is neither
// is left out, as are those not read from config files (--help, --config).
void AddOption(const CLI::Option& option, bool default_also,
               toml::table* table) {
  if (!option.get_configurable()) return;
  std::vector<std::string> values = option.reduced_results();
  if (values.empty() && default_also) {
    if (!option.get_default_str().empty()) {
      values = {option.get_default_str()};
    } else if (option.get_expected_min() == 0) {
      values = {"false"};
    }
  }
  if (values.empty()) return;
  const std::string& key = option.get_single_name();
  if (values.size() == 1 && !TakesSeveral(option)) {
    AddValue(values[0],
             [&](auto value) { table->insert_or_assign(key, value); });
    return;
  }
  toml::array list;
  for (const std::string& v : values) {
    AddValue(v, [&](auto value) { list.push_back(value); });
  }
  table->insert_or_assign(key, std::move(list));
}

// The table of `app` in `root`, made with its parents' as needed.
toml::table* TableOf(const CLI::App& app, toml::table* root) {
  if (app.get_parent() == nullptr) return root;
  toml::table* parent = TableOf(*app.get_parent(), root);
  return parent->emplace<toml::table>(app.get_name()).first->second.as_table();
}

void AddApp(const CLI::App& app, bool default_also, toml::table* root) {
  toml::table* table = TableOf(app, root);
  for (const CLI::Option* option : app.get_options()) {
    AddOption(*option, default_also, table);
  }
  for (const CLI::App* sub : app.get_subcommands()) {
    AddApp(*sub, default_also, root);
  }
}

std::string Format(const toml::table& table) {
  std::ostringstream out;
  out << toml::toml_formatter(table, kFormat) << "\n";
  return out.str();
}

// The subcommand of `app` named `name`, or null.
CLI::App* FindSubcommand(CLI::App* app, const std::string& name) {
  std::vector<CLI::App*> found = app->get_subcommands([&](CLI::App* sub) {
    return !sub->get_name().empty() && sub->check_name(name);
  });
  return found.empty() ? nullptr : found.front();
}

// The option of `app` a key names, as CLI11 looks one up: "--name", "-n",
// or a positional argument's name.
CLI::Option* FindOption(CLI::App* app, const std::string& name) {
  CLI::Option* option = app->get_option_no_throw("--" + name);
  if (option == nullptr && name.size() == 1)
    option = app->get_option_no_throw("-" + name);
  if (option == nullptr) option = app->get_option_no_throw(name);
  return option;
}

// The keys of `app`'s table that name flags.
std::vector<std::string> FlagKeys(const CLI::App& app) {
  std::vector<std::string> keys;
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_configurable()) keys.push_back(option->get_single_name());
  }
  return keys;
}

// The tables within `app`'s: its subcommands'.
std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  return names;
}

// Sets flags from a --config file's tables; `file` names it in errors.
class FlagSetter {
 public:
  explicit FlagSetter(std::string file) : file_(std::move(file)) {}

  // Sets the flags of `app` that `table` holds, and its subcommands'.
  void Set(const toml::table& table, CLI::App* app) const {
    for (auto&& [key, node] : table) {
      const std::string name(key.str());
      CLI::App* sub = FindSubcommand(app, name);
      if (sub != nullptr) {
        if (!node.is_table()) {
          Fail(key.source(),
               absl::StrCat("'", name, "' is a subcommand: its flags go in a ",
                            "table, ", TableName(TablePath(*sub))));
        }
        Set(*node.as_table(), sub);
        continue;
      }
      CLI::Option* option = FindOption(app, name);
      if (option == nullptr || !option->get_configurable()) {
        Fail(key.source(), UnknownKey(*app, name, node.is_table()));
      }
      std::optional<std::vector<std::string>> values = ValueTexts(node);
      if (!values) {
        Fail(node.source(),
             absl::StrCat(name, " ", Where(*app),
                          " must be a string, a number, a boolean or a list "
                          "of them"));
      }
      if (option->get_expected_min() == 0 && values->size() != 1) {
        Fail(node.source(),
             absl::StrCat(name, " ", Where(*app), " is a flag: true or false"));
      }
      if (!option->empty()) continue;  // Given on the command line: it wins.
      if (values->size() > 1 && !TakesSeveral(*option)) {
        values = std::vector<std::string>{absl::StrJoin(*values, ",")};
      }
      Apply(node, name, *values, app, option);
    }
  }

 private:
  [[noreturn]] void Fail(const toml::source_region& source,
                         absl::string_view what) const {
    throw CLI::ConfigError(absl::StrCat(At(file_, source), ": ", what));
  }

  static std::string UnknownKey(const CLI::App& app, const std::string& name,
                                bool is_table) {
    const std::string nearest =
        NearestName(name, is_table ? SubcommandNames(app) : FlagKeys(app));
    if (is_table) {
      const std::vector<std::string> path = TablePath(app);
      std::string what = absl::StrCat("unknown table ", TableName(path, name),
                                      ": no such subcommand");
      if (!nearest.empty()) {
        absl::StrAppend(&what, "; did you mean ", TableName(path, nearest),
                        "?");
      }
      return what;
    }
    std::string what =
        absl::StrCat("unknown key '", name, "' ", Where(app), ": no such flag");
    if (!nearest.empty()) {
      absl::StrAppend(&what, "; did you mean '", nearest, "'?");
    }
    return what;
  }

  // Gives `values` to `option` as CLI11 gives a config file's (a flag its
  // one value through get_flag_value), and runs its callback, so that a
  // value it refuses is reported here, at its line.
  void Apply(const toml::node& node, const std::string& name,
             const std::vector<std::string>& values, CLI::App* app,
             CLI::Option* option) const {
    std::string refused;
    try {
      if (option->get_expected_min() == 0) {
        option->add_result(option->get_flag_value(name, values.front()));
      } else {
        option->add_result(values);
      }
      option->run_callback();
    } catch (const CLI::Error& e) {
      refused = e.what();
    }
    if (!refused.empty()) {
      Fail(node.source(), absl::StrCat(name, " ", Where(*app), ": ", refused));
    }
  }

  std::string file_;
};

}  // namespace

std::string TomlConfig::to_config(const CLI::App* app, bool default_also,
                                  bool /*write_description*/,
                                  std::string /*prefix*/) const {
  toml::table root;
  AddApp(*app, default_also, &root);
  return Format(root);
}

std::vector<CLI::ConfigItem> TomlConfig::from_config(
    std::istream& input) const {
  // CLI11 opened the file --config names; the stream knows no name.
  const CLI::Option* config = root_->get_config_ptr();
  const std::string file = config != nullptr && !config->empty()
                               ? config->results().back()
                               : std::string("--config");
  FlagSetter setter(file);
  toml::table table;
  try {
    table = toml::parse(input, file);
  } catch (const toml::parse_error& e) {
    throw CLI::ConfigError(
        absl::StrCat(At(file, e.source()), ": ", std::string(e.description())));
  }
  setter.Set(table, root_);
  return {};
}

std::string RunConfigToml(
    const CLI::App& cmd,
    const std::vector<std::pair<std::string, std::string>>& resolved) {
  toml::table root;
  AddApp(cmd, /*default_also=*/true, &root);
  toml::table* flags = TableOf(cmd, &root);
  toml::table unset;
  for (const auto& [key, text] : resolved) {
    if (flags->contains(key)) continue;
    AddValue(text, [&](auto value) { unset.insert_or_assign(key, value); });
  }
  std::string out =
      absl::StrCat("# shardgnn ", cmd.get_name(),
                   ", every flag as it was resolved\n", Format(root));
  if (unset.empty()) return out;
  absl::StrAppend(&out, "\n", kResolvedComment, "\n");
  for (absl::string_view line :
       absl::StrSplit(Format(unset), '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, "# ", line, "\n");
  }
  return out;
}

absl::StatusOr<RunConfig> ParseRunConfig(absl::string_view text,
                                         const std::string& path) {
  // The comment lines after kResolvedComment, uncommented ("# " as two
  // spaces), the other lines blank: toml++'s lines and columns are the
  // file's.
  std::string resolved_text;
  bool resolved_lines = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (resolved_lines && absl::ConsumePrefix(&line, "# ")) {
      absl::StrAppend(&resolved_text, "  ", line);
    }
    resolved_lines = resolved_lines || line == kResolvedComment;
    resolved_text += '\n';
  }
  RunConfig config;
  toml::table root, resolved;
  try {
    root = toml::parse(std::string_view(text.data(), text.size()), path);
    resolved = toml::parse(resolved_text, path);
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(At(path, e.source()), ": ", std::string(e.description())));
  }
  if (root.size() != 1 || !root.begin()->second.is_table()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not one table of flags ([train], [run] or [launch])"));
  }
  for (const auto& [from, to] :
       {std::pair{root.begin()->second.as_table(), &config.flags},
        std::pair{&resolved, &config.resolved}}) {
    for (auto&& [key, node] : *from) {
      std::optional<std::vector<std::string>> values = ValueTexts(node);
      if (!values) {
        return absl::InvalidArgumentError(absl::StrCat(
            At(path, node.source()), ": ", std::string(key.str()),
            " must be a string, a number, a boolean or a list of them"));
      }
      to->emplace_back(std::string(key.str()), absl::StrJoin(*values, ","));
    }
  }
  return config;
}

}  // namespace shardgnn::cli
