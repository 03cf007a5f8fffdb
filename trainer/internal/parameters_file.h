// A model's parameters by name, in the file format of Python's torch.save: a
// dict {"layers.0.lin_self.weight": tensor, ...} (torch::pickle_save), so that
// `torch.load("model.pt")` in Python returns it (docs/formats.md). Written
// whole (temporary name, then rename).
#ifndef SHARDGNN_TRAINER_INTERNAL_PARAMETERS_FILE_H_
#define SHARDGNN_TRAINER_INTERNAL_PARAMETERS_FILE_H_

#include <torch/torch.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn::internal {

// Writes `module`'s named parameters (their current values) to `path`.
absl::Status WriteParametersFile(const std::string& path,
                                 const torch::nn::Module& module);

// Copies the tensors of `path` into `module`'s parameters. The file must hold
// exactly the module's parameter names, each with the same shape (float32);
// otherwise INVALID_ARGUMENT naming the file and the first mismatch. A file
// that is not a pickled dict of tensors is DATA_LOSS naming it.
absl::Status ReadParametersFile(const std::string& path,
                                torch::nn::Module* module);

// ReadParametersFile in two steps, for a caller that checks what the file
// holds before building the module: the tensors of `path` by name (DATA_LOSS
// as above), then copied into `module` (INVALID_ARGUMENT as above, naming
// `path`).
absl::StatusOr<std::map<std::string, torch::Tensor>> ReadParametersDict(
    const std::string& path);
absl::Status CopyParameters(const std::map<std::string, torch::Tensor>& saved,
                            const std::string& path, torch::nn::Module* module);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_TRAINER_INTERNAL_PARAMETERS_FILE_H_
