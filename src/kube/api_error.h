// Mapping an API server's error response (a `Status` object and the HTTP code) to a Status.
//
// Pure and thread-safe. The mapping follows the API's reasons:
//   400 BadRequest → kInvalid         401 → kUnauthorized        403 → kForbidden
//   404 NotFound → kNotFound          409 AlreadyExists → kAlreadyExists, other 409 → kConflict
//   410 Gone/Expired → kGone          422 Invalid → kInvalid (with the field causes)
//   429 → kTooManyRequests            504/timeout → kDeadlineExceeded, other 5xx → kUnavailable
// The message is the server's message (plus its causes), prefixed by what was being done;
// a body {"error": "…"} (the dashboard's, many HTTP APIs') gives its error; any other body that
// is not a Status (an HTML error page, truncated JSON) is quoted, shortened.
#pragma once

#include <string>

#include "common/status.h"
#include "kube/transport.h"

namespace trainctl::kube {

// `what` names the operation, e.g. `create pods "x" in default`.
Status ErrorFromResponse(const HttpResponse& response, const std::string& what);

// True for 2xx.
inline bool IsSuccess(const HttpResponse& response) {
  return response.status >= 200 && response.status < 300;
}

}  // namespace trainctl::kube
