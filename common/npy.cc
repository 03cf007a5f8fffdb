#include "common/npy.h"

#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shardgnn {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Longest header dict read; numpy itself refuses more than 10000 bytes by
// default (numpy.lib.format's max_header_size).
constexpr size_t kMaxHeaderBytes = 1 << 20;

absl::StatusOr<NpyDtype> ParseDescr(absl::string_view descr) {
  if (descr == "<f4") return NpyDtype::kFloat32;
  if (descr == "<i8") return NpyDtype::kInt64;
  if (descr == "<i4") return NpyDtype::kInt32;
  if (descr == "|u1" || descr == "<u1") return NpyDtype::kUint8;
  if (descr == "<f8") return NpyDtype::kFloat64;
  if (descr == "|b1") return NpyDtype::kBool;
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype '", descr, "'"));
}

// Finds the value text following `'key':` in a numpy header dict.
absl::StatusOr<absl::string_view> DictValue(absl::string_view dict,
                                            absl::string_view key) {
  std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = dict.find(quoted);
  if (pos == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("header lacks ", quoted));
  pos = dict.find(':', pos + quoted.size());
  if (pos == absl::string_view::npos)
    return absl::InvalidArgumentError("malformed header");
  absl::string_view rest =
      absl::StripLeadingAsciiWhitespace(dict.substr(pos + 1));
  size_t end;
  if (!rest.empty() && rest[0] == '(') {
    end = rest.find(')');
    if (end == absl::string_view::npos)
      return absl::InvalidArgumentError("malformed shape");
    return rest.substr(0, end + 1);
  }
  if (!rest.empty() && rest[0] == '\'') {
    end = rest.find('\'', 1);
    if (end == absl::string_view::npos)
      return absl::InvalidArgumentError("malformed header string");
    return rest.substr(1, end - 1);
  }
  end = rest.find_first_of(",}");
  return absl::StripTrailingAsciiWhitespace(rest.substr(0, end));
}

std::string HeaderText(NpyDtype dtype, const std::vector<int64_t>& shape) {
  std::string shape_text;
  if (shape.size() == 1) {
    shape_text = absl::StrCat("(", shape[0], ",)");
  } else {
    shape_text = absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
  }
  std::string dict =
      absl::StrCat("{'descr': '", NpyDescr(dtype),
                   "', 'fortran_order': False, 'shape': ", shape_text, ", }");
  // Magic (6) + version (2) + length (2) + dict + padding + '\n' is a multiple
  // of 64, as numpy writes it.
  size_t total = kMagicLen + 2 + 2 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  out += dict;
  return out;
}

int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

const char* NpyDescr(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kFloat32:
      return "<f4";
    case NpyDtype::kInt64:
      return "<i8";
    case NpyDtype::kInt32:
      return "<i4";
    case NpyDtype::kUint8:
      return "|u1";
    case NpyDtype::kFloat64:
      return "<f8";
    case NpyDtype::kBool:
      return "|b1";
  }
  return "?";
}

size_t NpyElementSize(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kFloat32:
    case NpyDtype::kInt32:
      return 4;
    case NpyDtype::kInt64:
    case NpyDtype::kFloat64:
      return 8;
    case NpyDtype::kUint8:
    case NpyDtype::kBool:
      return 1;
  }
  return 0;
}

int64_t NpyHeader::NumElements() const { return Product(shape); }

absl::StatusOr<NpyHeader> ReadNpyHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  auto fail = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid .npy file: ", what));
  };
  // Every size the header claims is checked against the file's before
  // anything is allocated from it.
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  in.seekg(0, std::ios::beg);
  if (!in || end < 0) return fail("cannot tell its size");
  const uint64_t file_size = static_cast<uint64_t>(end);
  char prefix[10];
  if (!in.read(prefix, 10)) return fail("shorter than a header");
  if (std::memcmp(prefix, kMagic, kMagicLen) != 0)
    return fail("bad magic string");
  int major = static_cast<unsigned char>(prefix[6]);
  size_t header_len;
  size_t prefix_len = 10;
  if (major == 1) {
    header_len = static_cast<unsigned char>(prefix[8]) |
                 (static_cast<unsigned char>(prefix[9]) << 8);
  } else if (major == 2 || major == 3) {
    char extra[2];
    if (!in.read(extra, 2)) return fail("truncated header");
    header_len = static_cast<unsigned char>(prefix[8]) |
                 (static_cast<unsigned char>(prefix[9]) << 8) |
                 (static_cast<unsigned char>(extra[0]) << 16) |
                 (static_cast<unsigned char>(extra[1]) << 24);
    prefix_len = 12;
  } else {
    return fail(absl::StrCat("unsupported format version ", major));
  }
  if (header_len > kMaxHeaderBytes || prefix_len + header_len > file_size) {
    return fail(absl::StrCat("header claims ", header_len, " bytes (",
                             file_size, " in the file, at most ",
                             kMaxHeaderBytes, " read)"));
  }
  std::string dict(header_len, '\0');
  if (!in.read(dict.data(), header_len)) return fail("truncated header");

  NpyHeader header;
  header.data_offset = prefix_len + header_len;
  auto descr = DictValue(dict, "descr");
  if (!descr.ok()) return fail(descr.status().message());
  auto dtype = ParseDescr(*descr);
  if (!dtype.ok()) return fail(dtype.status().message());
  header.dtype = *dtype;
  auto fortran = DictValue(dict, "fortran_order");
  if (!fortran.ok()) return fail(fortran.status().message());
  if (*fortran != "False")
    return fail("Fortran-order arrays are not supported");
  auto shape = DictValue(dict, "shape");
  if (!shape.ok()) return fail(shape.status().message());
  absl::string_view inner = *shape;
  if (inner.size() < 2 || inner.front() != '(') return fail("malformed shape");
  inner.remove_prefix(1);
  inner.remove_suffix(1);
  for (absl::string_view part :
       absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t dim;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 0)
      return fail("malformed shape");
    header.shape.push_back(dim);
  }

  // The element count and byte count, refusing products that overflow.
  uint64_t elements = 1;
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(dim),
                               &elements)) {
      return fail(absl::StrCat("shape ", *shape,
                               " holds more than 2^64 "
                               "elements"));
    }
  }
  uint64_t data_bytes = 0;
  if (elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      __builtin_mul_overflow(elements, NpyElementSize(header.dtype),
                             &data_bytes)) {
    return fail(absl::StrCat("shape ", *shape, " is too large (", elements,
                             " elements)"));
  }
  const uint64_t need = header.data_offset + data_bytes;
  if (need < data_bytes || file_size < need) {
    return fail(absl::StrCat("truncated: header says ", need,
                             " bytes, file has ", file_size));
  }
  return header;
}

template <typename T>
absl::StatusOr<NpyArray<T>> ReadNpy(const std::string& path,
                                    int expected_ndim) {
  auto header = ReadNpyHeader(path);
  if (!header.ok()) return header.status();
  const bool bytes_of_bool =
      std::is_same_v<T, uint8_t> && header->dtype == NpyDtype::kBool;
  if (header->dtype != NpyDtypeOf<T>() && !bytes_of_bool) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": dtype is ", NpyDescr(header->dtype),
                     ", expected ", NpyDescr(NpyDtypeOf<T>())));
  }
  if (expected_ndim >= 0 &&
      static_cast<int>(header->shape.size()) != expected_ndim) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", header->shape.size(),
                     " dimensions, expected ", expected_ndim));
  }
  NpyArray<T> array;
  array.shape = header->shape;
  // The file holds these bytes (ReadNpyHeader checked), but memory may not.
  try {
    array.data.resize(static_cast<size_t>(header->NumElements()));
  } catch (const std::exception&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        path, ": cannot allocate ", header->NumElements(), " elements"));
  }
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(header->data_offset));
  if (!in.read(reinterpret_cast<char*>(array.data.data()),
               static_cast<std::streamsize>(array.data.size() * sizeof(T)))) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  return array;
}

template absl::StatusOr<NpyArray<float>> ReadNpy<float>(const std::string&,
                                                        int);
template absl::StatusOr<NpyArray<double>> ReadNpy<double>(const std::string&,
                                                          int);
template absl::StatusOr<NpyArray<int64_t>> ReadNpy<int64_t>(const std::string&,
                                                            int);
template absl::StatusOr<NpyArray<int32_t>> ReadNpy<int32_t>(const std::string&,
                                                            int);
template absl::StatusOr<NpyArray<uint8_t>> ReadNpy<uint8_t>(const std::string&,
                                                            int);

absl::Status WriteNpyRaw(const std::string& path, NpyDtype dtype,
                         const std::vector<int64_t>& shape, const void* data,
                         size_t count) {
  auto writer = NpyWriter::Create(path, dtype, shape);
  if (!writer.ok()) return writer.status();
  absl::Status s = (*writer)->Append(data, count);
  if (!s.ok()) return s;
  return (*writer)->Close();
}

absl::StatusOr<std::unique_ptr<NpyWriter>> NpyWriter::Create(
    const std::string& path, NpyDtype dtype,
    const std::vector<int64_t>& shape) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  std::string header = HeaderText(dtype, shape);
  if (std::fwrite(header.data(), 1, header.size(), file) != header.size()) {
    std::fclose(file);
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": write failed: ", std::strerror(errno)));
  }
  return std::unique_ptr<NpyWriter>(
      new NpyWriter(path, file, NpyElementSize(dtype), Product(shape)));
}

NpyWriter::NpyWriter(std::string path, FILE* file, size_t element_size,
                     int64_t expected)
    : path_(std::move(path)),
      file_(file),
      element_size_(element_size),
      expected_(expected) {}

NpyWriter::~NpyWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status NpyWriter::Append(const void* data, size_t count) {
  if (file_ == nullptr)
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": writer is closed"));
  if (written_ + static_cast<int64_t>(count) > expected_) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": more elements written than the shape holds (",
                     expected_, ")"));
  }
  if (count > 0 && std::fwrite(data, element_size_, count, file_) != count) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  written_ += static_cast<int64_t>(count);
  return absl::OkStatus();
}

absl::Status NpyWriter::Close() {
  if (file_ == nullptr)
    return absl::FailedPreconditionError(
        absl::StrCat(path_, ": writer is closed"));
  FILE* file = file_;
  file_ = nullptr;
  bool flushed = std::fflush(file) == 0;
  bool closed = std::fclose(file) == 0;
  if (!flushed || !closed) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path_, ": write failed: ", std::strerror(errno)));
  }
  if (written_ != expected_) {
    return absl::InternalError(absl::StrCat(
        path_, ": wrote ", written_, " elements, shape holds ", expected_));
  }
  return absl::OkStatus();
}

}  // namespace shardgnn
