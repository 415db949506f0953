// Reading strings out of server-sent JSON without trusting its shape: a missing key, a value
// of another type or a non-object along the way gives "" instead of an exception. Pure.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace trainctl::kube {

inline std::string StringAt(const nlohmann::json& doc, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &doc;
  for (const char* key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(key);
    if (it == at->end()) return "";
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

}  // namespace trainctl::kube
