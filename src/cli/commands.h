// The trainctl subcommands. Jobs live on this machine unless the global options select the
// cluster backend (then cluster_commands.h does the work). Each returns the process exit status:
// 0 success, 1 failure (job failed, not found, I/O), 2 invalid input, 128+N stopped by signal N.
// Human output goes to stdout, errors to stderr as "error: <message>".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace trainctl::cli {

struct GlobalOptions {
  std::string state_dir;   // empty: local::DefaultStateRoot()
  std::string backend;     // "local", "kubernetes"; empty: $TRAINCTL_BACKEND, else see below
  std::string kubeconfig;  // non-empty: the kubernetes backend with this kubeconfig
  std::string namespace_;  // empty: "default" (local), the context's namespace (kubernetes)
  bool all_namespaces = false;
};

// Prints "error: <message>" on stderr and returns `code`, the exit status to return.
int Fail(const std::string& message, int code);
// The local state folder the options select (--state-dir, else local::DefaultStateRoot()), and
// the namespace they scope to (nullopt: -A, every namespace).
std::string StateRoot(const GlobalOptions& global);
std::optional<std::string> NamespaceFilter(const GlobalOptions& global);

// True when the job commands talk to a cluster: --backend kubernetes, or no --backend and
// either $TRAINCTL_BACKEND=kubernetes or --kubeconfig. kInvalid for an unknown backend name.
StatusOr<bool> UseCluster(const GlobalOptions& global, const std::string& env_backend);

struct RunCommandOptions {
  std::string file;      // "-": read the manifest from stdin
  std::string job_name;  // pick one job of a multi-document file
  std::string workdir;   // relative paths resolve here (default: the manifest's folder; cwd for -)
  bool detach = false;   // return once the job is set up; the runner goes on in the background
  std::string output;    // "" or "json"
  bool replace = false;
  bool quiet = false;  // no replica log lines
  double grace_seconds = 5;
  double drain_seconds = 10;
  bool dry_run = false;    // print what each replica would get; start nothing
  bool gpu_share = false;  // replicas and jobs may share GPUs
  // Stand-ins for cluster objects (local/local_config.h): "NAME=DIR" and env file paths.
  std::vector<std::string> config_maps, secrets, volumes, env_files;
  // process, podman or docker (local/container_runtime.h); unset: the job's annotation, then
  // $TRAINCTL_RUNTIME, then process.
  std::optional<std::string> runtime;
  // --runtimes FILE|DIR: Trainer v2 runtimes a TrainJob may name, over the built-in and
  // installed ones (local/runtimes.h).
  std::optional<std::string> runtimes;
};

int RunCommand(const GlobalOptions& global, const RunCommandOptions& options);
int GetCommand(const GlobalOptions& global, const std::vector<std::string>& args,
               const std::string& output);
// output "json": the data layer's document (jobs/job_source.h, DetailDocument).
int DescribeCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                    const std::string& output);
int LogsCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& replica, bool follow);
// A JSON merge patch of a local job's metadata.labels/annotations (the SDK's update_job).
int PatchCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                 const std::string& patch);
// `delete_workspace`: also remove the PVCs the job's templates name (locally, their folders
// under the state root; on a cluster, the PersistentVolumeClaim objects).
int DeleteCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                  bool delete_workspace);
// The metric series of a job, from its metrics replica's output or, with `replica`, from that
// replica's log (docs/metrics.md).
int MetricsCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                   const std::string& output, const std::string& replica);
int WaitCommand(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& for_condition, const std::string& timeout);

// "90s", "5m", "1h30m", "2.5s" → milliseconds.
std::optional<long long> ParseDurationMs(const std::string& text);

}  // namespace trainctl::cli
