// JsonNode and SimdNode: one read-only view of a JSON value over two parsers, nlohmann-json and
// simdjson's DOM, so that a projection written once as a template over `Node` runs on watch
// events (nlohmann) and on whole list pages (simdjson) alike. Internal to src/kube/ (simdjson
// is a private dependency of the library).
//
// A Node is empty when the value is absent; asking an empty or mistyped Node for anything gives
// nothing (an empty Node, "", false, nullopt). Objects with a key twice: nlohmann keeps the
// last, simdjson finds the first.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/json_bounds.h"

namespace trainctl::kube {

class JsonNode {
 public:
  JsonNode() = default;
  explicit JsonNode(const nlohmann::json* j) : j_(j) {}
  explicit operator bool() const { return j_ != nullptr; }
  JsonNode operator[](const char* key) const {
    if (!j_ || !j_->is_object()) return {};
    auto it = j_->find(key);
    return it == j_->end() ? JsonNode() : JsonNode(&*it);
  }
  JsonNode operator[](const std::string& key) const { return (*this)[key.c_str()]; }
  bool is_null() const { return j_ && j_->is_null(); }
  bool is_object() const { return j_ && j_->is_object(); }
  bool is_string() const { return j_ && j_->is_string(); }
  std::string str() const { return is_string() ? j_->get<std::string>() : std::string(); }
  bool is_true() const { return j_ && j_->is_boolean() && j_->get<bool>(); }
  // An integer (not a float); nullopt otherwise.
  std::optional<int64_t> integer() const {
    if (!j_ || !j_->is_number_integer()) return std::nullopt;
    return j_->is_number_unsigned() ? static_cast<int64_t>(j_->get<uint64_t>())
                                    : j_->get<int64_t>();
  }
  // Any number, truncated to an integer; nullopt otherwise.
  std::optional<int64_t> number() const {
    if (j_ && j_->is_number_float()) return static_cast<int64_t>(j_->get<double>());
    return integer();
  }
  template <typename F>
  void each(F&& f) const {
    if (j_ && j_->is_array())
      for (const nlohmann::json& e : *j_) f(JsonNode(&e));
  }

 private:
  const nlohmann::json* j_ = nullptr;
};

class SimdNode {
 public:
  SimdNode() = default;
  explicit SimdNode(simdjson::dom::element e) : e_(e), present_(true) {}
  explicit operator bool() const { return present_; }
  SimdNode operator[](const char* key) const {
    simdjson::dom::object object;
    simdjson::dom::element child;
    if (!present_ || e_.get(object) || object.at_key(key).get(child)) return {};
    return SimdNode(child);
  }
  SimdNode operator[](const std::string& key) const { return (*this)[key.c_str()]; }
  bool is_null() const { return present_ && e_.is_null(); }
  bool is_object() const { return present_ && e_.is_object(); }
  bool is_string() const { return present_ && e_.is_string(); }
  std::string str() const {
    std::string_view v;
    return present_ && !e_.get(v) ? std::string(v) : std::string();
  }
  bool is_true() const {
    bool v = false;
    return present_ && !e_.get(v) && v;
  }
  std::optional<int64_t> integer() const {
    if (!present_) return std::nullopt;
    int64_t i;
    if (!e_.get(i)) return i;
    uint64_t u;
    if (!e_.get(u)) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  std::optional<int64_t> number() const {
    double d;
    if (present_ && e_.is_double() && !e_.get(d)) return static_cast<int64_t>(d);
    return integer();
  }
  template <typename F>
  void each(F&& f) const {
    simdjson::dom::array array;
    if (!present_ || e_.get(array)) return;
    for (simdjson::dom::element e : array) f(SimdNode(e));
  }

 private:
  simdjson::dom::element e_;
  bool present_ = false;
};

// Calls `f(SimdNode)` for each element of the `items` array of a list response's body; false
// (and no call) when the body is over kApiJsonLimits' size, is not JSON that simdjson accepts
// (nesting over 1024 levels included), or has no `items` array.
template <typename F>
bool ForEachListItem(std::string_view body, F&& f) {
  if (body.size() > api::kApiJsonLimits.max_bytes) return false;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object list;
  simdjson::dom::array items;
  if (parser.parse(body.data(), body.size()).get(doc) || doc.get(list) ||
      list.at_key("items").get(items))
    return false;
  for (simdjson::dom::element item : items) f(SimdNode(item));
  return true;
}

}  // namespace trainctl::kube
