// `trainctl operator`: the process around the Controller — flags (named as upstream's,
// docs/operator.md), the API connection with the requested QPS/burst, the metrics endpoint
// (/metrics) and health endpoints (/healthz, /readyz), optional Lease leader election, and a
// clean stop on SIGINT/SIGTERM (workers drain, the lease is released).
//
// RunOperator blocks until stopped and returns the exit status (0 stopped cleanly, 1 runtime
// failure such as a lost lease, 2 invalid flags). Does I/O.
#pragma once

#include <string>
#include <vector>

namespace trainctl::op {

struct OperatorFlags {
  std::string kubeconfig;  // empty: $KUBECONFIG / ~/.kube/config, else in-cluster
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  bool leader_elect = false;
  std::string leader_election_id = "1ca428e5.training-operator.kubeflow.org";
  std::string leader_election_namespace;    // empty: $MY_POD_NAMESPACE, else the config's
  std::vector<std::string> enable_schemes;  // empty: every kind
  std::string namespace_;                   // empty: $KUBEFLOW_NAMESPACE, else all
  int controller_threads = 1;
  int progress_probes_per_minute = 120;  // pod log probes for progress timeouts, all jobs
  // The job history: "sqlite:PATH" (a file on a volume; the leader writes), "" off.
  std::string history;
  // The in-cluster dashboard ("0": off): read-only, each user sees what RBAC lets them read.
  std::string dashboard_bind_address = "0";
  std::string dashboard_user_header;  // a trusted proxy's header naming the user; "" off
  // A job's replica counts alone are written at most once per this many ms (0: at once, and a
  // new job's first status too, otherwise held kPhaseChangeSettle for its pods' first states).
  int status_count_window_ms = 1000;
  double kube_api_qps = 20;
  int kube_api_burst = 30;
  // The events' budget (kube/event_recorder.h): Events written a second and saved up; 0 = a
  // fifth of kube_api_qps (at least 5) and of kube_api_burst (at least 25).
  double event_qps = 0;
  int event_burst = 0;
  std::string gang_scheduler_name;
  std::string pytorch_init_container_image = "alpine:3.10";
  int pytorch_init_container_max_tries = 100;
  // Used when the file exists; a path given explicitly must exist.
  std::string pytorch_init_container_template_file = "/etc/config/initContainer.yaml";
  std::string mpi_kubectl_delivery_image = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest";
  bool mpi_launcher_waits_for_workers = true;
  // Validating admission webhooks: served over TLS when the port is not 0 (manifests/ sets 9443).
  int webhook_server_port = 0;
  std::string webhook_service_name = "trainctl-operator";
  std::string webhook_secret_name = "trainctl-operator-webhook-cert";
  std::string webhook_config_name = "validator.trainctl.kubeflow.org";
  std::string mutating_webhook_config_name = "mutator.trainctl.kubeflow.org";
  std::string webhook_bind_host;  // empty: every address
  // Trainer v2.3's runtime status endpoint, on the webhook certificate (0: off; the manifests
  // use 10443); trainer pods reach it at status_server_url, by default
  // https://<webhook service>.<namespace>.svc:<port>.
  int status_server_port = 0;
  std::string status_server_url;
  std::vector<std::string> webhook_extra_hosts;  // more certificate names/IPs
  // Logging, as upstream's zap flags (log.h).
  bool zap_devel = true;
  std::string zap_encoder;
  std::string zap_log_level;
  std::string zap_stacktrace_level;  // accepted; stack traces are not written
  std::string zap_time_encoding;     // accepted; times are always RFC 3339
};

int RunOperator(const OperatorFlags& flags);

}  // namespace trainctl::op
