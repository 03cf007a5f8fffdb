#include "graphstore/internal/features_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "grpcpp/support/slice.h"
#include "proto/graphstore.pb.h"
#include "tests/graphstore/test_shards.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace shardgnn::internal {
namespace {

// Splits `bytes` into slices of `chunk` bytes, so fields straddle slices.
grpc::ByteBuffer Chunked(const std::string& bytes, size_t chunk) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    slices.emplace_back(bytes.data() + i, std::min(chunk, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const auto& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

TEST(FeaturesCodecTest, EncodedResponseIsAStandardProtobufMessage) {
  testing::TempDir dir;
  auto graph = testing::MakeTestGraph(40, 5);
  ASSERT_OK(testing::WriteTestShards(graph, 1, dir.path()));
  ShardStoreOptions options;
  options.path = dir.Sub("part-0");
  options.in_memory = true;
  ASSERT_OK_AND_ASSIGN(auto store, ShardStore::Open(options));
  std::vector<NodeId> ids = {3, 39, 0, 3};
  grpc::ByteBuffer buffer;
  ASSERT_OK(EncodeFeatures(*store, ids, &buffer));
  proto::GetFeaturesResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(buffer)));
  EXPECT_EQ(parsed.feature_dim(), 5);
  ASSERT_EQ(parsed.features().size(), ids.size() * 5 * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(
        std::memcmp(parsed.features().data() + i * 20, graph.Row(ids[i]), 20),
        0);
  }
  // Unowned IDs are refused before anything is written.
  EXPECT_EQ(EncodeFeatures(*store, {40}, &buffer).code(),
            absl::StatusCode::kInvalidArgument);
}

// EncodeSampled writes what protobuf writes for the same response: any
// client parses it, and the bytes are the canonical ones.
TEST(FeaturesCodecTest, EncodedSampleIsTheProtobufSerialization) {
  SampledNeighbors sampled;
  sampled.counts = {2, 0, 1, 300};
  for (int64_t i = 0; i < 303; ++i) {
    sampled.neighbors.push_back(i * 1000003 - 7);  // Negative and wide IDs.
  }
  proto::SampleNeighborsResponse expected;
  expected.set_counts(
      std::string(reinterpret_cast<const char*>(sampled.counts.data()), 4 * 8));
  expected.set_neighbors(std::string(
      reinterpret_cast<const char*>(sampled.neighbors.data()), 303 * 8));
  grpc::ByteBuffer buffer;
  EncodeSampled(sampled, &buffer);
  EXPECT_EQ(Flatten(buffer), expected.SerializeAsString());
  proto::SampleNeighborsResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(buffer)));
  EXPECT_EQ(parsed.counts(), expected.counts());
  EXPECT_EQ(parsed.neighbors(), expected.neighbors());

  // No neighbors (every node isolated), and nothing at all.
  sampled.counts = {0, 0};
  sampled.neighbors.clear();
  EncodeSampled(sampled, &buffer);
  expected.set_counts(std::string(16, '\0'));
  expected.clear_neighbors();
  EXPECT_EQ(Flatten(buffer), expected.SerializeAsString());
  sampled.counts.clear();
  EncodeSampled(sampled, &buffer);
  EXPECT_EQ(Flatten(buffer), "");
}

TEST(FeaturesCodecTest, DecodesAcrossSlicesAndSkipsUnknownFields) {
  proto::GetFeaturesResponse msg;
  msg.set_feature_dim(3);
  std::vector<float> rows = {1, 2, 3, 4, 5, 6};
  msg.set_features(
      std::string(reinterpret_cast<const char*>(rows.data()), rows.size() * 4));
  std::string bytes = msg.SerializeAsString();
  // An unknown length-delimited field 9 and varint field 10 after the rows.
  bytes += std::string("\x4a\x02hi\x50\x07", 6);
  for (size_t chunk : {1, 2, 3, 7, 1000}) {
    std::vector<float> out(6, -1);
    ASSERT_OK(DecodeFeatures(Chunked(bytes, chunk), 2, 3, out.data())) << chunk;
    EXPECT_EQ(out, rows);
    // Scattered: row 0 to row 2 of a 3-row matrix, row 1 to row 0; row 1 of
    // the matrix is left alone.
    std::vector<float> matrix(9, -1);
    const size_t at[] = {2, 0};
    ASSERT_OK(DecodeFeatures(Chunked(bytes, chunk), 2, 3, matrix.data(), at))
        << chunk;
    EXPECT_EQ(matrix, std::vector<float>({4, 5, 6, -1, -1, -1, 1, 2, 3}))
        << chunk;
  }
  std::vector<float> out(8);
  EXPECT_EQ(DecodeFeatures(Chunked(bytes, 4), 2, 4, out.data()).code(),
            absl::StatusCode::kDataLoss);  // Wrong width.
  EXPECT_EQ(
      DecodeFeatures(Chunked(bytes.substr(0, 10), 4), 2, 3, out.data()).code(),
      absl::StatusCode::kDataLoss);  // Truncated.
  // An empty answer for an empty request.
  EXPECT_OK(DecodeFeatures(grpc::ByteBuffer(), 0, 3, out.data()));
}

// DecodeSampled reads what protobuf writes, across slices and past unknown
// fields, into the caller's vectors (their memory reused); a malformed answer
// is DATA_LOSS naming the field, and never sizes an allocation beyond the
// message.
TEST(FeaturesCodecTest, DecodesSamplesIntoReusedVectors) {
  SampledNeighbors sampled;
  sampled.counts = {2, 0, 1};
  sampled.neighbors = {5, -7, 1 << 20};
  grpc::ByteBuffer buffer;
  EncodeSampled(sampled, &buffer);
  std::string bytes = Flatten(buffer) + std::string("\x4a\x02hi\x50\x07", 6);
  SampledNeighbors out;
  out.neighbors.reserve(64);
  const NodeId* memory = out.neighbors.data();
  for (size_t chunk : {1, 3, 8, 1000}) {
    ASSERT_OK(DecodeSampled(Chunked(bytes, chunk), 3, &out)) << chunk;
    EXPECT_EQ(out.counts, sampled.counts);
    EXPECT_EQ(out.neighbors, sampled.neighbors);
    EXPECT_EQ(out.neighbors.data(), memory) << "reallocated";
  }
  // Counts for another number of IDs; empty answers.
  absl::Status s = DecodeSampled(Chunked(bytes, 5), 4, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("counts holds 3 values, expected 4"),
            std::string::npos)
      << s;
  ASSERT_OK(DecodeSampled(grpc::ByteBuffer(), 0, &out));
  EXPECT_TRUE(out.counts.empty() && out.neighbors.empty());
  // A field of 12 bytes (not whole values), one claiming 800 bytes that the
  // message does not hold, and one cut short.
  const std::string bad_width = "\x0a\x0c" + std::string(12, '\0');
  s = DecodeSampled(Chunked(bad_width, 4), 0, &out);
  EXPECT_NE(s.message().find("counts holds 12 bytes"), std::string::npos) << s;
  const std::string too_long = "\x12\xa0\x06" + std::string(16, '\0');
  s = DecodeSampled(Chunked(too_long, 4), 0, &out);
  EXPECT_NE(s.message().find("neighbors claims 800 bytes"), std::string::npos)
      << s;
  EXPECT_EQ(DecodeSampled(Chunked(bytes.substr(0, 1), 1), 3, &out).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeSampled(Chunked("\x0a", 1), 0, &out).code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shardgnn::internal
