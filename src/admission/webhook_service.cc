#include "admission/webhook_service.h"

#include <fmt/format.h>

#include "admission/admission.h"
#include "admission/conversion_review.h"
#include "admission/trainer_admission.h"

namespace trainctl::admission {
namespace {

// fmt's checked format string, then the line to the log.
template <typename... Args>
std::string Line(fmt::format_string<Args...> format, Args&&... args) {
  return fmt::format(format, std::forward<Args>(args)...);
}

}  // namespace

WebhookService::WebhookService(kube::Client* client, const Clock* clock, WebhookCertOptions options,
                               std::string bind_host, int port, WebhookLog log)
    : client_(client),
      clock_(clock),
      log_(std::move(log)),
      options_(options),
      address_(std::move(bind_host) + ":" + std::to_string(port)),
      certs_(client, clock, std::move(options)) {}

WebhookService::~WebhookService() { Stop(); }

Status WebhookService::Start() {
  StatusOr<CertBundle> certs = certs_.Ensure();
  if (certs.ok()) {
    Status st = server_.SetCertificate(certs->cert_pem, certs->key_pem);
    if (st.ok() && status_port_ > 0)
      st = status_server_.SetCertificate(certs->cert_pem, certs->key_pem);
    if (!st.ok()) certs = st;
  }
  if (!certs.ok())
    return Status(certs.status().code(), "webhook certificate (Secret " + options_.namespace_ +
                                             "/" + options_.secret_name +
                                             "): " + certs.status().message());
  for (const api::KindInfo& k : api::AllKinds()) {
    if (!k.operator_serves) continue;
    api::Kind kind = k.kind;
    server_.router().Handle("POST", WebhookPath(kind), [kind](const server::Request& request) {
      return server::Response::Json(200, ReviewAdmission(kind, request.body));
    });
  }
  // Kubeflow Trainer v2: a TrainJob against the live runtime it names; the runtimes.
  server_.router().Handle("POST", kTrainJobWebhookPath, [this](const server::Request& request) {
    TrainJobLookups lookups;
    lookups.runtime = [this](const api::RuntimeRef& ref, const std::string& ns) {
      const bool cluster = ref.kind == api::kClusterTrainingRuntimeKind;
      return client_->Get(cluster ? kube::kClusterTrainingRuntimes : kube::kTrainingRuntimes,
                          cluster ? "" : ns, ref.name);
    };
    lookups.priority_class = [this](const std::string& name) {
      return client_->Get(kube::kPriorityClasses, "", name).status();
    };
    return server::Response::Json(200, ReviewTrainJob(request.body, lookups));
  });
  server_.router().Handle(
      "POST", kTrainJobMutatingWebhookPath, [this](const server::Request& request) {
        return server::Response::Json(200, DefaultTrainJob(request.body, clock_->Now()));
      });
  for (const char* path : {kTrainingRuntimeWebhookPath, kClusterTrainingRuntimeWebhookPath})
    server_.router().Handle("POST", path, [](const server::Request& request) {
      return server::Response::Json(200, ReviewTrainingRuntime(request.body));
    });
  // MPIJob's kubeflow.org/v1 <-> v2beta1 conversion (the CRD's conversion webhook).
  server_.router().Handle("POST", kMpiConversionPath, [](const server::Request& request) {
    return server::Response::Json(200, ReviewConversion(request.body));
  });
  if (Status st = server_.Start(address_); !st.ok())
    return Status(st.code(), "webhook server: " + st.message());
  log_(false, Line("webhook server listening on port {} (certificate in Secret {}/{})",
                   server_.port(), options_.namespace_, options_.secret_name));
  if (status_port_ > 0) {
    std::string host = address_.substr(0, address_.rfind(':'));
    if (Status st = status_server_.Start(host + ":" + std::to_string(status_port_)); !st.ok()) {
      server_.Stop();
      return Status(st.code(), "runtime status server: " + st.message());
    }
    log_(false, Line("runtime status server listening on port {}", status_server_.port()));
  }
  {
    std::lock_guard<std::mutex> lock(ca_mu_);
    ca_pem_ = certs->ca_cert_pem;
  }
  bool injected = false;
  if (Status st = certs_.InjectCaBundle(certs->ca_cert_pem); !st.ok()) {
    log_(true, Line("cannot inject the CA into ValidatingWebhookConfiguration {} or a conversion "
                    "webhook (retrying): {}",
                    options_.config_name, st.message()));
  } else {
    injected = true;
    log_(false, Line("CA bundle injected into ValidatingWebhookConfiguration {} and the conversion "
                     "webhooks",
                     options_.config_name));
  }
  rotation_ = std::thread(&WebhookService::Rotate, this, certs->ca_cert_pem, injected);
  return Status::Ok();
}

void WebhookService::Stop() {
  stopping_ = true;
  if (rotation_.joinable()) rotation_.join();
  server_.Stop();
  if (status_port_ > 0) status_server_.Stop();
}

server::Router& WebhookService::AlsoServe(int port) {
  status_port_ = port;
  return status_server_.router();
}

std::string WebhookService::ca_pem() const {
  std::lock_guard<std::mutex> lock(ca_mu_);
  return ca_pem_;
}

// Renews the certificate well before expiry (Ensure replaces one with < 30 days left) and keeps
// trying to inject the CA until the ValidatingWebhookConfiguration exists.
void WebhookService::Rotate(std::string ca, bool injected) {
  for (int seconds = 0; !stopping_; ++seconds) {
    clock_->SleepFor(Duration(1000));
    if (!injected && seconds % 5 == 4 && certs_.InjectCaBundle(ca).ok()) {
      injected = true;
      log_(false,
           Line("CA bundle injected into ValidatingWebhookConfiguration {} and the conversion "
                "webhooks",
                options_.config_name));
    }
    if (seconds % 3600 != 3599) continue;
    bool renewed = false;
    StatusOr<CertBundle> next = certs_.Ensure(&renewed);
    if (!next.ok()) {
      log_(true, Line("webhook certificate renewal: {}", next.status().message()));
      continue;
    }
    if (!renewed) continue;
    Status st = server_.SetCertificate(next->cert_pem, next->key_pem);
    if (st.ok() && status_port_ > 0)
      st = status_server_.SetCertificate(next->cert_pem, next->key_pem);
    ca = next->ca_cert_pem;
    {
      std::lock_guard<std::mutex> lock(ca_mu_);
      ca_pem_ = ca;
    }
    if (st.ok()) st = certs_.InjectCaBundle(ca);
    injected = st.ok();
    if (st.ok())
      log_(false, Line("webhook certificate renewed"));
    else
      log_(true, Line("webhook certificate renewal: {}", st.message()));
  }
}

}  // namespace trainctl::admission
