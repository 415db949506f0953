// JSON from outside the process — API responses and watch events, AdmissionReview bodies,
// exec-plugin output, state files — decoded with bounded work: the size and the nesting depth
// are checked by one linear scan before any value is built, so no input can exhaust the stack
// (copying or printing a nlohmann::json recurses once per level) or memory.
//
// Two depth budgets: kMaxApiJsonDepth is the Kubernetes API server's own decoding limit, so an
// object the server stored is never refused (a watch that refused one would stall); everything
// else uses kMaxYamlDepth, the manifest limit. Pure and thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/yaml.h"

namespace trainctl::api {

inline constexpr size_t kMaxApiJsonDepth = 10000;

struct JsonLimits {
  size_t max_bytes = kMaxYamlBytes;
  size_t max_depth = kMaxYamlDepth;
};
inline constexpr JsonLimits kApiJsonLimits{256u << 20, kMaxApiJsonDepth};

// The deepest nesting of arrays and objects in `text` (strings skipped, escapes honoured),
// scanning only until it passes `stop_above`. Not a validator: malformed text gets a number too.
size_t JsonNestingDepth(std::string_view text, size_t stop_above);

// Why `text` is over `limits` ("nested deeper than 256 levels", "larger than 16 MiB"), or none.
std::optional<std::string> JsonLimitProblem(std::string_view text, const JsonLimits& limits);

// nlohmann::json::parse without exceptions, within `limits`: a discarded value (is_discarded())
// when the text is over a limit or is not JSON; `problem`, when given, then says which.
nlohmann::json ParseJsonWithin(std::string_view text, const JsonLimits& limits,
                               std::string* problem = nullptr);

}  // namespace trainctl::api
