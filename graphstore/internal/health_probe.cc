#include "graphstore/internal/health_probe.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/support/slice.h"

namespace shardgnn::internal {

grpc::ByteBuffer HealthCheckRequest(absl::string_view service) {
  // Field 1 (length-delimited): the service name.
  std::string request = {'\x0a', static_cast<char>(service.size())};
  request.append(service.data(), service.size());
  grpc::Slice slice(request);
  return grpc::ByteBuffer(&slice, 1);
}

absl::Status CheckHealthResponse(const grpc::ByteBuffer& response) {
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    return absl::DataLossError("unreadable answer");
  }
  std::string answer;
  for (const grpc::Slice& piece : slices) {
    answer.append(reinterpret_cast<const char*>(piece.begin()), piece.size());
  }
  // Field 1 (varint): the status (absent: 0, UNKNOWN); anything else is not
  // a SERVING answer.
  const int status = answer.empty() ? 0
                     : answer.size() == 2 && answer[0] == '\x08'
                         ? static_cast<unsigned char>(answer[1])
                         : -1;
  if (status != 1) {
    static constexpr const char* kNames[] = {"UNKNOWN", "SERVING",
                                             "NOT_SERVING", "SERVICE_UNKNOWN"};
    return absl::UnavailableError(absl::StrCat(
        "server is not serving (",
        status >= 0 && status < 4 ? kNames[status] : "an unreadable answer",
        ")"));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
