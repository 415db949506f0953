#include "server/beast_message.h"

#include <cctype>

namespace trainctl::server {

namespace http = boost::beast::http;

StatusOr<Request> FromBeast(const BeastRequest& request) {
  Request out;
  out.method = std::string(request.method_string());
  out.target = std::string(request.target());
  TRAINCTL_RETURN_IF_ERROR(ParseTarget(out.target, &out.path, &out.query));
  for (const auto& field : request) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string& value = out.headers[name];
    value += (value.empty() ? "" : ", ") + std::string(field.value());
  }
  out.body = request.body();
  return out;
}

BeastResponse ToBeast(const Response& response, const BeastRequest& request, bool keep_alive) {
  BeastResponse out;
  out.version(request.version());
  out.keep_alive(keep_alive && request.keep_alive());
  out.result(static_cast<unsigned>(response.status));
  out.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) out.set(name, value);
  out.body() = response.body;
  out.prepare_payload();
  if (request.method() == http::verb::head) out.body().clear();  // Content-Length stays
  return out;
}

BeastResponse Serve(const Router& router, const BeastRequest& request, bool keep_alive) {
  StatusOr<Request> parsed = FromBeast(request);
  if (!parsed.ok())
    return ToBeast(Response::Text(400, "bad request: " + parsed.status().message() + "\n"), request,
                   false);
  return ToBeast(router.Route(*parsed), request, keep_alive);
}

}  // namespace trainctl::server
