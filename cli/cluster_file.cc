#include "cli/cluster_file.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "toml++/toml.h"

namespace shardgnn::cli {
namespace {

// "FILE:LINE:COLUMN" of a node or key.
std::string At(const std::string& path, const toml::source_region& source) {
  if (source.begin.line == 0) return path;
  return absl::StrCat(path, ":", source.begin.line, ":", source.begin.column);
}

absl::Status Error(const std::string& path, const toml::source_region& source,
                   absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(At(path, source), ": ", message));
}

// Checks that every key of `table` is one of `known`; `what` names the table.
absl::Status CheckKeys(const std::string& path, const toml::table& table,
                       const std::vector<std::string>& known,
                       absl::string_view what) {
  for (auto&& [key, node] : table) {
    bool found = false;
    for (const auto& k : known) found = found || key.str() == k;
    if (!found) {
      return Error(
          path, key.source(),
          absl::StrCat("unknown key '", std::string(key.str()), "' in ", what,
                       " (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// Reads the optional key `key` of `table` into *out; false (and *error set)
// when it has another type.
absl::Status GetString(const std::string& path, const toml::table& table,
                       const char* key, std::string* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  if (!node->is_string()) {
    return Error(path, node->source(),
                 absl::StrCat("'", key, "' must be a string"));
  }
  *out = node->as_string()->get();
  return absl::OkStatus();
}

absl::Status GetInt(const std::string& path, const toml::table& table,
                    const char* key, int min, int max, int* out) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return absl::OkStatus();
  if (!node->is_integer() || node->as_integer()->get() < min ||
      node->as_integer()->get() > max) {
    return Error(
        path, node->source(),
        absl::StrCat("'", key, "' must be an integer from ", min, " to ", max));
  }
  *out = static_cast<int>(node->as_integer()->get());
  return absl::OkStatus();
}

// A scalar (or an array of integers, joined by commas: fanouts = [10, 10])
// as a flag value.
absl::StatusOr<std::string> FlagText(const std::string& path,
                                     const toml::node& node,
                                     absl::string_view key) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* f = node.as_floating_point()) {
    // The shortest text that reads back as the same double (0.005, not
    // 0.0050000000000000001).
    char text[32];
    for (int precision = 6; precision <= 17; ++precision) {
      std::snprintf(text, sizeof(text), "%.*g", precision, f->get());
      if (std::strtod(text, nullptr) == f->get()) break;
    }
    return std::string(text);
  }
  if (const auto* a = node.as_array();
      a != nullptr && a->is_homogeneous(toml::node_type::integer)) {
    std::vector<int64_t> values;
    for (const auto& v : *a) values.push_back(v.as_integer()->get());
    return absl::StrJoin(values, ",");
  }
  return Error(path, node.source(),
               absl::StrCat("'", key,
                            "' must be a string, number, boolean or a list "
                            "of integers"));
}

absl::Status GetEnv(const std::string& path, const toml::table& table,
                    std::map<std::string, std::string>* env) {
  const toml::node* node = table.get("env");
  if (node == nullptr) return absl::OkStatus();
  if (!node->is_table()) {
    return Error(path, node->source(),
                 "'env' must be a table of NAME = \"value\"");
  }
  for (auto&& [key, value] : *node->as_table()) {
    const std::string name(key.str());
    bool valid = !name.empty() && !absl::ascii_isdigit(name[0]);
    for (char c : name) valid = valid && (absl::ascii_isalnum(c) || c == '_');
    if (!valid) {
      return Error(path, key.source(),
                   absl::StrCat("'", name, "' is not a variable name"));
    }
    ASSIGN_OR_RETURN((*env)[name], FlagText(path, value, name));
  }
  return absl::OkStatus();
}

// A local path from the file, relative to the file's directory unless
// absolute or starting with ~ (which ssh expands).
std::string LocalPath(const std::string& file, const std::string& value) {
  if (value.empty() || value[0] == '/' || value[0] == '~') return value;
  const std::string dir = std::filesystem::path(file).parent_path().string();
  return dir.empty() ? value : JoinPath(dir, value);
}

absl::StatusOr<ClusterHost> ParseHost(const std::string& path,
                                      const toml::table& table, int index,
                                      const ClusterHost& defaults) {
  RETURN_IF_ERROR(
      CheckKeys(path, table,
                {"name", "ssh", "address", "port", "user", "identity", "parts",
                 "trainers", "work_dir", "binary", "env"},
                absl::StrCat("[[host]] ", index + 1)));
  ClusterHost host = defaults;
  host.where = absl::StrCat(path, ":", table.source().begin.line);
  const std::string which =
      absl::StrCat("[[host]] ", index + 1, " (", host.where, ")");
  RETURN_IF_ERROR(GetString(path, table, "ssh", &host.ssh));
  if (host.ssh.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(which, " has no 'ssh' (its ssh destination)"));
  }
  host.name = host.ssh;
  RETURN_IF_ERROR(GetString(path, table, "name", &host.name));
  RETURN_IF_ERROR(GetString(path, table, "address", &host.address));
  if (host.address.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(which,
                     " has no 'address' (where its servers listen and its "
                     "trainers are reached)"));
  }
  RETURN_IF_ERROR(GetInt(path, table, "port", 1, 65535, &host.ssh_port));
  RETURN_IF_ERROR(GetString(path, table, "user", &host.user));
  RETURN_IF_ERROR(GetString(path, table, "identity", &host.identity));
  host.identity = LocalPath(path, host.identity);
  RETURN_IF_ERROR(GetInt(path, table, "trainers", 0, 1024, &host.trainers));
  RETURN_IF_ERROR(GetString(path, table, "work_dir", &host.work_dir));
  RETURN_IF_ERROR(GetString(path, table, "binary", &host.binary));
  RETURN_IF_ERROR(GetEnv(path, table, &host.env));
  if (const toml::node* parts = table.get("parts")) {
    const toml::array* list = parts->as_array();
    if (list == nullptr ||
        (!list->empty() && !list->is_homogeneous(toml::node_type::integer))) {
      return Error(path, parts->source(),
                   "'parts' must be a list of part numbers (parts = [0, 1])");
    }
    for (const auto& p : *list) {
      const int64_t part = p.as_integer()->get();
      if (part < 0 || part > 1000000) {
        return Error(path, p.source(),
                     absl::StrCat("part ", part, " is out of range"));
      }
      for (int seen : host.parts) {
        if (seen == part) {
          return Error(path, p.source(),
                       absl::StrCat("part ", part, " is listed twice"));
        }
      }
      host.parts.push_back(static_cast<int>(part));
    }
  }
  return host;
}

}  // namespace

int ClusterSpec::TotalTrainers() const {
  int n = 0;
  for (const auto& h : hosts) n += h.trainers;
  return n;
}

absl::StatusOr<ClusterSpec> ParseClusterFile(absl::string_view text,
                                             const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(std::string_view(text.data(), text.size()), path);
  } catch (const toml::parse_error& e) {
    return Error(path, e.source(), std::string(e.description()));
  }
  RETURN_IF_ERROR(CheckKeys(
      path, root,
      {"work_dir", "binary", "ssh_config", "ssh_options", "connect_timeout",
       "alive_interval", "master_port", "env", "train", "host"},
      "the cluster file"));
  ClusterSpec spec;
  spec.path = path;
  ClusterHost defaults;
  defaults.work_dir = "shardgnn-launch";
  defaults.binary = "shardgnn";
  RETURN_IF_ERROR(GetString(path, root, "work_dir", &defaults.work_dir));
  RETURN_IF_ERROR(GetString(path, root, "binary", &defaults.binary));
  RETURN_IF_ERROR(GetEnv(path, root, &defaults.env));
  RETURN_IF_ERROR(GetString(path, root, "ssh_config", &spec.ssh_config));
  spec.ssh_config = LocalPath(path, spec.ssh_config);
  if (const toml::node* options = root.get("ssh_options")) {
    const toml::array* list = options->as_array();
    if (list == nullptr ||
        (!list->empty() && !list->is_homogeneous(toml::node_type::string))) {
      return Error(path, options->source(),
                   "'ssh_options' must be a list of \"Option=value\" strings");
    }
    for (const auto& o : *list) {
      spec.ssh_options.push_back(o.as_string()->get());
    }
  }
  RETURN_IF_ERROR(GetInt(path, root, "connect_timeout", 1, 3600,
                         &spec.connect_timeout_seconds));
  RETURN_IF_ERROR(GetInt(path, root, "alive_interval", 1, 3600,
                         &spec.alive_interval_seconds));
  RETURN_IF_ERROR(
      GetInt(path, root, "master_port", 1, 65535, &spec.master_port));
  if (const toml::node* train = root.get("train")) {
    if (!train->is_table()) {
      return Error(path, train->source(),
                   "'train' must be a table of training flags ([train])");
    }
    spec.train_where = absl::StrCat(path, ":", train->source().begin.line);
    for (auto&& [key, value] : *train->as_table()) {
      ASSIGN_OR_RETURN(std::string v,
                       FlagText(path, value, std::string(key.str())));
      spec.train_flags.emplace_back(std::string(key.str()), std::move(v));
    }
  }
  const toml::node* hosts = root.get("host");
  if (hosts == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no [[host]] entries: name at least one host"));
  }
  const toml::array* list = hosts->as_array();
  if (list == nullptr || !list->is_array_of_tables()) {
    return Error(path, hosts->source(),
                 "'host' must be a list of tables ([[host]] sections)");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(ClusterHost host,
                     ParseHost(path, *list->get(i)->as_table(),
                               static_cast<int>(i), defaults));
    if (!names.insert(host.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(host.where, ": two hosts are named '", host.name,
                       "' (give each a distinct 'name')"));
    }
    spec.hosts.push_back(std::move(host));
  }
  if (spec.TotalTrainers() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no host runs trainers (give some host 'trainers = N')"));
  }
  return spec;
}

absl::StatusOr<ClusterSpec> ReadClusterFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseClusterFile(text, path);
}

absl::Status CheckPartsServed(const ClusterSpec& spec, int num_parts) {
  std::vector<bool> served(static_cast<size_t>(num_parts), false);
  for (const auto& host : spec.hosts) {
    for (int p : host.parts) {
      if (p >= num_parts) {
        return absl::InvalidArgumentError(
            absl::StrCat(host.where, ": host '", host.name, "' lists part ", p,
                         ", but the partition has ", num_parts, " parts (0 to ",
                         num_parts - 1, ")"));
      }
      served[static_cast<size_t>(p)] = true;
    }
  }
  std::vector<int> missing;
  for (int p = 0; p < num_parts; ++p) {
    if (!served[static_cast<size_t>(p)]) missing.push_back(p);
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.path, ": no host serves part", missing.size() > 1 ? "s " : " ",
        absl::StrJoin(missing, ", "), " of the partition's ", num_parts,
        " (list ", missing.size() > 1 ? "them" : "it",
        " in some host's 'parts')"));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::cli
