// The GetFeatures and SampleNeighbors responses without protobuf copies.
//
// A feature batch is megabytes; building it as a GetFeaturesResponse costs a
// zero-fill, a serialization copy on the server and a parse copy on the
// client. These functions write and read the same protobuf wire format
// (field 1 feature_dim varint, field 2 features bytes) directly between the
// store and a gRPC ByteBuffer, so rows are copied once on each side. Any
// standard GetFeaturesResponse parser reads what EncodeFeatures writes.
// EncodeSampled does the same for a SampleNeighborsResponse (fields 1 counts
// and 2 neighbors, int64 LE bytes): one copy from the sample into the slice,
// where packing into protobuf strings took a zero-fill and two copies;
// DecodeSampled reads it into the caller's reused vectors in one copy, where
// parsing took fresh strings and vectors and two copies.
#ifndef SHARDGNN_GRAPHSTORE_INTERNAL_FEATURES_CODEC_H_
#define SHARDGNN_GRAPHSTORE_INTERNAL_FEATURES_CODEC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/sampled_neighbors.h"
#include "common/types.h"
#include "graphstore/shard_store.h"
#include "grpcpp/support/byte_buffer.h"

namespace shardgnn::internal {

// Reads the rows of `ids` from `store` straight into a single-slice response;
// with node_type >= 0 the rows of that node type of a typed shard
// (ShardStore::GetTypeFeatures, feature_dim the type's width).
absl::Status EncodeFeatures(const ShardStore& store,
                            absl::Span<const NodeId> ids, grpc::ByteBuffer* out,
                            int node_type = -1);

// Writes `sampled` as a single-slice SampleNeighborsResponse (an empty
// field is left out, as protobuf does; `relations`, int32 LE field 3, is
// non-empty only for typed samples).
void EncodeSampled(const SampledNeighbors& sampled, grpc::ByteBuffer* out);

// Parses a SampleNeighborsResponse into *out (reusing its vectors'
// capacity: no fresh memory once they have grown), checking that its fields
// hold whole int64 values (relations: int32) within the message and that it
// has `num_ids` counts; DATA_LOSS otherwise. (What the counts say is checked by
// the caller: answer_checks.h CheckSample.)
absl::Status DecodeSampled(const grpc::ByteBuffer& response, size_t num_ids,
                           SampledNeighbors* out);

// Parses a GetFeaturesResponse, checking it holds num_ids rows of
// `feature_dim` floats, and copies row i to out + i * feature_dim, or to
// out + rows[i] * feature_dim when `rows` is given (scattering straight from
// the gRPC slices). DATA_LOSS otherwise.
absl::Status DecodeFeatures(const grpc::ByteBuffer& response, size_t num_ids,
                            int64_t feature_dim, float* out,
                            const size_t* rows = nullptr);

}  // namespace shardgnn::internal

#endif  // SHARDGNN_GRAPHSTORE_INTERNAL_FEATURES_CODEC_H_
