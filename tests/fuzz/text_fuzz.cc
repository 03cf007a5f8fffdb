// The importers' text parsers on arbitrary lines (datasets/internal/
// text_readers.h: edge lists, integer and label columns, feature rows, split
// files; and the LINQS .content/.cites pair through ImportLinqs). The first
// byte picks the parser and a small node count.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/importers.h"
#include "datasets/internal/text_readers.h"
#include "tests/fuzz/fuzz_util.h"

namespace di = shardgnn::datasets_internal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  shardgnn::fuzz::Input in(data, size);
  const uint8_t pick = in.Byte();
  const int64_t num_nodes = 1 + in.Byte() % 64;
  const std::string path =
      shardgnn::fuzz::WriteInput("input.txt", in.data(), in.size());
  switch (pick % 7) {
    case 0:
    case 1: {
      std::vector<shardgnn::NodeId> src, dst;
      const di::EdgeSeparator sep[] = {di::EdgeSeparator::kComma,
                                       di::EdgeSeparator::kBlank,
                                       di::EdgeSeparator::kAuto};
      std::string header;  // Case 1 lets a first line be a header.
      (void)di::ReadEdgeText(path, sep[(pick / 7) % 3], num_nodes, &src, &dst,
                             pick % 7 == 1 ? &header : nullptr);
      break;
    }
    case 2:
      (void)di::ReadIntColumn(path);
      break;
    case 3:
      (void)di::ReadLabelColumn(path, num_nodes);
      break;
    case 4: {
      int64_t nonfinite = 0;
      (void)di::StreamFeatureRows(path, num_nodes,
                                  shardgnn::fuzz::ScratchDir() + "/rows.npy",
                                  nullptr, (pick / 7) % 2 == 1, &nonfinite);
      break;
    }
    case 5:
      (void)di::ReadSplitText(path, num_nodes);
      break;
    case 6: {
      // .content up to the first NUL byte, .cites after it.
      const std::string text(reinterpret_cast<const char*>(in.data()),
                             in.size());
      const size_t cut = text.find('\0');
      const std::string content = text.substr(0, cut);
      const std::string cites =
          cut == std::string::npos ? "" : text.substr(cut + 1);
      shardgnn::LinqsImportOptions options;
      options.content_path = shardgnn::fuzz::WriteInput(
          "g.content", reinterpret_cast<const uint8_t*>(content.data()),
          content.size());
      options.cites_path = shardgnn::fuzz::WriteInput(
          "g.cites", reinterpret_cast<const uint8_t*>(cites.data()),
          cites.size());
      options.train_per_class = 1;
      options.num_valid = 1;
      options.num_test = 1;
      options.skip_unknown_ids = (pick / 7) % 2 == 1;
      const std::string out = shardgnn::fuzz::ScratchDir() + "/linqs-out";
      std::error_code ec;
      std::filesystem::remove_all(out, ec);
      (void)shardgnn::ImportLinqs(options, out);
      break;
    }
  }
  return 0;
}
