#include "operator/manager.h"

#include <memory>
#include <thread>
#include <tuple>

#include "kube/connect.h"
#include "operator/admission.h"
#include "operator/conversion_review.h"
#include "operator/gang.h"
#include "operator/log.h"
#include "operator/process_stats.h"
#include "operator/webhook_server.h"
#include "server/http_server.h"
#include "ui/dashboard.h"

namespace trainctl::op {
namespace {

// The recorder's SQLite page cache: it appends, so a small one costs little time
// (bench/history_seed, docs/benchmarks.md) and keeps the operator's memory down.
constexpr int kHistoryCacheKib = 256;

// Drops the kinds whose CRD the server does not serve (their informers would retry forever and
// keep the operator unready); any other error keeps the kind. Logs each one dropped.
std::vector<api::Kind> ServedKinds(kube::Client& client, const std::vector<api::Kind>& kinds,
                                   const std::string& namespace_) {
  std::vector<api::Kind> served;
  for (api::Kind kind : kinds) {
    kube::ListOptions probe;
    probe.limit = 1;
    StatusOr<nlohmann::json> list =
        client.List({api::kGroup, "v1", api::Info(kind).plural, true}, namespace_, probe);
    if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
      LogError("{}.{} is not served (CRD not installed?): {} jobs are not reconciled",
               api::Info(kind).plural, api::kGroup, api::Info(kind).name);
      continue;
    }
    served.push_back(kind);
  }
  return served;
}

// Renews the webhook certificate well before expiry (Ensure replaces one with < 30 days left)
// and keeps trying to inject the CA until the ValidatingWebhookConfiguration exists.
void RotateCertificates(const Clock* clock, const std::atomic<bool>* stop, WebhookCerts* certs,
                        WebhookServer* server, std::string ca, bool injected,
                        const std::string& config_name) {
  for (int seconds = 0; !*stop; ++seconds) {
    clock->SleepFor(Duration(1000));
    if (!injected && seconds % 5 == 4 && certs->InjectCaBundle(ca).ok()) {
      injected = true;
      LogInfo(
          "CA bundle injected into ValidatingWebhookConfiguration {} and the conversion "
          "webhooks",
          config_name);
    }
    if (seconds % 3600 != 3599) continue;
    bool renewed = false;
    StatusOr<CertBundle> next = certs->Ensure(&renewed);
    if (!next.ok()) {
      LogError("webhook certificate renewal: {}", next.status().message());
      continue;
    }
    if (!renewed) continue;
    Status st = server->SetCertificate(next->cert_pem, next->key_pem);
    ca = next->ca_cert_pem;
    if (st.ok()) st = certs->InjectCaBundle(ca);
    injected = st.ok();
    if (st.ok())
      LogInfo("webhook certificate renewed");
    else
      LogError("webhook certificate renewal: {}", st.message());
  }
}

// Which enabled kinds the API server serves (into `options->kinds`), and whether the gang
// scheduler's PodGroup CRD is there when one is configured.
Status ProbeServed(kube::Client& client, const ManagerOptions& o, ControllerOptions* options) {
  options->kinds = ServedKinds(client, o.controller.kinds, o.controller.namespace_);
  if (options->kinds.empty())
    return FailedPreconditionError("none of the enabled kinds is served by " + o.config.server +
                                   "; install the CRDs from manifests/crds");
  if (UsesPodGroups(options->pod_settings.gang)) {
    kube::ListOptions probe;
    probe.limit = 1;
    StatusOr<nlohmann::json> list =
        client.List(PodGroupResource(options->pod_settings.gang.kind), options->namespace_, probe);
    if (!list.ok() && list.status().code() == StatusCode::kNotFound)
      return FailedPreconditionError("--gang-scheduler-name " + o.gang_scheduler_name + ": " +
                                     PodGroupCrdName(options->pod_settings.gang.kind) +
                                     " is not served; crd might be missing, please install crd");
  }
  return Status::Ok();
}

// The process, queue and cache gauges of /metrics; `controller` outlives `metrics`' use.
void AddProcessGauges(Metrics* metrics, Controller* controller) {
  metrics->AddGauge("workqueue_depth", "Keys ready to be reconciled", [controller] {
    return static_cast<double>(controller->queue().stats().depth);
  });
  metrics->AddGauge("process_resident_memory_bytes", "Resident memory size in bytes",
                    [] { return ProcStatusBytes("VmRSS"); });
  metrics->AddGauge("trainctl_process_peak_resident_memory_bytes", "Peak resident memory in bytes",
                    [] { return ProcStatusBytes("VmHWM"); });
  metrics->AddGauge("process_cpu_seconds_total", "User and system CPU time spent in seconds",
                    [] { return CpuSeconds(); });
  metrics->AddGauge("trainctl_cached_pods", "Pods in the operator's cache",
                    [controller] { return static_cast<double>(controller->cached_pods()); });
  metrics->AddGauge("trainctl_watch_lists_total", "Lists made by the informers",
                    [controller] { return static_cast<double>(controller->watch_stats().lists); });
  metrics->AddGauge(
      "trainctl_watch_relists_after_gone_total",
      "Watches that expired (410 Gone) and were followed by a fresh list",
      [controller] { return static_cast<double>(controller->watch_stats().relists_after_gone); });
}

// What the event recorder wrote and lost (kube/event_recorder.h); `recorder` outlives
// `metrics`' use.
void AddEventGauges(Metrics* metrics, const kube::EventRecorder* recorder) {
  metrics->AddGauge("trainctl_events_written_total", "Events created or patched", [recorder] {
    kube::RecorderStats s = recorder->stats();
    return static_cast<double>(s.created + s.patched);
  });
  metrics->AddGauge("trainctl_events_folded_total",
                    "Events carried by another Event's write (over the budget or behind)",
                    [recorder] { return static_cast<double>(recorder->stats().folded); });
  metrics->AddGauge("trainctl_events_lost_total",
                    "Event occurrences lost: the queue was full, a write failed, or the stop's "
                    "drain time ran out",
                    [recorder] { return static_cast<double>(EventsLost(recorder->stats())); });
}

// Serves the validating webhooks and MPIJob's conversion webhook over TLS with a certificate
// from (or created in) the Secret, injects the CA into the ValidatingWebhookConfiguration (and
// the conversion CRDs), and starts `rotation` (renewal and
// injection retries) until `stop`.
Status StartWebhooks(const ManagerOptions& o, const Clock* clock, const std::atomic<bool>* stop,
                     WebhookCerts* webhook_certs, WebhookServer* webhook_server,
                     std::thread* rotation) {
  const WebhookCertOptions& wo = o.webhook_certs;
  StatusOr<CertBundle> certs = webhook_certs->Ensure();
  if (certs.ok()) {
    Status st = webhook_server->SetCertificate(certs->cert_pem, certs->key_pem);
    if (!st.ok()) certs = st;
  }
  if (!certs.ok())
    return Status(certs.status().code(), "webhook certificate (Secret " + wo.namespace_ + "/" +
                                             wo.secret_name + "): " + certs.status().message());
  for (const api::KindInfo& k : api::AllKinds()) {
    api::Kind kind = k.kind;
    webhook_server->router().Handle(
        "POST", WebhookPath(kind), [kind](const server::Request& request) {
          return server::Response::Json(200, ReviewAdmission(kind, request.body));
        });
  }
  // MPIJob's kubeflow.org/v1 <-> v2beta1 conversion (the CRD's conversion webhook).
  webhook_server->router().Handle("POST", kMpiConversionPath, [](const server::Request& request) {
    return server::Response::Json(200, ReviewConversion(request.body));
  });
  std::string address = o.webhook_bind_host + ":" + std::to_string(o.webhook_port);
  if (Status st = webhook_server->Start(address); !st.ok())
    return Status(st.code(), "webhook server: " + st.message());
  LogInfo("webhook server listening on port {} (certificate in Secret {}/{})",
          webhook_server->port(), wo.namespace_, wo.secret_name);
  bool injected = false;
  if (Status st = webhook_certs->InjectCaBundle(certs->ca_cert_pem); !st.ok()) {
    LogError(
        "cannot inject the CA into ValidatingWebhookConfiguration {} or a conversion "
        "webhook (retrying): {}",
        wo.config_name, st.message());
  } else {
    injected = true;
    LogInfo(
        "CA bundle injected into ValidatingWebhookConfiguration {} and the conversion "
        "webhooks",
        wo.config_name);
  }
  *rotation = std::thread(RotateCertificates, clock, stop, webhook_certs, webhook_server,
                          certs->ca_cert_pem, injected, wo.config_name);
  return Status::Ok();
}

}  // namespace

int Manager::Run(std::atomic<bool>* stop) {
  const ManagerOptions& o = options_;
  RealClock clock;
  StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(o.config, &clock, o.client);
  if (!client.ok()) {
    LogError("cannot connect to {}: {}", o.config.server, client.status().message());
    return 2;
  }
  Metrics metrics;
  kube::CorrelatorOptions events;
  events.component = "training-operator";
  events.host = o.host;
  // Events go through their own client, so a burst of events never delays the pods and services
  // of a job (upstream v1.9.4 shares one limiter with its recorder, and its events queue behind
  // its creates: docs/compatibility.md), and within their own budget (o.events): over it, the
  // same reason for the same job is folded into one Event rather than dropped.
  StatusOr<std::unique_ptr<kube::Client>> event_client = kube::Connect(o.config, &clock, o.client);
  if (!event_client.ok()) {
    LogError("cannot connect to {}: {}", o.config.server, event_client.status().message());
    return 2;
  }
  kube::EventRecorder recorder(event_client->get(), &clock, events, o.events);

  ControllerOptions controller_options = o.controller;
  if (Status served = ProbeServed(**client, o, &controller_options); !served.ok()) {
    LogError("{}", served.message());
    return 2;
  }
  Controller controller(client->get(), &clock, controller_options, &metrics, &recorder);
  std::unique_ptr<HistoryRecorder> history;
  if (!o.history_path.empty()) {
    StatusOr<std::unique_ptr<history::HistoryStore>> store =
        history::HistoryStore::Open(o.history_path);
    Status cache = store.ok() ? (*store)->LimitCache(kHistoryCacheKib) : store.status();
    if (!cache.ok()) {
      LogError("--history: {}", cache.message());
      return 2;
    }
    // The log reads go through the event client: bookkeeping traffic beside the events, never
    // in the way of the controller's creates, and no third connection to the API server.
    history = std::make_unique<HistoryRecorder>(std::move(*store), event_client->get(),
                                                history::Limits{}, &clock);
    controller.SetHistory(history.get());
    recorder.SetTap([h = history.get()](const kube::EventInput& e) {
      ThreadCpuMeter meter(h->shared_cpu_nanos());
      h->events().Add(e);
    });
    metrics.AddGauge("trainctl_history_shared_cpu_seconds_total",
                     "CPU seconds the job history used on the controller's and the event "
                     "recorder's threads (its own threads are named hist-*)",
                     [h = history.get()] { return h->shared_cpu_seconds(); });
    history->Start();
    LogInfo("job history: recording finished jobs in {}", o.history_path);
  }
  // The in-cluster dashboard: the cluster's jobs and the history, each user seeing what the
  // API server lets them read (TokenReview, SubjectAccessReview).
  std::unique_ptr<kube::Client> dashboard_client;
  std::unique_ptr<ui::ClusterAuthorizer> authorizer;
  std::unique_ptr<ui::Dashboard> dashboard;
  server::HttpServerOptions dashboard_limits;
  dashboard_limits.max_connections = 64;
  dashboard_limits.max_streams = 16;
  server::HttpServer dashboard_server(dashboard_limits);
  if (o.dashboard_bind_address != "0") {
    StatusOr<std::unique_ptr<kube::Client>> reviews = kube::Connect(o.config, &clock, o.client);
    StatusOr<std::unique_ptr<kube::Client>> reads = kube::Connect(o.config, &clock, o.client);
    if (!reviews.ok() || !reads.ok()) {
      LogError("dashboard: {}",
               !reviews.ok() ? reviews.status().message() : reads.status().message());
      return 2;
    }
    dashboard_client = std::move(*reviews);
    authorizer = std::make_unique<ui::ClusterAuthorizer>(dashboard_client.get(), &clock,
                                                         o.dashboard_user_header);
    ui::DashboardConfig config;
    config.history_path = o.history_path;
    config.authorizer = authorizer.get();
    dashboard = std::make_unique<ui::Dashboard>(config, clock);
    dashboard->UseClusterSource(std::make_unique<jobs::ClusterJobSource>(
        std::move(*reads), "default", true, o.config.server, clock));
    if (Status st = dashboard->Open(); !st.ok()) {
      LogError("dashboard: {}", st.message());
      return 2;
    }
    dashboard->Register(dashboard_server.router());
    if (Status st = dashboard_server.Start(o.dashboard_bind_address); !st.ok()) {
      LogError("dashboard server: {}", st.message());
      return 2;
    }
    LogInfo("dashboard listening on port {} (read-only; users see what RBAC lets them read)",
            dashboard_server.port());
  }

  AddProcessGauges(&metrics, &controller);
  AddEventGauges(&metrics, &recorder);

  server::HttpServer metrics_server, health_server;
  metrics_server.router().Handle("GET", "/metrics", [&](const server::Request&) {
    server::Response r = server::Response::Text(200, metrics.Render());
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
  });
  std::atomic<bool> leading{!o.leader_elect};
  health_server.router().Handle("GET", "/healthz", [](const server::Request&) {
    return server::Response::Text(200, "ok\n");
  });
  health_server.router().Handle("GET", "/readyz", [&](const server::Request&) {
    // A standby replica is ready (it serves nothing but can take over); a leader once synced.
    if (leading && !controller.Synced())
      return server::Response::Text(503, "informers not synced\n");
    return server::Response::Text(200, "ok\n");
  });
  for (auto [server, address, what] :
       {std::tuple{&metrics_server, o.metrics_bind_address, "metrics"},
        std::tuple{&health_server, o.health_probe_bind_address, "health probe"}}) {
    Status st = server->Start(address);
    if (!st.ok()) {
      LogError("{} server: {}", what, st.message());
      return 2;
    }
    if (address != "0") LogInfo("{} server listening on port {}", what, server->port());
  }

  // Webhooks are served by every replica (the API server may call any of them), leader or not.
  WebhookServer webhook_server;
  std::unique_ptr<WebhookCerts> webhook_certs;
  std::thread rotation;
  if (o.webhook_port > 0) {
    webhook_certs = std::make_unique<WebhookCerts>(client->get(), &clock, o.webhook_certs);
    if (Status st = StartWebhooks(o, &clock, stop, webhook_certs.get(), &webhook_server, &rotation);
        !st.ok()) {
      LogError("{}", st.message());
      return 2;
    }
  }

  std::unique_ptr<kube::LeaderElector> elector;
  std::thread election;
  std::atomic<bool> lost{false};
  if (o.leader_elect) {
    const kube::LeaderElectionConfig& lec = o.leader_election;
    kube::LeaderElector::Callbacks callbacks;
    callbacks.on_started_leading = [&] {
      LogInfo("became leader ({}/{})", lec.namespace_, lec.name);
      leading = true;
    };
    callbacks.on_stopped_leading = [&] {
      if (!*stop) lost = true;
      *stop = true;
    };
    callbacks.on_new_leader = [](const std::string& id) { LogInfo("the leader is {}", id); };
    elector = std::make_unique<kube::LeaderElector>(client->get(), &clock, lec, callbacks);
    election = std::thread([&] { elector->Run(); });
    LogInfo("waiting to lead {}/{} as {}", lec.namespace_, lec.name, lec.identity);
    while (!leading && !*stop) clock.SleepFor(Duration(100));
  }
  if (!*stop) {
    std::string scope =
        controller_options.namespace_.empty() ? "all namespaces" : controller_options.namespace_;
    LogInfo("starting controllers for {} kinds in {} with {} worker(s), API qps {} burst {}",
            controller_options.kinds.size(), scope, controller_options.threads, o.client.qps,
            o.client.burst);
    Time began = clock.Now();
    controller.Start();
    if (controller.WaitForSync(Duration(120000)))
      LogInfo("{}", SyncSummary(std::chrono::duration_cast<Duration>(clock.Now() - began),
                                controller.informer_stats()));
  }
  while (!*stop) clock.SleepFor(Duration(100));
  LogInfo("stopping");
  dashboard_server.Stop();
  controller.Stop();
  recorder.Flush(Duration(5000));
  if (elector) {
    elector->Stop();
    if (election.joinable()) election.join();
  }
  // What is still queued is written after the lease is released (a successor need not wait).
  LogInfo("{}", EventSummary(recorder.Stop()));
  metrics_server.Stop();
  health_server.Stop();
  webhook_server.Stop();
  if (rotation.joinable()) rotation.join();
  if (lost) {
    LogError("lost the leader lease");
    return 1;
  }
  return 0;
}

}  // namespace trainctl::op
