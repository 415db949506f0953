#include "operator/run.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <thread>

#include "kube/config_loader.h"
#include "kube/connect.h"
#include "kube/leader_election.h"
#include "operator/controller.h"
#include "operator/http_server.h"
#include "operator/log.h"
#include "operator/admission.h"
#include "operator/webhook_certs.h"
#include "operator/webhook_server.h"

namespace trainctl::op {
namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

StatusOr<std::vector<api::Kind>> Schemes(const std::vector<std::string>& names) {
  std::vector<api::Kind> kinds;
  if (names.empty()) {
    for (const api::KindInfo& info : api::AllKinds()) kinds.push_back(info.kind);
    return kinds;
  }
  for (const std::string& name : names) {
    std::optional<api::Kind> kind = api::KindFromCliName(name);
    if (!kind) return InvalidError("--enable-scheme: scheme " + name + " is not supported yet");
    if (std::find(kinds.begin(), kinds.end(), *kind) == kinds.end()) kinds.push_back(*kind);
  }
  return kinds;
}

// Reads --pytorch-init-container-template-file once, as upstream does: the default path may
// be absent (the built-in container is used); the template is checked here so a bad one stops
// the operator at start instead of failing every Worker pod.
Status LoadInitContainerTemplate(const OperatorFlags& flags, PodSettings* settings) {
  const std::string& path = flags.pytorch_init_container_template_file;
  if (path.empty()) return Status::Ok();
  std::ifstream in(path);
  if (!in) {
    if (path == OperatorFlags().pytorch_init_container_template_file) return Status::Ok();
    return InvalidError("--pytorch-init-container-template-file: cannot read " + path);
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<nlohmann::json> check = RenderInitContainerTemplate(
      text, path, "job-master-0", settings->pytorch_init_image, settings->pytorch_init_max_tries);
  if (!check.ok())
    return InvalidError("--pytorch-init-container-template-file: " + check.status().message());
  settings->pytorch_init_template = std::move(text);
  settings->pytorch_init_template_source = path;
  LogInfo("PyTorch init containers from the template {}", path);
  return Status::Ok();
}

// VmHWM (peak resident set) and VmRSS from /proc/self/status, in bytes.
double ProcStatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atof(line.c_str() + field.size() + 1) * 1024;
  }
  return 0;
}

double CpuSeconds() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::atof(f.c_str());
    if (i == 15) {
      stime = std::atof(f.c_str());
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int RunOperator(const OperatorFlags& flags) {
  StatusOr<LogOptions> log_options =
      ParseLogOptions(flags.zap_devel, flags.zap_encoder, flags.zap_log_level);
  if (!log_options.ok()) {
    LogError("{}", log_options.status().message());
    return 2;
  }
  SetLogOptions(*log_options);
  StatusOr<std::vector<api::Kind>> kinds = Schemes(flags.enable_schemes);
  if (!kinds.ok()) {
    LogError("{}", kinds.status().message());
    return 2;
  }
  if (flags.controller_threads < 1) {
    LogError("--controller-threads must be at least 1, got {}", flags.controller_threads);
    return 2;
  }
  StatusOr<kube::RestConfig> config = kube::LoadClientConfig(flags.kubeconfig);
  if (!config.ok()) {
    LogError("cannot load the cluster configuration: {}", config.status().message());
    return 2;
  }
  RealClock clock;
  kube::ClientOptions client_options;
  client_options.qps = flags.kube_api_qps;
  client_options.burst = flags.kube_api_burst;
  StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(*config, &clock, client_options);
  if (!client.ok()) {
    LogError("cannot connect to {}: {}", config->server, client.status().message());
    return 2;
  }

  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);

  Metrics metrics;
  kube::CorrelatorOptions events;
  events.component = "training-operator";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  events.host = host;
  // Events go through their own client (and rate limiter), as controller-runtime's recorder
  // does, so a burst of events never delays the pods and services of a job.
  StatusOr<std::unique_ptr<kube::Client>> event_client =
      kube::Connect(*config, &clock, client_options);
  if (!event_client.ok()) {
    LogError("cannot connect to {}: {}", config->server, event_client.status().message());
    return 2;
  }
  kube::EventRecorder recorder(event_client->get(), &clock, events);

  ControllerOptions options;
  options.namespace_ = flags.namespace_.empty() ? Env("KUBEFLOW_NAMESPACE") : flags.namespace_;
  // A kind whose CRD is not installed is skipped with a warning (its informer would otherwise
  // retry forever and keep the operator unready); any other error keeps the kind.
  for (api::Kind kind : *kinds) {
    kube::ListOptions probe;
    probe.limit = 1;
    StatusOr<nlohmann::json> list = (*client)->List(
        {api::kGroup, "v1", api::Info(kind).plural, true}, options.namespace_, probe);
    if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
      LogError("{}.{} is not served (CRD not installed?): {} jobs are not reconciled",
               api::Info(kind).plural, api::kGroup, api::Info(kind).name);
      continue;
    }
    options.kinds.push_back(kind);
  }
  if (options.kinds.empty()) {
    LogError("none of the enabled kinds is served by {}; install the CRDs from manifests/crds",
             config->server);
    return 2;
  }
  options.pod_settings.gang = GangFromFlag(flags.gang_scheduler_name);
  if (UsesPodGroups(options.pod_settings.gang)) {
    kube::ListOptions probe;
    probe.limit = 1;
    StatusOr<nlohmann::json> list = (*client)->List(
        PodGroupResource(options.pod_settings.gang.kind), options.namespace_, probe);
    if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
      LogError("--gang-scheduler-name {}: {} is not served; crd might be missing, please install "
               "crd",
               flags.gang_scheduler_name, PodGroupCrdName(options.pod_settings.gang.kind));
      return 2;
    }
  }
  options.threads = flags.controller_threads;
  options.pod_settings.pytorch_init_image = flags.pytorch_init_container_image;
  options.pod_settings.pytorch_init_max_tries = flags.pytorch_init_container_max_tries;
  options.pod_settings.mpi_kubectl_delivery_image = flags.mpi_kubectl_delivery_image;
  options.children.mpi_launcher_waits_for_workers = flags.mpi_launcher_waits_for_workers;
  if (Status st = LoadInitContainerTemplate(flags, &options.pod_settings); !st.ok()) {
    LogError("{}", st.message());
    return 2;
  }
  options.cluster_domain = Env("CUSTOM_CLUSTER_DOMAIN");
  Controller controller(client->get(), &clock, options, &metrics, &recorder);

  metrics.AddGauge("workqueue_depth", "Keys ready to be reconciled",
                   [&] { return static_cast<double>(controller.queue().stats().depth); });
  metrics.AddGauge("process_resident_memory_bytes", "Resident memory size in bytes",
                   [] { return ProcStatusBytes("VmRSS"); });
  metrics.AddGauge("trainctl_process_peak_resident_memory_bytes", "Peak resident memory in bytes",
                   [] { return ProcStatusBytes("VmHWM"); });
  metrics.AddGauge("process_cpu_seconds_total", "User and system CPU time spent in seconds",
                   [] { return CpuSeconds(); });
  metrics.AddGauge("trainctl_cached_pods", "Pods in the operator's cache",
                   [&] { return static_cast<double>(controller.cached_pods()); });

  HttpServer metrics_server, health_server;
  metrics_server.Handle("/metrics", [&] {
    return HttpReply{200, metrics.Render(), "text/plain; version=0.0.4; charset=utf-8"};
  });
  std::atomic<bool> leading{!flags.leader_elect};
  health_server.Handle("/healthz", [] { return HttpReply{200, "ok\n"}; });
  health_server.Handle("/readyz", [&] {
    // A standby replica is ready (it serves nothing but can take over); a leader once synced.
    if (leading && !controller.Synced()) return HttpReply{503, "informers not synced\n"};
    return HttpReply{200, "ok\n"};
  });
  for (auto [server, address, what] :
       {std::tuple{&metrics_server, flags.metrics_bind_address, "metrics"},
        std::tuple{&health_server, flags.health_probe_bind_address, "health probe"}}) {
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
  if (flags.webhook_server_port > 0) {
    WebhookCertOptions wo;
    wo.namespace_ = Env("MY_POD_NAMESPACE");
    if (wo.namespace_.empty()) wo.namespace_ = flags.leader_election_namespace;
    if (wo.namespace_.empty()) wo.namespace_ = config->namespace_name;
    wo.service_name = flags.webhook_service_name;
    wo.secret_name = flags.webhook_secret_name;
    wo.config_name = flags.webhook_config_name;
    wo.extra_hosts = flags.webhook_extra_hosts;
    webhook_certs = std::make_unique<WebhookCerts>(client->get(), &clock, wo);
    StatusOr<CertBundle> certs = webhook_certs->Ensure();
    if (certs.ok()) {
      Status st = webhook_server.SetCertificate(certs->cert_pem, certs->key_pem);
      if (!st.ok()) certs = st;
    }
    if (!certs.ok()) {
      LogError("webhook certificate (Secret {}/{}): {}", wo.namespace_, wo.secret_name,
               certs.status().message());
      return 2;
    }
    for (const api::KindInfo& k : api::AllKinds()) {
      api::Kind kind = k.kind;
      webhook_server.Handle(WebhookPath(kind), [kind](const std::string& body) {
        return ReviewAdmission(kind, body).dump();
      });
    }
    std::string address = flags.webhook_bind_host + ":" + std::to_string(flags.webhook_server_port);
    if (Status st = webhook_server.Start(address); !st.ok()) {
      LogError("webhook server: {}", st.message());
      return 2;
    }
    LogInfo("webhook server listening on port {} (certificate in Secret {}/{})",
            webhook_server.port(), wo.namespace_, wo.secret_name);
    std::string ca = certs->ca_cert_pem;
    bool injected = false;
    if (Status st = webhook_certs->InjectCaBundle(ca); !st.ok()) {
      LogError("cannot inject the CA into ValidatingWebhookConfiguration {} (retrying): {}",
               wo.config_name, st.message());
    } else {
      injected = true;
      LogInfo("CA bundle injected into ValidatingWebhookConfiguration {}", wo.config_name);
    }
    rotation = std::thread([&, ca, injected]() mutable {
      // Renew well before expiry (Ensure replaces a certificate with < 30 days left); keep
      // trying to inject the CA until the configuration exists.
      for (int seconds = 0; !g_stop; ++seconds) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        if (!injected && seconds % 5 == 4 && webhook_certs->InjectCaBundle(ca).ok()) {
          injected = true;
          LogInfo("CA bundle injected into ValidatingWebhookConfiguration {}", wo.config_name);
        }
        if (seconds % 3600 != 3599) continue;
        bool renewed = false;
        StatusOr<CertBundle> next = webhook_certs->Ensure(&renewed);
        if (!next.ok()) {
          LogError("webhook certificate renewal: {}", next.status().message());
          continue;
        }
        if (!renewed) continue;
        Status st = webhook_server.SetCertificate(next->cert_pem, next->key_pem);
        ca = next->ca_cert_pem;
        if (st.ok()) st = webhook_certs->InjectCaBundle(ca);
        injected = st.ok();
        if (st.ok()) LogInfo("webhook certificate renewed");
        else LogError("webhook certificate renewal: {}", st.message());
      }
    });
  }

  std::unique_ptr<kube::LeaderElector> elector;
  std::thread election;
  std::atomic<bool> lost{false};
  if (flags.leader_elect) {
    kube::LeaderElectionConfig lec;
    lec.namespace_ = flags.leader_election_namespace;
    if (lec.namespace_.empty()) lec.namespace_ = Env("MY_POD_NAMESPACE");
    if (lec.namespace_.empty()) lec.namespace_ = config->namespace_name;
    lec.name = flags.leader_election_id;
    lec.identity = std::string(host) + "_" + std::to_string(getpid());
    kube::LeaderElector::Callbacks callbacks;
    callbacks.on_started_leading = [&] {
      LogInfo("became leader ({}/{})", lec.namespace_, lec.name);
      leading = true;
    };
    callbacks.on_stopped_leading = [&] {
      if (!g_stop) lost = true;
      g_stop = true;
    };
    callbacks.on_new_leader = [](const std::string& id) { LogInfo("the leader is {}", id); };
    elector = std::make_unique<kube::LeaderElector>(client->get(), &clock, lec, callbacks);
    election = std::thread([&] { elector->Run(); });
    LogInfo("waiting to lead {}/{} as {}", lec.namespace_, lec.name, lec.identity);
    while (!leading && !g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!g_stop) {
    std::string scope = options.namespace_.empty() ? "all namespaces" : options.namespace_;
    LogInfo("starting controllers for {} kinds in {} with {} worker(s), API qps {} burst {}",
            options.kinds.size(), scope, options.threads, flags.kube_api_qps, flags.kube_api_burst);
    controller.Start();
    if (controller.WaitForSync(Duration(120000))) LogInfo("caches synced");
  }
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  LogInfo("stopping");
  controller.Stop();
  recorder.Flush(Duration(5000));
  if (elector) {
    elector->Stop();
    if (election.joinable()) election.join();
  }
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
