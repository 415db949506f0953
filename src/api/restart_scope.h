// Whether a job's replicas restart one by one or together, read from its annotations
// (docs/status-machine.md, "Gang restart"):
//
//   trainctl.dev/restart-scope: Gang     Replica (default: upstream's behaviour) | Gang
//   trainctl.dev/restart-attempt: "2"    written by trainctl: the job's current attempt
//
// With Gang, a replica failure that its restart policy would retry stops every replica and
// starts them all again as the next attempt, counted once against backoffLimit. The attempt
// lives on the job, so it survives an operator restart and the garbage collection of pods.
// elasticPolicy jobs refuse Gang (torchelastic owns their membership).
// Pure; thread-safe.
#pragma once

#include "api/field_error.h"
#include "api/job.h"
#include "api/replica_env.h"
#include "api/restart_policy.h"

namespace trainctl::api {

inline constexpr const char* kRestartScopeAnnotation = "trainctl.dev/restart-scope";
inline constexpr const char* kRestartAttemptAnnotation = "trainctl.dev/restart-attempt";
// The replica's attempt, as a pod label and in the replica's environment.
inline constexpr const char* kRestartAttemptLabel = "trainctl.dev/restart-attempt";
inline constexpr const char* kRestartAttemptEnv = "TRAINCTL_RESTART_ATTEMPT";

enum class RestartScope { kReplica, kGang };

// kReplica when the annotation is absent or invalid (errors go to `errors` when it is not
// null, with the annotation's field path; Gang on an elasticPolicy job is an error too).
RestartScope RestartScopeOf(const Job& job, FieldErrorList* errors = nullptr);

// The job's current attempt: 0 when the annotation is absent or invalid (errors as above:
// expected a whole number from 0 to 1000000).
int RestartAttemptOf(const Job& job, FieldErrorList* errors = nullptr);

// The pod's restart policy for a replica of `type`: Never for every replica of a Gang job (the
// engine restarts them together; no kubelet or local pod restarts one in place), else the
// replica spec's as upstream maps it (api::PodRestartPolicy).
RestartPolicy PodRestartPolicyOf(const Job& job, const std::string& type);

// TRAINCTL_RESTART_ATTEMPT=<the job's attempt> for a Gang job's replicas (empty for other
// jobs); AppendRestartAttemptEnv adds it to a kind's env for the replica.
std::vector<EnvVar> RestartAttemptEnv(const Job& job);
void AppendRestartAttemptEnv(const Job& job, ReplicaEnv* env);

// Labels a Gang job's replica with its attempt (`labels`: a JSON object; nothing for other
// jobs).
void AddRestartAttemptLabel(const Job& job, nlohmann::json* labels);

}  // namespace trainctl::api
