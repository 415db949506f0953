// trainctl: command-line entry point. Parses flags (CLI11, kept to this file) and dispatches
// to the subcommands in commands.h.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/claims_command.h"
#include "cli/commands.h"
#include "cli/history_commands.h"
#include "cli/runtimes_command.h"
#include "cli/ui_command.h"
#include "common/malloc_policy.h"
#include "local/supervisor.h"
#include "operator/run.h"

int main(int argc, char** argv) {
  // Large buffers stay out of the heap arenas (common/malloc_policy.h); a sanitizer's malloc
  // refuses, which changes nothing else.
  if (std::optional<size_t> threshold = trainctl::MmapThresholdToSet(
          std::getenv("MALLOC_MMAP_THRESHOLD_"), std::getenv("GLIBC_TUNABLES")))
    trainctl::SetMmapThreshold(*threshold);
  // The local runner's per-replica supervisor re-executes this binary; it takes no flags.
  if (argc > 1 && std::strcmp(argv[1], trainctl::local::kSuperviseCommand) == 0)
    return trainctl::local::SuperviseMain(argc, argv);
  using trainctl::cli::GlobalOptions;
  CLI::App app{
      "trainctl: Kubeflow kubeflow.org/v1 training jobs on this machine and on Kubernetes"};
  app.require_subcommand(1);
  app.fallthrough();
  app.set_version_flag("--version", "trainctl 0.1.0");
  GlobalOptions global;
  app.add_option("--state-dir", global.state_dir,
                 "Folder for local job state and logs (default $TRAINCTL_STATE_DIR or "
                 "~/.local/state/trainctl)");
  app.add_option("--backend", global.backend,
                 "Where jobs live for get/describe/logs/delete/wait: local (default) or kubernetes "
                 "(default $TRAINCTL_BACKEND; --kubeconfig implies kubernetes)")
      ->check(CLI::IsMember({"local", "kubernetes"}));
  app.add_option(
      "--kubeconfig", global.kubeconfig,
      "Use the cluster in this kubeconfig (else $KUBECONFIG, in-cluster, ~/.kube/config)");
  app.add_option("-n,--namespace", global.namespace_,
                 "Namespace (default: default; on a cluster, the kubeconfig context's)");
  app.add_flag("-A,--all-namespaces", global.all_namespaces, "List across namespaces");

  trainctl::cli::RunCommandOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Run a job manifest on this machine until it ends");
  run_cmd->add_option("file", run.file, "Manifest (YAML or JSON); - reads it from stdin")
      ->required();
  run_cmd->add_flag("-d,--detach", run.detach,
                    "Check and set up the job, then return; the runner goes on in the background");
  run_cmd->add_option("--workdir", run.workdir,
                      "Folder where replicas start and relative paths resolve (default: the "
                      "manifest's folder; the current folder for -)");
  run_cmd->add_option("--job", run.job_name, "Job to run when the file holds several");
  run_cmd->add_option("-o,--output", run.output, "json: print the final job object on stdout")
      ->check(CLI::IsMember({"", "json"}));
  run_cmd->add_flag("--replace", run.replace, "Replace a finished job of the same name");
  run_cmd->add_flag("--dry-run", run.dry_run,
                    "Print each replica's command, folder, env and devices; start nothing");
  run_cmd->add_flag("--gpu-share", run.gpu_share,
                    "Let replicas (and other jobs) share GPUs instead of each getting its own");
  run_cmd->add_option("--configmap", run.config_maps,
                      "NAME=FOLDER: a ConfigMap the manifest uses, a file per key (repeatable)");
  run_cmd->add_option("--secret", run.secrets,
                      "NAME=FOLDER: a Secret the manifest uses, a file per key (repeatable)");
  run_cmd->add_option("--volume", run.volumes,
                      "NAME=FOLDER: use FOLDER for the manifest's volume NAME (repeatable)");
  run_cmd->add_option("--env-file", run.env_files,
                      "KEY=VALUE lines for every replica, after this shell's env (repeatable)");
  run_cmd->add_option("--runtime", run.runtime,
                      "process (default), podman or docker: run each replica as a container of "
                      "its image (default $TRAINCTL_RUNTIME, or the job's trainctl.dev/runtime "
                      "annotation)");
  run_cmd->add_option("--runtimes", run.runtimes,
                      "FILE or folder of Trainer v2 runtimes a TrainJob may name, over the "
                      "built-in and installed ones (trainctl runtimes)");
  run_cmd->add_flag("-q,--quiet", run.quiet, "Do not print replica log lines");
  run_cmd
      ->add_option("--grace-period", run.grace_seconds,
                   "Seconds between SIGTERM and SIGKILL when stopping replicas")
      ->check(CLI::NonNegativeNumber);
  run_cmd
      ->add_option("--drain", run.drain_seconds,
                   "Seconds to let the other replicas finish after the job succeeded")
      ->check(CLI::NonNegativeNumber);

  std::vector<std::string> args;
  std::string output, replica, for_condition = "condition=Succeeded", timeout = "30m";
  bool follow = false;
  CLI::App* get_cmd = app.add_subcommand("get", "List jobs: get [KIND] [NAME]");
  get_cmd->add_option("args", args, "KIND and/or NAME");
  get_cmd->add_option("-o,--output", output, "json | name | wide (adds REASON: why)");
  CLI::App* describe_cmd =
      app.add_subcommand("describe", "Show a job in detail: describe [KIND] NAME");
  describe_cmd->add_option("args", args)->required();
  describe_cmd->add_option("-o,--output", output, "json: job, replicas, events, first failure");
  trainctl::cli::RuntimesOptions runtimes_options;
  CLI::App* runtimes_cmd = app.add_subcommand(
      "runtimes",
      "Trainer v2 runtimes a TrainJob may name on this machine: runtimes [list|install FILE|DIR]");
  runtimes_cmd->add_option("action", runtimes_options.action, "list (default) or install");
  runtimes_cmd->add_option("args", runtimes_options.args, "install: a runtimes file or folder");
  runtimes_cmd->add_option("-o,--output", runtimes_options.output, "json")
      ->check(CLI::IsMember({"", "json"}));
  trainctl::cli::ClaimsOptions claims_options;
  CLI::App* claims_cmd = app.add_subcommand(
      "claims",
      "Folders standing in for PersistentVolumeClaims on this machine: claims [list|delete NAME]");
  claims_cmd->add_option("action", claims_options.action, "list (default) or delete");
  claims_cmd->add_option("args", claims_options.args, "delete: the claim's name");
  claims_cmd->add_option("-o,--output", claims_options.output, "json")
      ->check(CLI::IsMember({"", "json"}));
  trainctl::cli::HistoryOptions history_options;
  CLI::App* history_cmd = app.add_subcommand(
      "history",
      "Finished jobs, kept after delete and TTL: history [list [NAME]|show NAME|search TEXT]");
  history_cmd->add_option("action", history_options.action, "list (default), show or search");
  history_cmd->add_option("args", history_options.args,
                          "a job name (list, show), uid, or text (search)");
  history_cmd->add_option("-o,--output", history_options.output, "json");
  history_cmd->add_flag("--logs", history_options.logs, "show: print every replica's kept log");
  history_cmd->add_option("--limit", history_options.limit, "list, search: at most this many rows");
  history_cmd->add_option("--file", history_options.file,
                          "Read this history file (the operator's --history) instead");
  history_cmd->add_option("--dashboard", history_options.dashboard,
                          "Read the operator's history at this address (e.g. "
                          "http://127.0.0.1:8082 after kubectl port-forward)");
  history_cmd->add_option("--dashboard-service", history_options.dashboard_service,
                          "NAMESPACE/NAME:PORT of the operator's dashboard Service (default "
                          "trainctl-system/trainctl-dashboard:dashboard)");
  history_cmd->add_option("--token", history_options.token,
                          "The Kubernetes token the operator checks (default $TRAINCTL_TOKEN, "
                          "else the kubeconfig's)");
  CLI::App* metrics_cmd = app.add_subcommand(
      "metrics", "Show the metric series a job printed (step=1 loss=0.5 …): metrics [KIND] NAME");
  metrics_cmd->add_option("args", args)->required();
  metrics_cmd->add_option("-o,--output", output, "json: every point of every series");
  metrics_cmd->add_option("-r,--replica", replica,
                          "Another rank's curves, read from its log, e.g. worker-1");
  CLI::App* logs_cmd = app.add_subcommand("logs", "Print replica logs: logs [KIND] NAME");
  logs_cmd->add_option("args", args)->required();
  logs_cmd->add_option("-r,--replica", replica, "Only this replica, e.g. worker-0");
  logs_cmd->add_flag("-f,--follow", follow, "Keep printing while the job runs");
  std::string patch;
  CLI::App* patch_cmd = app.add_subcommand(
      "patch", "Change a local job's labels/annotations: patch [KIND] NAME -p JSON");
  patch_cmd->add_option("args", args)->required();
  patch_cmd->add_option("-p,--patch", patch, "JSON merge patch of metadata.labels/annotations")
      ->required();
  CLI::App* delete_cmd = app.add_subcommand("delete", "Stop and remove a job: delete [KIND] NAME");
  delete_cmd->add_option("args", args)->required();
  bool delete_workspace = false;
  delete_cmd->add_flag("--delete-workspace", delete_workspace,
                       "Also delete the PVCs the job mounts (locally, their folders): the "
                       "workspace train() made");
  CLI::App* wait_cmd = app.add_subcommand("wait", "Wait for a job condition: wait [KIND] NAME");
  wait_cmd->add_option("args", args)->required();
  wait_cmd->add_option("--for", for_condition,
                       "condition=Succeeded (default), Running, Failed, ...");
  wait_cmd->add_option("--timeout", timeout, "e.g. 30s, 10m (default 30m)");

  trainctl::op::OperatorFlags op;
  trainctl::cli::UiOptions ui_options;
  CLI::App* ui_cmd = app.add_subcommand(
      "ui", "Serve the dashboard: jobs, why, logs, loss curves and history (prints its address)");
  ui_cmd->add_option("--listen", ui_options.listen,
                     "HOST:PORT to serve on (default 127.0.0.1:0: a free port on loopback)");
  ui_cmd->add_option("--sweep-every", ui_options.sweep_every,
                     "Record lost runners and finished jobs, remove jobs past their TTL this "
                     "often (default 2s; 0: never, only read)");
  CLI::App* operator_cmd = app.add_subcommand(
      "operator", "Run the Kubernetes operator for kubeflow.org/v1 jobs (flags as upstream's)");
  operator_cmd->add_option("--metrics-bind-address", op.metrics_bind_address,
                           "Metrics endpoint address, \"0\" to disable (default :8080)");
  operator_cmd->add_option("--health-probe-bind-address", op.health_probe_bind_address,
                           "/healthz and /readyz address (default :8081)");
  operator_cmd->add_flag("--leader-elect", op.leader_elect,
                         "Elect a leader with a Lease so only one replica works");
  operator_cmd->add_option("--leader-election-id", op.leader_election_id, "Lease name");
  operator_cmd->add_option("--leader-election-namespace", op.leader_election_namespace,
                           "Lease namespace (default $MY_POD_NAMESPACE)");
  operator_cmd->add_option("--enable-scheme", op.enable_schemes,
                           "Kinds to reconcile, repeatable (default: all): pytorchjob, tfjob, ...");
  operator_cmd->add_option("--controller-threads", op.controller_threads,
                           "Concurrent reconciles (default 1)");
  operator_cmd->add_option("--history", op.history,
                           "Keep finished jobs' records (why, first failure, log tails, "
                           "metrics) after TTL and deletion: sqlite:PATH");
  operator_cmd->add_option("--dashboard-bind-address", op.dashboard_bind_address,
                           "Serve the read-only dashboard here (\"0\": off); users present a "
                           "bearer token (TokenReview) and see what RBAC lets them read");
  operator_cmd->add_option("--dashboard-user-header", op.dashboard_user_header,
                           "Trust this header for the user's name (only behind that proxy)");
  operator_cmd->add_option("--progress-probes-per-minute", op.progress_probes_per_minute,
                           "Pod log probes for jobs with a progress timeout, all jobs together "
                           "(default 120; 0 = no limit)");
  operator_cmd->add_option("--status-count-window-ms", op.status_count_window_ms,
                           "Write a job's replica counts alone at most once per this many ms for "
                           "every 100 replicas (at most 60 s); while its replicas are not all "
                           "running for one reason, the counts and that ReplicasReady reason's "
                           "details 30 times this (at most 60 s), or as long as the job had "
                           "waited (at most 120 s); a new job's first status "
                           "(Created) 1 s, to go out with its pods' first states; other "
                           "condition changes are never held (default 1000; 0 = every change "
                           "at once)");
  operator_cmd->add_option("--kube-api-qps", op.kube_api_qps,
                           "Client QPS for jobs, pods and services (default 20); events have "
                           "a budget of their own (--event-qps)");
  operator_cmd->add_option("--kube-api-burst", op.kube_api_burst, "Client burst (default 30)");
  operator_cmd->add_option("--event-qps", op.event_qps,
                           "Events written per second at most; over it, events of the same "
                           "reason for the same job are folded into one (default 0 = a fifth "
                           "of --kube-api-qps, at least 5)");
  operator_cmd->add_option("--event-burst", op.event_burst,
                           "Events saved up for a burst (default 0 = a fifth of "
                           "--kube-api-burst, at least 25)");
  operator_cmd->add_option("--gang-scheduler-name", op.gang_scheduler_name,
                           "volcano or a scheduler-plugins scheduler name");
  operator_cmd->add_option("--pytorch-init-container-image", op.pytorch_init_container_image);
  operator_cmd->add_option("--pytorch-init-container-max-tries",
                           op.pytorch_init_container_max_tries);
  operator_cmd->add_option(
      "--pytorch-init-container-template-file", op.pytorch_init_container_template_file,
      "YAML template of the Worker init containers ({{.MasterAddr}}, {{.InitContainerImage}}, "
      "{{.MaxTries}}); default /etc/config/initContainer.yaml when it exists");
  operator_cmd->add_option("--mpi-kubectl-delivery-image", op.mpi_kubectl_delivery_image,
                           "Image of the MPI launcher's kubectl-delivery init container");
  operator_cmd->add_flag("--mpi-launcher-waits-for-workers", op.mpi_launcher_waits_for_workers,
                         "Create an MPIJob's launcher only once its workers are Running "
                         "(default true; =false creates it at once, as upstream)");
  operator_cmd->add_option("--webhook-server-port", op.webhook_server_port,
                           "Serve the validating webhooks over TLS on this port (0: off; the "
                           "manifests use 9443)");
  operator_cmd->add_option(
      "--status-server-port", op.status_server_port,
      "Serve Kubeflow Trainer v2.3's runtime status endpoint over TLS on this "
      "port, with the webhook's certificate (0: off; the manifests use 10443)");
  operator_cmd->add_option("--status-server-url", op.status_server_url,
                           "Where trainer pods reach that endpoint (default: https://<webhook "
                           "service>.<namespace>.svc:<port>)");
  operator_cmd->add_option("--webhook-service-name", op.webhook_service_name,
                           "Service in front of the webhooks (certificate DNS names)");
  operator_cmd->add_option("--webhook-secret-name", op.webhook_secret_name,
                           "Secret holding the webhook CA and serving certificate");
  operator_cmd->add_option("--webhook-config-name", op.webhook_config_name,
                           "ValidatingWebhookConfiguration that gets the CA bundle");
  operator_cmd->add_option("--mutating-webhook-config-name", op.mutating_webhook_config_name,
                           "MutatingWebhookConfiguration that gets the CA bundle, when it exists "
                           "(Trainer v2's TrainJob defaulter)");
  operator_cmd->add_option("--webhook-bind-host", op.webhook_bind_host,
                           "Address to serve the webhooks on (default: all)");
  operator_cmd->add_option("--webhook-host", op.webhook_extra_hosts,
                           "Extra certificate name or IP, repeatable (e.g. 127.0.0.1)");
  operator_cmd->add_flag("--zap-devel", op.zap_devel,
                         "Development logging: console lines, debug level (default true; "
                         "--zap-devel=false for JSON lines at info level)");
  operator_cmd->add_option("--zap-encoder", op.zap_encoder, "json or console");
  operator_cmd->add_option("--zap-log-level", op.zap_log_level,
                           "debug, info, warn, error, or a verbosity number");
  operator_cmd->add_option("--zap-stacktrace-level", op.zap_stacktrace_level,
                           "Accepted for compatibility; no stack traces are written");
  operator_cmd->add_option("--zap-time-encoding", op.zap_time_encoding,
                           "Accepted for compatibility; times are RFC 3339");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  auto dispatch = [&]() -> int {
    using namespace trainctl::cli;
    if (*run_cmd) return RunCommand(global, run);
    if (*operator_cmd) {
      op.kubeconfig = global.kubeconfig;
      op.namespace_ = global.namespace_;
      return trainctl::op::RunOperator(op);
    }
    if (*get_cmd) return GetCommand(global, args, output);
    if (*describe_cmd) return DescribeCommand(global, args, output);
    if (*logs_cmd) return LogsCommand(global, args, replica, follow);
    if (*metrics_cmd) return MetricsCommand(global, args, output, replica);
    if (*history_cmd) return trainctl::cli::HistoryCommand(global, history_options);
    if (*claims_cmd) return trainctl::cli::ClaimsCommand(global, claims_options);
    if (*runtimes_cmd) return trainctl::cli::RuntimesCommand(global, runtimes_options);
    if (*ui_cmd) return trainctl::cli::UiCommand(global, ui_options);
    if (*patch_cmd) return PatchCommand(global, args, patch);
    if (*delete_cmd) return DeleteCommand(global, args, delete_workspace);
    if (*wait_cmd) return WaitCommand(global, args, for_condition, timeout);
    return 2;
  };
  try {
    return dispatch();
  } catch (const std::exception& e) {  // no exception leaves the CLI as a crash
    std::cerr << "trainctl: internal error: " << e.what() << "\n";
    return 1;
  }
}
