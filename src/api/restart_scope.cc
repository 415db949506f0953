#include "api/restart_scope.h"

#include <charconv>

#include "api/annotations.h"

namespace trainctl::api {
namespace {

constexpr int kMaxAttempt = 1000000;

}  // namespace

RestartScope RestartScopeOf(const Job& job, FieldErrorList* errors) {
  const nlohmann::json* scope = AnnotationOf(job, kRestartScopeAnnotation);
  if (!scope) return RestartScope::kReplica;
  std::string text = AnnotationText(*scope);
  if (text == "Replica") return RestartScope::kReplica;
  if (text != "Gang") {
    if (errors)
      errors->push_back(
          NotSupported(AnnotationPath(kRestartScopeAnnotation), *scope, {"Replica", "Gang"}));
    return RestartScope::kReplica;
  }
  if (job.elastic_policy) {
    if (errors)
      errors->push_back(Forbidden(AnnotationPath(kRestartScopeAnnotation),
                                  "Gang cannot be combined with spec.elasticPolicy: torchelastic "
                                  "restarts the members of an elastic job itself"));
    return RestartScope::kReplica;
  }
  return RestartScope::kGang;
}

int RestartAttemptOf(const Job& job, FieldErrorList* errors) {
  const nlohmann::json* attempt = AnnotationOf(job, kRestartAttemptAnnotation);
  if (!attempt) return 0;
  std::string text = AnnotationText(*attempt);
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0 ||
      value > kMaxAttempt) {
    if (errors)
      errors->push_back(Invalid(AnnotationPath(kRestartAttemptAnnotation), *attempt,
                                "expected a whole number from 0 to 1000000 (written by trainctl)"));
    return 0;
  }
  return value;
}

RestartPolicy PodRestartPolicyOf(const Job& job, const std::string& type) {
  if (RestartScopeOf(job) == RestartScope::kGang) return RestartPolicy::kNever;
  auto spec = job.replica_specs.find(type);
  if (spec == job.replica_specs.end()) return RestartPolicy::kNever;
  return PodRestartPolicy(ParseRestartPolicy(spec->second.restart_policy));
}

std::vector<EnvVar> RestartAttemptEnv(const Job& job) {
  if (RestartScopeOf(job) != RestartScope::kGang) return {};
  return {{kRestartAttemptEnv, std::to_string(RestartAttemptOf(job)), nullptr}};
}

void AppendRestartAttemptEnv(const Job& job, ReplicaEnv* env) {
  for (EnvVar& e : RestartAttemptEnv(job)) env->env.push_back(std::move(e));
}

void AddRestartAttemptLabel(const Job& job, nlohmann::json* labels) {
  if (RestartScopeOf(job) == RestartScope::kGang)
    (*labels)[kRestartAttemptLabel] = std::to_string(RestartAttemptOf(job));
}

}  // namespace trainctl::api
