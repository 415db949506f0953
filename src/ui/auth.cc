#include "ui/auth.h"

#include "common/random_token.h"

namespace trainctl::ui {
namespace {

server::Response Refuse(int status, const std::string& why) {
  server::Response r = server::Response::Text(status, why + "\n");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

// The target without its token parameter.
std::string WithoutToken(const server::Request& request) {
  std::string target = request.target.substr(0, request.target.find('?'));
  std::string query;
  size_t mark = request.target.find('?');
  if (mark != std::string::npos) {
    std::string rest = request.target.substr(mark + 1);
    size_t pos = 0;
    while (pos <= rest.size()) {
      size_t amp = rest.find('&', pos);
      if (amp == std::string::npos) amp = rest.size();
      std::string pair = rest.substr(pos, amp - pos);
      if (!pair.empty() && pair.rfind("token=", 0) != 0 && pair != "token")
        query += (query.empty() ? "?" : "&") + pair;
      pos = amp + 1;
    }
  }
  return target + query;
}

}  // namespace

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(pos, end - pos);
    size_t start = pair.find_first_not_of(' ');
    if (start != std::string::npos) pair = pair.substr(start);
    if (pair.rfind(name + "=", 0) == 0) return pair.substr(name.size() + 1);
    pos = end + 1;
  }
  return "";
}

std::vector<std::string> HostsFor(const std::string& listen_host, int port) {
  std::string p = ":" + std::to_string(port);
  std::vector<std::string> hosts = {"127.0.0.1" + p, "localhost" + p, "[::1]" + p};
  if (!listen_host.empty() && listen_host != "127.0.0.1" && listen_host != "localhost" &&
      listen_host != "::1" && listen_host != "0.0.0.0" && listen_host != "::")
    hosts.push_back(
        (listen_host.find(':') != std::string::npos ? "[" + listen_host + "]" : listen_host) + p);
  return hosts;
}

bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

std::optional<server::Response> CheckRequest(const server::Request& request,
                                             const AuthConfig& config) {
  std::string host = request.Header("host");
  bool known_host = false;
  for (const std::string& h : config.hosts) known_host = known_host || h == host;
  if (!known_host) return Refuse(403, "this server does not answer for Host \"" + host + "\"");
  std::string origin = request.Header("origin");
  if (!origin.empty() && origin != "http://" + host)
    return Refuse(403, "requests from " + origin + " are refused");
  if (SameSecret(CookieValue(request.Header("cookie"), kTokenCookie), config.token))
    return std::nullopt;
  auto given = request.query.find("token");
  if (given != request.query.end() && SameSecret(given->second, config.token) &&
      (request.method == "GET" || request.method == "HEAD")) {
    server::Response r = server::Response::Text(303, "signed in\n");
    r.headers.emplace_back("Location", WithoutToken(request));
    r.headers.emplace_back("Set-Cookie", std::string(kTokenCookie) + "=" + config.token +
                                             "; HttpOnly; SameSite=Strict; Path=/");
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  }
  return Refuse(401, "open the address `trainctl ui` printed: it carries this server's token");
}

StatusOr<std::string> NewToken() { return RandomHexToken(32); }

}  // namespace trainctl::ui
