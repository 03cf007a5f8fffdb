// Node types and relations as JSON, the way partition.json and a shard's
// meta write them (docs/formats.md): one object per type in order, with its
// name, count and feature width; one per relation with src, relation, dst,
// count and feature width. For the .cc files that write those documents
// (nlohmann/json is not part of any public header).
#ifndef SHARDGNN_DATASETS_TYPE_JSON_H_
#define SHARDGNN_DATASETS_TYPE_JSON_H_

#include <vector>

#include "datasets/dataset.h"
#include "nlohmann/json.hpp"

namespace shardgnn {

inline nlohmann::ordered_json NodeTypesJson(
    const std::vector<NodeType>& types) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const NodeType& t : types) {
    out.push_back(
        {{"name", t.name}, {"count", t.count}, {"feature_dim", t.feature_dim}});
  }
  return out;
}

inline nlohmann::ordered_json EdgeTypesJson(
    const std::vector<EdgeType>& relations) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const EdgeType& r : relations) {
    out.push_back({{"src", r.src},
                   {"relation", r.relation},
                   {"dst", r.dst},
                   {"count", r.count},
                   {"feature_dim", r.feature_dim}});
  }
  return out;
}

}  // namespace shardgnn

#endif  // SHARDGNN_DATASETS_TYPE_JSON_H_
