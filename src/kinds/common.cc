#include "kinds/common.h"

#include "api/json_fields.h"
#include "api/validation.h"

namespace trainctl::kinds {
namespace {

using nlohmann::json;

api::ElasticPolicy DecodeElastic(const json& ep, const std::string& path,
                                 api::FieldErrorList* errors) {
  api::FieldReader r(ep, path, errors);
  api::ElasticPolicy out;
  out.min_replicas = r.Integer<int32_t>("minReplicas");
  out.max_replicas = r.Integer<int32_t>("maxReplicas");
  out.rdzv_port = r.Integer<int32_t>("rdzvPort");
  out.n_proc_per_node = r.Integer<int32_t>("nProcPerNode");
  out.max_restarts = r.Integer<int32_t>("maxRestarts");
  out.rdzv_backend = r.String("rdzvBackend");
  out.rdzv_host = r.String("rdzvHost");
  out.rdzv_id = r.String("rdzvId");
  out.standalone = r.Bool("standalone").value_or(false);
  if (const json* conf = r.Array("rdzvConf")) {
    for (size_t i = 0; i < conf->size(); ++i) {
      api::FieldReader cr((*conf)[i], path + ".rdzvConf[" + std::to_string(i) + "]", errors);
      out.rdzv_conf.push_back({cr.String("key").value_or(""), cr.String("value").value_or("")});
    }
  }
  return out;
}

}  // namespace

void DecodeElasticPolicy(api::FieldReader& spec, api::Job* job) {
  if (const json* ep = spec.Object("elasticPolicy"))
    job->elastic_policy = DecodeElastic(*ep, spec.Path("elasticPolicy"), spec.errors());
}

void EncodeElasticPolicy(const api::Job& job, json* spec) {
  if (!job.elastic_policy || !spec->contains("elasticPolicy") ||
      !(*spec)["elasticPolicy"].is_object())
    return;
  if (job.elastic_policy->min_replicas)
    (*spec)["elasticPolicy"]["minReplicas"] = *job.elastic_policy->min_replicas;
  if (job.elastic_policy->max_replicas)
    (*spec)["elasticPolicy"]["maxReplicas"] = *job.elastic_policy->max_replicas;
}

void DefaultElasticPolicy(api::Job* job) {
  if (!job->elastic_policy) return;
  api::ElasticPolicy& ep = *job->elastic_policy;
  if (ep.min_replicas && !ep.max_replicas)
    ep.max_replicas = ep.min_replicas;
  else if (!ep.min_replicas && ep.max_replicas)
    ep.min_replicas = ep.max_replicas;
  else if (!ep.min_replicas && !ep.max_replicas && job->HasType("Worker")) {
    ep.min_replicas = job->ReplicasOf("Worker");
    ep.max_replicas = ep.min_replicas;
  }
}

void ValidateTypeNames(const api::Job& job, const std::vector<std::string>& allowed,
                       api::FieldErrorList* errors) {
  for (const auto& [type, spec] : job.replica_specs) {
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == type;
    if (!ok) errors->push_back(api::NotSupported(api::ReplicaSpecsPath(job), type, allowed));
  }
}

void ValidateReplicaTemplates(const api::Job& job, const std::string& shown_name,
                              api::FieldErrorList* errors) {
  const api::KindInfo& info = job.info();
  for (const auto& [type, spec] : job.replica_specs) {
    std::string base = api::ReplicaSpecPath(job, type) + ".template.spec.containers";
    const json* containers = api::Containers(spec.pod_template);
    if (!containers || containers->empty()) {
      errors->push_back(api::Required(base, "must be specified"));
    }
    bool found_default = false;
    if (containers) {
      for (size_t i = 0; i < containers->size(); ++i) {
        const json& c = (*containers)[i];
        if (!c.is_object()) continue;
        if (api::StringAt(c, "image").empty())
          errors->push_back(
              api::Required(base + "[" + std::to_string(i) + "].image", "must be required"));
        if (api::StringAt(c, "name") == info.default_container) found_default = true;
      }
    }
    if (!found_default)
      errors->push_back(
          api::Required(base, "must have at least one container with name " + shown_name));
  }
}

void ValidateReplicaTemplates(const api::Job& job, api::FieldErrorList* errors) {
  ValidateReplicaTemplates(job, job.info().default_container, errors);
}

}  // namespace trainctl::kinds
