// HttpServer: a small blocking HTTP/1.1 server (Boost.Beast) for the operator's /metrics,
// /healthz and /readyz endpoints. Each path maps to a handler returning (status, body); other
// paths get 404, other methods than GET/HEAD 405.
//
// Start() binds (":8080", "127.0.0.1:0", "[::]:8081"; port 0 picks a free one, see port()) and
// serves on its own thread, one connection at a time with a 5 s read timeout. An address of "0"
// disables the server (as controller-runtime's "0" does). Stop() closes the listener and joins.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace trainctl::op {

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply()>;
  HttpServer();
  ~HttpServer();

  void Handle(const std::string& path, Handler handler);
  Status Start(const std::string& address);
  void Stop();
  int port() const;

 private:
  struct Impl;

  std::unique_ptr<Impl> impl_;
  std::map<std::string, Handler> handlers_;
};

// Splits "host:port" (host may be empty or bracketed IPv6); nullopt-like error on bad input.
StatusOr<std::pair<std::string, int>> ParseBindAddress(const std::string& address);

}  // namespace trainctl::op
