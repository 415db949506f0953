#include "api/json_bounds.h"

namespace trainctl::api {

size_t JsonNestingDepth(std::string_view text, size_t stop_above) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > stop_above) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<std::string> JsonLimitProblem(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    size_t mib = limits.max_bytes >> 20;
    return "larger than " +
           (mib > 0 ? std::to_string(mib) + " MiB" : std::to_string(limits.max_bytes) + " bytes") +
           " (" + std::to_string(text.size()) + " bytes)";
  }
  if (JsonNestingDepth(text, limits.max_depth) > limits.max_depth)
    return "nested deeper than " + std::to_string(limits.max_depth) + " levels";
  return std::nullopt;
}

nlohmann::json ParseJsonWithin(std::string_view text, const JsonLimits& limits,
                               std::string* problem) {
  if (std::optional<std::string> over = JsonLimitProblem(text, limits)) {
    if (problem) *problem = *over;
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() && problem) *problem = "not JSON";
  return parsed;
}

}  // namespace trainctl::api
