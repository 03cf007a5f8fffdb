#include "graphstore/internal/metrics_endpoint.h"

#include <exception>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "graphstore/internal/listener.h"
#include "graphstore/internal/one_request_server.h"

namespace shardgnn::internal {

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& listen_address, Render render) {
  const size_t colon = listen_address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen_address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot serve metrics on '", listen_address,
        "': not HOST:PORT (a port in [0, 65535]; 0 picks a free port)"));
  }
  auto listener =
      Listener::Bind(listen_address.substr(0, colon), port, "metrics port");
  if (!listener.ok()) {
    // "metrics port: cannot listen on HOST:PORT: Address already in use" ->
    // "cannot serve metrics on HOST:PORT: Address already in use".
    absl::string_view why = listener.status().message();
    why = absl::StripPrefix(why, "metrics port: ");
    why = absl::StripPrefix(
        why, absl::StrCat("cannot listen on ", listen_address, ": "));
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", listen_address, ": ", why));
  }
  auto endpoint = std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint());
  endpoint->render_ = std::move(render);
  ASSIGN_OR_RETURN(
      endpoint->server_,
      OneRequestServer::Start(std::move(listener).value(), OneRequestLimits{},
                              [e = endpoint.get()](const std::string& head) {
                                return e->Respond(head);
                              }));
  endpoint->port_ = endpoint->server_->port();
  return endpoint;
}

std::string MetricsEndpoint::Respond(const std::string& head) const {
  const std::string line = head.substr(0, head.find("\r\n"));
  // "GET /metrics HTTP/1.1"; a query string is ignored.
  const size_t space = line.find(' ');
  const std::string method = line.substr(0, space);
  std::string target = space == std::string::npos ? "" : line.substr(space + 1);
  target = target.substr(0, target.find(' '));
  target = target.substr(0, target.find('?'));
  std::string status = "200 OK";
  std::string type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
  if (head.find("\r\n\r\n") == std::string::npos ||
      !absl::StartsWith(line.substr(line.rfind(' ') + 1), "HTTP/")) {
    status = "400 Bad Request";
  } else if (method != "GET" && method != "HEAD") {
    status = "405 Method Not Allowed";
  } else if (target != "/metrics") {
    status = "404 Not Found";
  }
  if (status == "200 OK") {
    try {  // No exception may leave the server's thread.
      body = render_();
    } catch (const std::exception&) {
      status = "500 Internal Server Error";
    }
  }
  if (status != "200 OK") {
    type = "text/plain; charset=utf-8";
    body = absl::StrCat(status, ": shardgnn serves GET /metrics\n");
  }
  std::string answer = absl::StrCat(
      "HTTP/1.1 ", status, "\r\nContent-Type: ", type,
      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n");
  if (method != "HEAD") answer += body;
  return answer;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace shardgnn::internal
