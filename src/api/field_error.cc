#include "api/field_error.h"

namespace trainctl::api {
namespace {

// Values are printed like Go's %#v for the scalar types manifests carry.
std::string FormatValue(const nlohmann::json& v) {
  if (v.is_string()) return nlohmann::json(v.get<std::string>()).dump();
  if (v.is_null()) return "null";
  return v.dump();
}

}  // namespace

std::string FieldError::ToString() const {
  switch (type) {
    case FieldErrorType::kRequired:
      return path + ": Required value" + (detail.empty() ? "" : ": " + detail);
    case FieldErrorType::kForbidden:
      return path + ": Forbidden" + (detail.empty() ? "" : ": " + detail);
    case FieldErrorType::kInvalid:
      return path + ": Invalid value: " + FormatValue(value) +
             (detail.empty() ? "" : ": " + detail);
    case FieldErrorType::kNotSupported: {
      std::string out = path + ": Unsupported value: " + FormatValue(value);
      if (!supported.empty()) {
        out += ": supported values: ";
        for (size_t i = 0; i < supported.size(); ++i) {
          if (i) out += ", ";
          out += "\"" + supported[i] + "\"";
        }
      }
      return out;
    }
  }
  return path;
}

FieldError Required(std::string path, std::string detail) {
  return {FieldErrorType::kRequired, std::move(path), std::move(detail), nullptr, {}};
}
FieldError Forbidden(std::string path, std::string detail) {
  return {FieldErrorType::kForbidden, std::move(path), std::move(detail), nullptr, {}};
}
FieldError Invalid(std::string path, nlohmann::json value, std::string detail) {
  return {FieldErrorType::kInvalid, std::move(path), std::move(detail), std::move(value), {}};
}
FieldError NotSupported(std::string path, nlohmann::json value,
                        std::vector<std::string> supported) {
  return {FieldErrorType::kNotSupported, std::move(path), "", std::move(value),
          std::move(supported)};
}

std::string JoinFieldErrors(const FieldErrorList& errors) {
  if (errors.size() == 1) return errors[0].ToString();
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i) out += ", ";
    out += errors[i].ToString();
  }
  return out + "]";
}

Status FieldErrorsToStatus(const std::string& kind, const std::string& name,
                           const FieldErrorList& errors) {
  return InvalidError(kind + " \"" + name + "\" is invalid: " + JoinFieldErrors(errors));
}

}  // namespace trainctl::api
