#include "trainer/internal/parameters_file.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"

namespace shardgnn::internal {

absl::Status WriteParametersFile(const std::string& path,
                                 const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& named : module.named_parameters()) {
    dict.insert(named.key(), named.value().detach().contiguous());
  }
  std::vector<char> bytes;
  try {
    bytes = torch::pickle_save(dict);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(
        path,
        ": cannot serialise the parameters: ", e.what_without_backtrace()));
  }
  return WriteFileAtomic(path, std::string(bytes.begin(), bytes.end()));
}

absl::Status ReadParametersFile(const std::string& path,
                                torch::nn::Module* module) {
  ASSIGN_OR_RETURN(auto saved, ReadParametersDict(path));
  return CopyParameters(saved, path, module);
}

absl::StatusOr<std::map<std::string, torch::Tensor>> ReadParametersDict(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::map<std::string, torch::Tensor> saved;
  try {
    const c10::IValue value =
        torch::pickle_load(std::vector<char>(text.begin(), text.end()));
    if (!value.isGenericDict()) {
      return absl::DataLossError(absl::StrCat(
          path, ": not a dict of named tensors (as torch.save writes one)"));
    }
    for (const auto& entry : value.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) {
        return absl::DataLossError(
            absl::StrCat(path, ": an entry is not a name and a tensor"));
      }
      saved[entry.key().toStringRef()] = entry.value().toTensor();
    }
  } catch (const c10::Error& e) {
    return absl::DataLossError(
        absl::StrCat(path, ": cannot read: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat(path, ": cannot read: ", e.what()));
  }
  return saved;
}

absl::Status CopyParameters(const std::map<std::string, torch::Tensor>& saved,
                            const std::string& path,
                            torch::nn::Module* module) {
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing;
  size_t matched = 0;
  for (auto& named : module->named_parameters()) {
    auto it = saved.find(named.key());
    if (it == saved.end()) {
      missing.push_back(named.key());
      continue;
    }
    const torch::Tensor& t = it->second;
    if (t.scalar_type() != torch::kFloat ||
        t.sizes() != named.value().sizes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": parameter ", named.key(), " has shape [",
          absl::StrJoin(t.sizes(), ", "), "] (", c10::toString(t.scalar_type()),
          "); the model expects [", absl::StrJoin(named.value().sizes(), ", "),
          "] (float)"));
    }
    named.value().copy_(t);
    ++matched;
  }
  if (!missing.empty() || matched != saved.size()) {
    std::vector<std::string> extra;
    for (const auto& [name, t] : saved) {
      if (module->named_parameters().find(name) == nullptr)
        extra.push_back(name);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the parameters do not match the model (missing: ",
        missing.empty() ? "none" : absl::StrJoin(missing, ", "),
        "; unexpected: ", extra.empty() ? "none" : absl::StrJoin(extra, ", "),
        ")"));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
