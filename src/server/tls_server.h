// TlsServer: an HTTPS endpoint (Boost.Beast over Boost.Asio SSL, OpenSSL): the operator's
// admission webhooks and its runtime status endpoint, and a local run's status endpoint.
// Requests are answered by a Router (server/http.h), as on the plain HTTP servers: a request goes
// to the handler registered for its path; other paths get 404, other methods 405. Each connection
// gets its own thread and may carry several requests (keep-alive), with a 10 s idle timeout.
//
// Bounded for hostile clients: at most kMaxTlsConnections open connections (more are closed
// at once), each step (the TLS handshake; waiting for, reading and answering one request) done
// // within kTlsRequestDeadline or the connection is cut (server/connection_deadlines.h),
// headers up to kMaxTlsHeaderBytes, bodies up to kMaxTlsBodyBytes (an AdmissionReview carries
// the object and the old object, each at most etcd's 1.5 MiB; larger gets 413); handlers bound
// what they parse (api/json_bounds.h).
//
// SetCertificate() installs (or replaces: certificate rotation) the serving certificate and
// key; new connections use the newest one. Start() binds ("127.0.0.1:9443", ":9443"; port 0
// picks a free one). Stop() closes the listener and waits for open connections. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "server/http.h"

namespace trainctl::server {

inline constexpr int kMaxTlsConnections = 64;
inline constexpr std::chrono::seconds kTlsRequestDeadline{15};
inline constexpr size_t kMaxTlsHeaderBytes = 16u << 10;
inline constexpr size_t kMaxTlsBodyBytes = 8u << 20;

class TlsServer {
 public:
  TlsServer();
  ~TlsServer();

  // Register before Start(); the router is not changed while serving.
  Router& router() { return router_; }
  Status SetCertificate(const std::string& cert_pem, const std::string& key_pem);
  Status Start(const std::string& address);
  void Stop();
  int port() const;

 private:
  struct Impl;
  void ServeConnection(int fd);

  std::unique_ptr<Impl> impl_;
  Router router_;
  std::atomic<int> open_{0};
};

}  // namespace trainctl::server
