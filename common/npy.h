// Reading and writing NumPy .npy files (format version 1.0, C order,
// little-endian).
//
// Arrays in a canonical dataset directory and a partition directory are .npy
// files so that users can open them with numpy.load. Only the dtypes shardgnn
// uses or imports are supported: float32 ('<f4'), float64 ('<f8'), int64
// ('<i8'), int32 ('<i4'), uint8 ('|u1'), bool ('|b1', one byte of 0 or 1).
// Functions here are thread-compatible (no shared state).
#ifndef SHARDGNN_COMMON_NPY_H_
#define SHARDGNN_COMMON_NPY_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shardgnn {

enum class NpyDtype { kFloat32, kInt64, kInt32, kUint8, kFloat64, kBool };

// The descr string numpy writes for `dtype` ("<f4", ...) and its element size
// in bytes.
const char* NpyDescr(NpyDtype dtype);
size_t NpyElementSize(NpyDtype dtype);

template <typename T>
NpyDtype NpyDtypeOf();
template <>
inline NpyDtype NpyDtypeOf<float>() {
  return NpyDtype::kFloat32;
}
template <>
inline NpyDtype NpyDtypeOf<double>() {
  return NpyDtype::kFloat64;
}
template <>
inline NpyDtype NpyDtypeOf<int64_t>() {
  return NpyDtype::kInt64;
}
template <>
inline NpyDtype NpyDtypeOf<int32_t>() {
  return NpyDtype::kInt32;
}
template <>
inline NpyDtype NpyDtypeOf<uint8_t>() {
  return NpyDtype::kUint8;
}

struct NpyHeader {
  NpyDtype dtype = NpyDtype::kFloat32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // Byte offset of the first element in the file.

  int64_t NumElements() const;
};

// Parses the header of the .npy file at `path`. Fails with a message naming the
// file on a missing file, a bad magic string, Fortran order, a big-endian or
// unsupported dtype, a header longer than 1 MiB or than the file, a shape whose
// element or byte count overflows, or a file shorter than the header says. So
// a header that passes never asks for more memory than the file's size.
absl::StatusOr<NpyHeader> ReadNpyHeader(const std::string& path);

// A whole array read into memory.
template <typename T>
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<T> data;
};

// Reads the array at `path`, which must have dtype T (uint8_t also reads a
// bool array, as bytes of 0 or 1). `expected_ndim` (if >= 0) is checked.
// RESOURCE_EXHAUSTED if the array does not fit in memory.
template <typename T>
absl::StatusOr<NpyArray<T>> ReadNpy(const std::string& path,
                                    int expected_ndim = -1);

// Writes `data` with `shape` to `path` (replaced if present). REQUIRES:
// product(shape) == count.
absl::Status WriteNpyRaw(const std::string& path, NpyDtype dtype,
                         const std::vector<int64_t>& shape, const void* data,
                         size_t count);

template <typename T>
absl::Status WriteNpy(const std::string& path,
                      const std::vector<int64_t>& shape,
                      const std::vector<T>& data) {
  return WriteNpyRaw(path, NpyDtypeOf<T>(), shape, data.data(), data.size());
}

// Writes a .npy file whose shape is known up front, in pieces: for streaming
// importers and generators that must not hold the whole array in memory.
// Close() checks that exactly product(shape) elements were written. Not
// thread-safe.
class NpyWriter {
 public:
  static absl::StatusOr<std::unique_ptr<NpyWriter>> Create(
      const std::string& path, NpyDtype dtype,
      const std::vector<int64_t>& shape);
  ~NpyWriter();
  NpyWriter(const NpyWriter&) = delete;
  NpyWriter& operator=(const NpyWriter&) = delete;

  // Appends `count` elements of the writer's dtype.
  absl::Status Append(const void* data, size_t count);
  absl::Status Close();

 private:
  NpyWriter(std::string path, FILE* file, size_t element_size,
            int64_t expected);
  std::string path_;
  FILE* file_;
  size_t element_size_;
  int64_t expected_;
  int64_t written_ = 0;
};

}  // namespace shardgnn

#endif  // SHARDGNN_COMMON_NPY_H_
