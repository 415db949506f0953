// WebhookServer: the HTTPS endpoint the API server calls for validating admission (Boost.Beast
// over Boost.Asio SSL, OpenSSL). Requests are answered by a server::Router (server/http.h), as
// on the operator's other servers: POST <path> with an AdmissionReview goes to the handler
// registered for that path; other paths get 404, other methods 405. Each connection gets its own
// thread and may carry several requests (keep-alive), with a 10 s idle timeout.
//
// Bounded for hostile clients: at most kMaxWebhookConnections open connections (more are closed
// at once), each step (the TLS handshake; waiting for, reading and answering one request) done
// within kWebhookRequestDeadline or the connection is cut (operator/connection_deadlines.h),
// headers up to kMaxWebhookHeaderBytes, bodies up to kMaxWebhookBodyBytes (an
// AdmissionReview carries the object and the old object, each at most etcd's 1.5 MiB; larger
// gets 413), and the body's JSON is depth-checked before it is decoded (api/json_bounds.h).
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

namespace trainctl::admission {

inline constexpr int kMaxWebhookConnections = 64;
inline constexpr std::chrono::seconds kWebhookRequestDeadline{15};
inline constexpr size_t kMaxWebhookHeaderBytes = 16u << 10;
inline constexpr size_t kMaxWebhookBodyBytes = 8u << 20;

class WebhookServer {
 public:
  WebhookServer();
  ~WebhookServer();

  // Register before Start(); the router is not changed while serving.
  server::Router& router() { return router_; }
  Status SetCertificate(const std::string& cert_pem, const std::string& key_pem);
  Status Start(const std::string& address);
  void Stop();
  int port() const;

 private:
  struct Impl;
  void ServeConnection(int fd);

  std::unique_ptr<Impl> impl_;
  server::Router router_;
  std::atomic<int> open_{0};
};

}  // namespace trainctl::admission
