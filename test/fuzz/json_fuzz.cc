// Fuzz target: bounded JSON decoding (api/json_bounds.h) with both budgets; whatever decodes
// is copied and printed (both recurse once per level, the reason for the depth bound).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/json_bounds.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const trainctl::api::JsonLimits& limits :
       {trainctl::api::JsonLimits{}, trainctl::api::kApiJsonLimits}) {
    nlohmann::json parsed = trainctl::api::ParseJsonWithin(text, limits);
    if (parsed.is_discarded()) continue;
    nlohmann::json copy = parsed;
    (void)copy.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
