// GraphStoreClient's learned-embedding calls (graphstore/client.h): table
// creation, pulls and pushes (over the feature port when there is one),
// snapshots, restores and stats.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "graphstore/client.h"
#include "graphstore/internal/client_impl.h"
#include "graphstore/internal/embedding_service.h"
#include "graphstore/internal/wire.h"

namespace shardgnn {

// A snapshot or a restore reads or writes a whole table part on disk.
constexpr absl::Duration kEmbeddingSnapshotTimeout = absl::Minutes(10);

absl::Status GraphStoreClient::CreateEmbeddingTable(
    const EmbeddingTableConfig& config, int restore_epoch,
    int64_t restore_step) {
  proto::CreateEmbeddingTableRequest req;
  internal::SpecFromConfig(config, req.mutable_spec());
  req.set_run_secret(config.run_secret);
  std::optional<absl::Duration> timeout;
  if (restore_epoch >= 0) {
    req.set_restore(true);
    req.set_restore_epoch(restore_epoch);
    req.set_restore_step(restore_step);
    timeout = kEmbeddingSnapshotTimeout;
  }
  proto::CreateEmbeddingTableResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "CreateEmbeddingTable", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->CreateEmbeddingTable(c, q, r);
      },
      timeout));
  if (!resp.run_secret_checked()) {
    // Its tables would answer anyone with the token and the run ID.
    return impl_->CallError(
        absl::StatusCode::kFailedPrecondition, "CreateEmbeddingTable",
        "the server does not check run secrets (it is older than this "
        "client): any client with the cluster's token could read and write "
        "the run's learned rows there; update the server's shardgnn");
  }
  const internal::ShardBounds b = impl_->bounds();
  if (b.known &&
      (resp.node_start() != b.node_start || resp.node_end() != b.node_end)) {
    return impl_->Checked("CreateEmbeddingTable",
                          absl::DataLossError(absl::StrCat(
                              "the table holds rows [", resp.node_start(), ", ",
                              resp.node_end(), "), not the shard's nodes [",
                              b.node_start, ", ", b.node_end, ")")));
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphStoreClient::EmbeddingSnapshotInfo>
GraphStoreClient::SnapshotEmbeddings(const EmbeddingTableConfig& table,
                                     int epoch, int64_t step) {
  proto::SnapshotEmbeddingsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  req.set_run_secret(table.run_secret);
  req.set_epoch(epoch);
  req.set_step(step);
  proto::SnapshotEmbeddingsResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "SnapshotEmbeddings", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->SnapshotEmbeddings(c, q, r);
      },
      kEmbeddingSnapshotTimeout));
  if (resp.rows() < 0 || resp.bytes() < 0 || !(resp.seconds() >= 0)) {
    return impl_->Checked(
        "SnapshotEmbeddings",
        absl::DataLossError(absl::StrCat("answer has ", resp.rows(), " rows, ",
                                         resp.bytes(), " bytes, ",
                                         resp.seconds(), " seconds")));
  }
  return EmbeddingSnapshotInfo{resp.rows(), resp.bytes(), resp.seconds()};
}

absl::Status GraphStoreClient::PullEmbeddings(const EmbeddingTableConfig& table,
                                              absl::Span<const NodeId> ids,
                                              int64_t step, int staleness,
                                              absl::Duration wait, float* out,
                                              absl::Span<const size_t> rows) {
  if (!rows.empty() && rows.size() != ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PullEmbeddings: ", rows.size(), " row positions for ",
                     ids.size(), " IDs"));
  }
  if (std::shared_ptr<internal::FeaturePortClient> port =
          FeaturePortForCall()) {
    internal::FeaturePortClient::PullSpec spec;
    spec.table = table.name;
    spec.run_id = table.run_id;
    spec.run_secret = table.run_secret;
    spec.dim = table.dim;
    spec.step = step;
    spec.staleness = staleness;
    spec.max_wait = wait;
    bool transport_failed = false;
    absl::Status s = port->Pull(
        spec, ids, out, rows.empty() ? nullptr : rows.data(),
        absl::Now() + wait + impl_->options().call_timeout, &transport_failed);
    if (s.ok()) return s;
    if (!transport_failed) {
      return impl_->CallError(s.code(), "PullEmbeddings", s.message());
    }
    // Unreachable port: gRPC, as for GetFeatures. One that does not serve
    // pulls (an older server) still serves features.
    if (!absl::IsUnimplemented(s)) impl_->DropFeaturePort(port.get());
  }
  proto::PullEmbeddingsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  req.set_run_secret(table.run_secret);
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  req.set_step(step);
  req.set_staleness(staleness);
  if (wait > absl::ZeroDuration()) {
    req.set_max_wait_ms(std::max<int64_t>(1, absl::ToInt64Milliseconds(wait)));
  }
  proto::PullEmbeddingsResponse resp;
  RETURN_IF_ERROR(impl_->Call(
      "PullEmbeddings", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->PullEmbeddings(c, q, r);
      },
      wait + impl_->options().call_timeout));
  const size_t expected = ids.size() * static_cast<size_t>(table.dim);
  if (resp.dim() != table.dim ||
      resp.rows().size() != expected * sizeof(float)) {
    return impl_->Checked(
        "PullEmbeddings",
        absl::DataLossError(absl::StrCat(
            "answer has ", resp.rows().size(), " bytes of rows of dimension ",
            resp.dim(), " for ", ids.size(), " IDs of dimension ", table.dim)));
  }
  if (rows.empty()) {
    if (expected > 0)
      std::memcpy(out, resp.rows().data(), expected * sizeof(float));
    return absl::OkStatus();
  }
  const size_t width = static_cast<size_t>(table.dim);
  const auto* received = reinterpret_cast<const float*>(resp.rows().data());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::memcpy(out + rows[i] * width, received + i * width,
                width * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status GraphStoreClient::PushEmbeddingGradients(
    const EmbeddingTableConfig& table, int trainer, int64_t step,
    absl::Span<const NodeId> ids, absl::Span<const float> gradients) {
  if (std::shared_ptr<internal::FeaturePortClient> port =
          FeaturePortForCall()) {
    internal::FeaturePortClient::PushSpec spec;
    spec.table = table.name;
    spec.run_id = table.run_id;
    spec.run_secret = table.run_secret;
    spec.trainer = trainer;
    spec.step = step;
    bool transport_failed = false;
    absl::Status s = port->Push(spec, ids, gradients,
                                absl::Now() + impl_->options().call_timeout,
                                &transport_failed);
    if (s.ok()) return s;
    if (!transport_failed) {
      return impl_->CallError(s.code(), "PushEmbeddingGradients", s.message());
    }
    // As for pulls: gRPC, and the port dropped unless it is merely older.
    if (!absl::IsUnimplemented(s)) impl_->DropFeaturePort(port.get());
  }
  proto::PushEmbeddingGradientsRequest req;
  req.set_table(table.name);
  req.set_run_id(table.run_id);
  req.set_run_secret(table.run_secret);
  req.set_trainer(trainer);
  req.set_step(step);
  wire::Pack<NodeId>(ids, req.mutable_node_ids());
  wire::Pack<float>(gradients, req.mutable_gradients());
  proto::PushEmbeddingGradientsResponse resp;
  return impl_->Call(
      "PushEmbeddingGradients", req, &resp,
      [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
        return s->PushEmbeddingGradients(c, q, r);
      });
}

absl::StatusOr<std::vector<GraphStoreClient::EmbeddingServerStats>>
GraphStoreClient::EmbeddingStats() {
  proto::EmbeddingStatsResponse resp;
  RETURN_IF_ERROR(
      impl_->Call("EmbeddingStats", proto::EmbeddingStatsRequest(), &resp,
                  [](Stub* s, grpc::ClientContext* c, const auto& q, auto* r) {
                    return s->EmbeddingStats(c, q, r);
                  }));
  std::vector<EmbeddingServerStats> out;
  for (const auto& t : resp.tables()) {
    EmbeddingServerStats e;
    e.name = t.name();
    e.dim = t.dim();
    e.stats.rows_pulled = t.rows_pulled();
    e.stats.rows_pushed = t.rows_pushed();
    e.stats.pulls = t.pulls();
    e.stats.pushes = t.pushes();
    e.stats.rows_touched = t.rows_touched();
    e.stats.pull_wait_seconds = t.pull_wait_seconds();
    e.stats.staleness_sum = t.staleness_sum();
    e.applied_steps = t.applied_steps();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace shardgnn
