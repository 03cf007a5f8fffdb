#include "trainer/distributed.h"

#include <torch/torch.h>

#include <cstdlib>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shardgnn {
namespace {

bool IsLoopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

// Gloo errors for a dead peer read "Connection closed by peer" or "Timed out";
// both become statuses that say which rank saw it and during what.
constexpr char kPeerFailureUrl[] = "shardgnn/peer-failure";

absl::Status PeerFailure(absl::Status status) {
  status.SetPayload(kPeerFailureUrl, absl::Cord("1"));
  return status;
}

absl::Status CollectiveError(const DistributedOptions& o,
                             absl::string_view what, const std::exception& e) {
  std::string message = e.what();
  // c10::Error messages carry a C++ backtrace after the first line; keep the
  // first line.
  message = message.substr(0, message.find('\n'));
  std::string text = absl::StrCat(
      "rank ", o.rank, "/", o.world_size, ": ", what,
      " failed (a peer trainer may have died or stalled): ", message);
  if (message.find("imed out") != std::string::npos ||
      message.find("imeout") != std::string::npos) {
    return PeerFailure(absl::DeadlineExceededError(text));
  }
  return PeerFailure(absl::UnavailableError(text));
}

}  // namespace

bool IsPeerFailure(const absl::Status& status) {
  return status.GetPayload(kPeerFailureUrl).has_value();
}

absl::StatusOr<DistributedOptions> DistributedOptionsFromEnv(
    DistributedOptions o) {
  auto read_int = [](const char* name, int* out) -> absl::Status {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return absl::OkStatus();
    if (!absl::SimpleAtoi(v, out)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "environment variable ", name, "='", v, "' is not an integer"));
    }
    return absl::OkStatus();
  };
  absl::Status s = read_int("RANK", &o.rank);
  if (s.ok()) s = read_int("WORLD_SIZE", &o.world_size);
  if (s.ok()) s = read_int("MASTER_PORT", &o.master_port);
  if (!s.ok()) return s;
  if (const char* addr = std::getenv("MASTER_ADDR");
      addr != nullptr && *addr != '\0')
    o.master_addr = addr;
  return o;
}

absl::Status ValidateDistributedOptions(const DistributedOptions& o) {
  if (o.world_size < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("world size ", o.world_size, " must be >= 1"));
  if (o.rank < 0 || o.rank >= o.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", o.rank, " is outside [0, ", o.world_size, ")"));
  }
  if (o.master_port < 1 || o.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("master port ", o.master_port, " is outside 1..65535"));
  }
  if (o.master_addr.empty())
    return absl::InvalidArgumentError("master address is empty");
  return absl::OkStatus();
}

struct ProcessGroup::Impl {
  DistributedOptions options;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;

  absl::Status Run(
      absl::string_view what,
      const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
    try {
      auto work = start();
      if (!work->wait(options.timeout)) {
        return PeerFailure(absl::DeadlineExceededError(absl::StrCat(
            "rank ", options.rank, ": ", what, " did not complete within ",
            options.timeout.count(), " ms")));
      }
      return absl::OkStatus();
    } catch (const std::exception& e) {
      return CollectiveError(options, what, e);
    }
  }
};

absl::StatusOr<std::unique_ptr<ProcessGroup>> ProcessGroup::Connect(
    const DistributedOptions& options) {
  absl::Status valid = ValidateDistributedOptions(options);
  if (!valid.ok()) return valid;
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = options.world_size;
    store_options.waitWorkers = true;
    store_options.timeout = options.timeout;
    impl->store =
        c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    auto gloo_options =
        c10d::ProcessGroupGloo::Options::create(options.timeout);
    // On one machine bind loopback; across machines let Gloo pick this host's
    // address (GLOO_SOCKET_IFNAME selects an interface explicitly, as in
    // PyTorch).
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
        ifname != nullptr && *ifname != '\0') {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (IsLoopback(options.master_addr)) {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo_options->devices.push_back(
          c10d::ProcessGroupGloo::createDefaultDevice());
    }
    impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        impl->store, options.rank, options.world_size, gloo_options);
  } catch (const std::exception& e) {
    std::string message = e.what();
    message = message.substr(0, message.find('\n'));
    return absl::UnavailableError(
        absl::StrCat("rank ", options.rank, ": rendezvous with ",
                     options.world_size, " trainers at ", options.master_addr,
                     ":", options.master_port, " failed: ", message));
  }
  return std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
}

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->options.rank; }
int ProcessGroup::world_size() const { return impl_->options.world_size; }

absl::Status ProcessGroup::AllreduceSum(float* data, int64_t count) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat32)};
  return impl_->Run(absl::StrCat("allreduce of ", count, " floats"),
                    [&] { return impl_->group->allreduce(tensors); });
}

absl::Status ProcessGroup::AllreduceSum(double* data, int64_t count) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat64)};
  return impl_->Run(absl::StrCat("allreduce of ", count, " doubles"),
                    [&] { return impl_->group->allreduce(tensors); });
}

absl::Status ProcessGroup::Broadcast(float* data, int64_t count, int root) {
  if (impl_->options.world_size == 1 || count == 0) return absl::OkStatus();
  std::vector<at::Tensor> tensors = {
      torch::from_blob(data, {count}, torch::kFloat32)};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  return impl_->Run(
      absl::StrCat("broadcast of ", count, " floats from rank ", root),
      [&] { return impl_->group->broadcast(tensors, opts); });
}

absl::Status ProcessGroup::Barrier() {
  if (impl_->options.world_size == 1) return absl::OkStatus();
  return impl_->Run("barrier", [&] { return impl_->group->barrier(); });
}

}  // namespace shardgnn
