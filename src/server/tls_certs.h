// Self-managed TLS (the admission webhooks, the runtime status endpoints): a CA and a serving
// certificate signed by it (ECDSA P-256, SHA-256), made with OpenSSL's libcrypto, and the expiry
// of a PEM certificate so the operator can rotate before it. No I/O; thread-safe (OpenSSL 3 is).
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::server {

struct CertBundle {
  std::string ca_cert_pem;
  std::string cert_pem;  // serving certificate, signed by the CA
  std::string key_pem;   // its private key (PKCS#8)
};

// `dns_names` and `ips` become the serving certificate's subjectAltName; valid from now - 1 h
// for `validity`.
StatusOr<CertBundle> GenerateServingCerts(const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ips, Time now,
                                          Duration validity);

// notAfter of the first certificate in `pem`; kInvalid when it cannot be read.
StatusOr<Time> CertNotAfter(const std::string& pem);
// The DNS names in the subjectAltName of the first certificate in `pem`; kInvalid when it
// cannot be read.
StatusOr<std::vector<std::string>> CertDnsNames(const std::string& pem);

}  // namespace trainctl::server
