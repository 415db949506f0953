// HttpServer: a small blocking HTTP/1.1 server (Boost.Beast) for the operator's /metrics,
// /healthz and /readyz endpoints, and the pages and API of the dashboard. Requests are
// answered by a server::Router (server/http.h): request-aware handlers by method and path;
// 404, 405 and 400 (a bad target) are the router's.
//
// Start() binds (":8080", "127.0.0.1:0", "[::]:8081"; port 0 picks a free one, see port()).
// Each connection gets its own thread, one request (headers up to kMaxHttpHeaderBytes, a body
// up to kMaxHttpBodyBytes, else 413), and kHttpRequestDeadline to send it and
// get the answer (server/connection_deadlines.h), so a slow client cannot hold the kubelet's
// probes; at most max_connections at once, more are closed at accept. A streamed response
// (server-sent events) leaves the deadline once its headers are out and ends when its client
// goes or Stop() is called; at most max_streams at once (503 beyond). An address of "0"
// disables the server (as controller-runtime's "0" does). Stop() closes the listener, cuts
// open connections and waits for their threads.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "server/http.h"

namespace trainctl::server {

inline constexpr int kMaxHttpConnections = 16;
inline constexpr std::chrono::seconds kHttpRequestDeadline{5};

struct HttpServerOptions {
  int max_connections = kMaxHttpConnections;  // more are closed at accept
  int max_streams = 4;                        // streamed responses at once; more get 503
};

inline constexpr size_t kMaxHttpHeaderBytes = 16u << 10;
inline constexpr size_t kMaxHttpBodyBytes = 1u << 20;

class HttpServer {
 public:
  HttpServer() : HttpServer(HttpServerOptions{}) {}
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  // Register before Start(); the router is not changed while serving.
  Router& router() { return router_; }
  Status Start(const std::string& address);
  void Stop();
  int port() const;

 private:
  struct Impl;
  void ServeRequest(boost::asio::ip::tcp::socket socket, MonoTime deadline);

  std::unique_ptr<Impl> impl_;
  HttpServerOptions options_;
  Router router_;
};

// Splits "host:port" (host may be empty or bracketed IPv6); nullopt-like error on bad input.
StatusOr<std::pair<std::string, int>> ParseBindAddress(const std::string& address);

}  // namespace trainctl::server
