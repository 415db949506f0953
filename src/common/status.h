// Status and StatusOr<T>: errors as values across module boundaries.
//
// A Status is either OK or carries a code and a human-readable message. The codes follow the
// Kubernetes API error reasons where they fit, so the same values serve manifests, the local
// runner and the API client. StatusOr<T> holds either a value or a non-OK Status.
// Both are cheap to move and are not thread-safe for concurrent mutation (like any value type).
//
// Both are [[nodiscard]]: a dropped error is a compile error (-Werror=unused-result); write
// `.IgnoreError()` where dropping one is the decision. Reading the value of a StatusOr that
// holds an error aborts the process with the error in every build (a bug, never input), and a
// StatusOr made from an OK Status holds an Internal error instead, as Abseil's does.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace trainctl {

enum class StatusCode {
  kOk = 0,
  kInvalid,          // bad input: manifest, flag, field (maps to exit status 2 in the CLI)
  kNotFound,
  kAlreadyExists,
  kConflict,
  kFailedPrecondition,
  kUnavailable,      // transient: retry may help
  kDeadlineExceeded,
  kInternal,
  kIo,               // file system or process error
  kGone,             // API 410: resourceVersion or continue token expired; relist
  kTooManyRequests,  // API 429: throttled; retry after the server's Retry-After
  kUnauthorized,     // API 401: credentials missing, expired or rejected
  kForbidden,        // API 403: authenticated but not allowed
  kCancelled,        // the caller stopped the operation
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", or "OK".
  std::string ToString() const;
  // Drops this status on purpose (best-effort writes whose failure changes nothing).
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidError(std::string m) { return Status(StatusCode::kInvalid, std::move(m)); }
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status IoError(std::string m) { return Status(StatusCode::kIo, std::move(m)); }
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status DeadlineExceededError(std::string m) {
  return Status(StatusCode::kDeadlineExceeded, std::move(m));
}
inline Status CancelledError(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }

const char* StatusCodeName(StatusCode code);

namespace internal {
// Prints "StatusOr value read while it holds an error: <status>" and aborts.
[[noreturn]] void DieOnErrorAccess(const Status& status);
Status OkStatusOrError();
}  // namespace internal

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status)  // NOLINT: implicit by design
      : status_(status.ok() ? internal::OkStatusOrError() : std::move(status)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return Checked(), *value_; }
  const T& value() const& { return Checked(), *value_; }
  T&& value() && { return Checked(), std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  void Checked() const {
    if (!value_) internal::DieOnErrorAccess(status_);
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace trainctl

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define TRAINCTL_RETURN_IF_ERROR(expr)        \
  do {                                        \
    ::trainctl::Status _st = (expr);          \
    if (!_st.ok()) return _st;                \
  } while (0)

#define TRAINCTL_STATUS_CONCAT_INNER(a, b) a##b
#define TRAINCTL_STATUS_CONCAT(a, b) TRAINCTL_STATUS_CONCAT_INNER(a, b)

// `TRAINCTL_ASSIGN_OR_RETURN(T x, Expr());` or `TRAINCTL_ASSIGN_OR_RETURN(x, Expr());`: returns
// the error of a StatusOr from the enclosing function, else moves its value into the lhs.
#define TRAINCTL_ASSIGN_OR_RETURN(lhs, expr)                                              \
  auto TRAINCTL_STATUS_CONCAT(_status_or_, __LINE__) = (expr);                            \
  if (!TRAINCTL_STATUS_CONCAT(_status_or_, __LINE__).ok())                                \
    return TRAINCTL_STATUS_CONCAT(_status_or_, __LINE__).status();                        \
  lhs = std::move(TRAINCTL_STATUS_CONCAT(_status_or_, __LINE__)).value()
