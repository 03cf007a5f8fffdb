#include "trainer/internal/checkpoint.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/status.h"

namespace shardgnn::internal {
namespace {

constexpr int64_t kVersion = 1;
// epoch, steps, loss, train_acc, val_acc, val_loss (older checkpoints: not
// the last).
constexpr int kHistoryColumns = 7;

// The file is the archive's bytes followed by a trailer: kTrailerMagic, the
// archive's size and its XXH64, each 8 bytes (little-endian), so that a
// damaged file is refused before LibTorch parses any of it.
constexpr char kTrailerMagic[8] = {'S', 'G', 'N', 'N', 'C', 'K', 'P', '1'};
constexpr size_t kTrailerBytes = 24;

void AppendUint64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t ReadUint64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  }
  return v;
}

uint64_t Xxh64(absl::string_view bytes) {
  Checksum sum;
  sum.Update(bytes);
  return sum.Value();
}

// The archive inside a checkpoint file's bytes, once its trailer holds;
// DATA_LOSS saying what is wrong otherwise.
absl::StatusOr<absl::string_view> VerifiedArchive(const std::string& path,
                                                  const std::string& bytes) {
  auto damaged = [&path](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " is damaged: ", what));
  };
  if (bytes.size() < kTrailerBytes ||
      bytes.compare(bytes.size() - kTrailerBytes, sizeof(kTrailerMagic),
                    kTrailerMagic, sizeof(kTrailerMagic)) != 0) {
    return damaged(
        "it does not end in a checksum (cut short, or not a shardgnn "
        "checkpoint)");
  }
  const char* trailer = bytes.data() + bytes.size() - kTrailerBytes;
  const uint64_t size = ReadUint64(trailer + 8);
  const uint64_t saved = ReadUint64(trailer + 16);
  if (size != bytes.size() - kTrailerBytes) {
    return damaged(absl::StrCat("it says ", size, " bytes but holds ",
                                bytes.size() - kTrailerBytes));
  }
  const absl::string_view archive(bytes.data(), size);
  if (Xxh64(archive) != saved) {
    return damaged(absl::StrCat("checksum mismatch (", ChecksumHex(saved),
                                " recorded, ", ChecksumHex(Xxh64(archive)),
                                " computed)"));
  }
  return archive;
}

// LibTorch's message without the C++ backtrace c10::Error carries: its first
// line.
std::string FirstLine(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string message =
      c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  return message.substr(0, message.find('\n'));
}

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
    std::string bytes = out.str();
    const uint64_t archive_bytes = bytes.size();
    const uint64_t checksum = Xxh64(bytes);
    bytes.append(kTrailerMagic, sizeof(kTrailerMagic));
    AppendUint64(&bytes, archive_bytes);
    AppendUint64(&bytes, checksum);
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
    return Annotate(WriteFileAtomic(path, bytes), "writing checkpoint");
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("writing checkpoint ", path, ": ", FirstLine(e)));
  }
}

absl::StatusOr<bool> ReadCheckpoint(const std::string& path,
                                    const std::string& fingerprint,
                                    CheckpointState* state,
                                    torch::optim::Optimizer* optimizer) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  ASSIGN_OR_RETURN(const absl::string_view verified,
                   VerifiedArchive(path, bytes));
  bytes.resize(verified.size());  // The archive alone.
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(std::move(bytes));
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
        absl::StrCat("checkpoint ", path, " is unreadable: ", FirstLine(e)));
  }
  return true;
}

absl::StatusOr<bool> ReadCheckpointOrPrevious(
    const std::string& path, const std::string& fingerprint,
    CheckpointState* state, torch::optim::Optimizer* optimizer) {
  absl::StatusOr<bool> current =
      ReadCheckpoint(path, fingerprint, state, optimizer);
  if (!absl::IsDataLoss(current.status())) return current;
  const std::string previous = PreviousCheckpointPath(path);
  absl::StatusOr<bool> older =
      ReadCheckpoint(previous, fingerprint, state, optimizer);
  if (!older.ok() || !*older) {
    return absl::DataLossError(absl::StrCat(
        current.status().message(), "; and its previous checkpoint ", previous,
        older.ok() ? " does not exist"
                   : absl::StrCat(" cannot be used either: ",
                                  older.status().message())));
  }
  std::fprintf(stderr,
               "shardgnn: warning: %s; resuming from the checkpoint before it, "
               "%s (epoch %d)\n",
               std::string(current.status().message()).c_str(),
               previous.c_str(), state->epoch);
  return true;
}

}  // namespace shardgnn::internal
