#include "operator/compose.h"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "admission/webhook_service.h"
#include "kube/connect.h"
#include "operator/gang.h"
#include "operator/kueue_workload.h"
#include "operator/log.h"
#include "operator/manager.h"
#include "operator/process_stats.h"
#include "operator/status_token_review.h"
#include "operator/trainer_status_writer.h"
#include "operator/trainjob_controller.h"
#include "progress/status_endpoint.h"
#include "recording/history_recorder.h"
#include "server/http_server.h"
#include "ui/dashboard.h"

namespace trainctl::op {
namespace {

// The operator's log for a room that says what it does through a callback.
void OperatorLog(bool error, const std::string& line) {
  if (error)
    LogError("{}", line);
  else
    LogInfo("{}", line);
}

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

// Which enabled kinds the API server serves (into `options->kinds`), and whether the gang
// scheduler's PodGroup CRD is there when one is configured.
Status ProbeServed(kube::Client& client, const OperatorOptions& o, ControllerOptions* options) {
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

// Trainer v2 is served when its TrainJob CRD is installed and the JobSet CRD too (the JobSet
// controller runs what the TrainJob controller writes); otherwise one line says why not.
bool ServesTrainJobs(kube::Client& client, const std::string& ns) {
  kube::ListOptions probe;
  probe.limit = 1;
  StatusOr<nlohmann::json> trainjobs = client.List(kTrainJobs, ns, probe);
  if (!trainjobs.ok()) {
    LogInfo("Trainer v2 not served: TrainJobs: {}", trainjobs.status().message());
    return false;
  }
  StatusOr<nlohmann::json> jobsets = client.List(kJobSets, ns, probe);
  if (!jobsets.ok()) {
    LogError(
        "Trainer v2 not served: the TrainJob CRD is installed but JobSets are not ({}); "
        "install the JobSet controller (sigs.k8s.io/jobset v0.12.0)",
        jobsets.status().message());
    return false;
  }
  return true;
}

// Kueue is watched when its Workloads and LocalQueues are served (its CRDs installed): the why
// of a job it holds then comes from its Workload. `quiet`: no log line when they are not.
bool ServesKueue(kube::Client& client, const std::string& ns, bool quiet = false) {
  kube::ListOptions probe;
  probe.limit = 1;
  for (const kube::Resource& r : {kKueueWorkloads, kKueueLocalQueues}) {
    if (StatusOr<nlohmann::json> list = client.List(r, ns, probe); !list.ok()) {
      if (!quiet)
        LogInfo("Kueue not watched until its CRDs are served (looked for every 30 s): {}.{}: {}",
                r.plural, r.group, list.status().message());
      return false;
    }
  }
  return true;
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

// The job history: the SQLite store, fed by the controller (finished jobs) and the event
// recorder (its tap), its pod-log reads through `log_client`. Null when off. The TrainJob
// controller, when it runs, feeds it too (RunComposedOperator).
StatusOr<std::unique_ptr<recording::HistoryRecorder>> MakeHistory(
    const OperatorOptions& o, kube::Client* log_client, const Clock* clock, Controller* controller,
    kube::EventRecorder* recorder, Metrics* metrics) {
  if (o.history_path.empty()) return std::unique_ptr<recording::HistoryRecorder>();
  StatusOr<std::unique_ptr<history::HistoryStore>> store =
      history::HistoryStore::Open(o.history_path);
  Status cache = store.ok() ? (*store)->LimitCache(kHistoryCacheKib) : store.status();
  if (!cache.ok()) return Status(cache.code(), "--history: " + cache.message());
  auto history = std::make_unique<recording::HistoryRecorder>(
      std::move(*store), log_client, history::Limits{}, clock, OperatorLog);
  controller->SetHistory(history.get());
  recorder->SetTap([h = history.get()](const kube::EventInput& e) {
    ThreadCpuMeter meter(h->shared_cpu_nanos());
    h->events().Add(e);
  });
  metrics->AddGauge("trainctl_history_shared_cpu_seconds_total",
                    "CPU seconds the job history used on the controller's and the event "
                    "recorder's threads (its own threads are named hist-*)",
                    [h = history.get()] { return h->shared_cpu_seconds(); });
  return history;
}

// The in-cluster dashboard: the cluster's jobs and the history, each user seeing what the API
// server lets them read (TokenReview, SubjectAccessReview), on clients of its own.
struct DashboardPart {
  std::unique_ptr<kube::Client> reviews;
  std::unique_ptr<ui::ClusterAuthorizer> authorizer;
  std::unique_ptr<ui::Dashboard> dashboard;
  std::unique_ptr<server::HttpServer> server;

  Status Start(const std::string& address) {
    TRAINCTL_RETURN_IF_ERROR(dashboard->Open());
    dashboard->Register(server->router());
    if (Status st = server->Start(address); !st.ok())
      return Status(st.code(), "server: " + st.message());
    LogInfo("dashboard listening on port {} (read-only; users see what RBAC lets them read)",
            server->port());
    return Status::Ok();
  }
};

StatusOr<std::unique_ptr<DashboardPart>> MakeDashboard(const OperatorOptions& o,
                                                       const Clock& clock) {
  StatusOr<std::unique_ptr<kube::Client>> reviews = kube::Connect(o.config, &clock, o.client);
  if (!reviews.ok()) return reviews.status();
  StatusOr<std::unique_ptr<kube::Client>> reads = kube::Connect(o.config, &clock, o.client);
  if (!reads.ok()) return reads.status();
  auto part = std::make_unique<DashboardPart>();
  part->reviews = std::move(*reviews);
  part->authorizer =
      std::make_unique<ui::ClusterAuthorizer>(part->reviews.get(), &clock, o.dashboard_user_header);
  ui::DashboardConfig config;
  config.history_path = o.history_path;
  config.authorizer = part->authorizer.get();
  part->dashboard = std::make_unique<ui::Dashboard>(config, clock);
  part->dashboard->UseClusterSource(std::make_unique<jobs::ClusterJobSource>(
      std::move(*reads), "default", true, o.config.server, clock));
  server::HttpServerOptions limits;
  limits.max_connections = 64;
  limits.max_streams = 16;
  part->server = std::make_unique<server::HttpServer>(limits);
  return part;
}

// A plain HTTP server as a part; "0" adds nothing that listens.
Runnable ServerPart(const std::string& name, server::HttpServer* server,
                    const std::string& address) {
  return {name,
          [=] {
            TRAINCTL_RETURN_IF_ERROR(server->Start(address));
            if (address != "0") LogInfo("{} listening on port {}", name, server->port());
            return Status::Ok();
          },
          [server] { server->Stop(); }};
}

}  // namespace

int RunComposedOperator(const OperatorOptions& o, std::atomic<bool>* stop) {
  RealClock clock;
  StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(o.config, &clock, o.client);
  // Events go through their own client, so a burst of events never delays the pods and services
  // of a job (upstream v1.9.4 shares one limiter with its recorder, and its events queue behind
  // its creates: docs/compatibility.md), and within their own budget (o.events): over it, the
  // same reason for the same job is folded into one Event rather than dropped.
  StatusOr<std::unique_ptr<kube::Client>> event_client =
      client.ok() ? kube::Connect(o.config, &clock, o.client) : client.status();
  if (!event_client.ok()) {
    LogError("cannot connect to {}: {}", o.config.server, event_client.status().message());
    return 2;
  }
  Metrics metrics;
  kube::CorrelatorOptions events;
  events.component = "training-operator";
  events.host = o.host;
  kube::EventRecorder recorder(event_client->get(), &clock, events, o.events);
  ControllerOptions controller_options = o.controller;
  if (Status served = ProbeServed(**client, o, &controller_options); !served.ok()) {
    LogError("{}", served.message());
    return 2;
  }
  controller_options.kueue = ServesKueue(**client, controller_options.namespace_);
  // The runtime status endpoint (below, on the webhook server): v1 jobs' pods are given it too,
  // their namespace's CA ConfigMap made from the webhook server's CA once it has one.
  admission::WebhookService* webhook_service = nullptr;
  if (o.status_port > 0 && o.webhook_port > 0) {
    controller_options.pod_settings.status_server_url = o.status_url;
    controller_options.pod_settings.status_ca = [&webhook_service] {
      return webhook_service ? webhook_service->ca_pem() : std::string();
    };
  }
  Controller controller(client->get(), &clock, controller_options, &metrics, &recorder);
  std::unique_ptr<TrainJobController> trainjobs;
  if (ServesTrainJobs(**client, controller_options.namespace_))
    trainjobs =
        std::make_unique<TrainJobController>(client->get(), &clock, controller_options.namespace_,
                                             controller_options.threads, &recorder);
  if (trainjobs) trainjobs->SetKueue(controller.kueue());
  // The history's log reads go through the event client: bookkeeping traffic beside the
  // events, never in the way of the controller's creates, and no third connection.
  StatusOr<std::unique_ptr<recording::HistoryRecorder>> history =
      MakeHistory(o, event_client->get(), &clock, &controller, &recorder, &metrics);
  if (history.ok() && *history && trainjobs) trainjobs->SetHistory(history->get());
  std::unique_ptr<DashboardPart> dashboard;
  if (history.ok() && o.dashboard_bind_address != "0") {
    StatusOr<std::unique_ptr<DashboardPart>> made = MakeDashboard(o, clock);
    if (!made.ok()) history = Status(made.status().code(), "dashboard: " + made.status().message());
    if (made.ok()) dashboard = std::move(*made);
  }
  if (!history.ok()) {
    LogError("{}", history.status().message());
    return 2;
  }
  AddProcessGauges(&metrics, &controller);
  AddEventGauges(&metrics, &recorder);

  std::optional<ElectionSettings> election;
  if (o.leader_elect) election = ElectionSettings{client->get(), o.leader_election};
  Manager manager(&clock, election);
  // Stopped last: what is still queued is written after the lease is released.
  manager.Add({"event recorder", nullptr, [&] { LogInfo("{}", EventSummary(recorder.Stop())); }});
  if (*history)
    manager.Add({"job history",
                 [&] {
                   (*history)->Start();
                   LogInfo("job history: recording finished jobs in {}", o.history_path);
                   return Status::Ok();
                 },
                 nullptr});
  if (dashboard)
    manager.Add({"dashboard", [&] { return dashboard->Start(o.dashboard_bind_address); },
                 [&] { dashboard->server->Stop(); }});

  server::HttpServer metrics_server, health_server;
  metrics_server.router().Handle("GET", "/metrics", [&](const server::Request&) {
    server::Response r = server::Response::Text(200, metrics.Render());
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
  });
  health_server.router().Handle("GET", "/healthz", [](const server::Request&) {
    return server::Response::Text(200, "ok\n");
  });
  health_server.router().Handle("GET", "/readyz", [&](const server::Request&) {
    // A standby replica is ready (it serves nothing but can take over); a leader once synced.
    if (manager.leading() && (!controller.Synced() || (trainjobs && !trainjobs->Synced())))
      return server::Response::Text(503, "informers not synced\n");
    return server::Response::Text(200, "ok\n");
  });
  manager.Add(ServerPart("metrics server", &metrics_server, o.metrics_bind_address));
  manager.Add(ServerPart("health probe server", &health_server, o.health_probe_bind_address));

  std::unique_ptr<admission::WebhookService> webhooks;
  if (o.webhook_port > 0) {
    webhooks = std::make_unique<admission::WebhookService>(client->get(), &clock, o.webhook_certs,
                                                           o.webhook_bind_host, o.webhook_port,
                                                           [](bool error, const std::string& line) {
                                                             if (error)
                                                               LogError("{}", line);
                                                             else
                                                               LogInfo("{}", line);
                                                           });
  }
  // Trainer v2.3's runtime status endpoint, for TrainJobs and v1 jobs: on every replica (a
  // trainer may reach any), beside the webhooks and on their certificate; what it accepts is
  // written coalesced.
  std::unique_ptr<TrainerStatusWriter> status_writer;
  std::unique_ptr<StatusTokenReview> status_tokens;
  std::unique_ptr<progress::StatusEndpoint> status_endpoint;
  webhook_service = webhooks.get();
  if (webhooks && o.status_port > 0) {
    status_writer = std::make_unique<TrainerStatusWriter>(client->get(), &clock);
    status_tokens = std::make_unique<StatusTokenReview>(client->get(), &clock);
    progress::StatusEndpointHooks hooks;
    hooks.authorize = [&](const std::string& token, const api::StatusTarget& target) {
      return status_tokens->Authorize(token, target);
    };
    hooks.exists = [&](const api::StatusTarget& target) { return status_writer->Exists(target); };
    hooks.accept = [&](const api::StatusTarget& target, api::TrainerStatus status) {
      status_writer->Accept(target, std::move(status));
    };
    TrainerStatusWriter* writer = status_writer.get();
    metrics.AddGauge("trainctl_trainer_status_reports_total",
                     "Runtime status reports accepted by the status endpoint",
                     [writer] { return static_cast<double>(writer->counts().coalescer.reports); });
    metrics.AddGauge(
        "trainctl_trainer_status_writes_total",
        "Job writes of what trainers reported (TrainJob status, v1 job annotation; coalesced)",
        [writer] { return static_cast<double>(writer->counts().writes); });
    status_endpoint = std::make_unique<progress::StatusEndpoint>(std::move(hooks));
    status_endpoint->Register(&webhooks->AlsoServe(o.status_port));
    if (trainjobs) trainjobs->SetStatusServer({o.status_url, [&] { return webhooks->ca_pem(); }});
    // Started before the webhooks serve it, stopped after they stopped: nothing accepted is lost.
    manager.Add({"runtime status writer",
                 [&] {
                   status_writer->Start();
                   return Status::Ok();
                 },
                 [&] { status_writer->Stop(); }});
  }
  if (webhooks)
    manager.Add({"webhooks", [&] { return webhooks->Start(); }, [&] { webhooks->Stop(); }});

  manager.Add(
      {"controller",
       [&] {
         std::string scope = controller_options.namespace_.empty() ? "all namespaces"
                                                                   : controller_options.namespace_;
         LogInfo(
             "starting controllers for {} kinds in {} with {} worker(s), API qps {} "
             "burst {}",
             controller_options.kinds.size(), scope, controller_options.threads, o.client.qps,
             o.client.burst);
         Time began = clock.Now();
         controller.Start();
         if (controller.WaitForSync(Duration(120000)))
           LogInfo("{}", SyncSummary(std::chrono::duration_cast<Duration>(clock.Now() - began),
                                     controller.informer_stats()));
         return Status::Ok();
       },
       [&] {
         controller.Stop();
         recorder.Flush(Duration(5000));
       },
       /*leader_only=*/true});
  // Kueue installed after the operator started: its watch starts once its CRDs are served.
  std::thread kueue_poll;
  std::atomic<bool> kueue_poll_stop{false};
  if (!controller_options.kueue)
    manager.Add({"kueue watch",
                 [&] {
                   kueue_poll = std::thread([&] {
                     while (!kueue_poll_stop.load()) {
                       for (int i = 0; i < 300 && !kueue_poll_stop.load(); ++i)
                         std::this_thread::sleep_for(std::chrono::milliseconds(100));
                       if (kueue_poll_stop.load()) return;
                       if (ServesKueue(**client, controller_options.namespace_, /*quiet=*/true)) {
                         LogInfo("Kueue's CRDs are served now: watching Workloads and LocalQueues");
                         controller.kueue()->Start();
                         return;
                       }
                     }
                   });
                   return Status::Ok();
                 },
                 [&] {
                   kueue_poll_stop = true;
                   if (kueue_poll.joinable()) kueue_poll.join();
                 },
                 /*leader_only=*/true});
  if (trainjobs)
    manager.Add({"trainjob controller",
                 [&] {
                   LogInfo(
                       "starting the TrainJob controller (trainer.kubeflow.org/v1alpha1 "
                       "onto jobset.x-k8s.io/v1alpha2)");
                   trainjobs->Start();
                   trainjobs->WaitForSync(Duration(120000));
                   return Status::Ok();
                 },
                 [&] { trainjobs->Stop(); },
                 /*leader_only=*/true});
  return manager.Run(stop);
}

}  // namespace trainctl::op
