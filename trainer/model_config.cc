#include "trainer/model_config.h"

#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_ints.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace shardgnn {
namespace {

constexpr char kFormat[] = "shardgnn-model";
constexpr int64_t kVersion = 1;

std::vector<float> FloatArray(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_array()) {
    throw std::invalid_argument(
        absl::StrCat("field \"", key, "\" is not an array"));
  }
  std::vector<float> out;
  out.reserve(v.size());
  for (const nlohmann::json& x : v) {
    if (!x.is_number()) {
      throw std::invalid_argument(
          absl::StrCat("field \"", key, "\" holds a non-number"));
    }
    out.push_back(x.get<float>());
  }
  return out;
}

}  // namespace

std::string ModelConfigToJson(const ModelConfig& config) {
  const ModelOptions& m = config.model;
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["task"] = TaskKindName(config.task);
  if (config.task == TaskKind::kLink)
    j["decoder"] = LinkDecoderName(config.decoder);
  j["kind"] = ModelKindName(m.kind);
  j["layers"] = m.num_layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["dropout"] = m.dropout;
  j["attn_dropout"] = m.attn_dropout;
  j["in_dim"] = config.in_dim;
  j["num_classes"] = config.num_classes;
  j["fanouts"] = config.fanouts;
  j["feature_norm"] = FeatureNormName(m.features.norm);
  j["feature_shift"] = m.features.shift;
  j["feature_scale"] = m.features.scale;
  j["parameters"] = kModelParametersFile;
  // A model script's module: always this file of the run directory.
  if (m.kind == ModelKind::kScript) j["script"] = kModelScriptFile;
  if (config.learned_dim > 0) {
    j["learned_embeddings"] = {{"dim", config.learned_dim},
                               {"ignore_features", config.ignore_features},
                               {"file", config.learned_file}};
    if (config.learned_row_length > 0)
      j["learned_embeddings"]["row_length"] = config.learned_row_length;
  }
  return j.dump(2) + "\n";
}

absl::StatusOr<ModelConfig> ModelConfigFromJson(const std::string& text,
                                                const std::string& path) {
  ModelConfig c;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw std::invalid_argument("not a JSON object");
    const auto format = j.find("format");
    if (format == j.end() || !format->is_string() ||
        format->get<std::string>() != kFormat) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": \"format\" is not \"", kFormat,
                       "\"; this is not a shardgnn model description"));
    }
    const int64_t version = JsonIntField(j, "version", 0, kMaxJsonWidth);
    if (version != kVersion) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": unsupported version ", version,
                       " (this build reads version ", kVersion, ")"));
    }
    // Files written before link prediction have no "task": node models.
    if (j.contains("task")) {
      if (!j.at("task").is_string())
        throw std::invalid_argument("\"task\" is not text");
      absl::StatusOr<TaskKind> task =
          ParseTaskKind(j.at("task").get<std::string>());
      if (!task.ok())
        throw std::invalid_argument(std::string(task.status().message()));
      c.task = *task;
    }
    if (c.task == TaskKind::kLink) {
      if (!j.at("decoder").is_string())
        throw std::invalid_argument("\"decoder\" is not text");
      absl::StatusOr<LinkDecoder> decoder =
          ParseLinkDecoder(j.at("decoder").get<std::string>());
      if (!decoder.ok())
        throw std::invalid_argument(std::string(decoder.status().message()));
      c.decoder = *decoder;
    }
    const nlohmann::json& kind = j.at("kind");
    if (!kind.is_string()) throw std::invalid_argument("\"kind\" is not text");
    absl::StatusOr<ModelKind> parsed = ParseModelKind(kind.get<std::string>());
    if (!parsed.ok())
      throw std::invalid_argument(std::string(parsed.status().message()));
    c.model.kind = *parsed;
    c.model.num_layers = static_cast<int>(JsonIntField(j, "layers", 1, 64));
    c.model.hidden = JsonIntField(j, "hidden", 1, kMaxJsonWidth);
    c.model.heads = static_cast<int>(JsonIntField(j, "heads", 1, 1024));
    c.model.dropout = j.at("dropout").get<double>();
    c.model.attn_dropout = j.at("attn_dropout").get<double>();
    // 0 for a graph without features, whose model takes learned rows only.
    c.in_dim = JsonIntField(j, "in_dim", 0, kMaxJsonWidth);
    c.num_classes = JsonIntField(j, "num_classes", 1, kMaxJsonWidth);
    const nlohmann::json& fanouts = j.at("fanouts");
    if (!fanouts.is_array())
      throw std::invalid_argument("\"fanouts\" is not an array");
    for (const nlohmann::json& f : fanouts)
      c.fanouts.push_back(static_cast<int>(JsonInt(f, "fanouts", -1, 1 << 30)));
    const nlohmann::json& norm = j.at("feature_norm");
    if (!norm.is_string())
      throw std::invalid_argument("\"feature_norm\" is not text");
    absl::StatusOr<FeatureNorm> feature_norm =
        ParseFeatureNorm(norm.get<std::string>());
    if (!feature_norm.ok())
      throw std::invalid_argument(std::string(feature_norm.status().message()));
    c.model.features.norm = *feature_norm;
    c.model.features.shift = FloatArray(j, "feature_shift");
    c.model.features.scale = FloatArray(j, "feature_scale");
    if (j.contains("learned_embeddings")) {
      const nlohmann::json& learned = j.at("learned_embeddings");
      if (!learned.is_object())
        throw std::invalid_argument("\"learned_embeddings\" is not an object");
      c.learned_dim = JsonIntField(learned, "dim", 1, kMaxJsonWidth);
      if (!learned.at("ignore_features").is_boolean()) {
        throw std::invalid_argument(
            "\"learned_embeddings.ignore_features\" is not true or false");
      }
      c.ignore_features = learned.at("ignore_features").get<bool>();
      if (!learned.at("file").is_string())
        throw std::invalid_argument("\"learned_embeddings.file\" is not text");
      c.learned_file = learned.at("file").get<std::string>();
      // A file of the run directory, nowhere else.
      if (c.learned_file.empty() || c.learned_file[0] == '.' ||
          c.learned_file.find('/') != std::string::npos) {
        throw std::invalid_argument(
            absl::StrCat("\"learned_embeddings.file\" \"", c.learned_file,
                         "\" is not a file name of the run directory"));
      }
      if (learned.contains("row_length")) {
        const nlohmann::json& length = learned.at("row_length");
        if (!length.is_number() || !(length.get<double>() > 0) ||
            !std::isfinite(length.get<double>())) {
          throw std::invalid_argument(
              "\"learned_embeddings.row_length\" is not a positive number");
        }
        c.learned_row_length = length.get<double>();
      }
    }
    // A typed graph's model takes each node type's features (or rows).
    if (c.input_dim() < 1 && !IsTypedModel(c.model.kind)) {
      throw std::invalid_argument(
          "the model takes no input (\"in_dim\" 0 and no learned rows)");
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": missing or malformed field: ", e.what()));
  }
  const FeatureTransform& f = c.model.features;
  const bool standardize = f.norm == FeatureNorm::kStandardize;
  const size_t want = standardize ? static_cast<size_t>(c.in_dim) : 0;
  if (f.shift.size() != want || f.scale.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": \"feature_shift\" and \"feature_scale\" have ", f.shift.size(),
        " and ", f.scale.size(), " entries; ", want, " expected"));
  }
  if (c.model.dropout < 0 || c.model.dropout >= 1 || c.model.attn_dropout < 0 ||
      c.model.attn_dropout >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dropout rates must be in [0, 1)"));
  }
  return c;
}

absl::StatusOr<ModelConfig> ReadModelConfig(const std::string& run_dir) {
  const std::string path = JoinPath(run_dir, kModelConfigFile);
  if (!std::filesystem::exists(path) &&
      std::filesystem::exists(JoinPath(run_dir, kLearnedEmbeddingsFile))) {
    return absl::FailedPreconditionError(absl::StrCat(
        run_dir,
        ": the run learned node embeddings (--learn-embeddings) and was "
        "trained by a shardgnn that did not describe such models for "
        "inference (no model.json); train it again"));
  }
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat(
        run_dir, " has no ", kModelConfigFile,
        ": the run has not finished, or was trained by a shardgnn that did "
        "not save its model"));
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ModelConfigFromJson(text, path);
}

}  // namespace shardgnn
