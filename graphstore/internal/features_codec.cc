#include "graphstore/internal/features_codec.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/buffers.h"
#include "common/status.h"
#include "graphstore/internal/slice_pool.h"
#include "grpc/slice.h"
#include "grpcpp/support/slice.h"

namespace shardgnn::internal {
namespace {

constexpr uint8_t kDimTag = (1 << 3) | 0;        // Field 1, varint.
constexpr uint8_t kFeaturesTag = (2 << 3) | 2;   // Field 2, length-delimited.
constexpr uint8_t kCountsTag = (1 << 3) | 2;     // Field 1, length-delimited.
constexpr uint8_t kNeighborsTag = (2 << 3) | 2;  // Field 2, length-delimited.
constexpr uint8_t kRelationsTag = (3 << 3) | 2;  // Field 3, length-delimited.

size_t PutVarint(uint64_t v, uint8_t* p) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  p[n++] = static_cast<uint8_t>(v);
  return n;
}

// A field's tag and its varint (a value, or a length-delimited field's byte
// count) at p, or nothing when it is 0 (proto3 leaves default fields out);
// the bytes written, at most 11.
size_t PutField(uint8_t tag, uint64_t v, uint8_t* p) {
  if (v == 0) return 0;
  p[0] = tag;
  return 1 + PutVarint(v, p + 1);
}

// Sequential reads over the slices of a ByteBuffer (no copy until Copy()).
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices)
      : slices_(std::move(slices)) {
    for (const grpc::Slice& slice : slices_) remaining_ += slice.size();
  }

  // Bytes not read yet.
  size_t Remaining() const { return remaining_; }

  bool AtEnd() {
    Skip0();
    return index_ == slices_.size();
  }
  bool Byte(uint8_t* b) {
    Skip0();
    if (index_ == slices_.size()) return false;
    *b = slices_[index_].begin()[offset_++];
    --remaining_;
    return true;
  }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // Copies n bytes of whole rows of row_bytes each: byte b goes to row b /
  // row_bytes of `out`, placed at out + rows[b / row_bytes] * row_bytes (or
  // contiguously when rows is null).
  bool CopyRows(char* out, const size_t* rows, size_t row_bytes, size_t n) {
    if (rows == nullptr) return Copy(out, n);
    size_t done = 0;
    while (done < n) {
      Skip0();
      if (index_ == slices_.size()) return false;
      const size_t row = done / row_bytes, in_row = done % row_bytes;
      size_t take = std::min(
          {n - done, slices_[index_].size() - offset_, row_bytes - in_row});
      std::memcpy(out + rows[row] * row_bytes + in_row,
                  slices_[index_].begin() + offset_, take);
      offset_ += take;
      remaining_ -= take;
      done += take;
    }
    return true;
  }
  // Copies (or, with out == nullptr, skips) n bytes.
  bool Copy(char* out, size_t n) {
    while (n > 0) {
      Skip0();
      if (index_ == slices_.size()) return false;
      size_t take = std::min(n, slices_[index_].size() - offset_);
      if (out != nullptr) {
        std::memcpy(out, slices_[index_].begin() + offset_, take);
        out += take;
      }
      offset_ += take;
      remaining_ -= take;
      n -= take;
    }
    return true;
  }

 private:
  void Skip0() {
    while (index_ < slices_.size() && offset_ == slices_[index_].size()) {
      ++index_;
      offset_ = 0;
    }
  }
  std::vector<grpc::Slice> slices_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t remaining_ = 0;
};

// Reads one length-delimited field of int64 LE values named `field` (its
// length read already) into *out, reusing its capacity; DATA_LOSS if the
// length is not whole values or runs past the message.
absl::Status ReadInt64s(SliceReader& in, const char* field, uint64_t len,
                        Int64Buffer* out) {
  if (len % 8 != 0) {
    return absl::DataLossError(
        absl::StrCat(field, " holds ", len, " bytes, not whole 8-byte values"));
  }
  if (len > in.Remaining()) {
    return absl::DataLossError(absl::StrCat(field, " claims ", len,
                                            " bytes; the message has ",
                                            in.Remaining(), " left"));
  }
  ReserveWithHeadroom(out, static_cast<size_t>(len / 8));
  out->resize(static_cast<size_t>(len / 8));
  if (len > 0 && !in.Copy(reinterpret_cast<char*>(out->data()), len)) {
    return absl::DataLossError(absl::StrCat(field, " is truncated"));
  }
  return absl::OkStatus();
}

// Skips a field of wire type `type` (its tag read already); false if it is
// malformed.
bool SkipField(SliceReader& in, uint64_t type) {
  uint64_t v = 0;
  switch (type) {
    case 0:
      return in.Varint(&v);
    case 1:
      return in.Copy(nullptr, 8);
    case 5:
      return in.Copy(nullptr, 4);
    case 2:
      return in.Varint(&v) && v <= in.Remaining() && in.Copy(nullptr, v);
    default:
      return false;
  }
}

}  // namespace

absl::Status EncodeFeatures(const ShardStore& store,
                            absl::Span<const NodeId> ids, grpc::ByteBuffer* out,
                            int node_type) {
  const ShardMeta& meta = store.Meta();
  const bool typed_rows =
      node_type >= 0 && static_cast<size_t>(node_type) < meta.node_types.size();
  const int64_t dim =
      typed_rows ? meta.node_types[static_cast<size_t>(node_type)].feature_dim
                 : meta.feature_dim;
  const size_t payload = ids.size() * static_cast<size_t>(dim) * 4;
  uint8_t header[32];
  size_t h = PutField(kDimTag, static_cast<uint64_t>(dim), header);
  h += PutField(kFeaturesTag, payload, header + h);
  // Fill the slice before wrapping it in a grpc::Slice (a slice type that
  // holds its bytes inline would be copied before they were written).
  grpc_slice raw = SlicePool::Shared().Take(h + payload);
  uint8_t* p = GRPC_SLICE_START_PTR(raw);
  std::memcpy(p, header, h);
  float* rows = reinterpret_cast<float*>(p + h);  // Unaligned.
  absl::Status s = node_type >= 0 ? store.GetTypeFeatures(node_type, ids, rows)
                                  : store.GetFeatures(ids, rows);
  grpc::Slice slice(raw, grpc::Slice::STEAL_REF);
  if (!s.ok()) return s;
  *out = grpc::ByteBuffer(&slice, 1);
  return absl::OkStatus();
}

void EncodeSampled(const SampledNeighbors& sampled, grpc::ByteBuffer* out) {
  static_assert(sizeof(NodeId) == 8 && sizeof(int64_t) == 8);
  const size_t counts = sampled.counts.size() * 8;
  const size_t neighbors = sampled.neighbors.size() * 8;
  const size_t relations = sampled.relations.size() * 4;
  uint8_t counts_header[16], neighbors_header[16], relations_header[16];
  const size_t ch = PutField(kCountsTag, counts, counts_header);
  const size_t nh = PutField(kNeighborsTag, neighbors, neighbors_header);
  const size_t rh = PutField(kRelationsTag, relations, relations_header);
  // Filled before it is wrapped, as in EncodeFeatures.
  grpc_slice raw =
      SlicePool::Shared().Take(ch + counts + nh + neighbors + rh + relations);
  uint8_t* p = GRPC_SLICE_START_PTR(raw);
  std::memcpy(p, counts_header, ch);
  p += ch;
  if (counts != 0) std::memcpy(p, sampled.counts.data(), counts);
  p += counts;
  std::memcpy(p, neighbors_header, nh);
  p += nh;
  if (neighbors != 0) std::memcpy(p, sampled.neighbors.data(), neighbors);
  p += neighbors;
  std::memcpy(p, relations_header, rh);
  p += rh;
  if (relations != 0) std::memcpy(p, sampled.relations.data(), relations);
  grpc::Slice slice(raw, grpc::Slice::STEAL_REF);
  *out = grpc::ByteBuffer(&slice, 1);
}

absl::Status DecodeSampled(const grpc::ByteBuffer& response, size_t num_ids,
                           SampledNeighbors* out) {
  static_assert(sizeof(NodeId) == 8 && sizeof(int64_t) == 8);
  std::vector<grpc::Slice> slices;
  if (response.Valid() && !response.Dump(&slices).ok()) {
    return absl::DataLossError("unreadable SampleNeighbors response");
  }
  SliceReader in(std::move(slices));
  // Absent fields are empty (proto3); a repeated one replaces the earlier.
  out->counts.clear();
  out->neighbors.clear();
  out->relations.clear();
  while (!in.AtEnd()) {
    uint64_t tag = 0, len = 0;
    bool ok = in.Varint(&tag);
    if (ok && tag == kRelationsTag) {
      if (!in.Varint(&len)) {
        return absl::DataLossError("malformed SampleNeighbors response");
      }
      if (len % 4 != 0 || len > in.Remaining()) {
        return absl::DataLossError(
            absl::StrCat("relations holds ", len,
                         " bytes, not whole 4-byte values within "
                         "the message (",
                         in.Remaining(), " bytes left)"));
      }
      out->relations.resize(static_cast<size_t>(len / 4));
      if (len > 0 &&
          !in.Copy(reinterpret_cast<char*>(out->relations.data()), len)) {
        return absl::DataLossError("relations is truncated");
      }
      continue;
    }
    if (ok && (tag == kCountsTag || tag == kNeighborsTag)) {
      if (!in.Varint(&len)) {
        return absl::DataLossError("malformed SampleNeighbors response");
      }
      const bool counts = tag == kCountsTag;
      RETURN_IF_ERROR(ReadInt64s(in, counts ? "counts" : "neighbors", len,
                                 counts ? &out->counts : &out->neighbors));
      continue;
    }
    if (!ok || !SkipField(in, tag & 7)) {
      return absl::DataLossError("malformed SampleNeighbors response");
    }
  }
  if (out->counts.size() != num_ids) {
    return absl::DataLossError(absl::StrCat("counts holds ", out->counts.size(),
                                            " values, expected ", num_ids));
  }
  return absl::OkStatus();
}

absl::Status DecodeFeatures(const grpc::ByteBuffer& response, size_t num_ids,
                            int64_t feature_dim, float* out,
                            const size_t* rows) {
  std::vector<grpc::Slice> slices;
  // An empty message may arrive as a buffer with no slices at all.
  if (response.Valid() && !response.Dump(&slices).ok()) {
    return absl::DataLossError("unreadable GetFeatures response");
  }
  const size_t want = num_ids * static_cast<size_t>(feature_dim) * 4;
  SliceReader in(std::move(slices));
  uint64_t dim = 0, got = 0;
  while (!in.AtEnd()) {
    uint64_t tag;
    if (!in.Varint(&tag)) return absl::DataLossError("truncated response");
    uint64_t len = 0;
    bool ok = true;
    if (tag == kDimTag) {
      ok = in.Varint(&dim);
    } else if (tag == kFeaturesTag) {
      ok = in.Varint(&len);
      if (ok && len != want) {
        return absl::DataLossError(
            absl::StrCat("got ", len, " bytes of features, expected ", want,
                         " (", num_ids, " rows of ", feature_dim, " floats)"));
      }
      ok = ok &&
           (len == 0 || in.CopyRows(reinterpret_cast<char*>(out), rows,
                                    static_cast<size_t>(feature_dim) * 4, len));
      got = len;
    } else {
      ok = SkipField(in, tag & 7);
    }
    if (!ok) return absl::DataLossError("malformed GetFeatures response");
  }
  if (got != want || (want > 0 && static_cast<int64_t>(dim) != feature_dim)) {
    return absl::DataLossError(
        absl::StrCat("got ", got, " bytes of rows ", dim, " wide, expected ",
                     want, " bytes of rows ", feature_dim, " wide"));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn::internal
