#include "trainer/data_parallel.h"

#include <cstdlib>
#include <cstring>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

absl::Status ReadIntVariable(const char* name, int* out) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  if (!absl::SimpleAtoi(value, out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "environment variable ", name, "='", value, "' is not an integer"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadTorchrunEnvironment(DataParallelOptions* options) {
  if (absl::Status s = ReadIntVariable("RANK", &options->rank); !s.ok())
    return s;
  if (absl::Status s = ReadIntVariable("WORLD_SIZE", &options->world_size);
      !s.ok())
    return s;
  if (absl::Status s = ReadIntVariable("MASTER_PORT", &options->master_port);
      !s.ok())
    return s;
  if (const char* addr = std::getenv("MASTER_ADDR");
      addr != nullptr && *addr != '\0')
    options->master_addr = addr;
  if (options->world_size < 1 || options->rank < 0 ||
      options->rank >= options->world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("RANK=", options->rank,
                     " is not in [0, WORLD_SIZE=", options->world_size, ")"));
  }
  if (options->master_port < 0 || options->master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT=", options->master_port, " is not a port"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GlooDataParallel>> GlooDataParallel::Connect(
    const DataParallelOptions& options) {
  if (options.world_size < 1 || options.rank < 0 ||
      options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", options.rank,
                                                   " is not in [0, world size ",
                                                   options.world_size, ")"));
  }
  if (options.master_port < 0 || options.master_port > 65535 ||
      (options.master_port == 0 && options.rank != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "master port ", options.master_port, " (0 is only allowed on rank 0)"));
  }
  const std::string where =
      absl::StrCat(options.master_addr, ":", options.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = options.world_size;
    store_options.waitWorkers = false;
    store_options.timeout = options.timeout;
    auto tcp =
        c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    if (options.rank == 0 && options.on_listening)
      options.on_listening(tcp->getPort());
    store = c10::make_intrusive<c10d::PrefixStore>("shardgnn", tcp);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", options.rank, ": cannot reach the rendezvous store at ", where,
        ": ", e.what()));
  }
  try {
    auto gloo_options =
        c10d::ProcessGroupGloo::Options::create(options.timeout);
    std::string local = options.local_addr;
    if (local.empty() && (options.rank == 0 || IsLoopback(options.master_addr)))
      local = options.master_addr;
    gloo_options->devices.push_back(
        local.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                      : c10d::ProcessGroupGloo::createDeviceForHostname(local));
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        store, options.rank, options.world_size, gloo_options);
    return std::unique_ptr<GlooDataParallel>(
        new GlooDataParallel(options, store, group));
  } catch (const std::exception& e) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", options.rank, ": rendezvous of ", options.world_size,
        " ranks through ", where, " failed: ", e.what()));
  }
}

GlooDataParallel::GlooDataParallel(
    DataParallelOptions options, c10::intrusive_ptr<c10d::Store> store,
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group)
    : options_(std::move(options)),
      store_(std::move(store)),
      group_(std::move(group)) {}

GlooDataParallel::~GlooDataParallel() = default;

absl::Status GlooDataParallel::Error(const std::string& what,
                                     const std::exception& e) const {
  return absl::UnavailableError(absl::StrCat(
      what, " failed on rank ", options_.rank, " of ", options_.world_size,
      " (a peer may have died or stalled): ", e.what()));
}

std::vector<size_t> GlooDataParallel::Buckets(
    const std::vector<torch::Tensor>& tensors) const {
  std::vector<size_t> starts;
  int64_t bytes = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t size =
        tensors[i].numel() * static_cast<int64_t>(tensors[i].element_size());
    if (starts.empty() || bytes + size > options_.bucket_bytes) {
      starts.push_back(i);
      bytes = 0;
    }
    bytes += size;
  }
  return starts;
}

namespace {

// Flattens tensors[begin, end) into one contiguous tensor.
torch::Tensor Flatten(const std::vector<torch::Tensor>& tensors, size_t begin,
                      size_t end) {
  std::vector<torch::Tensor> flat;
  for (size_t i = begin; i < end; ++i) flat.push_back(tensors[i].reshape({-1}));
  return torch::cat(flat);
}

// Copies `flat` back into tensors[begin, end), multiplied by `scale`.
void Unflatten(const torch::Tensor& flat, double scale,
               const std::vector<torch::Tensor>& tensors, size_t begin,
               size_t end) {
  int64_t offset = 0;
  for (size_t i = begin; i < end; ++i) {
    const int64_t n = tensors[i].numel();
    torch::Tensor part = flat.narrow(0, offset, n).view(tensors[i].sizes());
    if (scale != 1.0) part = part * scale;
    tensors[i].copy_(part);
    offset += n;
  }
}

}  // namespace

absl::Status GlooDataParallel::BroadcastParameters(
    const std::vector<torch::Tensor>& parameters) {
  if (parameters.empty()) return absl::OkStatus();
  try {
    torch::NoGradGuard no_grad;
    std::vector<size_t> starts = Buckets(parameters);
    starts.push_back(parameters.size());
    for (size_t b = 0; b + 1 < starts.size(); ++b) {
      std::vector<torch::Tensor> flat = {
          Flatten(parameters, starts[b], starts[b + 1])};
      c10d::BroadcastOptions opts;
      opts.rootRank = 0;
      opts.timeout = options_.timeout;
      group_->broadcast(flat, opts)->wait(options_.timeout);
      Unflatten(flat[0], 1.0, parameters, starts[b], starts[b + 1]);
    }
  } catch (const std::exception& e) {
    return Error("broadcast of the initial parameters", e);
  }
  return absl::OkStatus();
}

absl::Status GlooDataParallel::AllreduceGradients(
    const std::vector<torch::Tensor>& parameters) {
  if (parameters.empty()) return absl::OkStatus();
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : parameters) {
    if (!p.grad().defined())
      return absl::InvalidArgumentError(
          "a parameter has no gradient to allreduce");
    grads.push_back(p.grad());
  }
  try {
    torch::NoGradGuard no_grad;
    std::vector<size_t> starts = Buckets(grads);
    starts.push_back(grads.size());
    std::vector<std::vector<torch::Tensor>> flats;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    c10d::AllreduceOptions opts;
    opts.timeout = options_.timeout;
    for (size_t b = 0; b + 1 < starts.size(); ++b) {
      flats.push_back({Flatten(grads, starts[b], starts[b + 1])});
      works.push_back(group_->allreduce(flats.back(), opts));
    }
    const double scale = 1.0 / options_.world_size;
    for (size_t b = 0; b < works.size(); ++b) {
      works[b]->wait(options_.timeout);
      Unflatten(flats[b][0], scale, grads, starts[b], starts[b + 1]);
    }
  } catch (const std::exception& e) {
    return Error("gradient allreduce", e);
  }
  return absl::OkStatus();
}

absl::Status GlooDataParallel::AllreduceSum(absl::Span<double> values) {
  if (values.empty()) return absl::OkStatus();
  try {
    std::vector<torch::Tensor> t = {
        torch::from_blob(values.data(), {static_cast<int64_t>(values.size())},
                         torch::kDouble)
            .clone()};
    c10d::AllreduceOptions opts;
    opts.timeout = options_.timeout;
    group_->allreduce(t, opts)->wait(options_.timeout);
    std::memcpy(values.data(), t[0].data_ptr<double>(),
                values.size() * sizeof(double));
  } catch (const std::exception& e) {
    return Error("allreduce of evaluation counts", e);
  }
  return absl::OkStatus();
}

absl::Status GlooDataParallel::Barrier() {
  try {
    c10d::BarrierOptions opts;
    opts.timeout = options_.timeout;
    group_->barrier(opts)->wait(options_.timeout);
  } catch (const std::exception& e) {
    return Error("barrier", e);
  }
  return absl::OkStatus();
}

}  // namespace shardgnn
