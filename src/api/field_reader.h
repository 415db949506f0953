// FieldReader: reads typed optional fields of one JSON object, collecting type errors with
// their field paths (`spec.runPolicy.backoffLimit: Invalid value: "x": must be of type
// integer, got string`), so a decoder reports every problem of a document at once. Used by the
// job decoder (job.cc) and by each kind's DecodeSpec (src/kinds/). Thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/field_error.h"

namespace trainctl::api {

// The JSON type of `v` as the errors name it: "object", "string", "integer", ...
const char* TypeName(const nlohmann::json& v);

class FieldReader {
 public:
  // `obj` is read at `path` ("" at the top); errors are appended to `errors`.
  FieldReader(const nlohmann::json& obj, std::string path, FieldErrorList* errors)
      : obj_(obj), path_(std::move(path)), errors_(errors) {}

  std::string Path(const std::string& field) const {
    return path_.empty() ? field : path_ + "." + field;
  }
  FieldErrorList* errors() const { return errors_; }
  // The field, or nullptr when it is absent or null.
  const nlohmann::json* Get(const std::string& field) const;
  void TypeError(const std::string& field, const nlohmann::json& v, const char* expected);

  // Each reads the field when present and of the right type; otherwise records an error (a
  // wrong type, an integer out of range) and returns nothing.
  template <typename Int>
  std::optional<Int> Integer(const std::string& field);
  std::optional<std::string> String(const std::string& field);
  std::optional<bool> Bool(const std::string& field);
  const nlohmann::json* Object(const std::string& field);
  const nlohmann::json* Array(const std::string& field);

 private:
  const nlohmann::json& obj_;
  std::string path_;
  FieldErrorList* errors_;
};

extern template std::optional<int32_t> FieldReader::Integer<int32_t>(const std::string& field);
extern template std::optional<int64_t> FieldReader::Integer<int64_t>(const std::string& field);

}  // namespace trainctl::api
