#include "api/yaml.h"

#include <yaml.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

namespace trainctl::api {
namespace {

using nlohmann::json;

bool OneOf(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

std::string StripUnderscores(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += c;
  return out;
}

// Types a plain (unquoted, untagged) scalar the way YAML 1.1 resolvers used by kubectl do.
json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || OneOf(s, {"~", "null", "Null", "NULL"})) return nullptr;
  if (OneOf(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"}))
    return true;
  if (OneOf(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"}))
    return false;
  static const std::regex kDecimal("[-+]?(0|[1-9][0-9_]*)");
  static const std::regex kHex("[-+]?0x[0-9a-fA-F_]+");
  static const std::regex kOctal("[-+]?0o?[0-7_]+");
  static const std::regex kFloat(
      "[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+");
  std::string digits = StripUnderscores(s);
  errno = 0;
  if (std::regex_match(s, kDecimal)) {
    long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == 0) return v;
    return std::strtod(digits.c_str(), nullptr);
  }
  if (std::regex_match(s, kHex)) {
    bool neg = digits[0] == '-';
    size_t start = (digits[0] == '-' || digits[0] == '+') ? 3 : 2;
    long long v = std::strtoll(digits.c_str() + start, nullptr, 16);
    if (errno == 0) return neg ? -v : v;
  }
  if (std::regex_match(s, kOctal)) {
    bool neg = digits[0] == '-';
    size_t start = (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
    if (digits.compare(start, 2, "0o") == 0) start += 2;
    long long v = std::strtoll(digits.c_str() + start, nullptr, 8);
    if (errno == 0) return neg ? -v : v;
  }
  if (std::regex_match(s, kFloat) && s != "." && s != "+." && s != "-.") {
    return std::strtod(digits.c_str(), nullptr);
  }
  if (OneOf(s, {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}))
    return std::numeric_limits<double>::infinity();
  if (OneOf(s, {"-.inf", "-.Inf", "-.INF"})) return -std::numeric_limits<double>::infinity();
  if (OneOf(s, {".nan", ".NaN", ".NAN"})) return std::nan("");
  return s;
}

std::string KeyToString(const json& key) {
  if (key.is_string()) return key.get<std::string>();
  if (key.is_null()) return "null";
  return key.dump();
}

class Converter {
 public:
  Converter(std::string_view text, const std::string& source) : source_(source) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~Converter() { yaml_parser_delete(&parser_); }
  Converter(const Converter&) = delete;
  Converter& operator=(const Converter&) = delete;

  StatusOr<std::vector<json>> Run() {
    std::vector<json> docs;
    for (;;) {
      yaml_event_t event;
      TRAINCTL_RETURN_IF_ERROR(Next(&event));
      yaml_event_type_t type = event.type;
      yaml_event_delete(&event);
      if (type == YAML_STREAM_END_EVENT) break;
      if (type != YAML_DOCUMENT_START_EVENT) continue;
      anchors_.clear();
      nodes_ = 0;
      json doc;
      bool empty = false;
      TRAINCTL_RETURN_IF_ERROR(ParseDocumentBody(&doc, &empty));
      if (!empty && !doc.is_null()) docs.push_back(std::move(doc));
    }
    return docs;
  }

 private:
  Status Next(yaml_event_t* event) {
    if (!yaml_parser_parse(&parser_, event)) {
      std::string problem = parser_.problem ? parser_.problem : "invalid YAML";
      size_t line = parser_.problem_mark.line + 1;
      size_t column = parser_.problem_mark.column + 1;
      std::string context = parser_.context ? std::string(" ") + parser_.context : "";
      return InvalidError(source_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                          ": YAML syntax error: " + problem + context);
    }
    return Status::Ok();
  }

  Status ParseDocumentBody(json* out, bool* empty) {
    yaml_event_t event;
    TRAINCTL_RETURN_IF_ERROR(Next(&event));
    if (event.type == YAML_DOCUMENT_END_EVENT) {
      yaml_event_delete(&event);
      *empty = true;
      return Status::Ok();
    }
    Status st = ParseNode(&event, out);
    yaml_event_delete(&event);
    TRAINCTL_RETURN_IF_ERROR(st);
    TRAINCTL_RETURN_IF_ERROR(Next(&event));  // DOCUMENT_END
    yaml_event_delete(&event);
    return Status::Ok();
  }

  std::string Where(const yaml_event_t& e) const {
    return source_ + ":" + std::to_string(e.start_mark.line + 1) + ":" +
           std::to_string(e.start_mark.column + 1);
  }

  // Counts `n` more values in the document; an error past kMaxYamlNodes.
  Status Count(size_t n, const yaml_event_t& event) {
    nodes_ += n;
    if (nodes_ <= kMaxYamlNodes) return Status::Ok();
    return InvalidError(Where(event) + ": the document expands to more than " +
                        std::to_string(kMaxYamlNodes) +
                        " values (aliases that refer to aliases multiply: refused)");
  }

  // Parses the node that begins with `event` (already read) into *out.
  Status ParseNode(yaml_event_t* event, json* out) {
    if (event->type == YAML_SEQUENCE_START_EVENT || event->type == YAML_MAPPING_START_EVENT) {
      if (depth_ == kMaxYamlDepth)
        return InvalidError(Where(*event) + ": collections nested deeper than " +
                            std::to_string(kMaxYamlDepth) + " levels");
      ++depth_;
      size_t before = nodes_;
      Status st = ParseCollection(event, out);
      --depth_;
      TRAINCTL_RETURN_IF_ERROR(st);
      const char* anchor = event->type == YAML_SEQUENCE_START_EVENT
                               ? reinterpret_cast<const char*>(event->data.sequence_start.anchor)
                               : reinterpret_cast<const char*>(event->data.mapping_start.anchor);
      if (anchor) anchors_[anchor] = {*out, nodes_ - before};
      return Status::Ok();
    }
    TRAINCTL_RETURN_IF_ERROR(Count(1, *event));
    return ParseLeaf(event, out);
  }

  // A collection's contents; the node itself is counted here.
  // A collection's contents; the collection itself is counted here.
  Status ParseCollection(yaml_event_t* event, json* out) {
    TRAINCTL_RETURN_IF_ERROR(Count(1, *event));
    if (event->type == YAML_SEQUENCE_START_EVENT) {
      *out = json::array();
      for (;;) {
        yaml_event_t child;
        TRAINCTL_RETURN_IF_ERROR(Next(&child));
        if (child.type == YAML_SEQUENCE_END_EVENT) {
          yaml_event_delete(&child);
          return Status::Ok();
        }
        json item;
        Status st = ParseNode(&child, &item);
        yaml_event_delete(&child);
        TRAINCTL_RETURN_IF_ERROR(st);
        out->push_back(std::move(item));
      }
    }
    *out = json::object();
    json merged = json::object();  // keys from `<<`, lower precedence than explicit keys
    for (;;) {
      yaml_event_t key_event;
      TRAINCTL_RETURN_IF_ERROR(Next(&key_event));
      if (key_event.type == YAML_MAPPING_END_EVENT) {
        yaml_event_delete(&key_event);
        break;
      }
      bool is_merge = key_event.type == YAML_SCALAR_EVENT &&
                      key_event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                      std::string_view(reinterpret_cast<const char*>(key_event.data.scalar.value),
                                       key_event.data.scalar.length) == "<<";
      std::string where = Where(key_event);
      // JSON keys are strings: a collection as a key has no meaning in a manifest, and turning
      // nested ones into text grew exponentially (found by fuzzing).
      if (key_event.type == YAML_MAPPING_START_EVENT ||
          key_event.type == YAML_SEQUENCE_START_EVENT) {
        yaml_event_delete(&key_event);
        return InvalidError(where + ": a mapping key must be a scalar, not a collection");
      }
      json key;
      Status st = ParseNode(&key_event, &key);
      yaml_event_delete(&key_event);
      TRAINCTL_RETURN_IF_ERROR(st);
      if (key.is_structured())
        return InvalidError(where +
                            ": a mapping key must be a scalar, not an alias of a collection");
      yaml_event_t value_event;
      TRAINCTL_RETURN_IF_ERROR(Next(&value_event));
      json value;
      st = ParseNode(&value_event, &value);
      yaml_event_delete(&value_event);
      TRAINCTL_RETURN_IF_ERROR(st);
      if (is_merge) {
        if (value.is_object()) value = json::array({value});
        if (!value.is_array())
          return InvalidError(where + ": merge key << expects a mapping or list of mappings");
        for (const json& m : value) {
          if (!m.is_object()) return InvalidError(where + ": merge key << expects mappings");
          for (auto it = m.begin(); it != m.end(); ++it)
            if (!merged.contains(it.key())) merged[it.key()] = it.value();
        }
        continue;
      }
      std::string k = KeyToString(key);
      if (out->contains(k))
        return InvalidError(where + ": mapping key \"" + k + "\" already defined");
      (*out)[k] = std::move(value);
    }
    for (auto it = merged.begin(); it != merged.end(); ++it)
      if (!out->contains(it.key())) (*out)[it.key()] = it.value();
    return Status::Ok();
  }

  // An alias or a scalar (already counted).
  Status ParseLeaf(yaml_event_t* event, json* out) {
    if (event->type == YAML_ALIAS_EVENT) {
      std::string name = reinterpret_cast<const char*>(event->data.alias.anchor);
      auto it = anchors_.find(name);
      if (it == anchors_.end()) return InvalidError(Where(*event) + ": unknown alias *" + name);
      // Each use of an alias is a copy: count what it expands to before copying it.
      TRAINCTL_RETURN_IF_ERROR(Count(it->second.nodes, *event));
      *out = it->second.value;
      return Status::Ok();
    }
    if (event->type != YAML_SCALAR_EVENT)
      return InvalidError(Where(*event) + ": unexpected YAML event");
    std::string value(reinterpret_cast<const char*>(event->data.scalar.value),
                      event->data.scalar.length);
    const char* tag = reinterpret_cast<const char*>(event->data.scalar.tag);
    bool plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (tag && std::string(tag) == "tag:yaml.org,2002:str") {
      *out = value;
    } else if (tag && std::string(tag) == "tag:yaml.org,2002:int") {
      json v = ResolvePlainScalar(value);
      if (!v.is_number_integer())
        return InvalidError(Where(*event) + ": !!int value is not an integer: " + value);
      *out = v;
    } else if (plain && event->data.scalar.plain_implicit) {
      *out = ResolvePlainScalar(value);
    } else {
      *out = value;
    }
    const char* anchor = reinterpret_cast<const char*>(event->data.scalar.anchor);
    if (anchor) anchors_[anchor] = {*out, 1};
    return Status::Ok();
  }

  struct Anchor {
    json value;
    size_t nodes = 1;  // values it expands to
  };

  std::string source_;
  yaml_parser_t parser_;
  std::map<std::string, Anchor> anchors_;
  size_t depth_ = 0;
  size_t nodes_ = 0;
};

}  // namespace

StatusOr<std::vector<nlohmann::json>> ParseYamlDocuments(std::string_view text,
                                                         const std::string& source) {
  if (text.size() > kMaxYamlBytes)
    return InvalidError(source + ": " + std::to_string(text.size()) +
                        " bytes: manifests larger than " + std::to_string(kMaxYamlBytes >> 20) +
                        " MiB are refused");
  Converter converter(text, source);
  return converter.Run();
}

}  // namespace trainctl::api
