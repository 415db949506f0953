#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace trainctl {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalid: return "Invalid";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kIo: return "IO";
    case StatusCode::kGone: return "Gone";
    case StatusCode::kTooManyRequests: return "TooManyRequests";
    case StatusCode::kUnauthorized: return "Unauthorized";
    case StatusCode::kForbidden: return "Forbidden";
    case StatusCode::kCancelled: return "Cancelled";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

namespace internal {

void DieOnErrorAccess(const Status& status) {
  std::fprintf(stderr, "trainctl: internal error: StatusOr value read while it holds an error: %s\n",
               status.ToString().c_str());
  std::abort();
}

Status OkStatusOrError() {
  return Status(StatusCode::kInternal, "StatusOr made from an OK Status (a bug in trainctl)");
}

}  // namespace internal

}  // namespace trainctl
