// WebhookService: the operator's admission part — the validating webhook of every kind and
// MPIJob's conversion webhook, served over TLS by a WebhookServer with a certificate from (or
// created in) the Secret that WebhookCerts keeps, the CA injected into the
// ValidatingWebhookConfiguration and the converting CRDs. Start() serves and injects (an
// injection that fails is retried every 5 s); a thread then renews the certificate hourly when
// it nears expiry (and re-injects the CA) until Stop(). Every replica serves it, leader or not:
// the API server may call any of them.
//
// I/O: the API (the Secret, the configuration, the CRDs) and the listening socket.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"
#include "operator/webhook_certs.h"
#include "operator/webhook_server.h"

namespace trainctl::op {

class WebhookService {
 public:
  // `client` and `clock` outlive the service; `bind_host:port` is where it listens.
  WebhookService(kube::Client* client, const Clock* clock, WebhookCertOptions options,
                 std::string bind_host, int port);
  ~WebhookService();
  WebhookService(const WebhookService&) = delete;
  WebhookService& operator=(const WebhookService&) = delete;

  Status Start();
  void Stop();

 private:
  // The renewal loop's body, once a second until Stop().
  void Rotate(std::string ca, bool injected);

  const Clock* clock_;
  WebhookCertOptions options_;
  std::string address_;
  WebhookCerts certs_;
  WebhookServer server_;
  std::atomic<bool> stopping_{false};
  std::thread rotation_;
};

}  // namespace trainctl::op
