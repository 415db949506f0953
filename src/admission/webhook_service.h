// WebhookService: the operator's admission part — the validating webhook of every kind and
// MPIJob's conversion webhook, served over TLS by a WebhookServer with a certificate from (or
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
#include <string>
#include <thread>

#include "admission/webhook_certs.h"
#include "admission/webhook_server.h"
#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"

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
  WebhookServer server_;
  std::atomic<bool> stopping_{false};
  std::thread rotation_;
};

}  // namespace trainctl::admission
