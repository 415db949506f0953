// Reading fields of JSON that came from outside (manifests, API objects, AdmissionReviews)
// without exceptions: the field's value when it is present with the expected type, else the
// fallback. nlohmann's value("k", "") throws type_error when "k" holds a number — a crash on
// hostile input (found by fuzzing, issue #16). Pure; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainctl::api {

// `object[key]` as it is; a null value when `object` is not an object or has no such field
// (the reference stays valid as long as `object` does, or for good when it is the null).
const nlohmann::json& ChildAt(const nlohmann::json& object, std::string_view key);
// `object[key]` as a string; `fallback` when `object` is not an object or the field is absent
// or not a string.
std::string StringAt(const nlohmann::json& object, std::string_view key, std::string fallback = "");
// `object[key]` as an integer (JSON integers only); `fallback` otherwise.
int64_t IntAt(const nlohmann::json& object, std::string_view key, int64_t fallback);
// `object[key]` as a boolean (JSON booleans only); `fallback` otherwise.
bool BoolAt(const nlohmann::json& object, std::string_view key, bool fallback);

}  // namespace trainctl::api
