#include "tests/testing/ports.h"

#include <stdexcept>
#include <string>

#include "common/ports.h"

namespace shardgnn::testing {

int PickFreePort() {
  absl::StatusOr<int> port = PickFreeLoopbackPort();
  if (!port.ok())
    throw std::runtime_error(std::string(port.status().message()));
  return *port;
}

}  // namespace shardgnn::testing
