// Turning one replica of a job into the command line, environment and working directory of a
// local process: the pod semantics trainctl run reproduces on this machine.
//
// Pure (no I/O except the executable lookup in ResolveLaunch). The default container, or the
// init container named in the context (local/containers.h says which run). Env is the caller's
// environment, then the resources' (devices, threads), then the template env, then the
// framework env (later wins, as in a pod);
// `valueFrom.fieldRef` is resolved for the pod fields that exist locally, configMapKeyRef,
// secretKeyRef and envFrom from the ConfigMaps and Secrets given as folders (local_config.h),
// `$(VAR)` references are expanded in env values, command and args as the kubelet does, and
// mount paths are rewritten to their local folders (volumes.h). Env files come after the
// caller's env.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"
#include "api/validation.h"
#include "common/status.h"
#include "local/container_runtime.h"
#include "local/local_config.h"
#include "local/process.h"
#include "local/volumes.h"

namespace trainctl::local {

struct LaunchContext {
  std::string manifest_dir;           // relative paths resolve here
  std::vector<std::string> base_env;  // "NAME=value" of the caller
  std::string pod_ip = "127.0.0.1";
  std::map<std::string, std::string> labels;  // the replica's pod labels
  // Set from the replica's resources on this machine (devices, threads): after the caller's
  // env, before the template's (a template value wins, as it would in a pod).
  std::vector<std::pair<std::string, std::string>> resource_env;
  // ConfigMaps, Secrets and env files given on this machine (null: none), and the replica's
  // mounts, whose paths are rewritten to local folders in command, args, env and workingDir.
  const LocalConfig* config = nullptr;
  std::vector<LocalMount> mounts;
  // The container to launch: null for the kind's default container; else an init container
  // (local/containers.h), which gets no framework env.
  const api::ContainerAt* container = nullptr;
  // Run as a container of its image (local/container_runtime.h): the command may be empty (the
  // image's entrypoint), mount paths are not rewritten (the folders are bind-mounted there),
  // workingDir is the container's, and the caller's env is not the pod's.
  bool in_container = false;
};

// Where a variable of the pod's env came from (the caller's own env is not listed).
enum class EnvSource { kResources, kTemplate, kInjected, kRunner, kEnvFile };

struct PreparedLaunch {
  LaunchSpec spec;              // log_path left empty
  std::string display_command;  // for messages
  std::string command_field;    // field path of argv[0], e.g. `...containers[0].command[0]`
  // The variables set for the replica beyond the caller's env, in order, with their source
  // (kInjected: the framework's, as the operator injects them; kRunner: trainctl run's own).
  std::vector<std::pair<std::string, EnvSource>> env_sources;
  std::vector<LocalMount> mounts;  // to make (MakeMounts) before the process starts
  // With LaunchContext::in_container: the container as the runtime runs it (image, command and
  // args with $(VAR) expanded, workingDir, the pod env's names, mounts). spec.argv is then the
  // runtime's command line (local/container_launch.h), spec.env the caller's env and the pod's.
  std::optional<ContainerRun> container;
  std::string pull_policy;  // the container's imagePullPolicy as written
  // The TORCHELASTIC_ERROR_FILE the runner gave it and reads after a failure; "" when none (or
  // the template sets its own).
  std::string error_file;
};

// Builds the launch for (type, index). Errors name the field path, e.g.
// `spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].command: Required value: ...`.
StatusOr<PreparedLaunch> PrepareLaunch(const api::Job& job, const std::string& type, int index,
                                       const api::ReplicaEnv& injected,
                                       const LaunchContext& context);

// PrepareLaunch + executable lookup (argv[0] made absolute). Errors name the command.
StatusOr<PreparedLaunch> ResolveLaunch(const api::Job& job, const std::string& type, int index,
                                       const api::ReplicaEnv& injected,
                                       const LaunchContext& context);

// The launch of an idle replica (IsIdleReplica in mpi_local.h): IdleArgv() with the caller's env
// in the manifest's folder; the template's command, args and env are not used.
PreparedLaunch PrepareIdleLaunch(const LaunchContext& context);

// PrepareIdleLaunch + executable lookup.
StatusOr<PreparedLaunch> ResolveIdleLaunch(const LaunchContext& context);

// For a container launch (launch.container set): spec.argv becomes the runtime's command line
// (RunArgv), spec.env the caller's `base_env` with the pod's env after it (the runtime client
// passes the pod's variables on by name), display_command that line. Idempotent: call it again
// after changing launch.container.
void ApplyContainerRun(PreparedLaunch& launch, const RuntimeHost& host,
                       const std::vector<std::string>& base_env);

// Expands $(NAME) using `vars`; $$ → $; unknown references stay as written.
std::string ExpandReferences(const std::string& text,
                             const std::map<std::string, std::string>& vars);

}  // namespace trainctl::local
