#include "api/field_reader.h"

#include <cmath>
#include <limits>

namespace trainctl::api {

using nlohmann::json;

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

const json* FieldReader::Get(const std::string& field) const {
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(field);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

void FieldReader::TypeError(const std::string& field, const json& v, const char* expected) {
  errors_->push_back(Invalid(Path(field), v.is_string() ? v : json(TypeName(v)),
                             std::string("must be of type ") + expected + ", got " + TypeName(v)));
}

template <typename Int>
std::optional<Int> FieldReader::Integer(const std::string& field) {
  const json* v = Get(field);
  if (!v) return std::nullopt;
  if (v->is_number_integer() || v->is_number_unsigned()) {
    long long x = v->is_number_unsigned() ? static_cast<long long>(v->get<unsigned long long>())
                                          : v->get<long long>();
    if (x < std::numeric_limits<Int>::min() || x > std::numeric_limits<Int>::max()) {
      errors_->push_back(Invalid(Path(field), *v, "out of range"));
      return std::nullopt;
    }
    return static_cast<Int>(x);
  }
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::trunc(d)) {  // an integer written as 3.0 or 1e3
      // Range first: converting a double outside Int is undefined (found by fuzzing).
      if (d < static_cast<double>(std::numeric_limits<Int>::min()) ||
          d > static_cast<double>(std::numeric_limits<Int>::max())) {
        errors_->push_back(Invalid(Path(field), *v, "out of range"));
        return std::nullopt;
      }
      return static_cast<Int>(d);
    }
  }
  TypeError(field, *v, "integer");
  return std::nullopt;
}

template std::optional<int32_t> FieldReader::Integer<int32_t>(const std::string& field);
template std::optional<int64_t> FieldReader::Integer<int64_t>(const std::string& field);

std::optional<std::string> FieldReader::String(const std::string& field) {
  const json* v = Get(field);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  TypeError(field, *v, "string");
  return std::nullopt;
}

std::optional<bool> FieldReader::Bool(const std::string& field) {
  const json* v = Get(field);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  TypeError(field, *v, "boolean");
  return std::nullopt;
}

const json* FieldReader::Object(const std::string& field) {
  const json* v = Get(field);
  if (!v) return nullptr;
  if (v->is_object()) return v;
  TypeError(field, *v, "object");
  return nullptr;
}

const json* FieldReader::Array(const std::string& field) {
  const json* v = Get(field);
  if (!v) return nullptr;
  if (v->is_array()) return v;
  TypeError(field, *v, "array");
  return nullptr;
}

}  // namespace trainctl::api
