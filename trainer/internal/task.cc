#include "trainer/internal/task.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trainer/internal/layerwise.h"

namespace shardgnn::internal {

BatchTensors ToTensors(MiniBatch& batch, ModelKind kind,
                       const InputTransform& transform, const InputRows* rows,
                       const GraphSchema* schema) {
  BatchTensors t;
  t.blocks = ToBlockTensors(batch, kind);
  if (!batch.input_types.empty()) {
    TORCH_CHECK(schema != nullptr, "a typed batch without its graph's schema");
    const auto i64 = torch::TensorOptions().dtype(torch::kLong);
    TypedInputs& in = t.typed;
    in.num_inputs = static_cast<int64_t>(batch.input_nodes.size());
    for (size_t type = 0; type < batch.type_inputs.size(); ++type) {
      std::vector<int64_t>& index = batch.type_inputs[type];
      const auto n = static_cast<int64_t>(index.size());
      in.index.push_back(torch::from_blob(index.data(), {n}, i64).clone());
      torch::Tensor local = torch::empty({n}, i64);
      int64_t* ids = local.data_ptr<int64_t>();
      for (int64_t k = 0; k < n; ++k)
        ids[k] = schema->LocalIndex(batch.input_nodes[index[k]]);
      in.local_ids.push_back(local);
      std::vector<float>& rows_of_type = batch.type_features[type];
      if (rows_of_type.empty() || n == 0) {
        in.features.emplace_back();
      } else {
        in.features.push_back(torch::from_blob(
            rows_of_type.data(),
            {n, static_cast<int64_t>(rows_of_type.size()) / n}, torch::kFloat));
      }
    }
    return t;
  }
  if (rows != nullptr && rows->ignore_features()) {
    t.x = rows->Input(torch::Tensor());
    return t;
  }
  t.x = torch::from_blob(
      batch.features.data(),
      {static_cast<int64_t>(batch.input_nodes.size()), batch.feature_dim},
      torch::kFloat);
  // In place: the batch's feature buffer is consumed once, and reusing it
  // spares a fresh input-sized tensor per step.
  ApplyInputTransform(transform, t.x);
  if (rows != nullptr) t.x = rows->Input(t.x);
  return t;
}

torch::Tensor ModelInput(GnnModel& model, const BatchTensors& t) {
  return t.x.defined() ? t.x : model.EncodeInputs(t.typed);
}

absl::StatusOr<InferResult> RunExactTest(
    const TaskContext& context, GnnModel& model, const ModelConfig& config,
    const std::map<std::string, std::vector<NodeId>>& splits,
    InferOptions infer) {
  const TrainOptions& o = *context.options;
  ModelConfig with_rows = config;
  if (context.rows != nullptr) {
    // The learned rows as the run ends (every training step's push applied,
    // as the update mode allows), as evaluation batches pull them.
    InputRows* rows = context.rows;
    with_rows.learned_dim = rows->dim();
    with_rows.ignore_features = rows->ignore_features();
    with_rows.learned_row_length =
        rows->row_length(context.source->feature_dim() > 0);
    infer.learned_rows = [rows](absl::Span<const NodeId> nodes, float* out) {
      return rows->rows()->Pull(nodes, rows->step(), out);
    };
  }
  infer.rank = o.rank;
  infer.world_size = o.world_size;
  infer.chunk_nodes = o.eval_batch_size;
  infer.torch_threads = o.torch_threads;
  if (o.on_test_progress) {
    o.on_test_progress(0, static_cast<int64_t>(config.model.num_layers) *
                              context.source->num_nodes());
    infer.on_progress = [&o](const InferProgress& p) {
      o.on_test_progress(
          static_cast<int64_t>(p.layer - 1) * p.rows + p.rows_done,
          static_cast<int64_t>(p.layers) * p.rows);
    };
  }
  infer.scratch_dir =
      !o.scratch_dir.empty()
          ? o.scratch_dir
          : (std::filesystem::temp_directory_path() /
             absl::StrCat("shardgnn-exact-", getpid(), "-", o.rank))
                .string();
  absl::StatusOr<InferResult> inferred = RunLayerwise(
      *context.source, model, with_rows, splits, infer, context.sync);
  // The directory too (a given one only if nothing else is in it).
  std::error_code ec;
  if (o.scratch_dir.empty()) {
    std::filesystem::remove_all(infer.scratch_dir, ec);
  } else {
    std::filesystem::remove(infer.scratch_dir, ec);
  }
  return inferred;
}

}  // namespace shardgnn::internal
