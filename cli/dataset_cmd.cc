// `shardgnn dataset import` and `shardgnn dataset generate`: build a canonical
// dataset directory.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "common/status.h"
#include "datasets/class_split.h"
#include "datasets/edge_split.h"
#include "datasets/generators.h"
#include "datasets/importers.h"
#include "datasets/summary.h"

namespace shardgnn::cli {
namespace {

namespace fs = std::filesystem;

struct ImportFlags {
  std::string format;
  std::string input;
  std::string out;
  std::string name;
  bool undirected = false;
  bool directed = false;
  bool keep_self_loops = false;
  bool allow_nonfinite = false;
  uint64_t seed = 0;
  bool seed_given = false;  // --seed on the command line.
  std::string edge_split;   // Link prediction: "TRAIN,VALID,TEST" fractions.
  // --split random:N,M (every format; edgelist also takes fractions) and its
  // seed.
  std::string split = "0.1,0.1,0.8";
  uint64_t split_seed = 0;
  // ogb, ogb-hetero
  std::string split_name;
  // ogb-hetero, hgb
  bool add_reverse = false;
  // hgb
  double valid_fraction = 0.2;
  // linqs
  std::string content;
  std::string cites;
  bool skip_unknown_ids = false;
  int64_t train_per_class = 20;
  int64_t num_valid = 500;
  int64_t num_test = 1000;
  // edgelist
  std::string edges;
  std::string features;
  std::string labels;
  std::vector<std::string> split_files;
  std::string memory_limit;  // Bytes, with an optional K/M/G/T suffix.
};

struct GenerateFlags {
  std::string kind = "sbm";
  int64_t nodes = 0;
  double avg_degree = 10;
  int64_t features = 32;
  int64_t classes = 8;
  std::string split = "0.1,0.1,0.8";
  uint64_t seed = 0;
  double homophily = 0.8;
  double feature_noise = 1.0;
  int threads = 2;
  std::string name;
  std::string out;
  std::string edge_split;
  int64_t edge_features = 0;
};

absl::StatusOr<std::vector<double>> ParseFractions(const std::string& text) {
  std::vector<double> fractions;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double value;
    if (!absl::SimpleAtod(part, &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--split \"", text, "\": \"", part, "\" is not a number"));
    }
    fractions.push_back(value);
  }
  if (fractions.size() != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--split \"", text, "\": expected three fractions train,valid,test"));
  }
  double sum = fractions[0] + fractions[1] + fractions[2];
  for (double f : fractions) {
    if (!(f >= 0) || f > 1 || sum > 1 + 1e-6) {
      return absl::InvalidArgumentError(
          absl::StrCat("--split \"", text,
                       "\": fractions must be in [0, 1] and sum to at most 1"));
    }
  }
  return fractions;
}

// A byte count: digits with an optional K, M, G or T suffix (binary
// multiples: 512M = 512 MiB; "KiB", "MB" and lower case are read the same).
absl::StatusOr<int64_t> ParseByteSize(const std::string& flag,
                                      const std::string& text) {
  absl::string_view digits = text;
  int shift = 0;
  while (!digits.empty() && !absl::ascii_isdigit(digits.back())) {
    digits.remove_suffix(1);
  }
  std::string suffix =
      absl::AsciiStrToUpper(absl::string_view(text).substr(digits.size()));
  if (suffix.size() > 1 && absl::EndsWith(suffix, "B")) suffix.pop_back();
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();
  if (suffix == "K") shift = 10;
  if (suffix == "M") shift = 20;
  if (suffix == "G") shift = 30;
  if (suffix == "T") shift = 40;
  uint64_t value = 0;
  if ((!suffix.empty() && suffix != "B" && shift == 0) ||
      !absl::SimpleAtoi(digits, &value) || value == 0 ||
      value > (uint64_t{1} << (62 - shift))) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " \"", text,
                     "\": expected a byte count such as 4G, 512M or 1048576"));
  }
  return static_cast<int64_t>(value << shift);
}

// The one file in `dir` whose name ends with `suffix` or `suffix`.gz.
absl::StatusOr<std::string> FindBySuffix(const std::string& dir,
                                         const std::string& suffix) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such directory"));
  }
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, suffix) ||
        absl::EndsWith(name, absl::StrCat(suffix, ".gz"))) {
      found.push_back(entry.path().string());
    }
  }
  if (found.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": expected one *", suffix, "[.gz] file, found ",
                     found.size(), "; name it with --", suffix.substr(1)));
  }
  return found[0];
}

// The --format values that read each format-specific flag of `dataset
// import`, in the order errors list them. --split is two entries: its
// fractions and its per-class random form.
constexpr char kRandomSplit[] = "--split random:N,M";

struct FormatFlag {
  const char* flag;
  std::vector<std::string> formats;
};

const std::vector<FormatFlag>& FormatFlags() {
  static const auto* flags = new std::vector<FormatFlag>{
      {"--input", {"ogb", "linqs", "ogb-hetero", "hgb"}},
      {"--undirected", {"ogb", "edgelist"}},
      {"--directed", {"linqs"}},
      {"--add-reverse", {"ogb-hetero", "hgb"}},
      {"--seed", {"ogb", "linqs", "edgelist", "hgb"}},
      {"--split-name", {"ogb", "ogb-hetero"}},
      {"--valid-fraction", {"hgb"}},
      {"--content", {"linqs"}},
      {"--cites", {"linqs"}},
      {"--skip-unknown-ids", {"linqs"}},
      {"--train-per-class", {"linqs"}},
      {"--valid", {"linqs"}},
      {"--test", {"linqs"}},
      {"--edges", {"edgelist"}},
      {"--features", {"edgelist"}},
      {"--labels", {"edgelist"}},
      {"--split", {"edgelist"}},
      {kRandomSplit, {"ogb", "linqs", "edgelist", "ogb-hetero", "hgb"}},
      {"--split-seed", {"ogb", "linqs", "edgelist", "ogb-hetero", "hgb"}},
      {"--split-file", {"edgelist"}},
      {"--memory-limit", {"ogb", "edgelist"}},
  };
  return *flags;
}

// Refuses flags given on the command line that the chosen format would
// ignore, naming all of them in one line.
absl::Status CheckFlagsApply(const CLI::App& cmd, const ImportFlags& f) {
  const bool random_split =
      cmd.count("--split") > 0 && IsClassSplitSpec(f.split);
  auto given = [&](const std::string& flag) {
    if (flag == "--split") return cmd.count(flag) > 0 && !random_split;
    if (flag == kRandomSplit) return random_split;
    return cmd.count(flag) > 0;
  };
  std::vector<std::string> foreign;
  for (const FormatFlag& ff : FormatFlags()) {
    if (!given(ff.flag) || std::find(ff.formats.begin(), ff.formats.end(),
                                     f.format) != ff.formats.end()) {
      continue;
    }
    foreign.push_back(
        absl::StrCat(ff.flag, " (", absl::StrJoin(ff.formats, ", "), " only)"));
  }
  if (!foreign.empty()) {
    std::string hint;
    if (given("--split")) {
      hint = absl::StrCat(
          "; its --split takes random:N,M only",
          f.format == "ogb" || f.format == "ogb-hetero"
              ? " (otherwise the split is a folder split/<name>/: choose one "
                "with --split-name)"
              : "");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--format ", f.format, " does not take ",
                     absl::StrJoin(foreign, ", "), hint));
  }
  if (f.format == "linqs" && given("--input") && given("--content") &&
      given("--cites")) {
    return absl::InvalidArgumentError(
        "--format linqs: --input is not read when --content and --cites are "
        "given; drop one or the other");
  }
  if (f.format == "edgelist" && given("--split-file") &&
      (cmd.count("--split") > 0 || given("--seed"))) {
    return absl::InvalidArgumentError(
        "--format edgelist: --split and --seed make a random split, which "
        "--split-file replaces; give one or the other");
  }
  if (!random_split) {
    if (given("--split-seed")) {
      return absl::InvalidArgumentError(
          "--split-seed seeds --split random:N,M only; give that too");
    }
    return absl::OkStatus();
  }
  std::vector<std::string> replaced;
  for (const char* flag : {"--split-name", "--train-per-class", "--valid",
                           "--test", "--valid-fraction"}) {
    if (given(flag)) replaced.push_back(flag);
  }
  if (!replaced.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format ", f.format, ": --split random:N,M replaces the split that ",
        absl::StrJoin(replaced, ", "), " would shape; give one or the other"));
  }
  if (given("--seed") && f.edge_split.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format ", f.format,
        ": --seed seeds no split here (only --edge-split and generated "
        "splits); --split random:N,M is seeded by --split-seed"));
  }
  return absl::OkStatus();
}

absl::StatusOr<BuildSummary> RunImport(const ImportFlags& f) {
  std::optional<ClassSplitOptions> class_split;
  if (IsClassSplitSpec(f.split)) {
    absl::StatusOr<ClassSplitOptions> parsed = ParseClassSplit(f.split);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", parsed.status().message()));
    }
    class_split = *parsed;
    class_split->seed = f.split_seed;
  }
  OutOfCoreOptions out_of_core;
  if (!f.memory_limit.empty()) {
    ASSIGN_OR_RETURN(out_of_core.memory_limit,
                     ParseByteSize("--memory-limit", f.memory_limit));
  }
  if (f.format == "ogb-hetero" || f.format == "hgb") {
    if (f.input.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--format ", f.format, " needs --input DIR (the directory holding ",
          f.format == "hgb" ? "node.dat and link.dat" : "raw/ and split/",
          ")"));
    }
    if (f.format == "hgb") {
      HgbImportOptions options;
      options.input_dir = f.input;
      options.add_reverse = f.add_reverse;
      options.keep_self_loops = f.keep_self_loops;
      options.name = f.name;
      options.allow_nonfinite = f.allow_nonfinite;
      options.valid_fraction = f.valid_fraction;
      options.seed = f.seed;
      options.class_split = class_split;
      return ImportHgb(options, f.out);
    }
    OgbHeteroImportOptions options;
    options.input_dir = f.input;
    options.split = f.split_name;
    options.class_split = class_split;
    options.add_reverse = f.add_reverse;
    options.keep_self_loops = f.keep_self_loops;
    options.name = f.name;
    options.allow_nonfinite = f.allow_nonfinite;
    return ImportOgbHetero(options, f.out);
  }
  EdgeOptions edges;
  edges.undirected = f.undirected;
  edges.keep_self_loops = f.keep_self_loops;
  if (f.format == "ogb") {
    if (f.input.empty()) {
      return absl::InvalidArgumentError(
          "--format ogb needs --input DIR (the directory holding raw/ and "
          "split/)");
    }
    OgbImportOptions options;
    options.input_dir = f.input;
    options.split = f.split_name;
    options.class_split = class_split;
    options.edges = edges;
    options.name = f.name;
    options.allow_nonfinite = f.allow_nonfinite;
    options.seed = f.seed;
    options.out_of_core = out_of_core;
    ASSIGN_OR_RETURN(bool edge_split, OgbSplitHoldsEdges(options));
    if (edge_split && !f.edge_split.empty()) {
      return absl::InvalidArgumentError(
          "--format ogb: the split holds edges already (a given link "
          "prediction split); drop --edge-split");
    }
    if (!edge_split && f.seed_given && f.edge_split.empty()) {
      return absl::InvalidArgumentError(
          "--format ogb: --seed only seeds --edge-split and the negatives of "
          "a given edge split (this OGB split is of nodes)");
    }
    return ImportOgb(options, f.out);
  }
  if (f.format == "linqs") {
    LinqsImportOptions options;
    options.content_path = f.content;
    options.cites_path = f.cites;
    if (options.content_path.empty()) {
      if (f.input.empty()) {
        return absl::InvalidArgumentError(
            "--format linqs needs --input DIR or --content and --cites");
      }
      ASSIGN_OR_RETURN(options.content_path, FindBySuffix(f.input, ".content"));
    }
    if (options.cites_path.empty()) {
      if (f.input.empty()) {
        return absl::InvalidArgumentError(
            "--format linqs needs --input DIR or --content and --cites");
      }
      ASSIGN_OR_RETURN(options.cites_path, FindBySuffix(f.input, ".cites"));
    }
    options.edges.undirected = !f.directed;
    options.edges.keep_self_loops = f.keep_self_loops;
    options.skip_unknown_ids = f.skip_unknown_ids;
    options.train_per_class = f.train_per_class;
    options.num_valid = f.num_valid;
    options.num_test = f.num_test;
    options.seed = f.seed;
    options.class_split = class_split;
    options.name = f.name;
    options.allow_nonfinite = f.allow_nonfinite;
    return ImportLinqs(options, f.out);
  }
  // edgelist
  if (f.edges.empty() || f.features.empty() || f.labels.empty()) {
    return absl::InvalidArgumentError(
        "--format edgelist needs --edges, --features and --labels");
  }
  EdgeListImportOptions options;
  options.edges_path = f.edges;
  options.features_path = f.features;
  options.labels_path = f.labels;
  for (const std::string& spec : f.split_files) {
    std::vector<std::string> parts =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--split-file \"", spec, "\": expected NAME=PATH"));
    }
    options.split_paths[parts[0]] = parts[1];
  }
  if (class_split.has_value()) {
    options.class_split = class_split;
  } else {
    ASSIGN_OR_RETURN(options.split_fractions, ParseFractions(f.split));
  }
  options.seed = f.seed;
  options.edges = edges;
  options.name = f.name;
  options.allow_nonfinite = f.allow_nonfinite;
  options.out_of_core = out_of_core;
  return ImportEdgeList(options, f.out);
}

absl::StatusOr<BuildSummary> RunGenerate(const GenerateFlags& f) {
  GeneratorOptions options;
  ASSIGN_OR_RETURN(options.kind, ParseGraphKind(f.kind));
  options.num_nodes = f.nodes;
  options.avg_degree = f.avg_degree;
  options.feature_dim = f.features;
  options.num_classes = f.classes;
  ASSIGN_OR_RETURN(options.split, ParseFractions(f.split));
  options.seed = f.seed;
  options.homophily = f.homophily;
  options.feature_noise = f.feature_noise;
  options.threads = f.threads;
  options.name = f.name;
  options.edge_feature_dim = f.edge_features;
  if (options.kind == GraphKind::kHeteroSbm && !f.edge_split.empty()) {
    return absl::InvalidArgumentError(
        "--kind hetero-sbm: --edge-split splits untyped graphs only; link "
        "prediction on a relation of a typed graph is not supported yet");
  }
  return GenerateDataset(options, f.out);
}

// Builds the dataset with `build` and, given `edge_split`, splits its edges
// for link prediction (datasets/edge_split.h BuildWithEdgeSplit: `out`
// appears whole or not at all).
absl::StatusOr<BuildSummary> WithEdgeSplit(
    const std::string& edge_split, uint64_t seed, const std::string& out,
    const std::function<absl::StatusOr<BuildSummary>(const std::string&)>&
        build) {
  if (edge_split.empty()) return build(out);
  ASSIGN_OR_RETURN(EdgeSplitOptions options, ParseEdgeSplit(edge_split));
  options.seed = seed;
  EdgeSplitSummary split;
  ASSIGN_OR_RETURN(BuildSummary summary,
                   BuildWithEdgeSplit(options, out, build, &split));
  std::printf("%s\n", DescribeEdgeSplit(split, seed).c_str());
  return summary;
}

void Finish(const absl::StatusOr<BuildSummary>& summary, absl::Status* result) {
  if (!summary.ok()) {
    *result = summary.status();
    return;
  }
  std::printf("%s\n", FormatSummary(*summary).c_str());
  *result = absl::OkStatus();
}

}  // namespace

void AddDatasetCommand(CLI::App& app, absl::Status* result) {
  CLI::App* dataset = app.add_subcommand(
      "dataset", "Build a canonical dataset directory (import or generate)");
  dataset->require_subcommand(1);

  auto import_flags = std::make_shared<ImportFlags>();
  CLI::App* import_cmd = dataset->add_subcommand(
      "import",
      "Import OGB raw (homogeneous or heterogeneous), HGB, LINQS or edge-list "
      "data");
  ImportFlags& i = *import_flags;
  import_cmd
      ->add_option("--format", i.format,
                   "ogb | ogb-hetero | hgb | linqs | edgelist")
      ->required()
      ->check(CLI::IsMember({"ogb", "ogb-hetero", "hgb", "linqs", "edgelist"}));
  import_cmd->add_option(
      "--input", i.input,
      "ogb, ogb-hetero: directory with raw/ and split/; hgb: directory with "
      "node.dat, link.dat, label.dat[.test]; linqs: directory with *.content "
      "and *.cites");
  import_cmd->add_option("--out", i.out, "Output directory (must not exist)")
      ->required();
  import_cmd->add_option("--name", i.name,
                         "Dataset name (default: from input)");
  import_cmd->add_flag("--undirected", i.undirected,
                       "ogb, edgelist: add reverse edges (linqs always does, "
                       "unless --directed)");
  import_cmd->add_flag("--directed", i.directed,
                       "linqs: keep citations one-way (citing -> cited)");
  import_cmd->add_flag("--add-reverse", i.add_reverse,
                       "ogb-hetero, hgb: add each relation reversed as "
                       "rev_<relation>, so that every type receives messages");
  import_cmd
      ->add_option("--valid-fraction", i.valid_fraction,
                   "hgb: fraction of label.dat's nodes held out for "
                   "validation (the rest train; label.dat.test tests)")
      ->capture_default_str();
  import_cmd->add_flag("--keep-self-loops", i.keep_self_loops,
                       "Keep (u, u) edges (dropped by default)");
  import_cmd->add_flag("--allow-nonfinite", i.allow_nonfinite,
                       "Keep NaN and infinite feature values (refused by "
                       "default); the summary counts them");
  import_cmd->add_option("--seed", i.seed,
                         "Seed of generated splits (linqs, edgelist), of "
                         "--edge-split and of the negatives a given OGB edge "
                         "split lacks");
  import_cmd->add_option("--edge-split", i.edge_split,
                         "Link prediction: deal the edges into train,valid,"
                         "test fractions (e.g. 0.85,0.05,0.10), removing valid "
                         "and test edges from the graph and drawing as many "
                         "negative pairs");
  import_cmd->add_option("--split-name", i.split_name,
                         "ogb, ogb-hetero: which split/<name>/ (default: the "
                         "only one); for ogb, one of \"src,dst\" lines is a "
                         "link prediction split");
  import_cmd->add_option("--content", i.content, "linqs: the .content file");
  import_cmd->add_option("--cites", i.cites, "linqs: the .cites file");
  import_cmd->add_flag("--skip-unknown-ids", i.skip_unknown_ids,
                       "linqs: drop citations of papers missing from .content");
  import_cmd->add_option("--train-per-class", i.train_per_class,
                         "linqs: training nodes per class (default 20)");
  import_cmd->add_option("--valid", i.num_valid,
                         "linqs: validation nodes (default 500)");
  import_cmd->add_option("--test", i.num_test,
                         "linqs: test nodes (default 1000)");
  import_cmd->add_option(
      "--edges", i.edges,
      "edgelist: 'src dst' text file (a first line of column names is "
      "skipped), or an int64 .npy of shape [2, E] (edge_index) or [E, 2]");
  import_cmd->add_option("--features", i.features,
                         "edgelist: float32 or float64 .npy [N, F] (stored "
                         "as float32)");
  import_cmd->add_option("--labels", i.labels,
                         "edgelist: int64 or int32 .npy [N]");
  import_cmd->add_option(
      "--split", i.split,
      "random:N,M (every format): N train and M valid nodes per class, drawn "
      "at random, the other labeled nodes test (replaces the input's split); "
      "edgelist also: random split fractions train,valid,test (default "
      "0.1,0.1,0.8)");
  import_cmd->add_option("--split-seed", i.split_seed,
                         "Seed of --split random:N,M (default 0)");
  import_cmd->add_option("--split-file", i.split_files,
                         "edgelist: NAME=PATH of an int64 .npy of node indices "
                         "or a bool mask [N] (repeatable; replaces the random "
                         "split)");
  import_cmd->add_option(
      "--memory-limit", i.memory_limit,
      "ogb, edgelist: build the CSR out of core (edges sorted in runs on "
      "disk beside the output, then merged) so the import stays under BYTES "
      "of memory (4G, 512M, ...); the same output as without");
  import_cmd->callback([import_cmd, import_flags, result] {
    if (absl::Status s = CheckFlagsApply(*import_cmd, *import_flags); !s.ok()) {
      *result = s;
      return;
    }
    import_flags->seed_given = import_cmd->count("--seed") > 0;
    const ImportFlags& f = *import_flags;
    if (!f.edge_split.empty() &&
        (f.format == "ogb-hetero" || f.format == "hgb")) {
      *result = absl::InvalidArgumentError(absl::StrCat(
          "--format ", f.format,
          ": --edge-split splits untyped graphs only; link prediction on a "
          "relation of a typed graph is not supported yet"));
      return;
    }
    if (!f.edge_split.empty() && !f.memory_limit.empty()) {
      *result = absl::InvalidArgumentError(
          "--memory-limit: --edge-split splits the imported graph in memory; "
          "import without --edge-split to stay under the limit");
      return;
    }
    Finish(WithEdgeSplit(f.edge_split, f.seed, f.out,
                         [&f](const std::string& out) {
                           ImportFlags to = f;
                           to.out = out;
                           return RunImport(to);
                         }),
           result);
  });

  auto gen_flags = std::make_shared<GenerateFlags>();
  GenerateFlags& g = *gen_flags;
  CLI::App* generate = dataset->add_subcommand(
      "generate",
      "Generate a synthetic dataset (SBM, R-MAT, or a typed academic graph)");
  generate
      ->add_option("--kind", g.kind,
                   "sbm | rmat | hetero-sbm (papers, authors, venues, fields; "
                   "labels on papers)")
      ->check(CLI::IsMember({"sbm", "rmat", "hetero-sbm"}))
      ->capture_default_str();
  generate->add_option("--nodes", g.nodes, "Number of nodes")->required();
  generate->add_option("--avg-degree", g.avg_degree,
                       "Stored (directed) edges per node (default 10)");
  generate->add_option("--features", g.features, "Feature dimension (32)");
  generate->add_option("--classes", g.classes, "Number of classes (8)");
  generate->add_option("--split", g.split,
                       "train,valid,test fractions (0.1,0.1,0.8)");
  generate->add_option("--seed", g.seed, "Seed (0)");
  generate->add_option("--homophily", g.homophily,
                       "Fraction of edges inside a class (0.8)");
  generate->add_option("--feature-noise", g.feature_noise,
                       "Feature noise relative to the class signal (1.0)");
  generate->add_option("--threads", g.threads,
                       "Worker threads (2); the output does not depend on it");
  generate->add_option("--name", g.name, "Dataset name (default: the kind)");
  generate->add_option("--out", g.out, "Output directory (must not exist)")
      ->required();
  generate->add_option("--edge-features", g.edge_features,
                       "Edge features of this width, carrying the class of "
                       "each edge's destination (node features become noise: "
                       "labels are learnable from the edge features only)");
  generate->add_option("--edge-split", g.edge_split,
                       "Link prediction: deal the edges into train,valid,test "
                       "fractions (e.g. 0.85,0.05,0.10; --seed seeds it)");
  generate->callback([gen_flags, result] {
    const GenerateFlags& f = *gen_flags;
    Finish(WithEdgeSplit(f.edge_split, f.seed, f.out,
                         [&f](const std::string& out) {
                           GenerateFlags to = f;
                           to.out = out;
                           return RunGenerate(to);
                         }),
           result);
  });
}

}  // namespace shardgnn::cli
