#include "trainer/internal/checkpoint.h"

#include <sys/stat.h>

#include <filesystem>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/status.h"

namespace shardgnn::internal {
namespace {

constexpr int64_t kVersion = 1;
// epoch, steps, loss, train_acc, val_acc, val_loss (older checkpoints: not
// the last).
constexpr int kHistoryColumns = 7;

torch::Tensor Scalar(int64_t v) { return torch::tensor({v}, torch::kLong); }
torch::Tensor Scalar(double v) { return torch::tensor({v}, torch::kDouble); }

void WriteTensors(torch::serialize::OutputArchive& archive,
                  const std::string& key,
                  const std::vector<torch::Tensor>& tensors) {
  torch::serialize::OutputArchive sub;
  for (size_t i = 0; i < tensors.size(); ++i)
    sub.write(std::to_string(i), tensors[i].detach());
  archive.write(key, sub);
}

// Reads a tensor into a fresh variable (InputArchive::read into a defined
// tensor would try to resize its storage).
torch::Tensor Read(torch::serialize::InputArchive& archive,
                   const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t;
}

}  // namespace

absl::Status WriteCheckpoint(const std::string& path,
                             const std::string& fingerprint,
                             const CheckpointState& state,
                             torch::optim::Optimizer& optimizer) {
  try {
    torch::serialize::OutputArchive archive;
    archive.write("version", Scalar(kVersion));
    archive.write("fingerprint", c10::IValue(fingerprint));
    archive.write("settings", c10::IValue(state.settings));
    archive.write("epoch", Scalar(static_cast<int64_t>(state.epoch)));
    archive.write("dropout_count",
                  Scalar(static_cast<int64_t>(state.dropout_count)));
    archive.write("best_val_acc", Scalar(state.best_val_acc));
    archive.write("best_val_loss", Scalar(state.best_val_loss));
    archive.write("best_epoch", Scalar(static_cast<int64_t>(state.best_epoch)));
    WriteTensors(archive, "parameters", state.parameters);
    WriteTensors(archive, "best", state.best);
    if (!state.average.empty()) WriteTensors(archive, "average", state.average);
    torch::Tensor history = torch::zeros(
        {static_cast<int64_t>(state.history.size()), kHistoryColumns},
        torch::kDouble);
    for (size_t e = 0; e < state.history.size(); ++e) {
      const EpochStats& s = state.history[e];
      const double row[kHistoryColumns] = {static_cast<double>(s.epoch),
                                           static_cast<double>(s.steps),
                                           s.loss,
                                           s.train_acc,
                                           s.val_acc,
                                           s.val_loss,
                                           s.val_score};
      for (int c = 0; c < kHistoryColumns; ++c) history[e][c] = row[c];
    }
    archive.write("history", history);
    // The task's named validation figures, one line per epoch
    // ("key=value key=value").
    std::string metrics;
    for (const EpochStats& s : state.history) {
      for (const auto& [key, value] : s.metrics)
        absl::StrAppend(&metrics, absl::StrFormat("%s=%.17g ", key, value));
      metrics += "\n";
    }
    archive.write("history_metrics", c10::IValue(metrics));
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    std::ostringstream out;
    archive.save_to(out);
    // Keep the checkpoint being replaced as PreviousCheckpointPath(path): a
    // hard link renamed into place, so `path` itself is never missing.
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      const std::string link = path + ".link.partial";
      std::filesystem::remove(link, ec);
      std::filesystem::create_hard_link(path, link, ec);
      if (!ec) std::filesystem::rename(link, PreviousCheckpointPath(path), ec);
      if (ec) {
        return absl::InternalError(absl::StrCat(
            "keeping the previous checkpoint of ", path, ": ", ec.message()));
      }
    }
    return Annotate(WriteFileAtomic(path, out.str()), "writing checkpoint");
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("writing checkpoint ", path, ": ", e.what()));
  }
}

absl::StatusOr<bool> ReadCheckpoint(const std::string& path,
                                    const std::string& fingerprint,
                                    CheckpointState* state,
                                    torch::optim::Optimizer* optimizer) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(bytes);
    archive.load_from(in);
    torch::Tensor t;
    t = Read(archive, "version");
    if (t.item<int64_t>() != kVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint ", path, ": version ", t.item<int64_t>(),
                       ", expected ", kVersion));
    }
    c10::IValue saved_fingerprint;
    archive.read("fingerprint", saved_fingerprint);
    if (!saved_fingerprint.isString() ||
        saved_fingerprint.toStringRef() != fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint ", path, " belongs to a different run (",
          saved_fingerprint.isString() ? saved_fingerprint.toStringRef()
                                       : std::string("?"),
          "; this run is ", fingerprint, ")"));
    }
    c10::IValue settings;
    state->settings.clear();
    if (archive.try_read("settings", settings) && settings.isString())
      state->settings = settings.toStringRef();
    t = Read(archive, "epoch");
    state->epoch = static_cast<int>(t.item<int64_t>());
    t = Read(archive, "dropout_count");
    state->dropout_count = static_cast<uint64_t>(t.item<int64_t>());
    t = Read(archive, "best_val_acc");
    state->best_val_acc = t.item<double>();
    state->best_val_loss = std::numeric_limits<double>::infinity();
    if (archive.try_read("best_val_loss", t))
      state->best_val_loss = t.item<double>();
    t = Read(archive, "best_epoch");
    state->best_epoch = static_cast<int>(t.item<int64_t>());
    torch::NoGradGuard no_grad;
    torch::serialize::InputArchive params;
    archive.read("parameters", params);
    for (size_t i = 0; i < state->parameters.size(); ++i) {
      t = Read(params, std::to_string(i));
      state->parameters[i].copy_(t);
    }
    torch::serialize::InputArchive best;
    archive.read("best", best);
    state->best.clear();
    if (state->best_epoch > 0) {
      for (size_t i = 0; i < state->parameters.size(); ++i) {
        t = Read(best, std::to_string(i));
        state->best.push_back(t.clone());
      }
    }
    state->average.clear();
    torch::serialize::InputArchive average;
    if (archive.try_read("average", average)) {
      for (size_t i = 0; i < state->parameters.size(); ++i) {
        t = Read(average, std::to_string(i));
        if (!t.sizes().equals(state->parameters[i].sizes())) {
          return absl::DataLossError(absl::StrCat(
              path, ": the averaged parameter ", i, " has another shape"));
        }
        state->average.push_back(t.clone());
      }
    }
    t = Read(archive, "history");
    state->history.clear();
    for (int64_t e = 0; e < t.size(0); ++e) {
      EpochStats s;
      s.epoch = static_cast<int>(t[e][0].item<double>());
      s.steps = static_cast<int64_t>(t[e][1].item<double>());
      s.loss = t[e][2].item<double>();
      s.train_acc = t[e][3].item<double>();
      s.val_acc = t[e][4].item<double>();
      if (t.size(1) > 5) s.val_loss = t[e][5].item<double>();
      s.val_score = t.size(1) > 6 ? t[e][6].item<double>() : s.val_acc;
      state->history.push_back(s);
    }
    c10::IValue metrics;
    if (archive.try_read("history_metrics", metrics) && metrics.isString()) {
      std::vector<std::string> lines =
          absl::StrSplit(metrics.toStringRef(), '\n');
      for (size_t e = 0; e < lines.size() && e < state->history.size(); ++e) {
        for (absl::string_view word :
             absl::StrSplit(lines[e], ' ', absl::SkipEmpty())) {
          std::pair<std::string, std::string> kv = absl::StrSplit(word, '=');
          double value = 0;
          if (absl::SimpleAtod(kv.second, &value))
            state->history[e].metrics.emplace_back(kv.first, value);
        }
      }
    }
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer->load(optimizer_archive);
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is unreadable: ", e.what()));
  }
  return true;
}

}  // namespace shardgnn::internal
