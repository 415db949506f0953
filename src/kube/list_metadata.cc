#include "kube/list_metadata.h"

#include <nlohmann/json.hpp>

namespace trainctl::kube {
namespace {

using nlohmann::json;

// Follows the document's nesting; records the two strings under the top-level "metadata" and
// stops the parse (returns false) once that object closes.
class MetadataScan final : public nlohmann::json_sax<json> {
 public:
  ListMetadata found;
  bool done = false;

  bool null() override { return Value(nullptr); }
  bool boolean(bool) override { return Value(nullptr); }
  bool number_integer(number_integer_t) override { return Value(nullptr); }
  bool number_unsigned(number_unsigned_t) override { return Value(nullptr); }
  bool number_float(number_float_t, const string_t&) override { return Value(nullptr); }
  bool string(string_t& s) override { return Value(&s); }
  bool binary(binary_t&) override { return Value(nullptr); }
  bool start_object(std::size_t) override {
    if (depth_ == 1 && key_ == "metadata") in_metadata_ = true;
    depth_++;
    return true;
  }
  bool end_object() override {
    depth_--;
    if (in_metadata_ && depth_ == 1) {
      done = true;
      return false;  // nothing after metadata is needed
    }
    return true;
  }
  bool start_array(std::size_t) override {
    depth_++;
    return true;
  }
  bool end_array() override {
    depth_--;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ <= 2) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Value(const std::string* s) {
    if (in_metadata_ && depth_ == 2 && s) {
      if (key_ == "continue") found.continue_token = *s;
      if (key_ == "resourceVersion") found.resource_version = *s;
    }
    return true;
  }
  int depth_ = 0;
  bool in_metadata_ = false;
  std::string key_;
};

}  // namespace

std::optional<ListMetadata> PeekListMetadata(std::string_view body) {
  MetadataScan scan;
  json::sax_parse(body, &scan, json::input_format_t::json, /*strict=*/false);
  if (scan.done) return scan.found;
  return std::nullopt;
}

}  // namespace trainctl::kube
