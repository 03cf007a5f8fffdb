#include "cli/run_work_dir.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/auth.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/status.h"
#include "datasets/dataset.h"
#include "datasets/edge_split.h"
#include "datasets/importers.h"
#include "partition/partition.h"
#include "partition/partition_book.h"

namespace shardgnn::cli {
namespace {

namespace fs = std::filesystem;

// The last component of `path`, trailing slashes ignored.
std::string FolderName(const std::string& path) {
  fs::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// XXH64 over the import options and every file under the input's raw/ and
// split/ (relative path, size, bytes), in path order.
absl::StatusOr<std::string> OgbInputChecksum(const RunDataOptions& options) {
  const std::string& input = options.input;
  const std::string& split_name = options.split_name;
  std::vector<std::string> files;
  for (const char* sub : {"raw", "split"}) {
    std::error_code ec;
    const fs::path root = fs::path(input) / sub;
    if (!fs::is_directory(root, ec)) continue;  // The import says what lacks.
    for (auto it = fs::recursive_directory_iterator(root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec)) {
        files.push_back(fs::relative(it->path(), input, ec).string());
      }
    }
    if (ec) {
      return absl::PermissionDeniedError(
          absl::StrCat(root.string(), ": cannot list: ", ec.message()));
    }
  }
  std::sort(files.begin(), files.end());
  Checksum sum;
  sum.Update(absl::StrCat("shardgnn-run-import/1 ogb undirected split ",
                          split_name.size(), ":", split_name, "\n"));
  // (Only when there is one: imports without keep their checksums.)
  if (!options.edge_split.empty()) {
    sum.Update(absl::StrCat("edge split ", options.edge_split, " seed ",
                            options.seed, "\n"));
  }
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(std::string hex, ChecksumFile(JoinPath(input, file)));
    sum.Update(absl::StrCat(file.size(), ":", file, " ", hex, "\n"));
  }
  return sum.Hex();
}

bool IsChecksum(absl::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
           return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

// Entries of `dir` named `stem` (made before directories were keyed by
// content) or `stem`-<checksum>, other than `except`: one phrase each for
// the line that says why they were not used.
std::vector<std::string> OthersNamed(const std::string& dir,
                                     const std::string& stem,
                                     const std::string& except,
                                     const std::string& what) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string path = entry.path().string();
    if (name == stem) {
      found.push_back(absl::StrCat(path,
                                   " (made before the work dir was keyed by "
                                   "content) is left as is"));
    } else if (path != except && absl::StartsWith(name, stem + "-") &&
               IsChecksum(absl::string_view(name).substr(stem.size() + 1))) {
      found.push_back(absl::StrCat(path, " holds ", what, ", left as is"));
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string Because(const std::vector<std::string>& others) {
  return others.empty() ? ""
                        : absl::StrCat(" (", absl::StrJoin(others, "; "), ")");
}

// The dataset to partition: `input` itself if it is one, else its import
// in the work dir (made now unless made before from the same content).
absl::StatusOr<std::string> PrepareDataset(const RunDataOptions& options) {
  if (IsDatasetDir(options.input)) return options.input;
  const std::string name =
      options.name.empty() ? FolderName(options.input) : options.name;
  if (name.empty() || name.find('/') != std::string::npos || name == "." ||
      name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset name '", name,
                     "' is not a plain name; choose one with --name"));
  }
  ASSIGN_OR_RETURN(std::string key, OgbInputChecksum(options));
  const std::string datasets = JoinPath(options.work_dir, "datasets");
  const std::string dir = JoinPath(datasets, absl::StrCat(name, "-", key));
  if (IsDatasetDir(dir)) {
    ASSIGN_OR_RETURN(DatasetManifest manifest, ReadDatasetManifest(dir));
    const bool split = !options.edge_split.empty();
    if (manifest.name != name || manifest.directed ||
        manifest.edge_splits.empty() == split) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, " should hold the undirected import '", name, "' of ",
          options.input, split ? " with" : " without",
          " an edge split but its manifest says '", manifest.name, "', ",
          manifest.directed ? "directed" : "undirected",
          manifest.edge_splits.empty() ? ", without" : ", with",
          " an edge split; remove it or choose another --work-dir"));
    }
    std::printf(
        "shardgnn run: reusing dataset %s (imported before from input of the "
        "same content, checksum %s)\n",
        dir.c_str(), key.c_str());
    std::fflush(stdout);
    return dir;
  }
  std::printf(
      "shardgnn run: importing %s into %s%s%s\n", options.input.c_str(),
      dir.c_str(),
      options.edge_split.empty()
          ? ""
          : absl::StrCat(", splitting its edges for --task link (",
                         options.edge_split, ", seed ", options.seed, ")")
                .c_str(),
      Because(OthersNamed(datasets, name, dir,
                          absl::StrCat("another input named '", name,
                                       "' or another import of it")))
          .c_str());
  std::fflush(stdout);
  OgbImportOptions import;
  import.input_dir = options.input;
  import.split = options.split_name;
  import.edges.undirected = true;
  import.name = name;
  BuildSummary summary;
  if (options.edge_split.empty()) {
    ASSIGN_OR_RETURN(summary, ImportOgb(import, dir));
  } else {
    ASSIGN_OR_RETURN(EdgeSplitOptions split,
                     ParseEdgeSplit(options.edge_split));
    split.seed = options.seed;
    EdgeSplitSummary made;
    ASSIGN_OR_RETURN(summary, BuildWithEdgeSplit(
                                  split, dir,
                                  [&import](const std::string& out) {
                                    return ImportOgb(import, out);
                                  },
                                  &made));
    std::printf("shardgnn run: %s\n",
                DescribeEdgeSplit(made, options.seed).c_str());
  }
  for (const std::string& warning : summary.warnings) {
    std::printf("shardgnn run: warning: %s\n", warning.c_str());
  }
  return dir;
}

// Whether partition.json agrees with the dataset and options it is named
// after; the first difference if not.
std::string Mismatch(const PartitionManifest& p, const DatasetManifest& d,
                     const RunDataOptions& options) {
  if (p.dataset_name != d.name)
    return absl::StrCat("dataset '", p.dataset_name, "'");
  if (p.num_nodes != d.num_nodes || p.num_edges != d.num_edges)
    return absl::StrCat(p.num_nodes, " nodes and ", p.num_edges, " edges");
  if (p.feature_dim != d.feature_dim || p.num_classes != d.num_classes)
    return absl::StrCat(p.feature_dim, " features and ", p.num_classes,
                        " classes");
  if (p.splits != d.splits) return "other splits";
  if (p.num_parts != options.num_parts)
    return absl::StrCat(p.num_parts, " parts");
  if (p.requested_method != options.method)
    return absl::StrCat("method ", p.requested_method);
  if (p.seed != options.seed) return absl::StrCat("seed ", p.seed);
  return "";
}

}  // namespace

bool IsDatasetDir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(JoinPath(dir, kDatasetManifestFile), ec);
}

absl::StatusOr<std::string> PreparePartition(const RunDataOptions& options) {
  ASSIGN_OR_RETURN(PartitionMethod method,
                   ParsePartitionMethod(options.method));
  std::error_code ec;
  const std::string partitions = JoinPath(options.work_dir, "partitions");
  fs::create_directories(JoinPath(options.work_dir, "datasets"), ec);
  if (!ec) fs::create_directories(partitions, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(options.work_dir, ": cannot create: ", ec.message()));
  }
  ASSIGN_OR_RETURN(std::string dataset_dir, PrepareDataset(options));
  ASSIGN_OR_RETURN(DatasetManifest manifest, ReadDatasetManifest(dataset_dir));

  const std::string content = DatasetContentChecksum(manifest);
  const std::string stem =
      absl::StrCat(manifest.name, "-", options.num_parts, "parts-",
                   options.method, "-seed", options.seed);
  const std::string dir =
      JoinPath(partitions, absl::StrCat(stem, "-", content));
  if (fs::exists(JoinPath(dir, kPartitionManifestFile), ec)) {
    ASSIGN_OR_RETURN(PartitionManifest partition, ReadPartitionManifest(dir));
    if (std::string diff = Mismatch(partition, manifest, options);
        !diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, " should hold a partition of ", dataset_dir,
                       " but its partition.json says ", diff,
                       "; remove it or choose another --work-dir"));
    }
    std::printf(
        "shardgnn run: reusing partition %s (made before from dataset content "
        "%s: %d parts, %s, seed %llu)\n",
        dir.c_str(), content.c_str(), options.num_parts, options.method.c_str(),
        static_cast<unsigned long long>(options.seed));
    std::fflush(stdout);
    return dir;
  }
  std::printf(
      "shardgnn run: partitioning %s into %s%s\n", dataset_dir.c_str(),
      dir.c_str(),
      Because(OthersNamed(partitions, stem, dir,
                          absl::StrCat("a partition of other content named '",
                                       manifest.name, "'")))
          .c_str());
  std::fflush(stdout);
  PartitionOptions partition_options;
  partition_options.num_parts = options.num_parts;
  partition_options.method = method;
  partition_options.seed = options.seed;
  ASSIGN_OR_RETURN(PartitionManifest partition,
                   PartitionDataset(dataset_dir, dir, partition_options));
  std::printf("%s", PartitionSummary(partition).c_str());
  std::fflush(stdout);
  return dir;
}

absl::StatusOr<std::string> CreateRunDirectory(const std::string& out_dir_flag,
                                               const std::string& work_dir,
                                               const std::string& dataset) {
  std::string out_dir = out_dir_flag;
  if (out_dir.empty()) {
    char time_text[32];
    std::time_t now = std::time(nullptr);
    std::strftime(time_text, sizeof(time_text), "%Y%m%d-%H%M%S",
                  std::localtime(&now));
    // The dataset's name first, as one path component of safe characters.
    std::string name;
    for (char c : dataset) {
      if (name.size() >= 64) break;
      name += absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                      c == '_' || c == '.'
                  ? c
                  : '_';
    }
    if (!name.empty() && name[0] == '.') name[0] = '_';
    const std::string stamp = name.empty() ? std::string(time_text)
                                           : absl::StrCat(name, "-", time_text);
    // A fresh directory even when another run started in the same second
    // (create_directory claims it atomically).
    std::string runs = JoinPath(work_dir, "runs");
    std::error_code ec;
    fs::create_directories(runs, ec);
    for (int n = 1; !ec; ++n) {
      out_dir = JoinPath(
          runs, n == 1 ? std::string(stamp) : absl::StrCat(stamp, "-", n));
      if (fs::create_directory(out_dir, ec)) break;
    }
    if (ec)
      return absl::PermissionDeniedError(absl::StrCat(
          runs, ": cannot create a run directory: ", ec.message()));
  }
  std::error_code ec;
  if (fs::exists(JoinPath(out_dir, "summary.json"))) {
    return absl::AlreadyExistsError(absl::StrCat(
        out_dir, " already holds a finished run; choose another --out"));
  }
  fs::create_directories(out_dir, ec);
  if (ec)
    return absl::PermissionDeniedError(
        absl::StrCat(out_dir, ": cannot create: ", ec.message()));
  return out_dir;
}

namespace {

// Removes the token files ".auth-token-PID-HEX" of launchers killed outright
// (SIGKILL gives no chance to clean up): those whose PID no longer exists on
// this machine (kill(PID, 0) fails with ESRCH). A live launcher's is kept.
void RemoveStaleTokens(const std::string& work_dir) {
  constexpr absl::string_view kPrefix = ".auth-token-";
  std::error_code ec;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(work_dir, ec)) {
    const std::string file = entry.path().filename().string();
    absl::string_view rest = file;
    if (!absl::ConsumePrefix(&rest, kPrefix)) continue;
    int64_t pid = 0;
    if (!absl::SimpleAtoi(rest.substr(0, rest.find('-')), &pid) || pid <= 0 ||
        pid > std::numeric_limits<pid_t>::max() || pid == getpid()) {
      continue;
    }
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<GeneratedToken>> GeneratedToken::Create(
    const std::string& work_dir) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(work_dir, ": cannot create: ", ec.message()));
  }
  RemoveStaleTokens(work_dir);
  ASSIGN_OR_RETURN(std::string token, NewAuthToken());
  ASSIGN_OR_RETURN(std::string suffix, RandomBytes(6));
  const std::string path =
      JoinPath(work_dir, absl::StrCat(".auth-token-", getpid(), "-",
                                      absl::BytesToHexString(suffix)));
  RETURN_IF_ERROR(WriteAuthTokenFile(path, token));
  return std::unique_ptr<GeneratedToken>(new GeneratedToken(path));
}

GeneratedToken::~GeneratedToken() {
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace shardgnn::cli
