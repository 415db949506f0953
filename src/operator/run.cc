#include "operator/run.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>

#include "kube/config_loader.h"
#include "operator/compose.h"
#include "operator/gang.h"
#include "operator/log.h"
#include "operator/pod_builder.h"
#include "operator/status_env.h"

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
    for (const api::KindInfo& info : api::AllKinds())
      if (info.operator_serves) kinds.push_back(info.kind);
    return kinds;
  }
  for (const std::string& name : names) {
    std::optional<api::Kind> kind = api::KindFromCliName(name);
    if (!kind || !api::Info(*kind).operator_serves)
      return InvalidError("--enable-scheme: scheme " + name + " is not supported yet");
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

// The events' budget from --event-qps/--event-burst, defaulting to a share of the API budget.
StatusOr<kube::RecorderBudget> EventBudget(const OperatorFlags& flags) {
  if (flags.event_qps < 0)
    return InvalidError("--event-qps must not be negative, got " + std::to_string(flags.event_qps));
  if (flags.event_qps > 0 && flags.event_qps < 0.1)
    return InvalidError("--event-qps must be 0 (a share of --kube-api-qps) or at least 0.1, got " +
                        std::to_string(flags.event_qps));
  if (flags.event_burst < 0)
    return InvalidError("--event-burst must not be negative, got " +
                        std::to_string(flags.event_burst));
  kube::RecorderBudget budget;
  // An unthrottled client (--kube-api-qps 0) leaves the events unthrottled too.
  budget.qps = flags.event_qps > 0      ? flags.event_qps
               : flags.kube_api_qps > 0 ? std::max(5.0, flags.kube_api_qps / 5)
                                        : 0;
  budget.burst = flags.event_burst > 0 ? flags.event_burst : std::max(25, flags.kube_api_burst / 5);
  return budget;
}

// Flags (and the environment upstream's Deployment sets) → what the operator runs with. Reads
// the kubeconfig and the init-container template file; every error is a start-up error.
StatusOr<OperatorOptions> ResolveOptions(const OperatorFlags& flags) {
  OperatorOptions o;
  StatusOr<std::vector<api::Kind>> kinds = Schemes(flags.enable_schemes);
  if (!kinds.ok()) return kinds.status();
  if (flags.controller_threads < 1)
    return InvalidError("--controller-threads must be at least 1, got " +
                        std::to_string(flags.controller_threads));
  StatusOr<kube::RecorderBudget> events = EventBudget(flags);
  if (!events.ok()) return events.status();
  o.events = *events;
  StatusOr<kube::RestConfig> config = kube::LoadClientConfig(flags.kubeconfig);
  if (!config.ok())
    return InvalidError("cannot load the cluster configuration: " + config.status().message());
  o.config = std::move(config).value();
  o.client.qps = flags.kube_api_qps;
  o.client.burst = flags.kube_api_burst;

  ControllerOptions& c = o.controller;
  c.namespace_ = flags.namespace_.empty() ? Env("KUBEFLOW_NAMESPACE") : flags.namespace_;
  c.kinds = std::move(kinds).value();
  c.threads = flags.controller_threads;
  if (flags.progress_probes_per_minute < 0)
    return InvalidError("--progress-probes-per-minute must not be negative, got " +
                        std::to_string(flags.progress_probes_per_minute));
  c.progress_probes_per_minute = flags.progress_probes_per_minute;
  if (!flags.history.empty()) {
    if (flags.history.rfind("sqlite:", 0) != 0 || flags.history.size() == 7)
      return InvalidError("--history \"" + flags.history +
                          "\": expected sqlite:PATH (a file on a volume of this pod)");
    o.history_path = flags.history.substr(7);
  }
  o.dashboard_bind_address = flags.dashboard_bind_address;
  o.dashboard_user_header = flags.dashboard_user_header;
  if (flags.status_count_window_ms < 0 || flags.status_count_window_ms > 60000)
    return InvalidError("--status-count-window-ms must be between 0 and 60000, got " +
                        std::to_string(flags.status_count_window_ms));
  c.status_count_window = Duration(flags.status_count_window_ms);
  // Holding nothing (0) holds a new job's first status neither.
  c.first_status_settle = flags.status_count_window_ms > 0 ? kPhaseChangeSettle : Duration(0);
  c.pod_settings.gang = GangFromFlag(flags.gang_scheduler_name);
  c.pod_settings.pytorch_init_image = flags.pytorch_init_container_image;
  c.pod_settings.pytorch_init_max_tries = flags.pytorch_init_container_max_tries;
  c.pod_settings.mpi_kubectl_delivery_image = flags.mpi_kubectl_delivery_image;
  c.children.mpi_launcher_waits_for_workers = flags.mpi_launcher_waits_for_workers;
  TRAINCTL_RETURN_IF_ERROR(LoadInitContainerTemplate(flags, &c.pod_settings));
  c.cluster_domain = Env("CUSTOM_CLUSTER_DOMAIN");
  o.gang_scheduler_name = flags.gang_scheduler_name;

  o.metrics_bind_address = flags.metrics_bind_address;
  o.health_probe_bind_address = flags.health_probe_bind_address;
  o.webhook_port = flags.webhook_server_port;
  o.webhook_bind_host = flags.webhook_bind_host;
  admission::WebhookCertOptions& wo = o.webhook_certs;
  wo.namespace_ = Env("MY_POD_NAMESPACE");
  if (wo.namespace_.empty()) wo.namespace_ = flags.leader_election_namespace;
  if (wo.namespace_.empty()) wo.namespace_ = o.config.namespace_name;
  wo.service_name = flags.webhook_service_name;
  wo.secret_name = flags.webhook_secret_name;
  wo.config_name = flags.webhook_config_name;
  wo.mutating_config_name = flags.mutating_webhook_config_name;
  wo.extra_hosts = flags.webhook_extra_hosts;
  if (flags.status_server_port > 0 && flags.webhook_server_port <= 0)
    return InvalidError(
        "--status-server-port needs --webhook-server-port: the runtime status endpoint is served "
        "on the webhook's certificate");
  o.status_port = flags.status_server_port;
  o.status_url = flags.status_server_url.empty()
                     ? TrainerStatusServerUrl(wo.service_name, wo.namespace_, o.status_port)
                     : flags.status_server_url;
  // MPIJob's CRD serves v1 and v2beta1 through the conversion webhook served with the others.
  if (std::find(c.kinds.begin(), c.kinds.end(), api::Kind::kMPIJob) != c.kinds.end())
    wo.conversion_crds.push_back(std::string(api::Info(api::Kind::kMPIJob).plural) + "." +
                                 api::kGroup);

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  o.host = host;
  o.leader_elect = flags.leader_elect;
  kube::LeaderElectionConfig& lec = o.leader_election;
  lec.namespace_ = flags.leader_election_namespace;
  if (lec.namespace_.empty()) lec.namespace_ = Env("MY_POD_NAMESPACE");
  if (lec.namespace_.empty()) lec.namespace_ = o.config.namespace_name;
  lec.name = flags.leader_election_id;
  lec.identity = o.host + "_" + std::to_string(getpid());
  return o;
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
  StatusOr<OperatorOptions> options = ResolveOptions(flags);
  if (!options.ok()) {
    LogError("{}", options.status().message());
    return 2;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  return RunComposedOperator(*options, &g_stop);
}

}  // namespace trainctl::op
