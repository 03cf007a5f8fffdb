// Blocking and deadline-bound socket I/O shared by the feature port's
// server (feature_port_server.cc) and client (feature_port_client.cc).
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_SOCKET_IO_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_SOCKET_IO_H_

#include <sys/uio.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shardgnn::internal {

// Sets the socket's send and receive timeouts (SO_SNDTIMEO, SO_RCVTIMEO).
void SetIoTimeout(int fd, absl::Duration timeout);
// Turns off Nagle's algorithm: requests and answers go out at once.
void SetNoDelay(int fd);
// Strips the brackets of "[::1]".
std::string BareHost(const std::string& host);
// Skips `done` bytes of an iovec array; returns the first unfinished entry
// (its base and length moved past what was done).
iovec* Advance(iovec* iov, iovec* end, size_t done);

// Blocking I/O (the server's, under the socket's timeouts): false on end of
// file, error or timeout.
bool ReadFull(int fd, void* data, size_t n);
bool WriteFullV(int fd, iovec* iov, int count);

// Non-blocking I/O with a deadline (the client's). WaitFor waits until `fd`
// is ready for `events`; TransferV sends (or receives into) the whole iovec
// array, leaving each entry's iov_len at what is still missing. UNAVAILABLE
// for a broken or closed connection, DEADLINE_EXCEEDED when the deadline
// passes.
absl::Status WaitFor(int fd, short events, absl::Time deadline);
absl::Status TransferV(int fd, iovec* iov, int count, bool send,
                       absl::Time deadline);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_SOCKET_IO_H_
