// Basic ID types. Node IDs are int64 everywhere (on disk, on the wire, in
// memory).
#ifndef SHARDGNN_COMMON_TYPES_H_
#define SHARDGNN_COMMON_TYPES_H_

#include <cstdint>

namespace shardgnn {

using NodeId = int64_t;
using EdgeId = int64_t;

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_TYPES_H_
