// JsonNode and SimdNode: one read-only view of a JSON value over two parsers, nlohmann-json and
// simdjson's DOM, so that a projection written once as a template over `Node` runs on watch
// documents (nlohmann) and on list pages and watch events read straight from their text
// (simdjson) alike; with the readers that give such nodes (ForEachListItem, WithSimdDocument,
// ProjectEventObject) and the store key of an object (StoreKeyOf). Internal to src/kube/ (simdjson
// is a private dependency of the library).
//
// A Node is empty when the value is absent; asking an empty or mistyped Node for anything gives
// nothing (an empty Node, "", false, nullopt). Objects with a key twice: both give the last
// (nlohmann keeps only that one).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/json_bounds.h"
#include "kube/list_parse_scope.h"
#include "kube/object_identity.h"
#include "kube/watch_decoder.h"

namespace trainctl::kube {

// A float truncated to an integer; nullopt when it is out of int64's range (or NaN).
inline std::optional<int64_t> Truncated(double d) {
  if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;
  return static_cast<int64_t>(d);
}

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
  // Any number, a float truncated to an integer (see Truncated); nullopt otherwise.
  std::optional<int64_t> number() const {
    if (j_ && j_->is_number_float()) return Truncated(j_->get<double>());
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
  // The last member of that name, as nlohmann-json keeps it.
  SimdNode operator[](const char* key) const {
    simdjson::dom::object object;
    if (!present_ || e_.get(object)) return {};
    std::string_view name(key);
    SimdNode found;
    for (simdjson::dom::key_value_pair member : object)
      if (member.key == name) found = SimdNode(member.value);
    return found;
  }
  SimdNode operator[](const std::string& key) const { return (*this)[key.c_str()]; }
  bool is_null() const { return present_ && e_.is_null(); }
  bool is_object() const { return present_ && e_.is_object(); }
  bool is_array() const { return present_ && e_.is_array(); }
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
    if (present_ && e_.is_double() && !e_.get(d)) return Truncated(d);
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

// Reads `text`, one JSON document (a watch event), with a simdjson parser kept per thread (one
// for each `F`: the event check and each projection have their own), and calls
// `f(SimdNode root)`; the node is valid only during the call. False (and no call) when the
// text is over kApiJsonLimits' size or simdjson does not accept it: malformed, a number beyond
// 64 bits, nesting deeper than kMaxApiJsonDepth. The parser keeps its buffers for the next text
// unless this one grew them past 1 MiB.
template <typename F>
bool WithSimdDocument(std::string_view text, F&& f) {
  if (text.size() > api::kApiJsonLimits.max_bytes) return false;
  thread_local std::unique_ptr<simdjson::dom::parser> parser;
  if (!parser) {
    parser = std::make_unique<simdjson::dom::parser>();
    if (parser->allocate(4096, api::kMaxApiJsonDepth)) {
      parser.reset();
      return false;
    }
  }
  simdjson::dom::element root;
  bool read = !parser->parse(text.data(), text.size()).get(root);
  if (read) f(SimdNode(root));
  if (parser->capacity() > (1u << 20)) parser.reset();
  return read;
}

// The store key of an object: StoreKey of its metadata.namespace ("" unless a string) and
// metadata.name; "" when the name is not a string.
template <typename Node>
std::string StoreKeyOf(const Node& object) {
  Node name = object["metadata"]["name"];
  if (!name.is_string()) return "";
  return StoreKey(object["metadata"]["namespace"].str(), name.str());
}

// A watch event's object read from the event's text: its store key and `project(SimdNode
// object)`; nullopt when WithSimdDocument declines the text or it has no object.
template <typename T, typename Project>
std::optional<EventProjection<T>> ProjectEventObject(std::string_view event_text,
                                                     Project&& project) {
  std::optional<EventProjection<T>> out;
  WithSimdDocument(event_text, [&](const SimdNode& event) {
    SimdNode object = event["object"];
    if (object.is_object()) out = EventProjection<T>{StoreKeyOf(object), project(object)};
  });
  return out;
}

// Calls `f(SimdNode)` for each element of the `items` array of a list response's body; false
// (and no call) when the body is over kApiJsonLimits' size, is not JSON that simdjson accepts
// (nesting over 1024 levels included), or has no `items` array. Reads with the parser of the
// ListParseScope open on this thread, if any (its buffers then serve the next page too).
template <typename F>
bool ForEachListItem(std::string_view body, F&& f) {
  if (body.size() > api::kApiJsonLimits.max_bytes) return false;
  std::optional<simdjson::dom::parser> own;  // made only when no scope is open
  simdjson::dom::parser* parser = ListParseScope::Current();
  if (!parser) parser = &own.emplace();
  simdjson::dom::element doc;
  if (parser->parse(body.data(), body.size()).get(doc)) return false;
  SimdNode items = SimdNode(doc)["items"];
  if (!items.is_array()) return false;
  items.each(f);
  return true;
}

}  // namespace trainctl::kube
