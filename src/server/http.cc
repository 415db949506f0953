#include "server/http.h"

namespace trainctl::server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string AllowHeader(const std::map<std::string, Handler>& methods) {
  std::string allow;
  for (const auto& [method, handler] : methods) {
    allow += (allow.empty() ? "" : ", ") + method;
    if (method == "GET") allow += ", HEAD";
  }
  return allow;
}

}  // namespace

std::string Request::Header(const std::string& lower_case_name) const {
  auto it = headers.find(lower_case_name);
  return it == headers.end() ? "" : it->second;
}

std::string Request::Query(const std::string& name) const {
  auto it = query.find(name);
  return it == query.end() ? "" : it->second;
}

Response Response::Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response Response::Json(int status, const nlohmann::json& body) {
  Response r;
  r.status = status;
  r.content_type = "application/json";
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

void Router::Handle(const std::string& method, const std::string& path, Handler handler) {
  exact_[path][method] = std::move(handler);
}

void Router::HandlePrefix(const std::string& method, const std::string& prefix, Handler handler) {
  prefixes_[prefix][method] = std::move(handler);
}

const Router::Methods* Router::Find(const std::string& path) const {
  if (auto it = exact_.find(path); it != exact_.end()) return &it->second;
  const Methods* best = nullptr;
  size_t best_length = 0;
  for (const auto& [prefix, methods] : prefixes_)
    if (path.compare(0, prefix.size(), prefix) == 0 && prefix.size() >= best_length) {
      best = &methods;
      best_length = prefix.size();
    }
  return best;
}

Response Router::Route(const Request& request) const {
  const Methods* methods = Find(request.path);
  if (!methods) return Response::Text(404, "404 page not found\n");
  std::string method = request.method == "HEAD" ? "GET" : request.method;
  auto it = methods->find(method);
  if (it == methods->end()) {
    Response r = Response::Text(405, "method not allowed\n");
    r.headers.emplace_back("Allow", AllowHeader(*methods));
    return r;
  }
  return it->second(request);
}

StatusOr<std::string> PercentDecode(const std::string& text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c == '%') {
      int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      int lo = hi >= 0 ? HexValue(text[i + 2]) : -1;
      if (lo < 0) return InvalidError("bad percent-encoding at byte " + std::to_string(i));
      char decoded = static_cast<char>(hi * 16 + lo);
      if (decoded == '\0') return InvalidError("a percent-encoded NUL");
      out += decoded;
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Status ParseTarget(const std::string& target, std::string* path,
                   std::map<std::string, std::string>* query) {
  if (target.empty() || target[0] != '/')
    return InvalidError("request target must start with \"/\"");
  size_t mark = target.find('?');
  TRAINCTL_ASSIGN_OR_RETURN(*path, PercentDecode(target.substr(0, mark), false));
  query->clear();
  if (mark == std::string::npos) return Status::Ok();
  std::string rest = target.substr(mark + 1);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t amp = rest.find('&', start);
    if (amp == std::string::npos) amp = rest.size();
    std::string pair = rest.substr(start, amp - start);
    if (!pair.empty()) {
      size_t eq = pair.find('=');
      TRAINCTL_ASSIGN_OR_RETURN(std::string name, PercentDecode(pair.substr(0, eq), true));
      std::string value;
      if (eq != std::string::npos) {
        TRAINCTL_ASSIGN_OR_RETURN(value, PercentDecode(pair.substr(eq + 1), true));
      }
      (*query)[name] = std::move(value);
    }
    start = amp + 1;
  }
  return Status::Ok();
}

}  // namespace trainctl::server
