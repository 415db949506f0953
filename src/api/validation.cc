#include "api/validation.h"

#include <regex>

#include "api/restart_policy.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

std::string MapPath(const Job& job) { return std::string("spec.") + job.info().spec_map_field; }
std::string TypePath(const Job& job, const std::string& type) {
  return MapPath(job) + "[" + type + "]";
}

void ValidateName(const Job& job, FieldErrorList* errors) {
  if (job.name.empty()) {
    errors->push_back(Required("metadata.name", "name is required"));
    return;
  }
  static const std::regex kDns1035("[a-z]([-a-z0-9]*[a-z0-9])?");
  std::vector<std::string> problems;
  if (job.name.size() > 63) problems.push_back("must be no more than 63 characters");
  if (!std::regex_match(job.name, kDns1035)) {
    problems.push_back(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
        "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  }
  if (problems.empty()) return;
  std::string joined;
  for (const std::string& p : problems) joined += (joined.empty() ? "" : ",") + p;
  errors->push_back(Invalid("metadata.name", job.name, "should match: " + joined));
}

void ValidateManagedBy(const Job& job, FieldErrorList* errors) {
  if (!job.run_policy.managed_by) return;
  const std::string& v = *job.run_policy.managed_by;
  if (v != kManagedByKubeflow && v != kManagedByMultiKueue)
    errors->push_back(NotSupported("spec.runPolicy.managedBy", v,
                                   {kManagedByKubeflow, kManagedByMultiKueue}));
}

// Checks shared by the five webhook kinds: containers, images, default container.
void ValidateReplicaTemplates(const Job& job, FieldErrorList* errors) {
  const KindInfo& info = job.info();
  for (const auto& [type, spec] : job.replica_specs) {
    std::string base = TypePath(job, type) + ".template.spec.containers";
    const json* containers = Containers(spec.pod_template);
    if (!containers || containers->empty()) {
      errors->push_back(Required(base, "must be specified"));
    }
    bool found_default = false;
    if (containers) {
      for (size_t i = 0; i < containers->size(); ++i) {
        const json& c = (*containers)[i];
        if (!c.is_object()) continue;
        if (c.value("image", "").empty())
          errors->push_back(Required(base + "[" + std::to_string(i) + "].image", "must be required"));
        if (c.value("name", "") == info.default_container) found_default = true;
      }
    }
    if (!found_default) {
      std::string name = job.kind == Kind::kPaddleJob
                             ? std::string("'") + info.default_container + "'"
                             : std::string(info.default_container);
      errors->push_back(Required(base, "must have at least one container with name " + name));
    }
  }
}

void ValidateTypeNames(const Job& job, const std::vector<std::string>& allowed,
                       FieldErrorList* errors) {
  for (const auto& [type, spec] : job.replica_specs) {
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == type;
    if (!ok) errors->push_back(NotSupported(MapPath(job), type, allowed));
  }
}

void ValidateEnums(const Job& job, FieldErrorList* errors) {
  for (const auto& [type, spec] : job.replica_specs) {
    const std::string& rp = spec.restart_policy;
    if (ParseRestartPolicy(rp) == RestartPolicy::kUnknown)
      errors->push_back(NotSupported(TypePath(job, type) + ".restartPolicy", rp,
                                     {"Always", "OnFailure", "Never", "ExitCode"}));
    if (spec.replicas && *spec.replicas < 0)
      errors->push_back(Invalid(TypePath(job, type) + ".replicas", *spec.replicas,
                                "must be greater than or equal to 0"));
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

void ValidatePyTorch(const Job& job, ValidationResult* out) {
  FieldErrorList* errors = &out->errors;
  ValidateTypeNames(job, {"Master", "Worker"}, errors);
  for (const auto& [type, spec] : job.replica_specs) {
    if (type == "Master") {
      if (!spec.replicas || *spec.replicas != 1)
        errors->push_back(Forbidden(TypePath(job, type) + ".replicas", "must be 1"));
    } else if (spec.replicas && *spec.replicas < 1) {
      errors->push_back(Forbidden(TypePath(job, type) + ".replicas", "must be at least 1"));
    }
  }
  if (job.elastic_policy) {
    if (!job.HasType("Worker"))
      errors->push_back(Required(TypePath(job, "Worker"),
                                 "must be configured if elastic policy is used"));
    if (job.elastic_policy->n_proc_per_node) {
      out->warnings.push_back(
          "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead");
      if (job.nproc_per_node)
        errors->push_back(Forbidden("spec.elasticPolicy.nProcPerNode",
                                    "must not be used with spec.nprocPerNode"));
    }
  }
  if (job.nproc_per_node) {
    static const std::regex kNproc("auto|cpu|gpu|[0-9]+");
    if (!std::regex_match(*job.nproc_per_node, kNproc))
      errors->push_back(Invalid("spec.nprocPerNode", *job.nproc_per_node,
                                "must be auto, cpu, gpu or an integer"));
  }
}

void ValidateXGBoost(const Job& job, FieldErrorList* errors) {
  ValidateTypeNames(job, {"Master", "Worker"}, errors);
  auto master = job.replica_specs.find("Master");
  if (master == job.replica_specs.end()) {
    errors->push_back(Required(TypePath(job, "Master"), "must be present"));
  } else if (!master->second.replicas || *master->second.replicas != 1) {
    errors->push_back(Forbidden(TypePath(job, "Master") + ".replicas", "must be 1"));
  }
}

void ValidateTF(const Job& job, FieldErrorList* errors) {
  if (job.HasType("Chief") && job.HasType("Master"))
    errors->push_back(Forbidden(MapPath(job), "must not have more than 1 Chief or Master role"));
  if (!job.success_policy.empty() && job.success_policy != "AllWorkers")
    errors->push_back(NotSupported("spec.successPolicy", job.success_policy, {"", "AllWorkers"}));
}

// MPIJob has no webhook upstream; the controller checks these (§2.5). trainctl reports them
// with field paths like the other kinds.
void ValidateMPI(const Job& job, FieldErrorList* errors) {
  ValidateTypeNames(job, {"Launcher", "Worker"}, errors);
  if (!job.HasType("Launcher"))
    errors->push_back(Required(TypePath(job, "Launcher"), "must be present"));
  for (const auto& [type, spec] : job.replica_specs) {
    std::string base = TypePath(job, type) + ".template.spec.containers";
    const json* containers = Containers(spec.pod_template);
    if (!containers || containers->empty()) {
      errors->push_back(Required(base, "containers definition expected in " + type));
      continue;
    }
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& c = (*containers)[i];
      if (!c.is_object()) continue;
      if (c.value("image", "").empty())
        errors->push_back(Required(base + "[" + std::to_string(i) + "].image",
                                   "image is undefined in the container of " + type));
      if (c.value("name", "").empty())
        errors->push_back(Required(base + "[" + std::to_string(i) + "].name",
                                   "name is undefined in the container of " + type));
    }
    if (type == "Launcher" && spec.replicas && *spec.replicas != 1)
      errors->push_back(Forbidden(TypePath(job, type) + ".replicas",
                                  "there must be only 1 launcher replica"));
  }
}

}  // namespace

ValidationResult ValidateJob(const Job& job) {
  ValidationResult out;
  FieldErrorList* errors = &out.errors;
  ValidateName(job, errors);
  ValidateManagedBy(job, errors);  // every kind, JAXJob too (upstream skips it there)
  if (!job.has_replica_specs || job.replica_specs.empty()) {
    errors->push_back(Required(MapPath(job), "must be required"));
    return out;
  }
  ValidateEnums(job, errors);
  if (job.kind == Kind::kMPIJob) {
    ValidateMPI(job, errors);
    return out;
  }
  ValidateReplicaTemplates(job, errors);
  switch (job.kind) {
    case Kind::kPyTorchJob: ValidatePyTorch(job, &out); break;
    case Kind::kXGBoostJob: ValidateXGBoost(job, errors); break;
    case Kind::kTFJob: ValidateTF(job, errors); break;
    case Kind::kPaddleJob: ValidateTypeNames(job, {"Master", "Worker"}, errors); break;
    case Kind::kJAXJob: ValidateTypeNames(job, {"Worker"}, errors); break;
    case Kind::kMXJob: ValidateTypeNames(job, job.info().replica_types, errors); break;
    case Kind::kMPIJob: break;
  }
  return out;
}

FieldErrorList ValidateJobUpdate(const Job& old_job, const Job& new_job) {
  FieldErrorList errors;
  if (old_job.run_policy.managed_by != new_job.run_policy.managed_by)
    errors.push_back(Invalid("spec.runPolicy.managedBy",
                             new_job.run_policy.managed_by.value_or(""),
                             "field is immutable"));
  return errors;
}

}  // namespace trainctl::api
