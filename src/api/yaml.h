// YAML (and therefore JSON) text to nlohmann::json documents, with kubectl's typing rules.
//
// Uses libyaml's event parser. Plain scalars are typed as Kubernetes' YAML→JSON conversion types
// them (YAML 1.1: null/~, true/false/yes/no/on/off, decimal/0x/0o/leading-zero octal integers,
// floats incl. .inf/.nan); quoted scalars and explicitly tagged !!str stay strings. Anchors,
// aliases and merge keys (`<<`) are resolved. Mapping keys are always strings. Empty documents
// are skipped. Errors name the source, line and column (1-based). Stateless and thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trainctl::api {

// Parses every document of a (multi-document) YAML stream. `source` names the input in errors.
StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text,
                                                         const std::string& source);

}  // namespace trainctl::api
