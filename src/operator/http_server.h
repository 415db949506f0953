// HttpServer: a small blocking HTTP/1.1 server (Boost.Beast) for the operator's /metrics,
// /healthz and /readyz endpoints. Each path maps to a handler returning (status, body); other
// paths get 404, other methods than GET/HEAD 405.
//
// Start() binds (":8080", "127.0.0.1:0", "[::]:8081"; port 0 picks a free one, see port()).
// Each connection gets its own thread, one request, and kHttpRequestDeadline to send it and
// get the answer (operator/connection_deadlines.h), so a slow client cannot hold the kubelet's
// probes; at most kMaxHttpConnections at once, more are closed at accept. An address of "0"
// disables the server (as controller-runtime's "0" does). Stop() closes the listener, cuts
// open connections and waits for their threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace trainctl::op {

inline constexpr int kMaxHttpConnections = 16;
inline constexpr std::chrono::seconds kHttpRequestDeadline{5};

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
