// WebhookService: the operator's admission part — the validating webhook of every kind and
// MPIJob's conversion webhook, served over TLS by a TlsServer with a certificate from (or
// created in) the Secret that WebhookCerts keeps, the CA injected into the
// ValidatingWebhookConfiguration and the converting CRDs. Start() serves and injects (an
// injection that fails is retried every 5 s); a thread then renews the certificate hourly when
// it nears expiry (and re-injects the CA) until Stop(). Every replica serves it, leader or not:
// the API server may call any of them.
//
// What it does is said through `log` (the operator's log: compose.cc gives it).
//
// I/O: the API (the Secret, the configuration, the CRDs) and the listening socket.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "admission/webhook_certs.h"
#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"
#include "server/tls_server.h"

namespace trainctl::admission {

// Receives each line to log, and whether it is an error.
using WebhookLog = std::function<void(bool error, const std::string& line)>;

class WebhookService {
 public:
  // `client` and `clock` outlive the service; `bind_host:port` is where it listens.
  WebhookService(kube::Client* client, const Clock* clock, WebhookCertOptions options,
                 std::string bind_host, int port, WebhookLog log);
  ~WebhookService();
  WebhookService(const WebhookService&) = delete;
  WebhookService& operator=(const WebhookService&) = delete;

  // A second TLS server on the same certificate (renewed with it), for the runtime status
  // endpoint (progress/status_endpoint.h): registered before Start(), which serves it on
  // `port` too. Its routes are the caller's.
  server::Router& AlsoServe(int port);
  // The PEM of the CA that signed the serving certificate ("" before Start()).
  std::string ca_pem() const;

  Status Start();
  void Stop();

 private:
  // The renewal loop's body, once a second until Stop().
  void Rotate(std::string ca, bool injected);

  kube::Client* client_;
  const Clock* clock_;
  WebhookLog log_;
  WebhookCertOptions options_;
  std::string address_;
  WebhookCerts certs_;
  server::TlsServer server_;
  server::TlsServer status_server_;
  int status_port_ = 0;  // 0: no second server
  mutable std::mutex ca_mu_;
  std::string ca_pem_;
  std::atomic<bool> stopping_{false};
  std::thread rotation_;
};

}  // namespace trainctl::admission
