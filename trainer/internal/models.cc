#include "trainer/internal/models.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/sampling.h"
#include "trainer/internal/csr_ops.h"

namespace shardgnn::internal {

InputTransform MakeInputTransform(const FeatureTransform& f) {
  InputTransform t;
  t.norm = f.norm;
  if (f.norm == FeatureNorm::kStandardize) {
    const auto dim = static_cast<int64_t>(f.shift.size());
    t.shift = torch::tensor(f.shift, torch::kFloat).view({1, dim});
    t.scale = torch::tensor(f.scale, torch::kFloat).view({1, dim});
  }
  return t;
}

void ApplyInputTransform(const InputTransform& transform, torch::Tensor& x) {
  switch (transform.norm) {
    case FeatureNorm::kNone:
      break;
    case FeatureNorm::kRow:
      x.div_(x.abs().sum(1, true).clamp_min(1e-12));
      break;
    case FeatureNorm::kRowL2:
      x.div_(RowLengths(x));
      break;
    case FeatureNorm::kStandardize:
      x.sub_(transform.shift).mul_(transform.scale);
      break;
  }
}

torch::Tensor RowLengths(const torch::Tensor& x) {
  return x.square().sum(1, true).sqrt_().clamp_min(1e-12);
}

torch::Tensor RowsOfLength(const torch::Tensor& x, double length) {
  return x / RowLengths(x) * length;
}

uint64_t SeedStream::Next() { return MixSeed(seed_, count_++); }

namespace {

// BlockTensors' relation fields of a typed block (a counting sort of the
// edges by relation, each relation's in their order).
void GroupByRelation(const Block& block, BlockTensors* t) {
  const int64_t num_edges = block.num_edges();
  int32_t max_relation = -1;
  for (int32_t r : block.relations) max_relation = std::max(max_relation, r);
  const int64_t relations = max_relation + 1;
  t->relation_ptr.assign(relations + 1, 0);
  for (int32_t r : block.relations) ++t->relation_ptr[r + 1];
  for (int64_t r = 0; r < relations; ++r)
    t->relation_ptr[r + 1] += t->relation_ptr[r];
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  t->rel_src = torch::empty({num_edges}, i64);
  t->rel_dst = torch::empty({num_edges}, i64);
  t->rel_norm = torch::empty({num_edges, 1}, torch::kFloat);
  int64_t* src = t->rel_src.data_ptr<int64_t>();
  int64_t* dst = t->rel_dst.data_ptr<int64_t>();
  float* norm = t->rel_norm.data_ptr<float>();
  std::vector<int64_t> cursor(t->relation_ptr.begin(),
                              t->relation_ptr.end() - 1);
  // Per destination and relation, its edges are one run of its row (rows
  // are built relation by relation): the run's length is the norm's count.
  for (int64_t i = 0; i < block.num_dst; ++i) {
    int64_t e = block.indptr[i];
    while (e < block.indptr[i + 1]) {
      const int32_t r = block.relations[e];
      int64_t run = e;
      while (run < block.indptr[i + 1] && block.relations[run] == r) ++run;
      const float inv = 1.0f / static_cast<float>(run - e);
      for (; e < run; ++e) {
        const int64_t k = cursor[r]++;
        src[k] = block.indices[e];
        dst[k] = i;
        norm[k] = inv;
      }
    }
  }
}

}  // namespace

std::vector<BlockTensors> ToBlockTensors(const MiniBatch& batch,
                                         ModelKind kind) {
  const auto i64 = torch::TensorOptions().dtype(torch::kLong);
  std::vector<BlockTensors> out(batch.blocks.size());
  for (size_t l = 0; l < batch.blocks.size(); ++l) {
    const Block& block = batch.blocks[l];
    BlockTensors& t = out[l];
    t.num_src = block.num_src;
    t.num_dst = block.num_dst;
    t.indptr = torch::from_blob(const_cast<int64_t*>(block.indptr.data()),
                                {block.num_dst + 1}, i64)
                   .clone();
    t.indices = torch::from_blob(const_cast<int64_t*>(block.indices.data()),
                                 {block.num_edges()}, i64)
                    .clone();
    if (!block.relations.empty()) GroupByRelation(block, &t);
    const ModelNeeds needs = NeedsOf(kind);
    if (needs.edge_features ||
        (kind == ModelKind::kScript && !block.edge_features.empty())) {
      TORCH_CHECK(block.edge_feature_dim > 0 &&
                      static_cast<int64_t>(block.edge_features.size()) ==
                          block.num_edges() * block.edge_feature_dim,
                  "a model reading edge features, a block without them "
                  "(sampled with fetch_edge_features)");
      t.edge_attr =
          torch::from_blob(const_cast<float*>(block.edge_features.data()),
                           {block.num_edges(), block.edge_feature_dim},
                           torch::kFloat)
              .clone();
      t.edge_dst = torch::empty({block.num_edges()}, i64);
      int64_t* dst = t.edge_dst.data_ptr<int64_t>();
      for (int64_t i = 0; i < block.num_dst; ++i) {
        for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e)
          dst[e] = i;
      }
    }
    if (!needs.loop_csr) continue;
    const int64_t num_loop = block.num_edges() + block.num_dst;
    t.loop_indptr = torch::empty({block.num_dst + 1}, i64);
    t.loop_indices = torch::empty({num_loop}, i64);
    t.loop_dst = torch::empty({num_loop}, i64);
    int64_t* lp = t.loop_indptr.data_ptr<int64_t>();
    int64_t* li = t.loop_indices.data_ptr<int64_t>();
    int64_t* ld = t.loop_dst.data_ptr<int64_t>();
    int64_t k = 0;
    lp[0] = 0;
    for (int64_t i = 0; i < block.num_dst; ++i) {
      ld[k] = i;
      li[k++] = i;
      for (int64_t e = block.indptr[i]; e < block.indptr[i + 1]; ++e) {
        ld[k] = i;
        li[k++] = block.indices[e];
      }
      lp[i + 1] = k;
    }
    if (needs.degrees) {
      TORCH_CHECK(
          static_cast<int64_t>(batch.degrees.size()) >= block.num_src,
          "GCN needs the graph degree of every input node (sampled with "
          "fetch_degrees)");
      // Kipf & Welling's D^-1/2 (A + I) D^-1/2 with the graph's degrees, the
      // neighbor sum estimated from the k_i of d_i neighbors sampled (scaled
      // by d_i / k_i; exact when all are taken).
      t.gcn_weight = torch::empty({num_loop, 1}, torch::kFloat);
      float* w = t.gcn_weight.data_ptr<float>();
      const int64_t* degree = batch.degrees.data();
      for (int64_t i = 0; i < block.num_dst; ++i) {
        const double d_i = static_cast<double>(degree[i]) + 1.0;
        const int64_t sampled = lp[i + 1] - lp[i] - 1;
        const double scale =
            sampled > 0 ? static_cast<double>(degree[i]) / sampled : 0.0;
        w[lp[i]] = static_cast<float>(1.0 / d_i);
        for (int64_t e = lp[i] + 1; e < lp[i + 1]; ++e) {
          const double d_j = static_cast<double>(degree[li[e]]) + 1.0;
          w[e] = static_cast<float>(scale / std::sqrt(d_i * d_j));
        }
      }
    }
  }
  return out;
}

namespace {

// Rows of x per call of the BLAS when no gradient is recorded (Project).
int64_t ProjectChunkRows(int64_t width) {
  constexpr int64_t kChunkBytes = int64_t{8} << 20;
  return std::max<int64_t>(1,
                           kChunkBytes / (std::max<int64_t>(width, 1) *
                                          static_cast<int64_t>(sizeof(float))));
}

}  // namespace

torch::Tensor Project(torch::nn::Linear& linear, const torch::Tensor& x) {
  const int64_t rows = x.dim() == 2 ? x.size(0) : 0;
  const int64_t chunk = ProjectChunkRows(x.dim() == 2 ? x.size(1) : 0);
  if (torch::GradMode::is_enabled() || rows <= chunk || !x.is_contiguous() ||
      x.scalar_type() != torch::kFloat) {
    return linear->forward(x);
  }
  const torch::Tensor weight_t = linear->weight.t();
  const int64_t width = linear->weight.size(0);
  torch::Tensor out = torch::empty({rows, width}, x.options());
  // The bias first, then each part's product added into it, as addmm does
  // (addmm_out into a part with a bias takes a slow path: 3x on 127k x 256 ->
  // 16).
  const bool bias = linear->bias.defined();
  if (bias) out.copy_(linear->bias.expand({rows, width}));
  // Parts of equal size (within a row): the BLAS may round a product of a
  // few rows differently (OpenBLAS's small-matrix kernels).
  const int64_t parts = (rows + chunk - 1) / chunk;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t first = rows * p / parts;
    const int64_t n = rows * (p + 1) / parts - first;
    torch::Tensor part = out.narrow(0, first, n);
    if (bias) {
      part.addmm_(x.narrow(0, first, n), weight_t);
    } else {
      torch::mm_out(part, x.narrow(0, first, n), weight_t);
    }
  }
  return out;
}

namespace {

// One layer of a stack: the states of a block's sources to those of its
// destinations.
class Layer : public torch::nn::Module {
 public:
  virtual torch::Tensor Forward(const BlockTensors& b,
                                const torch::Tensor& h) = 0;
};

// h_dst' = W_self h_dst + W_neigh mean_{u in N(dst)} h_u.
class SageLayer : public Layer {
 public:
  SageLayer(int64_t in, int64_t out) : project_first_(in > out) {
    self_ = register_module("lin_self", torch::nn::Linear(in, out));
    neigh_ = register_module(
        "lin_neigh",
        torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    torch::Tensor h_dst = h.narrow(0, 0, b.num_dst);
    // Mean and projection commute; do the cheaper one on the wide side.
    torch::Tensor agg =
        project_first_
            ? CsrAggregate(Project(neigh_, h), {}, b.indptr, b.indices, true)
            : Project(neigh_, CsrAggregate(h, {}, b.indptr, b.indices, true));
    return Project(self_, h_dst) + agg;
  }

 private:
  bool project_first_;
  torch::nn::Linear self_{nullptr}, neigh_{nullptr};
};

// GINE-style (Hu et al. 2020), with edge-conditioned messages:
// m_uv = ReLU(h_u + W_edge e_uv), h_dst' = W_self h_dst + W_neigh
// mean_{u in N(dst)} m_uv. The edge features e_uv are BlockTensors::
// edge_attr.
class GineLayer : public Layer {
 public:
  GineLayer(int64_t in, int64_t out, int64_t edge_dim) {
    edge_ = register_module("lin_edge", torch::nn::Linear(edge_dim, in));
    self_ = register_module("lin_self", torch::nn::Linear(in, out));
    neigh_ = register_module(
        "lin_neigh",
        torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    TORCH_CHECK(b.edge_attr.defined(), "GINE: a block without edge features");
    torch::Tensor h_dst = h.narrow(0, 0, b.num_dst);
    torch::Tensor messages =
        torch::relu(h.index_select(0, b.indices) + Project(edge_, b.edge_attr));
    torch::Tensor sum = torch::zeros({b.num_dst, h.size(1)}, h.options())
                            .index_add(0, b.edge_dst, messages);
    torch::Tensor count =
        (b.indptr.narrow(0, 1, b.num_dst) - b.indptr.narrow(0, 0, b.num_dst))
            .clamp_min(1)
            .to(torch::kFloat)
            .unsqueeze(1);
    return Project(self_, h_dst) + Project(neigh_, sum / count);
  }

 private:
  torch::nn::Linear edge_{nullptr}, self_{nullptr}, neigh_{nullptr};
};

// h_i' = sum_{j in N(i) + i} h_j W / sqrt(deg_i deg_j) + b with deg the graph
// degree plus one (the self loop); BlockTensors::gcn_weight holds the
// coefficients.
class GcnLayer : public Layer {
 public:
  GcnLayer(int64_t in, int64_t out) : project_first_(in > out) {
    linear_ = register_module(
        "lin",
        torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
    bias_ = register_parameter("bias", torch::zeros({out}));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    torch::Tensor agg =
        project_first_
            ? CsrAggregate(Project(linear_, h), b.gcn_weight, b.loop_indptr,
                           b.loop_indices, false)
            : Project(linear_, CsrAggregate(h, b.gcn_weight, b.loop_indptr,
                                            b.loop_indices, false));
    return agg + bias_;
  }

 private:
  bool project_first_;
  torch::nn::Linear linear_{nullptr};
  torch::Tensor bias_;
};

// Multi-head attention (Velickovic et al. 2018): alpha_ij = softmax_j
// LeakyReLU(a_l . z_j + a_r . z_i) over N(i) + i, per head; heads are
// concatenated (hidden layers) or averaged (output layer).
class GatLayer : public Layer {
 public:
  GatLayer(int64_t in, int64_t out, int heads, bool concat, double attn_dropout,
           std::shared_ptr<SeedStream> seeds)
      : out_(out),
        heads_(heads),
        concat_(concat),
        attn_dropout_(attn_dropout),
        seeds_(std::move(seeds)) {
    linear_ = register_module(
        "lin", torch::nn::Linear(
                   torch::nn::LinearOptions(in, heads * out).bias(false)));
    attn_l_ = register_parameter("attn_l", torch::empty({1, heads, out}));
    attn_r_ = register_parameter("attn_r", torch::empty({1, heads, out}));
    bias_ =
        register_parameter("bias", torch::zeros({concat ? heads * out : out}));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    torch::Tensor z = Project(linear_, h);
    torch::Tensor z3 = z.view({b.num_src, heads_, out_});
    torch::Tensor el = (z3 * attn_l_).sum(-1);
    torch::Tensor er = (z3.narrow(0, 0, b.num_dst) * attn_r_).sum(-1);
    torch::Tensor scores = torch::leaky_relu(
        el.index_select(0, b.loop_indices) + er.index_select(0, b.loop_dst),
        0.2);
    torch::Tensor alpha =
        FastDropout(EdgeSoftmax(scores, b.loop_indptr), attn_dropout_,
                    is_training(), is_training() ? seeds_->Next() : 0);
    torch::Tensor agg =
        CsrAggregate(z, alpha, b.loop_indptr, b.loop_indices, false);
    if (!concat_) agg = agg.view({b.num_dst, heads_, out_}).mean(1);
    return agg + bias_;
  }

 private:
  int64_t out_;
  int64_t heads_;
  bool concat_;
  double attn_dropout_;
  std::shared_ptr<SeedStream> seeds_;
  torch::nn::Linear linear_{nullptr};
  torch::Tensor attn_l_, attn_r_, bias_;
};

// h_dst' = W h_dst + b: no messages (the graph-free baseline).
class MlpLayer : public Layer {
 public:
  MlpLayer(int64_t in, int64_t out) {
    linear_ = register_module("lin", torch::nn::Linear(in, out));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    return Project(linear_, h.narrow(0, 0, b.num_dst));
  }

 private:
  torch::nn::Linear linear_{nullptr};
};

// R-GCN (Schlichtkrull et al. 2018): h_dst' = W_self h_dst + b +
// sum_r mean_{u in N_r(dst)} W_r h_u, with W_r = sum_b a_rb V_b.
class RgcnLayer : public Layer {
 public:
  RgcnLayer(int64_t in, int64_t out, int relations, int bases)
      : in_(in), out_(out) {
    self_ = register_module("lin_self", torch::nn::Linear(in, out));
    bases_ = register_parameter("bases", torch::empty({bases, in, out}));
    coefficients_ =
        register_parameter("coefficients", torch::empty({relations, bases}));
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    torch::Tensor out = Project(self_, h.narrow(0, 0, b.num_dst));
    if (b.relation_ptr.empty()) return out;
    const int64_t relations = coefficients_.size(0);
    TORCH_CHECK(static_cast<int64_t>(b.relation_ptr.size()) - 1 <= relations,
                "a block has edges of relation ", b.relation_ptr.size() - 2,
                " but the model knows ", relations);
    // [R, in * out]: every relation's weight at once.
    torch::Tensor weights =
        coefficients_.mm(bases_.view({bases_.size(0), in_ * out_}))
            .view({relations, in_, out_});
    for (size_t r = 0; r + 1 < b.relation_ptr.size(); ++r) {
      const int64_t begin = b.relation_ptr[r];
      const int64_t count = b.relation_ptr[r + 1] - begin;
      if (count == 0) continue;
      torch::Tensor messages =
          h.index_select(0, b.rel_src.narrow(0, begin, count))
              .mm(weights[static_cast<int64_t>(r)]) *
          b.rel_norm.narrow(0, begin, count);
      out = out.index_add(0, b.rel_dst.narrow(0, begin, count), messages);
    }
    return out;
  }

 private:
  int64_t in_, out_;
  torch::nn::Linear self_{nullptr};
  torch::Tensor bases_, coefficients_;
};

// HeteroSAGE: h_dst' = W_self h_dst + b + sum_r W_r mean_{u in N_r(dst)} h_u,
// a GraphSAGE neighbor weight per relation ("lin_neigh.<r>").
class HeteroSageLayer : public Layer {
 public:
  HeteroSageLayer(int64_t in, int64_t out, int relations) : in_(in) {
    self_ = register_module("lin_self", torch::nn::Linear(in, out));
    torch::nn::ModuleList list;
    for (int r = 0; r < relations; ++r) {
      neigh_.push_back(
          torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)));
      list->push_back(neigh_.back());
    }
    register_module("lin_neigh", list);
  }
  torch::Tensor Forward(const BlockTensors& b,
                        const torch::Tensor& h) override {
    torch::Tensor out = Project(self_, h.narrow(0, 0, b.num_dst));
    TORCH_CHECK(
        b.relation_ptr.empty() || b.relation_ptr.size() - 1 <= neigh_.size(),
        "a block has edges of relation ", b.relation_ptr.size() - 2,
        " but the model knows ", neigh_.size());
    for (size_t r = 0; r + 1 < b.relation_ptr.size(); ++r) {
      const int64_t begin = b.relation_ptr[r];
      const int64_t count = b.relation_ptr[r + 1] - begin;
      if (count == 0) continue;
      torch::Tensor mean =
          torch::zeros({b.num_dst, in_}, h.options())
              .index_add(0, b.rel_dst.narrow(0, begin, count),
                         h.index_select(0, b.rel_src.narrow(0, begin, count)) *
                             b.rel_norm.narrow(0, begin, count));
      out = out + Project(neigh_[r], mean);
    }
    return out;
  }

 private:
  int64_t in_;
  torch::nn::Linear self_{nullptr};
  std::vector<torch::nn::Linear> neigh_;
};

// How a model's layers are made and joined: one entry per ModelKind (the
// registry MakeModel and NeedsOf read).
struct ModelSpec {
  ModelKind kind;
  ModelNeeds needs;
  bool elu;  // Between layers: ELU (GAT's), else ReLU.
  // Layer l of n, from width `in` to `out` (per head for GAT's hidden layers).
  std::shared_ptr<Layer> (*make_layer)(const ModelOptions& options, int l,
                                       int n, int64_t in, int64_t out,
                                       std::shared_ptr<SeedStream> seeds);
};

// R-GCN's bases: options.num_bases, or as many as relations up to 8.
int BasesOf(const ModelOptions& options, int relations) {
  if (options.num_bases > 0) return options.num_bases;
  return std::max(1, std::min(relations, 8));
}

const ModelSpec kModels[] = {
    {ModelKind::kSage,
     {false, false},
     false,
     [](const ModelOptions&, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<SageLayer>(in, out);
     }},
    {ModelKind::kGcn,
     {true, true},
     false,
     [](const ModelOptions&, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<GcnLayer>(in, out);
     }},
    {ModelKind::kGat,
     {true, false},
     true,
     [](const ModelOptions& o, int l, int n, int64_t in, int64_t out,
        std::shared_ptr<SeedStream> seeds) -> std::shared_ptr<Layer> {
       const bool last = l + 1 == n;
       return std::make_shared<GatLayer>(in, out, last ? 1 : o.heads, !last,
                                         o.attn_dropout, std::move(seeds));
     }},
    {ModelKind::kMlp,
     {false, false},
     false,
     [](const ModelOptions&, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<MlpLayer>(in, out);
     }},
    {ModelKind::kGine,
     {false, false, true},
     false,
     [](const ModelOptions& o, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<GineLayer>(in, out, o.edge_feature_dim);
     }},
    {ModelKind::kRgcn,
     {false, false},
     false,
     [](const ModelOptions& o, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<RgcnLayer>(in, out, o.num_relations,
                                          BasesOf(o, o.num_relations));
     }},
    {ModelKind::kHeteroSage,
     {false, false},
     false,
     [](const ModelOptions& o, int, int, int64_t in, int64_t out,
        std::shared_ptr<SeedStream>) -> std::shared_ptr<Layer> {
       return std::make_shared<HeteroSageLayer>(in, out, o.num_relations);
     }},
};

const ModelSpec& SpecOf(ModelKind kind) {
  for (const ModelSpec& spec : kModels) {
    if (spec.kind == kind) return spec;
  }
  TORCH_CHECK(false, "unknown model kind ", static_cast<int>(kind));
  return kModels[0];
}

// A typed graph's inputs to `width` columns: per node type t a module
// "<t>", Linear(F_t, width) over its features or, for a type without, an
// Embedding(count_t, width) of learned rows.
class TypedInputEncoder : public torch::nn::Module {
 public:
  TypedInputEncoder(const GraphSchema& schema, int64_t width) : width_(width) {
    for (int t = 0; t < schema.num_node_types(); ++t) {
      const NodeType& type = schema.node_types[t];
      const std::string name = std::to_string(t);
      if (type.feature_dim > 0) {
        linears_.push_back(
            register_module(name, torch::nn::Linear(type.feature_dim, width)));
        embeddings_.emplace_back(nullptr);
      } else {
        linears_.emplace_back(nullptr);
        embeddings_.push_back(register_module(
            name,
            torch::nn::Embedding(std::max<int64_t>(type.count, 1), width)));
      }
    }
  }

  // Learned rows start with variance 1 / width (rows of about unit norm),
  // not Glorot's bound, which shrinks with the type's node count.
  void InitEmbeddings(uint64_t seed) {
    torch::NoGradGuard no_grad;
    at::Generator generator = at::detail::createCPUGenerator(seed);
    const double bound = std::sqrt(3.0 / static_cast<double>(width_));
    for (auto& e : embeddings_) {
      if (!e.is_empty()) e->weight.uniform_(-bound, bound, generator);
    }
  }

  torch::Tensor Encode(const TypedInputs& in) {
    TORCH_CHECK(in.index.size() == linears_.size(), "a batch of ",
                in.index.size(), " node types for a model of ",
                linears_.size());
    torch::Tensor x = torch::zeros({in.num_inputs, width_});
    for (size_t t = 0; t < linears_.size(); ++t) {
      if (!in.index[t].defined() || in.index[t].numel() == 0) continue;
      torch::Tensor y;
      if (!linears_[t].is_empty()) {
        TORCH_CHECK(in.features[t].defined(), "no features of node type ", t);
        y = Project(linears_[t], in.features[t]);
      } else {
        y = embeddings_[t]->forward(in.local_ids[t]);
      }
      x = x.index_copy(0, in.index[t], y);
    }
    return x;
  }

 private:
  int64_t width_;
  std::vector<torch::nn::Linear> linears_;
  std::vector<torch::nn::Embedding> embeddings_;
};

// Layers in a ModuleList named "layers", dropout before each, the spec's
// activation between them; for a typed graph an "input" encoder before them.
class Stack : public GnnModel {
 public:
  Stack(const ModelOptions& options, const ModelSpec& spec, int64_t in_dim,
        int64_t num_classes, std::shared_ptr<SeedStream> seeds,
        const GraphSchema* schema = nullptr)
      : seeds_(std::move(seeds)), dropout_(options.dropout), elu_(spec.elu) {
    if (schema != nullptr) {
      encoder_ = register_module(
          "input", std::make_shared<TypedInputEncoder>(*schema, in_dim));
    }
    const int n = options.num_layers;
    // GAT's hidden layers concatenate their heads.
    const int64_t hidden_out = options.kind == ModelKind::kGat
                                   ? options.hidden * options.heads
                                   : options.hidden;
    torch::nn::ModuleList list;
    for (int l = 0; l < n; ++l) {
      const bool last = l + 1 == n;
      layers_.push_back(
          spec.make_layer(options, l, n, l == 0 ? in_dim : hidden_out,
                          last ? num_classes : options.hidden, seeds_));
      widths_.push_back(last ? num_classes : hidden_out);
      list->push_back(layers_.back());
    }
    register_module("layers", list);
  }

  int num_layers() const override { return static_cast<int>(layers_.size()); }
  int64_t layer_width(int l) const override {
    return widths_[static_cast<size_t>(l)];
  }
  torch::Tensor ForwardLayer(int l, const BlockTensors& b,
                             const torch::Tensor& h) override {
    TORCH_CHECK(l >= 0 && l < num_layers(), "no layer ", l);
    torch::Tensor out = layers_[static_cast<size_t>(l)]->Forward(
        b, FastDropout(h, dropout_, is_training(),
                       is_training() ? seeds_->Next() : 0));
    if (l + 1 < num_layers()) out = elu_ ? torch::elu(out) : torch::relu(out);
    return out;
  }

  SeedStream& seed_stream() override { return *seeds_; }

  torch::Tensor EncodeInputs(const TypedInputs& inputs) override {
    if (encoder_ == nullptr) return GnnModel::EncodeInputs(inputs);
    return encoder_->Encode(inputs);
  }
  TypedInputEncoder* encoder() { return encoder_.get(); }

 private:
  std::shared_ptr<TypedInputEncoder> encoder_;
  std::shared_ptr<SeedStream> seeds_;
  double dropout_;
  bool elu_;
  std::vector<std::shared_ptr<Layer>> layers_;
  std::vector<int64_t> widths_;
};

}  // namespace

torch::Tensor GnnModel::Forward(const std::vector<BlockTensors>& blocks,
                                torch::Tensor x) {
  TORCH_CHECK(static_cast<int>(blocks.size()) == num_layers(), "model has ",
              num_layers(), " layers but the batch has ", blocks.size(),
              " blocks");
  torch::Tensor h = std::move(x);
  for (int l = 0; l < num_layers(); ++l)
    h = ForwardLayer(l, blocks[static_cast<size_t>(l)], h);
  return h;
}

torch::Tensor GnnModel::EncodeInputs(const TypedInputs&) {
  TORCH_CHECK(false,
              "this model takes one feature matrix, not a typed graph's "
              "inputs (use --model rgcn)");
  return {};
}

// Glorot uniform for every weight (bound sqrt(6 / (fan_in + fan_out)) over the
// last two dimensions), zeros for biases, from a private generator.
void InitParameters(torch::nn::Module& module, uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(seed);
  for (auto& named : module.named_parameters()) {
    torch::Tensor& p = named.value();
    if (p.dim() < 2) {
      p.zero_();
      continue;
    }
    const double bound =
        std::sqrt(6.0 / static_cast<double>(p.size(-2) + p.size(-1)));
    p.uniform_(-bound, bound, generator);
  }
}

ModelNeeds NeedsOf(ModelKind kind) {
  // A model script reads edge features when the graph has them
  // (ToBlockTensors).
  if (kind == ModelKind::kScript) return ModelNeeds{};
  return SpecOf(kind).needs;
}

int64_t MinParameterCount(const ModelOptions& options, int64_t in_dim,
                          int64_t num_classes) {
  // Stack: layer l is make_layer(in_l, out_l), each a Linear(in_l, >= out_l)
  // (GAT's hidden layers project to heads * hidden, and take it in).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (options.kind == ModelKind::kScript) return 0;  // Its own layers.
  int64_t total = 0;
  int64_t in = in_dim;
  for (int l = 0; l < options.num_layers; ++l) {
    const int64_t out =
        l + 1 == options.num_layers ? num_classes : options.hidden;
    int64_t weights;
    if (__builtin_mul_overflow(in, out, &weights) ||
        __builtin_add_overflow(total, weights, &total)) {
      return kMax;
    }
    in = options.hidden;
  }
  return total;
}

std::shared_ptr<GnnModel> MakeTypedModel(const ModelOptions& options,
                                         const GraphSchema& schema,
                                         int64_t num_classes, uint64_t seed) {
  TORCH_CHECK(IsTypedModel(options.kind), ModelKindName(options.kind),
              " does not take typed graphs (use --model rgcn)");
  ModelOptions typed = options;
  typed.num_relations = schema.num_relations();
  auto seeds = std::make_shared<SeedStream>(MixSeed(seed, 1));
  auto model = std::make_shared<Stack>(typed, SpecOf(typed.kind), typed.hidden,
                                       num_classes, std::move(seeds), &schema);
  InitParameters(*model, MixSeed(seed, 0));
  model->encoder()->InitEmbeddings(MixSeed(seed, 2));
  return model;
}

std::shared_ptr<GnnModel> MakeModel(const ModelOptions& options, int64_t in_dim,
                                    int64_t num_classes, uint64_t seed) {
  TORCH_CHECK(!IsTypedModel(options.kind), ModelKindName(options.kind),
              " takes typed graphs only (a dataset with node types)");
  TORCH_CHECK(options.kind != ModelKind::kScript,
              "a model script is loaded (LoadScriptModel), not made");
  auto seeds = std::make_shared<SeedStream>(MixSeed(seed, 1));
  std::shared_ptr<GnnModel> model = std::make_shared<Stack>(
      options, SpecOf(options.kind), in_dim, num_classes, std::move(seeds));
  InitParameters(*model, MixSeed(seed, 0));
  return model;
}

}  // namespace shardgnn::internal
