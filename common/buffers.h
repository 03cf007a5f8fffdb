// Buffers kept between steps or requests, grown with headroom (issue 17: no
// fresh memory in the steady state).
//
// A kept buffer whose contents vary a little in size from one use to the
// next (a minibatch's features, a pull's rows, a push's gradients) would be
// reallocated at every new largest size if grown to fit exactly, and a large
// one comes from mmap: every page faulted in afresh, thousands of faults each
// time. Grown with a quarter more, the next slightly larger use fits.
#ifndef SHARDGNN_COMMON_BUFFERS_H_
#define SHARDGNN_COMMON_BUFFERS_H_

#include <cstddef>

namespace shardgnn {

// Makes room for `n` elements in *buffer (a std::vector or std::string),
// with headroom when it must grow. Growing drops the contents (nothing is
// copied): the caller fills the buffer next.
template <typename Buffer>
void ReserveWithHeadroom(Buffer* buffer, size_t n) {
  if (buffer->capacity() >= n) return;
  buffer->clear();
  buffer->shrink_to_fit();  // The old buffer goes before the new one comes.
  buffer->reserve(n + n / 4);
}

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_BUFFERS_H_
