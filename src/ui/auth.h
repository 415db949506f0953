// Who may use `trainctl ui`: the person who started it. The checks run before any handler,
// and are pure:
//   - Host must name this server ("127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT", or the
//     address it was told to listen on). This blocks DNS rebinding.
//   - Origin, when a browser sends one, must be this server. This blocks other sites' pages.
//   - The token: the URL the command prints carries it once (?token=…). That request is
//     answered with a redirect to the same page without it, and an HttpOnly, SameSite=Strict
//     cookie. Every later request must carry the cookie.
// A refused request gets 403 (Host, Origin) or 401 (no token), with a line saying what to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/http.h"

namespace trainctl::ui {

inline constexpr const char* kTokenCookie = "trainctl_ui";

struct AuthConfig {
  std::string token;
  std::vector<std::string> hosts;  // accepted Host values, "host:port"
};

// The Host values a server on `listen_host`:`port` accepts.
std::vector<std::string> HostsFor(const std::string& listen_host, int port);

// nullopt: the request may go on to its handler. Otherwise the response to send instead.
std::optional<server::Response> CheckRequest(const server::Request& request,
                                             const AuthConfig& config);

// The value of cookie `name` in a Cookie header ("a=1; b=2"); "" when it is not there.
std::string CookieValue(const std::string& header, const std::string& name);

// A token of 32 random bytes, hex (common/random_token.h).
StatusOr<std::string> NewToken();

// True when `a` and `b` are equal, in time that does not depend on where they differ.
bool SameSecret(const std::string& a, const std::string& b);

}  // namespace trainctl::ui
