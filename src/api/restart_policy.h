// Replica restart policies (`spec.<kind>ReplicaSpecs.<type>.restartPolicy`) as one enum, and the
// judgements made from them, written once for the engine, the operator and the local runner.
//
// The manifest keeps the string (it round-trips unchanged); every comparison goes through
// ParseRestartPolicy. Pure functions, no state.
#pragma once

#include <string>
#include <string_view>

namespace trainctl::api {

enum class RestartPolicy {
  kUnset,      // "" before defaulting
  kAlways,
  kOnFailure,
  kNever,
  kExitCode,   // the operator restarts the pod for retryable exit codes (the pod says Never)
  kUnknown,    // anything else (validation rejects it)
};

RestartPolicy ParseRestartPolicy(std::string_view text);
// "Always", "OnFailure", "Never", "ExitCode"; "" for kUnset and kUnknown.
const char* RestartPolicyName(RestartPolicy policy);

// The policy the replica's pod (or local process group) gets: ExitCode → Never, because the
// operator, not the kubelet, decides those restarts. kUnset stays unset (Kubernetes then uses
// its default; jobs are defaulted before they reach a substrate, so neither sees it).
RestartPolicy PodRestartPolicy(RestartPolicy replica_policy);

// True when a failed replica is retried and counted against backoffLimit: Always, OnFailure
// and ExitCode (the latter only for retryable exit codes, see engine).
bool RetriesFailures(RestartPolicy policy);

// True when a kubelet restarts the container in place for this pod-level policy and exit code
// (Always; OnFailure with a non-zero code).
bool RestartsInPlace(RestartPolicy pod_policy, int exit_code);

}  // namespace trainctl::api
