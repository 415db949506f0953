// The checks of the in-cluster dashboard's sign-in and sign-out requests, pure (the handlers
// in ui/dashboard.cc do the TokenReview and keep the session, ui/sessions.h):
//   - Origin, when a browser sends one, must be this server (SameOrigin).
//   - POST /api/v1/login must be `Content-Type: application/json` with {"token": "…"}: a page on
//     another site cannot send that without a CORS preflight, which this server never grants.
//   - POST /api/v1/logout must carry the session's CSRF token in X-CSRF-Token.
#pragma once

#include <string>

#include "common/status.h"
#include "server/http.h"

namespace trainctl::ui {

// True when the request has no Origin, or its Origin is http(s)://<its Host>.
bool SameOrigin(const server::Request& request);

// The token a sign-in request carries. kForbidden: another origin; kInvalid: not JSON with a
// non-empty "token" string (the message says what was expected).
StatusOr<std::string> LoginToken(const server::Request& request);

// The HTTP status for a failed sign-in or sign-out check.
int HttpStatusOf(const Status& status);

}  // namespace trainctl::ui
