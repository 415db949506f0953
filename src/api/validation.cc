#include "api/validation.h"

#include <regex>

#include "api/checkpoint_notice.h"
#include "api/kind_plugin.h"
#include "api/metrics_policy.h"
#include "api/progress_policy.h"
#include "api/restart_policy.h"
#include "api/restart_scope.h"

namespace trainctl::api {
namespace {

// The problems of `value` as a label of at most 63 characters matching `pattern` (described by
// `rule`), joined as apimachinery joins them; "" when there are none.
std::string LabelProblems(const std::string& value, const std::regex& pattern, const char* rule) {
  std::string joined;
  if (value.size() > 63) joined = "must be no more than 63 characters";
  if (!std::regex_match(value, pattern)) joined += (joined.empty() ? "" : ",") + std::string(rule);
  return joined;
}

void ValidateName(const Job& job, FieldErrorList* errors) {
  if (job.name.empty()) {
    errors->push_back(Required("metadata.name", "name is required"));
    return;
  }
  static const std::regex kDns1035("[a-z]([-a-z0-9]*[a-z0-9])?");
  std::string problems = LabelProblems(
      job.name, kDns1035,
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
      "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
      "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  if (!problems.empty())
    errors->push_back(Invalid("metadata.name", job.name, "should match: " + problems));
}

// The namespace becomes a folder of the local runner's state and a part of names: a DNS-1123
// label, as Kubernetes requires of namespaces (so "../x" never reaches a path).
void ValidateNamespace(const Job& job, FieldErrorList* errors) {
  static const std::regex kDns1123("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  if (job.namespace_.empty()) return;
  std::string problems = LabelProblems(
      job.namespace_, kDns1123,
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
      "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
      "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  if (!problems.empty()) errors->push_back(Invalid("metadata.namespace", job.namespace_, problems));
}

void ValidateManagedBy(const Job& job, FieldErrorList* errors) {
  if (!job.run_policy.managed_by) return;
  const std::string& v = *job.run_policy.managed_by;
  const char* ours = job.IsMpiV2() ? kManagedByMpiOperator : kManagedByKubeflow;
  if (v != ours && v != kManagedByMultiKueue)
    errors->push_back(NotSupported("spec.runPolicy.managedBy", v, {ours, kManagedByMultiKueue}));
}

void ValidateEnums(const Job& job, FieldErrorList* errors) {
  for (const auto& [type, spec] : job.replica_specs) {
    const std::string& rp = spec.restart_policy;
    // v2beta1's replicas take Never or OnFailure (the kind's validation says so).
    if (!job.IsMpiV2() && ParseRestartPolicy(rp) == RestartPolicy::kUnknown)
      errors->push_back(NotSupported(ReplicaSpecPath(job, type) + ".restartPolicy", rp,
                                     {"Always", "OnFailure", "Never", "ExitCode"}));
    if (spec.replicas && *spec.replicas < 0)
      errors->push_back(Invalid(ReplicaSpecPath(job, type) + ".replicas", *spec.replicas,
                                "must be greater than or equal to 0"));
    if (spec.replicas && *spec.replicas > kMaxReplicasPerType)
      errors->push_back(
          Invalid(ReplicaSpecPath(job, type) + ".replicas", *spec.replicas,
                  "must be less than or equal to " + std::to_string(kMaxReplicasPerType)));
  }
  const RunPolicy& p = job.run_policy;
  if (p.clean_pod_policy && *p.clean_pod_policy != "All" && *p.clean_pod_policy != "Running" &&
      *p.clean_pod_policy != "None")
    errors->push_back(NotSupported("spec.runPolicy.cleanPodPolicy", *p.clean_pod_policy,
                                   {"All", "Running", "None"}));
  if (p.backoff_limit && *p.backoff_limit < 0)
    errors->push_back(Invalid("spec.runPolicy.backoffLimit", *p.backoff_limit,
                              "must be greater than or equal to 0"));
  if (p.active_deadline_seconds && *p.active_deadline_seconds < 0)
    errors->push_back(Invalid("spec.runPolicy.activeDeadlineSeconds", *p.active_deadline_seconds,
                              "must be greater than or equal to 0"));
  if (p.ttl_seconds_after_finished && *p.ttl_seconds_after_finished < 0)
    errors->push_back(Invalid("spec.runPolicy.ttlSecondsAfterFinished",
                              *p.ttl_seconds_after_finished, "must be greater than or equal to 0"));
}

}  // namespace

std::string ReplicaSpecsPath(const Job& job) {
  // A TrainJob's groups are its runtime's replicated jobs.
  if (job.runtime)
    return job.runtime->kind + " " + job.runtime->name + " spec.template.spec.replicatedJobs";
  return std::string("spec.") + job.info().spec_map_field;
}

std::string ReplicaSpecPath(const Job& job, const std::string& type) {
  return ReplicaSpecsPath(job) + "[" + type + "]";
}

ContainerAt DefaultContainerAt(const Job& job, const std::string& type) {
  ContainerAt out;
  const ReplicaSpec& spec = job.replica_specs.at(type);
  const nlohmann::json* containers = Containers(spec.pod_template);
  if (!containers || containers->empty()) return out;
  size_t i = DefaultContainerIndex(spec.pod_template, job.info().default_container).value_or(0);
  out.container = &(*containers)[i];
  out.path = ReplicaSpecPath(job, type) + ".template.spec.containers[" + std::to_string(i) + "]";
  return out;
}

ValidationResult ValidateJob(const Job& job) {
  ValidationResult out;
  FieldErrorList* errors = &out.errors;
  if (job.info().runtime_resolved) {  // its own name, spec and managedBy rules (TrainJob)
    ValidateNamespace(job, errors);
    ProgressPolicyOf(job, errors);
    RestartScopeOf(job, errors);
    RestartAttemptOf(job, errors);
    NoticePolicyOf(job, errors);
    MetricsPolicyOf(job, errors);
    PluginFor(job.kind).Validate(job, &out);
    return out;
  }
  ValidateName(job, errors);
  ValidateNamespace(job, errors);
  ValidateManagedBy(job, errors);  // every kind, JAXJob too (upstream skips it there)
  ProgressPolicyOf(job, errors);   // trainctl's own annotations (hang detection)
  RestartScopeOf(job, errors);     // (gang restart)
  RestartAttemptOf(job, errors);
  NoticePolicyOf(job, errors);  // (checkpoint notice)
  if (!job.has_replica_specs || job.replica_specs.empty()) {
    errors->push_back(Required(ReplicaSpecsPath(job), "must be required"));
    return out;
  }
  ValidateEnums(job, errors);
  MetricsPolicyOf(job, errors);  // trainctl's own annotations (metrics from output)
  PluginFor(job.kind).Validate(job, &out);
  return out;
}

FieldErrorList ValidateJobUpdate(const Job& old_job, const Job& new_job) {
  FieldErrorList errors;
  if (old_job.run_policy.managed_by != new_job.run_policy.managed_by)
    errors.push_back(Invalid("spec.runPolicy.managedBy", new_job.run_policy.managed_by.value_or(""),
                             "field is immutable"));
  return errors;
}

}  // namespace trainctl::api
