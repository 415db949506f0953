#include "admission/webhook_certs.h"

#include <arpa/inet.h>

#include <algorithm>

#include "kube/base64.h"

namespace trainctl::admission {

using nlohmann::json;

namespace {

const kube::Resource kValidatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                      "validatingwebhookconfigurations", false};
const kube::Resource kMutatingWebhookConfigurations{"admissionregistration.k8s.io", "v1",
                                                    "mutatingwebhookconfigurations", false};
const kube::Resource kCustomResourceDefinitions{"apiextensions.k8s.io", "v1",
                                                "customresourcedefinitions", false};
constexpr Duration kValidity = std::chrono::hours(24 * 365);
constexpr Duration kRenewBefore = std::chrono::hours(24 * 30);

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string Field(const json& secret, const char* key) {
  if (!secret.contains("data") || !secret["data"].is_object() || !secret["data"].contains(key) ||
      !secret["data"][key].is_string())
    return "";
  return kube::Base64Decode(secret["data"][key].get<std::string>()).value_or("");
}

}  // namespace

std::vector<std::string> WebhookDnsNames(const WebhookCertOptions& o) {
  std::vector<std::string> names = {o.service_name + "." + o.namespace_ + ".svc",
                                    o.service_name + "." + o.namespace_ + ".svc.cluster.local"};
  for (const std::string& h : o.extra_hosts)
    if (!IsIp(h)) names.push_back(h);
  return names;
}

bool CertCovers(const std::string& cert_pem, const std::vector<std::string>& dns_names) {
  StatusOr<std::vector<std::string>> have = CertDnsNames(cert_pem);
  if (!have.ok()) return false;
  for (const std::string& name : dns_names)
    if (std::find(have->begin(), have->end(), name) == have->end()) return false;
  return true;
}

StatusOr<CertBundle> WebhookCerts::Ensure(bool* renewed) {
  if (renewed) *renewed = false;
  StatusOr<json> secret = client_->Get(kube::kSecrets, options_.namespace_, options_.secret_name);
  if (!secret.ok() && secret.status().code() != StatusCode::kNotFound) return secret.status();
  Time now = clock_->Now();
  if (secret.ok()) {
    CertBundle stored{Field(*secret, "ca.crt"), Field(*secret, "tls.crt"),
                      Field(*secret, "tls.key")};
    StatusOr<Time> expiry = CertNotAfter(stored.cert_pem);
    // Reused only when it names the service as configured now (--webhook-service-name may have
    // changed). Extra hosts (tests) are not checked: with them a new pair is always made.
    bool covers = CertCovers(stored.cert_pem, WebhookDnsNames(options_));
    if (covers && expiry.ok() && *expiry - now > kRenewBefore && !stored.key_pem.empty() &&
        !stored.ca_cert_pem.empty() && options_.extra_hosts.empty())
      return stored;
  }
  std::vector<std::string> ips;
  for (const std::string& h : options_.extra_hosts)
    if (IsIp(h)) ips.push_back(h);
  StatusOr<CertBundle> made = GenerateServingCerts(WebhookDnsNames(options_), ips, now, kValidity);
  if (!made.ok()) return made.status();
  json data = {{"ca.crt", kube::Base64Encode(made->ca_cert_pem)},
               {"tls.crt", kube::Base64Encode(made->cert_pem)},
               {"tls.key", kube::Base64Encode(made->key_pem)}};
  if (secret.ok()) {
    json updated = *secret;
    updated["data"] = data;
    updated["type"] = "kubernetes.io/tls";
    StatusOr<json> st = client_->Update(kube::kSecrets, options_.namespace_, updated);
    if (!st.ok()) return st.status();  // a Conflict: another replica renewed; retried by caller
  } else {
    json object = {
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"type", "kubernetes.io/tls"},
        {"metadata", {{"name", options_.secret_name}, {"namespace", options_.namespace_}}},
        {"data", data}};
    StatusOr<json> st = client_->Create(kube::kSecrets, options_.namespace_, object);
    if (!st.ok() && st.status().code() == StatusCode::kAlreadyExists) return Ensure(renewed);
    if (!st.ok()) return st.status();
  }
  if (renewed) *renewed = true;
  return made;
}

namespace {

// caBundle on every webhook of the configuration `name` of `resource`.
Status InjectIntoWebhookConfig(kube::Client* client, const kube::Resource& resource,
                               const std::string& name, const std::string& bundle) {
  return client
      ->UpdateWithRetry(resource, "", name,
                        [&](json& config) -> Status {
                          if (!config.contains("webhooks") || !config["webhooks"].is_array())
                            return InvalidError(name + " has no webhooks");
                          for (json& w : config["webhooks"]) w["clientConfig"]["caBundle"] = bundle;
                          return Status::Ok();
                        })
      .status();
}

}  // namespace

Status WebhookCerts::InjectCaBundle(const std::string& ca_pem) {
  std::string bundle = kube::Base64Encode(ca_pem);
  // The CRDs even when the configuration is missing: each is its own webhook. The first error
  // is returned (the caller retries all of them).
  Status first = InjectIntoWebhookConfig(client_, kValidatingWebhookConfigurations,
                                         options_.config_name, bundle);
  if (!options_.mutating_config_name.empty()) {
    Status st = InjectIntoWebhookConfig(client_, kMutatingWebhookConfigurations,
                                        options_.mutating_config_name, bundle);
    // Optional: a cluster without Trainer v2's defaulter has none.
    if (!st.ok() && st.code() != StatusCode::kNotFound && first.ok())
      first = Status(st.code(), "MutatingWebhookConfiguration " + options_.mutating_config_name +
                                    ": " + st.message());
  }
  for (const std::string& crd : options_.conversion_crds) {
    Status st = InjectIntoCrd(crd, bundle);
    if (!st.ok() && first.ok())
      first = Status(st.code(), "CustomResourceDefinition " + crd + ": " + st.message());
  }
  return first;
}

Status WebhookCerts::InjectIntoCrd(const std::string& name, const std::string& bundle) {
  StatusOr<json> crd = client_->Get(kCustomResourceDefinitions, "", name);
  if (!crd.ok() && crd.status().code() == StatusCode::kNotFound) return Status::Ok();
  if (!crd.ok()) return crd.status();
  if (!ConvertsThroughWebhook(*crd) ||
      (*crd)["spec"]["conversion"]["webhook"]["clientConfig"].value("caBundle", "") == bundle)
    return Status::Ok();
  StatusOr<json> result =
      client_->UpdateWithRetry(kCustomResourceDefinitions, "", name, [&](json& object) -> Status {
        if (!ConvertsThroughWebhook(object)) return Status::Ok();  // changed meanwhile
        object["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = bundle;
        return Status::Ok();
      });
  return result.status();
}

bool ConvertsThroughWebhook(const json& crd) {
  const json* conversion = nullptr;
  if (crd.contains("spec") && crd["spec"].is_object() && crd["spec"].contains("conversion"))
    conversion = &crd["spec"]["conversion"];
  return conversion != nullptr && conversion->is_object() &&
         conversion->value("strategy", "") == "Webhook" && conversion->contains("webhook") &&
         (*conversion)["webhook"].is_object() &&
         (*conversion)["webhook"].contains("clientConfig") &&
         (*conversion)["webhook"]["clientConfig"].is_object();
}

}  // namespace trainctl::admission
