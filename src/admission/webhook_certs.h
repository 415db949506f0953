// WebhookCerts: the webhook's TLS material, kept in a Secret (ca.crt, tls.crt, tls.key) so every
// operator replica serves the same certificate, and the CA injected as caBundle into every
// webhook of the ValidatingWebhookConfiguration (and of the MutatingWebhookConfiguration, where
// one is named and exists) and into the conversion webhook of each CRD
// named in `conversion_crds` (where that CRD converts through a webhook). A certificate that is
// missing, unreadable, not for the service's names, or within 30 days of expiry is replaced (one
// year of validity); Rotate() repeats the check so a long-running operator renews before expiry.
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"
#include "server/tls_certs.h"

namespace trainctl::admission {

// The certificates themselves are made by server/tls_certs.h.
using server::CertBundle;
using server::CertDnsNames;
using server::CertNotAfter;
using server::GenerateServingCerts;

struct WebhookCertOptions {
  std::string namespace_;    // of the Secret and the Service
  std::string service_name;  // DNS names <svc>.<ns>.svc[.cluster.local]
  std::string secret_name;
  std::string config_name;                   // ValidatingWebhookConfiguration to inject the CA into
  std::string mutating_config_name;          // MutatingWebhookConfiguration, likewise, if it exists
  std::vector<std::string> conversion_crds;  // CRDs whose conversion webhook gets the CA
  std::vector<std::string> extra_hosts;  // more names or IPs for the certificate (e.g. 127.0.0.1)
};

// Whether the certificate in `cert_pem` names every one of `dns_names` (false when unreadable).
bool CertCovers(const std::string& cert_pem, const std::vector<std::string>& dns_names);

class WebhookCerts {
 public:
  WebhookCerts(kube::Client* client, const Clock* clock, WebhookCertOptions options)
      : client_(client), clock_(clock), options_(std::move(options)) {}

  // The certificate to serve: the Secret's when still good, else a new one written to it.
  // `renewed` (optional) says whether a new one was made.
  StatusOr<CertBundle> Ensure(bool* renewed = nullptr);
  // Sets caBundle on every webhook of the configuration (NotFound when it does not exist) and
  // on the conversion webhook of each of `conversion_crds` (whatever became of the first): a
  // CRD that is not installed, or that converts without a webhook (strategy None), is left
  // alone; one that already has this CA is not written. Returns the first error.
  Status InjectCaBundle(const std::string& ca_pem);

 private:
  Status InjectIntoCrd(const std::string& name, const std::string& bundle);

  kube::Client* client_;
  const Clock* clock_;
  WebhookCertOptions options_;
};

// Whether a CustomResourceDefinition converts between its versions through a webhook with a
// clientConfig (spec.conversion.strategy Webhook).
bool ConvertsThroughWebhook(const nlohmann::json& crd);

// The names the serving certificate covers.
std::vector<std::string> WebhookDnsNames(const WebhookCertOptions& options);

}  // namespace trainctl::admission
