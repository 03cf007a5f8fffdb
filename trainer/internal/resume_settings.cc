#include "trainer/internal/resume_settings.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shardgnn::internal {

std::string ResumeSettings(const TrainOptions& options,
                           int64_t steps_per_epoch) {
  const ModelOptions& m = options.model;
  return absl::StrCat(
      "lr=", options.lr, " weight_decay=", options.weight_decay,
      " batch_size=", options.batch_size, " steps_per_epoch=", steps_per_epoch,
      " fanouts=", absl::StrJoin(options.fanouts, ","),
      " eval_fanouts=", absl::StrJoin(options.eval_fanouts, ","),
      " dropout=", m.dropout, " attn_dropout=", m.attn_dropout,
      " feature_norm=", FeatureNormName(m.features.norm),
      // Only when on: checkpoints from before averaging existed resume.
      options.average_decay > 0
          ? absl::StrCat(" average_decay=", options.average_decay)
          : "",
      // Only when given (typed graphs).
      options.relation_fanouts.empty()
          ? ""
          : absl::StrCat(" relation_fanouts=", options.relation_fanouts));
}

absl::Status CheckResumeSettings(const TrainOptions& options,
                                 const std::string& saved,
                                 const std::string& now) {
  if (saved.empty() || saved == now) return absl::OkStatus();
  auto parse = [](const std::string& text) {
    std::map<std::string, std::string> m;
    for (absl::string_view word : absl::StrSplit(text, ' ')) {
      std::pair<std::string, std::string> kv = absl::StrSplit(word, '=');
      m[kv.first] = kv.second;
    }
    m.emplace("average_decay", "0");  // Written only when on (ResumeSettings).
    return m;
  };
  const auto before = parse(saved);
  std::vector<std::string> changes;
  for (const auto& [key, value] : parse(now)) {
    auto it = before.find(key);
    const std::string old = it == before.end() ? "?" : it->second;
    if (old != value) {
      changes.push_back(absl::StrCat(key, " ", old.empty() ? "(none)" : old,
                                     " -> ", value.empty() ? "(none)" : value));
    }
  }
  if (options.allow_changed_settings || changes.empty())
    return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      options.checkpoint_path,
      ": the run would resume with other settings than it was trained with (",
      absl::StrJoin(changes, ", "),
      "); give the same flags, or --allow-changed-settings to continue "
      "with the new ones"));
}

}  // namespace shardgnn::internal
