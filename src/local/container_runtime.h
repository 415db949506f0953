// Container runtimes for `trainctl run --runtime podman|docker`: which runtime a run uses, what
// pre-flight learnt about it, and the exact command lines the runner starts — the pure half
// (local/runtime_probe.h runs the runtime).
//
// Each replica's main container and init containers run as `<runtime> run --rm` of the
// container's image, attached (its output is the replica's log; SIGTERM to the client reaches
// the container through the runtime's signal proxy), on the host's network, so the framework
// env points at 127.0.0.1 and the replica's ports exactly as in process mode. Env values reach
// the runtime through its own environment (`-e NAME` on the command line, never the value), so
// a Secret's value is not visible in `ps` or `--dry-run`. Every container carries the labels
// kLabelRunnerPid and kLabelJob, so leftovers of a runner that is gone can be found and removed.
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/job.h"
#include "common/status.h"

namespace trainctl::local {

enum class RuntimeKind { kProcess, kPodman, kDocker };

inline constexpr char kRuntimeEnv[] = "TRAINCTL_RUNTIME";
inline constexpr char kRuntimeAnnotation[] = "trainctl.dev/runtime";
inline constexpr char kLabelRunnerPid[] = "trainctl.dev/runner-pid";
inline constexpr char kLabelJob[] = "trainctl.dev/job";

std::string RuntimeName(RuntimeKind kind);

// `--runtime` (if given), else the job's annotation, else $TRAINCTL_RUNTIME in `env`, else
// process. An unknown value is kInvalid naming where it came from.
StatusOr<RuntimeKind> ChooseRuntime(const std::optional<std::string>& flag, const api::Job& job,
                                    const std::vector<std::string>& env);

// What pre-flight read from the runtime and this host.
struct RuntimeFacts {
  RuntimeKind kind = RuntimeKind::kPodman;
  std::string binary;  // absolute path
  std::string version;
  std::string oci_runtime;     // podman's default OCI runtime (crun, runc); "" for docker
  std::string cgroup_manager;  // cgroupfs or systemd
  int cgroup_version = 0;      // 1 or 2
  bool rootless = false;
  // This host: cgroup v1 with the unified hierarchy mounted too ("hybrid").
  bool cgroup_hybrid = false;
  std::string runc_path;  // Debian's runc, when installed ("" otherwise)
  // This process's limits, which a container may not exceed (0: unlimited / unknown).
  uint64_t nofile_soft = 0, nofile_hard = 0, nproc_soft = 0, nproc_hard = 0;
  uint64_t pid_max = 0;
};

// `podman info --format json` / `docker info --format '{{json .}}'` into `facts` (version,
// OCI runtime, cgroup manager and version, rootless). kInvalid with a short reason when the
// text is not the runtime's JSON.
Status ParseRuntimeInfo(const std::string& info_json, RuntimeFacts* facts);

// The runtime as a run uses it: the flags every container gets so that it starts on this host.
struct RuntimeHost {
  RuntimeKind kind = RuntimeKind::kPodman;
  std::string binary;
  std::string version;
  std::vector<std::string> run_flags;  // e.g. --runtime /usr/sbin/runc, --ulimit nofile=…
  // The replica cgroup the runner makes (with the limits, as in process mode) can be the
  // container's parent: rootful, cgroup v1, cgroupfs manager. Otherwise limits go to the
  // runtime's own --memory / --cpus and an OOM kill is not seen.
  bool cgroup_parent = false;
  // Whether the runtime can enforce --memory / --cpus itself (not rootless on cgroup v1).
  bool own_limits = true;
  std::vector<std::string> notes;  // what was chosen and why, said once
};

// Decides the flags from what pre-flight read, or refuses (kFailedPrecondition) with what to
// change: podman's crun cannot run on a hybrid cgroup host, so runc is chosen when installed;
// rlimits are this process's own (a container's may not exceed them; podman's defaults do).
StatusOr<RuntimeHost> DecideRuntimeHost(const RuntimeFacts& facts);

// One container to run.
struct ContainerRun {
  std::string name;      // unique among the runtime's containers
  std::string hostname;  // "" : the runtime's default
  std::string image;
  std::vector<std::string> command;    // empty: the image's entrypoint
  std::vector<std::string> args;       // with an empty command: replace the image's cmd
  std::string working_dir;             // "" : the image's
  std::vector<std::string> env;        // the pod's env, NAME=value
  std::vector<std::string> env_names;  // passed from the runtime's env (-e NAME)
  struct Mount {
    std::string host_path, container_path;
    bool read_only = false;
  };
  std::vector<Mount> mounts;
  std::map<std::string, std::string> labels;
  std::string cgroup_parent;            // "" : the runtime's own
  std::optional<int64_t> memory_bytes;  // without a cgroup parent
  std::optional<double> cpus;
  std::vector<std::string> gpus;  // device ids (index or UUID) of this machine
};

std::vector<std::string> RunArgv(const RuntimeHost& host, const ContainerRun& run);
std::vector<std::string> PullArgv(const RuntimeHost& host, const std::string& image);
// Exits 0 when the image is present (inspect writes to stdout; callers discard it).
std::vector<std::string> ImagePresentArgv(const RuntimeHost& host, const std::string& image);
// Stops (no grace) and removes `name`; exits non-zero when there is none, which is fine.
std::vector<std::string> RemoveArgv(const RuntimeHost& host, const std::string& name);
// Lists every container with kLabelRunnerPid, as JSON lines or a JSON array.
std::vector<std::string> ListOwnedArgv(const RuntimeHost& host);

// A container listed by ListOwnedArgv: its name and the runner pid on its label.
struct OwnedContainer {
  std::string name;
  int runner_pid = 0;
  std::string job;
};
// Parses podman's JSON array or docker's JSON lines (Labels "k=v,k=v"). Entries without the
// label are skipped.
std::vector<OwnedContainer> ParseOwnedContainers(const std::string& text);

// The kLabelJob value of a job: "<kind in lower case>/<namespace>/<name>".
std::string ContainerJobLabel(api::Kind kind, const std::string& ns, const std::string& name);

// The container name of replica `replica` (its pod name) of job `kind/ns/name`, attempt and
// step ("" for the main container, an init container's name otherwise): only characters the
// runtimes accept.
std::string ContainerName(const std::string& ns, const std::string& kind,
                          const std::string& replica, int attempt, const std::string& step);

// Whether a container of `image` is pulled before it starts, by imagePullPolicy (Always,
// IfNotPresent, Never; "" : Always for an image without a tag or with :latest, else
// IfNotPresent, as on a cluster), given whether it is present.
enum class PullAction { kNone, kPull, kNeverPullMissing };
PullAction DecidePull(const std::string& image, const std::string& policy, bool present);

// For events and `describe`: "IMAGE: command args" ("IMAGE (its entrypoint) args" without a
// command).
std::string ContainerSummary(const ContainerRun& run);

// For messages and --dry-run: argv joined with shell quoting where needed.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace trainctl::local
