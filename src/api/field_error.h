// FieldError: one validation or decoding problem at a field path, printed in the Kubernetes
// apimachinery format, e.g.
//   spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1
//   spec.runPolicy.managedBy: Unsupported value: "x": supported values: "a", "b"
// Plain value types; thread-compatible.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace trainctl::api {

enum class FieldErrorType { kRequired, kForbidden, kInvalid, kNotSupported };

struct FieldError {
  FieldErrorType type;
  std::string path;
  std::string detail;
  nlohmann::json value;                // for kInvalid / kNotSupported
  std::vector<std::string> supported;  // for kNotSupported

  std::string ToString() const;
};

using FieldErrorList = std::vector<FieldError>;

FieldError Required(std::string path, std::string detail);
FieldError Forbidden(std::string path, std::string detail);
FieldError Invalid(std::string path, nlohmann::json value, std::string detail);
FieldError NotSupported(std::string path, nlohmann::json value, std::vector<std::string> supported);

// "e" for one error, "[e1, e2]" for several (apimachinery's aggregate format).
std::string JoinFieldErrors(const FieldErrorList& errors);

// An Invalid status whose message is `<Kind> "<name>" is invalid: <joined errors>`.
Status FieldErrorsToStatus(const std::string& kind, const std::string& name,
                           const FieldErrorList& errors);

}  // namespace trainctl::api
