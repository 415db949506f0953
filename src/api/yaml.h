// YAML (and therefore JSON) text to nlohmann::json documents, with kubectl's typing rules.
//
// Uses libyaml's event parser. Plain scalars are typed as Kubernetes' YAML→JSON conversion types
// them (YAML 1.1: null/~, true/false/yes/no/on/off, decimal/0x/0o/leading-zero octal integers,
// floats incl. .inf/.nan); quoted scalars and explicitly tagged !!str stay strings. Anchors,
// aliases and merge keys (`<<`) are resolved. Mapping keys are always strings. Empty documents
// are skipped. Errors name the source, line and column (1-based). Stateless and thread-safe.
//
// Bounded for hostile input: at most kMaxYamlDepth nested collections, at most kMaxYamlNodes
// values per document once aliases are expanded ("billion laughs"), at most kMaxYamlBytes of
// text; beyond that an Invalid error names the place and the limit.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainctl::api {

inline constexpr size_t kMaxYamlDepth = 256;
inline constexpr size_t kMaxYamlNodes = 1000000;
inline constexpr size_t kMaxYamlBytes = 16u << 20;

// Parses every document of a (multi-document) YAML stream. `source` names the input in errors.
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text,
                                                         const std::string& source);

}  // namespace trainctl::api
