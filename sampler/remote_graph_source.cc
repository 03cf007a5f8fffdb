#include "sampler/remote_graph_source.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "sampler/internal/connect.h"
#include "sampler/internal/remote_calls.h"

namespace shardgnn {

using internal::CallIds;
using internal::ForEachChunk;

namespace {

// The server's shared feature matrix, mapped, if it offers one on this machine
// that is sealed and whose header agrees with the shard it reported; else
// null (use calls). A region on this machine that fails a check is a line on
// stderr: that part's features then cost calls, and a region not sealed
// against writes is a server (or a process) to look at.
std::unique_ptr<SharedRegion> MapSharedFeatures(const ServerInfo& info,
                                                const std::string& address) {
  if (!info.shared_features.has_value()) return nullptr;
  // Another machine: nothing to map, nothing to say.
  if (info.shared_features->boot_id != BootId()) return nullptr;
  auto refuse = [&](absl::string_view why) -> std::unique_ptr<SharedRegion> {
    std::fprintf(stderr,
                 "shardgnn: warning: not mapping the feature matrix %s offers "
                 "in shared memory (%s); its features come over the network\n",
                 address.c_str(), std::string(why).c_str());
    return nullptr;
  };
  auto region = SharedRegion::MapPeer(*info.shared_features);
  if (!region.ok()) return refuse(region.status().message());
  const ShardMeta& m = info.meta;
  const int64_t rows = m.node_end - m.node_start;
  const SharedRegionHeader& h = (*region)->header();
  if (h.words[0] != m.node_start || h.words[1] != rows ||
      h.words[2] != m.feature_dim ||
      (*region)->payload_bytes() <
          static_cast<uint64_t>(rows) * m.feature_dim * sizeof(float)) {
    return refuse(absl::StrCat("its header describes rows [", h.words[0], ", +",
                               h.words[1], ") of ", h.words[2],
                               " floats, not the shard's"));
  }
  return std::move(*region);
}

// Whether `s` refuses a SampleNeighbors answer for its size: the server's
// per-call cap (serve --max-sampled-per-call) or message limit
// (graphstore/server.cc), or this client's receive limit (gRPC).
bool AnswerTooLarge(const absl::Status& s) {
  if (!absl::IsResourceExhausted(s)) return false;
  const absl::string_view m = s.message();
  return absl::StrContains(m, "--max-sampled-per-call") ||
         absl::StrContains(m, "message limit") ||
         absl::StrContains(m, "larger than max");
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteGraphSource>> RemoteGraphSource::Connect(
    const std::vector<std::string>& addresses,
    const RemoteGraphSourceOptions& options) {
  if (addresses.empty())
    return absl::InvalidArgumentError("no storage server addresses given");
  if (options.max_sampled_per_call < 1 || options.max_ids_per_call < 1) {
    return absl::InvalidArgumentError(
        "RemoteGraphSourceOptions: max_sampled_per_call and max_ids_per_call "
        "must be >= 1");
  }
  ASSIGN_OR_RETURN(internal::ReachedServers found,
                   internal::ReachServers(addresses, options));
  const int num_parts = static_cast<int>(found.replicas.size());
  auto book = PartitionBook::Create(std::move(found.ranges));
  if (!book.ok()) return book.status();
  // Every part has its servers: num_parts <= addresses.size().
  internal::ReplicaSetOptions set_options;
  set_options.server_wait = options.server_wait;
  set_options.probe_interval = options.probe_interval;
  set_options.hedge_after = options.hedge_after;
  set_options.hedge_adaptive = options.hedge_adaptive;
  set_options.hedge_floor = options.hedge_floor;
  std::vector<std::unique_ptr<internal::ReplicaSet>> parts(num_parts);
  std::vector<std::unique_ptr<SharedRegion>> shared(num_parts);
  for (int p = 0; p < num_parts; ++p) {
    if (options.use_shared_memory) {
      // A co-located replica's matrix. The mapping outlives that server (the
      // memory is sealed and stays while mapped), so it keeps serving rows
      // that every replica holds alike after that server dies.
      shared[p] = MapSharedFeatures(found.infos[p],
                                    found.replicas[p].front()->address());
    }
    // A slot for each server left out: any of them may turn out to serve
    // this part when it answers.
    parts[p] = std::make_unique<internal::ReplicaSet>(
        p, found.infos[p].meta, std::move(found.replicas[p]), set_options,
        found.unreached.size());
  }
  const ShardMeta& meta = found.infos[0].meta;
  std::unique_ptr<GraphSchema> schema;
  if (meta.typed()) {
    // Every part names the same types; each its own type ranges.
    std::vector<std::vector<NodeId>> starts;
    for (int p = 0; p < num_parts; ++p) {
      const ShardMeta& m = found.infos[p].meta;
      const std::string address = parts[p]->addresses();
      if (m.node_types.size() != meta.node_types.size() ||
          m.edge_types.size() != meta.edge_types.size() ||
          m.label_columns != meta.label_columns) {
        return absl::DataLossError(
            absl::StrCat(address, ": serves part ", p,
                         " with other node types, relations "
                         "or label columns than part 0's server"));
      }
      for (size_t t = 0; t < m.node_types.size(); ++t) {
        if (m.node_types[t].name != meta.node_types[t].name ||
            m.node_types[t].feature_dim != meta.node_types[t].feature_dim) {
          return absl::DataLossError(absl::StrCat(
              address, ": node type ", t, " is ", m.node_types[t].name,
              ", part 0's server says ", meta.node_types[t].name));
        }
      }
      for (size_t r = 0; r < m.edge_types.size(); ++r) {
        if (EdgeTypeKey(m.edge_types[r]) != EdgeTypeKey(meta.edge_types[r])) {
          return absl::DataLossError(absl::StrCat(
              address, ": relation ", r, " is ", EdgeTypeKey(m.edge_types[r]),
              ", part 0's server says ", EdgeTypeKey(meta.edge_types[r])));
        }
      }
      starts.push_back(m.type_starts);
    }
    auto built =
        GraphSchema::FromParts(meta.node_types, meta.edge_types, starts);
    if (!built.ok()) {
      return absl::DataLossError(
          absl::StrCat("the servers' node type ranges do not fit together: ",
                       built.status().message()));
    }
    schema = std::make_unique<GraphSchema>(*std::move(built));
    // Typed rows are read through calls (per-type widths).
    for (auto& region : shared) region.reset();
  }
  auto source = std::unique_ptr<RemoteGraphSource>(new RemoteGraphSource(
      std::move(*book), std::move(parts), std::move(shared), meta.feature_dim,
      meta.num_classes, found.partition_id, options));
  source->schema_ = std::move(schema);
  source->label_columns_ = meta.label_columns;
  for (internal::UnreachedServer& server : found.unreached) {
    std::fprintf(stderr,
                 "shardgnn: warning: storage server %s did not answer (%s); "
                 "going on without it: the other servers cover every part. "
                 "It joins as a replica once it answers\n",
                 server.address.c_str(), server.why.c_str());
    source->left_out_.push_back({std::move(server.address),
                                 std::move(server.why),
                                 std::move(server.client)});
  }
  if (!source->left_out_.empty()) {
    source->recruiter_ =
        std::thread([s = source.get(), interval = options.probe_interval] {
          s->RecruitLoop(interval);
        });
  }
  return source;
}

RemoteGraphSource::RemoteGraphSource(
    PartitionBook book,
    std::vector<std::unique_ptr<internal::ReplicaSet>> parts,
    std::vector<std::unique_ptr<SharedRegion>> shared, int64_t feature_dim,
    int64_t num_classes, std::string partition_id,
    const RemoteGraphSourceOptions& options)
    : book_(std::move(book)),
      parts_(std::move(parts)),
      shared_(std::move(shared)),
      feature_dim_(feature_dim),
      num_classes_(num_classes),
      partition_id_(std::move(partition_id)),
      max_sampled_per_call_(options.max_sampled_per_call),
      max_ids_per_call_(options.max_ids_per_call),
      max_feature_ids_per_call_(std::max<int64_t>(
          1, std::min<int64_t>(
                 options.max_ids_per_call,
                 options.client.max_message_bytes / 2 /
                     std::max<int64_t>(1, feature_dim * static_cast<int64_t>(
                                                            sizeof(float)))))) {
}

RemoteGraphSource::~RemoteGraphSource() {
  {
    std::lock_guard<std::mutex> lock(left_out_mu_);
    stop_recruiting_ = true;
  }
  left_out_changed_.notify_all();
  if (recruiter_.joinable()) recruiter_.join();
}

std::vector<std::pair<std::string, std::string>> RemoteGraphSource::unreached()
    const {
  std::lock_guard<std::mutex> lock(left_out_mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const LeftOut& s : left_out_) {
    if (!s.joined) out.emplace_back(s.address, s.why);
  }
  return out;
}

RemoteGraphSource::ReplicaMask RemoteGraphSource::InitialReplicas() const {
  ReplicaMask mask;
  for (const auto& part : parts_)
    mask.emplace_back(part->initial_size(), false);
  return mask;
}

void RemoteGraphSource::RecruitLoop(absl::Duration probe_interval) {
  std::unique_lock<std::mutex> lock(left_out_mu_);
  while (true) {
    left_out_changed_.wait_for(lock, absl::ToChronoNanoseconds(probe_interval),
                               [&] { return stop_recruiting_; });
    if (stop_recruiting_) return;
    bool any_left = false;
    // Only this thread adds to or removes from left_out_, and the clients are
    // its own: the entries stay in place while it probes without the lock.
    for (LeftOut& server : left_out_) {
      if (server.client == nullptr) continue;
      lock.unlock();
      const bool joined = TryRecruit(&server);
      lock.lock();
      if (stop_recruiting_) return;
      any_left = any_left || !joined;
    }
    if (!any_left) return;  // Every one joined (or was given up on).
  }
}

bool RemoteGraphSource::TryRecruit(LeftOut* server) {
  GraphStoreClient& client = *server->client;
  // As a replica set probes a down replica.
  absl::Status s = client.ProbeServing(
      absl::Now() + internal::ReplicaSetOptions().probe_timeout);
  bool answered = false;  // With something this run cannot use.
  int part = -1;
  if (s.ok()) {
    absl::StatusOr<ServerInfo> info = client.Info();
    if (!info.ok()) {
      s = info.status();
    } else {
      answered = true;
      const ShardMeta& m = info->meta;
      const int num_parts = book_.num_parts();
      if (m.partition_id != partition_id_ || m.num_parts != num_parts ||
          m.part_id < 0 || m.part_id >= num_parts) {
        s = absl::FailedPreconditionError(absl::StrCat(
            server->address, " serves part ", m.part_id, " of partition ",
            m.partition_id, " (", m.num_parts, " parts), not this run's ",
            partition_id_, " (", num_parts, " parts)"));
      } else {
        part = m.part_id;
        s = parts_[static_cast<size_t>(part)]->Join(&server->client, m);
      }
    }
  }
  std::lock_guard<std::mutex> lock(left_out_mu_);
  if (s.ok()) {
    server->joined = true;
    std::fprintf(stderr,
                 "shardgnn: storage server %s answers now: it joins part %d "
                 "as a replica (%d of the part's servers)\n",
                 server->address.c_str(), part, num_replicas(part));
    return true;
  }
  const std::string why(s.message());
  if (answered && why != server->why) {
    std::fprintf(stderr,
                 "shardgnn: warning: storage server %s answers but is not "
                 "used: %s\n",
                 server->address.c_str(), why.c_str());
  }
  server->why = why;
  // An address given twice: the other one joined; nothing to wait for.
  if (absl::IsAlreadyExists(s)) server->client.reset();
  return false;
}

absl::Status RemoteGraphSource::Group(absl::Span<const NodeId> nodes,
                                      Groups* groups) const {
  RETURN_IF_ERROR(internal::GroupByOwner(book_, nodes, groups));
  const int k = book_.num_parts();
  for (int p = 0; p < k; ++p) {
    if (!groups->ids(p).empty()) {
      ++requests_;
      ids_sent_ += static_cast<int64_t>(groups->ids(p).size());
    }
  }
  return absl::OkStatus();
}

absl::Status RemoteGraphSource::ForEachPart(
    const Groups& groups, const std::function<absl::Status(int)>& fn,
    bool all_parts) const {
  std::vector<int> parts;
  for (int p = 0; p < book_.num_parts(); ++p) {
    if (all_parts || !groups.ids(p).empty()) parts.push_back(p);
  }
  // One request per part in flight at once; the calling thread serves the last
  // part itself.
  return workers_.ForEach(parts.size(), [&](size_t i) { return fn(parts[i]); });
}

absl::Status RemoteGraphSource::SampleNeighbors(absl::Span<const NodeId> nodes,
                                                int fanout, bool replace,
                                                uint64_t seed,
                                                SampledNeighbors* out) const {
  internal::ThreadOwnerGroups groups;
  RETURN_IF_ERROR(Group(nodes, groups.get()));
  std::vector<SampledNeighbors> answers(book_.num_parts());
  absl::Status s = ForEachPart(*groups, [&](int p) -> absl::Status {
    return SamplePart(p, groups->ids(p), fanout, replace, seed, &answers[p]);
  });
  if (s.ok()) {
    // Merge back into request order: the nodes of each part were asked for
    // in that order, so each part's answer is read front to back.
    size_t total = 0;
    for (const SampledNeighbors& a : answers) total += a.neighbors.size();
    neighbor_bytes_ += static_cast<int64_t>(total * sizeof(NodeId));
    out->counts.resize(nodes.size());
    ReserveWithHeadroom(&out->neighbors, total);
    out->neighbors.resize(total);
    std::vector<size_t> next(answers.size(), 0), at(answers.size(), 0);
    NodeId* to = out->neighbors.data();
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int p = groups->owner(i);
      const int64_t count = answers[p].counts[next[p]++];
      out->counts[i] = count;
      std::memcpy(to, answers[p].neighbors.data() + at[p],
                  static_cast<size_t>(count) * sizeof(NodeId));
      to += count;
      at[p] += static_cast<size_t>(count);
    }
  }
  // (Parts not asked have no buffers to keep.)
  for (SampledNeighbors& a : answers) {
    if (a.neighbors.capacity() > 0) answers_->Give(std::move(a));
  }
  return s;
}

absl::Status RemoteGraphSource::SamplePart(int p, absl::Span<const NodeId> ids,
                                           int fanout, bool replace,
                                           uint64_t seed,
                                           SampledNeighbors* out) const {
  // Node v's sample depends only on (seed, v) (common/sampling.h): every
  // chunk gets the same seed, and the chunks' answers, concatenated, are the
  // answer to one call.
  int64_t chunk = max_ids_per_call_;
  if (fanout > 0) {
    chunk =
        std::min(chunk, std::max<int64_t>(1, max_sampled_per_call_ / fanout));
  }
  int64_t calls = 0;
  absl::Status s = ForEachChunk(
      ids.size(), static_cast<size_t>(chunk), [&](size_t start, size_t n) {
        return SampleChunk(p, ids.subspan(start, n), fanout, replace, seed, out,
                           &calls);
      });
  // Group() counted one request for the part.
  if (calls > 1) requests_ += calls - 1;
  return s;
}

absl::Status RemoteGraphSource::SampleChunk(int p, absl::Span<const NodeId> ids,
                                            int fanout, bool replace,
                                            uint64_t seed,
                                            SampledNeighbors* out,
                                            int64_t* calls) const {
  ++*calls;
  const internal::ReplicaSet& set = *parts_[p];
  const bool hedge = set.ShouldHedge();
  std::string address;  // Of the replica that answered.
  // The most neighbors the answer may hold: the kept buffer that holds that
  // many, so that the large answers (the last layer's) get the large buffers.
  const size_t most = static_cast<size_t>(
      fanout > 0 ? std::min<int64_t>(static_cast<int64_t>(ids.size()) * fanout,
                                     max_sampled_per_call_)
                 : max_sampled_per_call_);
  // A hedged call's losing attempt gives its buffer back when it ends.
  using Answer = Pooled<SampledNeighbors>;
  absl::StatusOr<Answer> answer = set.Call<Answer>(
      [call_ids = CallIds(ids, hedge), fanout, replace, seed, most,
       pool = answers_](GraphStoreClient& c) -> absl::StatusOr<Answer> {
        // A count per ID is checked by the client (DecodeSampled).
        Answer answer(pool,
                      pool->TakeFitting(most, [](const SampledNeighbors& a) {
                        return a.neighbors.capacity();
                      }));
        RETURN_IF_ERROR(
            c.SampleNeighbors(call_ids.span, fanout, replace, seed, &*answer));
        return answer;
      },
      hedge, &address);
  if (!answer.ok()) {
    const absl::Status& called = answer.status();
    if (!AnswerTooLarge(called)) return called;
    if (ids.size() == 1) {
      absl::string_view why = called.message();
      absl::ConsumePrefix(&why, absl::StrCat(address, ": "));
      return absl::ResourceExhaustedError(absl::StrCat(
          address, ": node ", ids[0],
          " alone has more sampled neighbors than one answer may hold (", why,
          "); start that server with a larger --max-sampled-per-call, or ",
          fanout < 0 ? "sample with a finite fanout"
                     : absl::StrCat("sample with a fanout below ", fanout)));
    }
    // Too large an answer: ask for each half separately.
    const size_t half = ids.size() / 2;
    RETURN_IF_ERROR(
        SampleChunk(p, ids.first(half), fanout, replace, seed, out, calls));
    return SampleChunk(p, ids.subspan(half), fanout, replace, seed, out, calls);
  }
  if (out->counts.empty() && out->neighbors.empty()) {
    *out = answer->Release();  // The whole part in one call: no copy.
    return absl::OkStatus();
  }
  const SampledNeighbors& got = **answer;
  out->counts.insert(out->counts.end(), got.counts.begin(), got.counts.end());
  out->neighbors.insert(out->neighbors.end(), got.neighbors.begin(),
                        got.neighbors.end());
  return absl::OkStatus();  // *answer goes back to the pool.
}

absl::Status RemoteGraphSource::FetchFeatures(absl::Span<const NodeId> nodes,
                                              float* out) const {
  return Fetch(nodes, {}, out);
}

absl::Status RemoteGraphSource::ScatterFeatures(absl::Span<const NodeId> nodes,
                                                absl::Span<const size_t> rows,
                                                float* out) const {
  return Fetch(nodes, rows, out);
}

absl::Status RemoteGraphSource::Fetch(absl::Span<const NodeId> nodes,
                                      absl::Span<const size_t> rows,
                                      float* out) const {
  const size_t chunk = static_cast<size_t>(max_feature_ids_per_call_);
  if (nodes.size() <= chunk) return FetchChunk(nodes, rows, out);
  // Every part's share of a chunk is within the bound too.
  return ForEachChunk(nodes.size(), chunk, [&](size_t start, size_t n) {
    return rows.empty()
               ? FetchChunk(nodes.subspan(start, n), {},
                            out + start * static_cast<size_t>(feature_dim_))
               : FetchChunk(nodes.subspan(start, n), rows.subspan(start, n),
                            out);
  });
}

absl::Status RemoteGraphSource::FetchChunk(absl::Span<const NodeId> nodes,
                                           absl::Span<const size_t> rows,
                                           float* out) const {
  internal::ThreadOwnerGroups groups;
  RETURN_IF_ERROR(Group(nodes, groups.get()));
  const int64_t dim = feature_dim_;
  return ForEachPart(*groups, [&](int p) -> absl::Status {
    const absl::Span<const size_t> positions = groups->positions(p);
    const absl::Span<const NodeId> ids = groups->ids(p);
    const int64_t bytes =
        static_cast<int64_t>(positions.size() * dim * sizeof(float));
    // Where the j-th row of this part goes in `out`, in rows.
    auto dest = [&](size_t j) {
      return rows.empty() ? positions[j] : rows[positions[j]];
    };
    if (shared_[p] != nullptr) {
      // A co-located server's matrix: copy the rows from the mapping.
      const float* base = reinterpret_cast<const float*>(shared_[p]->payload());
      const NodeId first = book_.Range(p).start;
      for (size_t j = 0; j < positions.size(); ++j) {
        std::memcpy(out + dest(j) * dim,
                    base + static_cast<size_t>(ids[j] - first) * dim,
                    dim * sizeof(float));
      }
      shared_feature_bytes_ += bytes;
      return absl::OkStatus();
    }
    absl::Status s;
    const internal::ReplicaSet& set = *parts_[p];
    if (set.ShouldHedge()) {
      // Each attempt fills rows of its own, from a pool it shares (a losing
      // attempt may end after this call); the winner's are scattered.
      using Rows = Pooled<std::vector<float>>;
      const size_t floats = ids.size() * static_cast<size_t>(dim);
      auto got = set.Call<Rows>(
          [call_ids = CallIds(ids, true), dim, floats,
           pool = hedged_rows_](GraphStoreClient& c) -> absl::StatusOr<Rows> {
            Rows rows(pool, pool->TakeFitting(floats,
                                              [](const std::vector<float>& r) {
                                                return r.size();
                                              }));
            // Kept at its largest size: not zeroed again.
            if (rows->size() < floats) rows->resize(floats);
            RETURN_IF_ERROR(c.GetFeatures(call_ids.span, dim, rows->data()));
            return rows;
          },
          /*hedge=*/true);
      s = got.status();
      if (s.ok()) {
        const float* rows = (*got)->data();
        for (size_t j = 0; j < positions.size(); ++j) {
          std::memcpy(out + dest(j) * dim, rows + j * dim, dim * sizeof(float));
        }
      }
    } else if (rows.empty() && positions.size() == nodes.size()) {
      // One part owns every requested node, in order: rows land contiguously.
      s = parts_[p]->Run(
          [&](GraphStoreClient& c) { return c.GetFeatures(ids, dim, out); });
    } else {
      // The client scatters straight from the received buffer.
      // Kept with the grouping (room for every node: no fresh pages).
      const absl::Span<size_t> where = groups->where(p);
      for (size_t j = 0; j < positions.size(); ++j) where[j] = dest(j);
      s = parts_[p]->Run([&](GraphStoreClient& c) {
        return c.GetFeatures(ids, dim, out, where);
      });
    }
    if (s.ok()) feature_bytes_ += bytes;
    return s;
  });
}

absl::Status RemoteGraphSource::FetchLabels(absl::Span<const NodeId> nodes,
                                            int64_t* out) const {
  return FetchPerNode(nodes, "labels", -1, &GraphStoreClient::GetLabels,
                      label_columns_, out);
}

absl::Status RemoteGraphSource::FetchDegrees(absl::Span<const NodeId> nodes,
                                             int64_t* out) const {
  return FetchPerNode(nodes, "degrees", 0, &GraphStoreClient::GetDegrees,
                      /*columns=*/1, out);
}

absl::Status RemoteGraphSource::FetchPerNode(
    absl::Span<const NodeId> nodes, const char* what, int64_t min_value,
    absl::StatusOr<std::vector<int64_t>> (GraphStoreClient::*call)(
        absl::Span<const NodeId>),
    int64_t columns, int64_t* out) const {
  const size_t chunk = static_cast<size_t>(max_ids_per_call_);
  const auto width = static_cast<size_t>(columns);
  if (nodes.size() > chunk) {
    return ForEachChunk(nodes.size(), chunk, [&](size_t start, size_t n) {
      return FetchPerNode(nodes.subspan(start, n), what, min_value, call,
                          columns, out + start * width);
    });
  }
  internal::ThreadOwnerGroups groups;
  RETURN_IF_ERROR(Group(nodes, groups.get()));
  return ForEachPart(*groups, [&](int p) -> absl::Status {
    const absl::Span<const size_t> positions = groups->positions(p);
    const internal::ReplicaSet& set = *parts_[p];
    const bool hedge = set.ShouldHedge();
    // Checked in the attempt, so that a bad answer fails over.
    auto values = set.Call<std::vector<int64_t>>(
        [call_ids = CallIds(groups->ids(p), hedge), what, min_value, call,
         width](GraphStoreClient& c) -> absl::StatusOr<std::vector<int64_t>> {
          const absl::Span<const NodeId> ids = call_ids.span;
          auto values = (c.*call)(ids);
          if (!values.ok()) return values.status();
          if (values->size() != ids.size() * width) {
            return absl::DataLossError(absl::StrCat(
                c.address(), ": answered ", values->size(), " ", what, " for ",
                ids.size(), " nodes", width > 1 ? " of " : "",
                width > 1 ? absl::StrCat(width, " columns") : ""));
          }
          for (size_t j = 0; j < values->size(); ++j) {
            if ((*values)[j] < min_value) {
              return absl::DataLossError(
                  absl::StrCat(c.address(), ": answered ", what, " ",
                               (*values)[j], " for node ", ids[j / width]));
            }
          }
          return values;
        },
        hedge);
    if (!values.ok()) return values.status();
    for (size_t j = 0; j < positions.size(); ++j) {
      std::memcpy(out + positions[j] * width, values->data() + j * width,
                  width * sizeof(int64_t));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<NodeId>> RemoteGraphSource::FetchSplit(
    const std::string& split) const {
  std::vector<NodeId> all;
  for (const auto& part : parts_) {
    auto get = [split](GraphStoreClient& c) { return c.GetSplit(split); };
    ASSIGN_OR_RETURN(std::vector<NodeId> ids,
                     part->Call<std::vector<NodeId>>(get, part->ShouldHedge()));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  return all;
}

absl::StatusOr<std::vector<int64_t>> RemoteGraphSource::FetchAllDegrees()
    const {
  std::vector<int64_t> degrees;
  degrees.reserve(static_cast<size_t>(book_.num_nodes()));
  const int64_t kChunk = std::min<int64_t>(1 << 18, max_ids_per_call_);
  std::vector<NodeId> ids;
  for (int p = 0; p < book_.num_parts(); ++p) {
    NodeRange range = book_.Range(p);
    for (NodeId start = range.start; start < range.end; start += kChunk) {
      NodeId end = std::min(range.end, start + kChunk);
      ids.resize(static_cast<size_t>(end - start));
      for (NodeId v = start; v < end; ++v) ids[v - start] = v;
      const bool hedge = parts_[p]->ShouldHedge();
      ASSIGN_OR_RETURN(
          std::vector<int64_t> d,
          parts_[p]->Call<std::vector<int64_t>>(
              [call_ids = CallIds(ids, hedge)](GraphStoreClient& c) {
                return c.GetDegrees(call_ids.span);
              },
              hedge));
      degrees.insert(degrees.end(), d.begin(), d.end());
    }
  }
  return degrees;
}

RemoteStats RemoteGraphSource::stats() const {
  RemoteStats stats;
  stats.requests = requests_.load();
  stats.ids_sent = ids_sent_.load();
  stats.neighbor_bytes = neighbor_bytes_.load();
  stats.feature_bytes = feature_bytes_.load();
  stats.shared_feature_bytes = shared_feature_bytes_.load();
  for (const auto& part : parts_) {
    stats.failovers += part->failovers();
    stats.hedges_sent += part->hedges_sent();
    stats.hedges_won += part->hedges_won();
  }
  return stats;
}

absl::Status RemoteGraphSource::ForEachOwner(absl::Span<const NodeId> nodes,
                                             bool all_parts,
                                             const OwnerCall& fn,
                                             const ReplicaMask* skip) const {
  internal::ThreadOwnerGroups kept;
  RETURN_IF_ERROR(Group(nodes, kept.get()));
  Groups& groups = *kept;
  auto run = [&](int p) -> absl::Status {
    const internal::ReplicaSet& set = *parts_[static_cast<size_t>(p)];
    return set.Run(
        [&](GraphStoreClient& server) -> absl::Status {
          return fn(p, set.IndexOf(server), server, groups.ids(p),
                    groups.positions(p));
        },
        skip != nullptr ? &(*skip)[static_cast<size_t>(p)] : nullptr);
  };
  return ForEachPart(groups, run, all_parts);
}

absl::Status RemoteGraphSource::ForEachReplica(absl::Span<const NodeId> nodes,
                                               const OwnerCall& fn,
                                               const ReplicaMask* skip) const {
  internal::ThreadOwnerGroups kept;
  RETURN_IF_ERROR(Group(nodes, kept.get()));
  Groups& groups = *kept;
  auto run = [&](int p) -> absl::Status {
    const internal::ReplicaSet& set = *parts_[static_cast<size_t>(p)];
    for (size_t r = 0; r < set.size(); ++r) {
      // Past the end of the part's mask: joined after the mask was made.
      if (skip != nullptr && ((*skip)[static_cast<size_t>(p)].size() <= r ||
                              (*skip)[static_cast<size_t>(p)][r])) {
        continue;
      }
      RETURN_IF_ERROR(fn(p, static_cast<int>(r), set.replica(r), groups.ids(p),
                         groups.positions(p)));
    }
    return absl::OkStatus();
  };
  return ForEachPart(groups, run, /*all_parts=*/true);
}

std::string RemoteGraphSource::address(int part) const {
  return parts_[static_cast<size_t>(part)]->addresses();
}

std::vector<internal::ReplicaState> RemoteGraphSource::replicas(
    int part) const {
  return parts_[static_cast<size_t>(part)]->states();
}

bool RemoteGraphSource::uses_feature_port(int part) const {
  return !reads_shared_memory(part) &&
         parts_[static_cast<size_t>(part)]->replica(0).UsesFeaturePort();
}

}  // namespace shardgnn
