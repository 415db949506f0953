// What every trainctl HTTP endpoint sees and answers: the operator's /metrics and probes, the
// admission webhook and the dashboard. A Request carries the method, the decoded path and
// query, the headers (names in lower case) and the body. A Handler turns it into a Response.
// A Router picks the handler by method and path:
//   - an exact path, or the longest registered prefix;
//   - 404 when no path matches, 405 (with Allow) when the path matches but the method does not;
//   - HEAD is answered by the GET handler, and the server drops the body.
// The servers (server/http_server.h; the webhook's TLS server) only move bytes.
//
// Pure; a Router is read-only once serving starts, so it may be shared by threads.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trainctl::server {

struct Request {
  std::string method;                          // "GET", "POST", …
  std::string target;                          // as sent: "/api/v1/jobs?ns=default"
  std::string path;                            // percent-decoded, without the query: "/api/v1/jobs"
  std::map<std::string, std::string> query;    // decoded; a repeated name keeps its last value
  std::map<std::string, std::string> headers;  // lower-case names; repeats joined with ", "
  std::string body;

  // "" when absent.
  std::string Header(const std::string& lower_case_name) const;
  std::string Query(const std::string& name) const;
};

// Where a streamed response goes (server-sent events). Write returns false once the client
// is gone or the server stops; WaitFor sleeps up to `d` and returns false when the server
// stops. A stream should write at least every few seconds (a comment line will do), so a
// client that went away is noticed.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual bool Write(std::string_view bytes) = 0;
  virtual bool WaitFor(std::chrono::milliseconds d) = 0;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // beyond Content-Type
  // When set, the body is produced as it goes: the server sends the status and headers (no
  // Content-Length; the connection closes at the end), then calls `stream`, on the
  // connection's thread, free of the request deadline, until it returns.
  std::function<void(StreamSink&)> stream;

  static Response Text(int status, std::string body);
  static Response Json(int status, const nlohmann::json& body);
};

using Handler = std::function<Response(const Request&)>;

class Router {
 public:
  // `method` "GET" also answers HEAD.
  void Handle(const std::string& method, const std::string& path, Handler handler);
  // Every path that starts with `prefix` ("/api/v1/jobs/"), unless an exact path or a longer
  // prefix matches.
  void HandlePrefix(const std::string& method, const std::string& prefix, Handler handler);
  Response Route(const Request& request) const;

 private:
  using Methods = std::map<std::string, Handler>;
  const Methods* Find(const std::string& path) const;

  std::map<std::string, Methods> exact_;
  std::map<std::string, Methods> prefixes_;
};

// Splits a request target into its decoded path and query. kInvalid for a target that is not
// origin-form ("/…"), for bad percent-encoding, or for a decoded NUL.
Status ParseTarget(const std::string& target, std::string* path,
                   std::map<std::string, std::string>* query);

// "a%20b" → "a b"; in a query, "+" is a space too. nullopt-like kInvalid on bad escapes.
StatusOr<std::string> PercentDecode(const std::string& text, bool plus_is_space);

}  // namespace trainctl::server
