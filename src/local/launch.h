// Turning one replica of a job into the command line, environment and working directory of a
// local process: the pod semantics trainctl run reproduces on this machine.
//
// Pure (no I/O except the executable lookup in ResolveLaunch). The default container runs;
// other containers and init containers are reported as warnings. Env is the caller's
// environment, then the template env, then the framework env (later wins, as in a pod);
// `valueFrom.fieldRef` is resolved for the pod fields that exist locally and `$(VAR)`
// references are expanded in env values, command and args as the kubelet does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"
#include "common/status.h"
#include "local/process.h"

namespace trainctl::local {

struct LaunchContext {
  std::string manifest_dir;           // relative paths resolve here
  std::vector<std::string> base_env;  // "NAME=value" of the caller
  std::string pod_ip = "127.0.0.1";
  std::map<std::string, std::string> labels;  // the replica's pod labels
};

struct PreparedLaunch {
  LaunchSpec spec;                    // log_path left empty
  std::vector<std::string> warnings;  // e.g. ignored sidecars
  std::string display_command;        // for messages
  std::string command_field;          // field path of argv[0], e.g. `...containers[0].command[0]`
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

// Expands $(NAME) using `vars`; $$ → $; unknown references stay as written.
std::string ExpandReferences(const std::string& text,
                             const std::map<std::string, std::string>& vars);

}  // namespace trainctl::local
