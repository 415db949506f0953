#include "api/job.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "api/field_reader.h"
#include "api/json_fields.h"
#include "api/kind_plugin.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

// Checks the parts of a pod template trainctl reads (containers, their names, command, args,
// env and ports), so a wrong type there is an error with a path rather than a surprise later.
void CheckPodTemplate(const json& tmpl, const std::string& path, FieldErrorList* errors) {
  FieldReader top(tmpl, path, errors);
  if (!tmpl.is_object()) {
    errors->push_back(Invalid(path, TypeName(tmpl), "must be of type object"));
    return;
  }
  top.Object("metadata");
  const json* spec = top.Object("spec");
  if (!spec) return;
  FieldReader spec_reader(*spec, path + ".spec", errors);
  for (const char* list : {"containers", "initContainers"}) {
    const json* containers = spec_reader.Array(list);
    if (!containers) continue;
    for (size_t i = 0; i < containers->size(); ++i) {
      std::string cpath = path + ".spec." + list + "[" + std::to_string(i) + "]";
      const json& c = (*containers)[i];
      if (!c.is_object()) {
        errors->push_back(Invalid(cpath, TypeName(c), "must be of type object"));
        continue;
      }
      FieldReader cr(c, cpath, errors);
      cr.String("name");
      cr.String("image");
      cr.String("workingDir");
      for (const char* argv : {"command", "args"}) {
        const json* a = cr.Array(argv);
        if (!a) continue;
        for (size_t j = 0; j < a->size(); ++j)
          if (!(*a)[j].is_string())
            errors->push_back(Invalid(cpath + "." + argv + "[" + std::to_string(j) + "]",
                                      (*a)[j].dump(), "must be of type string"));
      }
      if (const json* env = cr.Array("env")) {
        for (size_t j = 0; j < env->size(); ++j) {
          std::string epath = cpath + ".env[" + std::to_string(j) + "]";
          FieldReader er((*env)[j], epath, errors);
          if (!(*env)[j].is_object()) {
            errors->push_back(Invalid(epath, TypeName((*env)[j]), "must be of type object"));
            continue;
          }
          if (!er.String("name")) errors->push_back(Required(epath + ".name", ""));
          er.String("value");
        }
      }
      if (const json* ports = cr.Array("ports")) {
        for (size_t j = 0; j < ports->size(); ++j) {
          std::string ppath = cpath + ".ports[" + std::to_string(j) + "]";
          FieldReader pr((*ports)[j], ppath, errors);
          pr.String("name");
          pr.Integer<int32_t>("containerPort");
        }
      }
    }
  }
  spec_reader.String("restartPolicy");
  spec_reader.Integer<int64_t>("terminationGracePeriodSeconds");
}

void DecodeRunPolicy(const json& rp, const std::string& path, RunPolicy* out,
                     FieldErrorList* errors) {
  FieldReader r(rp, path, errors);
  out->clean_pod_policy = r.String("cleanPodPolicy");
  out->ttl_seconds_after_finished = r.Integer<int32_t>("ttlSecondsAfterFinished");
  out->active_deadline_seconds = r.Integer<int64_t>("activeDeadlineSeconds");
  out->backoff_limit = r.Integer<int32_t>("backoffLimit");
  out->suspend = r.Bool("suspend");
  out->managed_by = r.String("managedBy");
  if (const json* sp = r.Object("schedulingPolicy")) out->scheduling_policy = *sp;
}

std::optional<Time> DecodeTime(FieldReader& r, const std::string& field, FieldErrorList* errors) {
  std::optional<std::string> s = r.String(field);
  if (!s) return std::nullopt;
  std::optional<Time> t = ParseRfc3339(*s);
  if (!t) errors->push_back(Invalid(r.Path(field), *s, "must be an RFC 3339 timestamp"));
  return t;
}

StatusOr<JobStatus> DecodeStatusAt(const json& st, const std::string& path,
                                   FieldErrorList* errors) {
  JobStatus out;
  FieldReader r(st, path, errors);
  if (const json* conds = r.Array("conditions")) {
    for (size_t i = 0; i < conds->size(); ++i) {
      std::string cpath = path + ".conditions[" + std::to_string(i) + "]";
      FieldReader cr((*conds)[i], cpath, errors);
      Condition c;
      c.type = cr.String("type").value_or("");
      c.status = cr.String("status").value_or("");
      c.reason = cr.String("reason").value_or("");
      c.message = cr.String("message").value_or("");
      c.last_update_time = DecodeTime(cr, "lastUpdateTime", errors).value_or(Time{});
      c.last_transition_time = DecodeTime(cr, "lastTransitionTime", errors).value_or(Time{});
      out.conditions.push_back(std::move(c));
    }
  }
  if (const json* rs = r.Object("replicaStatuses")) {
    for (auto it = rs->begin(); it != rs->end(); ++it) {
      FieldReader rr(it.value(), path + ".replicaStatuses[" + it.key() + "]", errors);
      ReplicaStatus s;
      s.active = rr.Integer<int32_t>("active").value_or(0);
      s.succeeded = rr.Integer<int32_t>("succeeded").value_or(0);
      s.failed = rr.Integer<int32_t>("failed").value_or(0);
      s.selector = rr.String("selector").value_or("");
      s.restarts = rr.Integer<int32_t>("restarts").value_or(0);
      // A status written before pastRestarts existed counted only replaced replicas' retries.
      s.past_restarts = rr.Integer<int32_t>("pastRestarts").value_or(s.restarts);
      out.replica_statuses[it.key()] = s;
    }
  }
  out.start_time = DecodeTime(r, "startTime", errors);
  out.completion_time = DecodeTime(r, "completionTime", errors);
  out.last_reconcile_time = DecodeTime(r, "lastReconcileTime", errors);
  return out;
}

}  // namespace

std::string Job::MpiLauncherGroup() const {
  if (IsMpiTrainJob()) return trainer_group;
  return info().has_launcher() ? info().launcher_type : "";
}

std::string Job::MpiWorkerGroup() const {
  if (IsMpiTrainJob()) return kTrainerContainer;  // upstream's `node` job
  return info().has_launcher() ? "Worker" : "";
}

int32_t Job::ReplicasOf(const std::string& type) const {
  auto it = replica_specs.find(type);
  if (it == replica_specs.end()) return 0;
  return it->second.replicas.value_or(1);
}

int32_t Job::TotalReplicas() const {
  int64_t total = 0;  // before validation, counts may be anything: no overflow
  for (const auto& [type, spec] : replica_specs) total += spec.replicas.value_or(1);
  return static_cast<int32_t>(std::clamp<int64_t>(total, INT32_MIN, INT32_MAX));
}

const nlohmann::json* Containers(const nlohmann::json& pod_template) {
  if (!pod_template.is_object()) return nullptr;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return nullptr;
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return nullptr;
  return &*containers;
}

std::optional<size_t> DefaultContainerIndex(const nlohmann::json& pod_template,
                                            const std::string& default_name) {
  const json* containers = Containers(pod_template);
  if (!containers || containers->empty()) return std::nullopt;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    if (c.is_object() && api::StringAt(c, "name") == default_name) return i;
  }
  return std::nullopt;
}

StatusOr<JobStatus> DecodeStatus(const nlohmann::json& status) {
  FieldErrorList errors;
  StatusOr<JobStatus> st = DecodeStatusAt(status, "status", &errors);
  if (!errors.empty()) return InvalidError(JoinFieldErrors(errors));
  return st;
}

StatusOr<Job> DecodeJob(const nlohmann::json& doc) {
  if (!doc.is_object()) {
    return InvalidError(std::string("expected a Kubernetes object (a YAML mapping), got ") +
                        TypeName(doc));
  }
  FieldErrorList errors;
  FieldReader top(doc, "", &errors);
  std::optional<std::string> api_version = top.String("apiVersion");
  std::optional<std::string> kind_name = top.String("kind");
  if (!errors.empty()) return InvalidError(JoinFieldErrors(errors));
  if (!kind_name || kind_name->empty())
    return InvalidError("kind: Required value: object has no kind");
  std::optional<Kind> kind = KindFromName(*kind_name);
  if (!kind) {
    std::string known;
    for (const KindInfo& k : AllKinds()) known += std::string(known.empty() ? "" : ", ") + k.name;
    return InvalidError("kind: Unsupported value: \"" + *kind_name +
                        "\": supported values: " + known);
  }
  const std::vector<std::string>& served = Info(*kind).api_versions;
  if (!api_version || std::find(served.begin(), served.end(), *api_version) == served.end()) {
    std::string versions;
    for (size_t i = 0; i < served.size(); ++i)
      versions += std::string(i == 0                   ? ""
                              : i + 1 == served.size() ? " or "
                                                       : ", ") +
                  "\"" + served[i] + "\"";
    return InvalidError("apiVersion: Unsupported value: \"" + api_version.value_or("") +
                        "\": " + *kind_name + " is served as " + versions);
  }
  Job job;
  job.kind = *kind;
  job.api_version = *api_version;
  if (const json* md = top.Object("metadata")) job.metadata = *md;
  FieldReader md(job.metadata, "metadata", &errors);
  job.name = md.String("name").value_or("");
  job.namespace_ = md.String("namespace").value_or("default");
  if (job.namespace_.empty()) job.namespace_ = "default";
  md.Object("labels");
  md.Object("annotations");

  if (const json* spec = top.Object("spec")) job.spec = *spec;
  FieldReader spec(job.spec, "spec", &errors);
  const KindInfo& info = Info(job.kind);
  if (const json* specs = info.runtime_resolved ? nullptr : spec.Object(info.spec_map_field)) {
    job.has_replica_specs = true;
    for (auto it = specs->begin(); it != specs->end(); ++it) {
      std::string path = std::string("spec.") + info.spec_map_field + "[" + it.key() + "]";
      ReplicaSpec rs;
      if (it->is_null()) {
        job.replica_specs[it.key()] = rs;
        continue;
      }
      if (!it->is_object()) {
        errors.push_back(Invalid(path, TypeName(*it), "must be of type object"));
        continue;
      }
      FieldReader rr(*it, path, &errors);
      rs.replicas = rr.Integer<int32_t>("replicas");
      rs.restart_policy = rr.String("restartPolicy").value_or("");
      if (const json* tmpl = rr.Get("template")) {
        rs.pod_template = *tmpl;
        CheckPodTemplate(*tmpl, path + ".template", &errors);
      }
      job.replica_specs[it.key()] = std::move(rs);
    }
  }
  if (info.runtime_resolved) {
    // A TrainJob: no replica-spec map and no runPolicy; its plugin reads its spec.
  } else if (const json* rp = spec.Object("runPolicy")) {
    DecodeRunPolicy(*rp, "spec.runPolicy", &job.run_policy, &errors);
  }
  PluginFor(job.kind).DecodeSpec(spec, &job);
  if (const json* st = top.Object("status")) {
    StatusOr<JobStatus> status = DecodeStatusAt(*st, "status", &errors);
    if (status.ok()) job.status = std::move(status).value();
  }
  if (!errors.empty()) return FieldErrorsToStatus(info.name, job.name, errors);
  return job;
}

nlohmann::json EncodeStatus(const JobStatus& status) {
  json out = json::object();
  json conds = json::array();
  for (const Condition& c : status.conditions) {
    json jc = {{"type", c.type}, {"status", c.status}};
    if (!c.reason.empty()) jc["reason"] = c.reason;
    if (!c.message.empty()) jc["message"] = c.message;
    jc["lastUpdateTime"] = FormatRfc3339(c.last_update_time);
    jc["lastTransitionTime"] = FormatRfc3339(c.last_transition_time);
    conds.push_back(std::move(jc));
  }
  out["conditions"] = std::move(conds);
  json rs = json::object();
  for (const auto& [type, s] : status.replica_statuses) {
    json js = json::object();
    if (s.active) js["active"] = s.active;
    if (s.succeeded) js["succeeded"] = s.succeeded;
    if (s.failed) js["failed"] = s.failed;
    if (!s.selector.empty()) js["selector"] = s.selector;
    if (s.restarts) js["restarts"] = s.restarts;
    // Written whenever restarts is, so that a reader never takes restarts for it (see decoding).
    if (s.restarts || s.past_restarts) js["pastRestarts"] = s.past_restarts;
    rs[type] = std::move(js);
  }
  out["replicaStatuses"] = std::move(rs);
  if (status.start_time) out["startTime"] = FormatRfc3339(*status.start_time);
  if (status.completion_time) out["completionTime"] = FormatRfc3339(*status.completion_time);
  if (status.last_reconcile_time)
    out["lastReconcileTime"] = FormatRfc3339(*status.last_reconcile_time);
  return out;
}

nlohmann::json EncodeJob(const Job& job) {
  const KindInfo& info = job.info();
  json out = {{"apiVersion", job.api_version}, {"kind", info.name}};
  json metadata = job.metadata.is_object() ? job.metadata : json::object();
  if (!job.name.empty()) metadata["name"] = job.name;
  metadata["namespace"] = job.namespace_;
  out["metadata"] = std::move(metadata);

  json spec = job.spec.is_object() ? job.spec : json::object();
  if (job.has_replica_specs && !info.runtime_resolved) {
    json specs = json::object();
    for (const auto& [type, rs] : job.replica_specs) {
      json jrs = json::object();
      // Keep fields of the replica spec the model does not know.
      const json& original = job.spec.value(info.spec_map_field, json::object());
      if (original.is_object() && original.contains(type) && original[type].is_object())
        jrs = original[type];
      if (rs.replicas) jrs["replicas"] = *rs.replicas;
      if (!rs.restart_policy.empty()) jrs["restartPolicy"] = rs.restart_policy;
      if (!rs.pod_template.is_null()) jrs["template"] = rs.pod_template;
      specs[type] = std::move(jrs);
    }
    spec[info.spec_map_field] = std::move(specs);
  }
  json rp = spec.value("runPolicy", json::object());
  if (!rp.is_object()) rp = json::object();
  const RunPolicy& p = job.run_policy;
  if (p.clean_pod_policy) rp["cleanPodPolicy"] = *p.clean_pod_policy;
  if (p.ttl_seconds_after_finished) rp["ttlSecondsAfterFinished"] = *p.ttl_seconds_after_finished;
  if (p.active_deadline_seconds) rp["activeDeadlineSeconds"] = *p.active_deadline_seconds;
  if (p.backoff_limit) rp["backoffLimit"] = *p.backoff_limit;
  if (p.suspend) rp["suspend"] = *p.suspend;
  if (p.managed_by) rp["managedBy"] = *p.managed_by;
  if (!rp.empty()) spec["runPolicy"] = std::move(rp);
  PluginFor(job.kind).EncodeSpec(job, &spec);
  out["spec"] = std::move(spec);
  const JobStatus& s = job.status;
  if (!s.conditions.empty() || !s.replica_statuses.empty() || s.start_time)
    out["status"] = EncodeStatus(s);
  return out;
}

bool ManagedByUs(const std::optional<std::string>& managed_by) {
  return !managed_by || managed_by->empty() || *managed_by == kManagedByKubeflow ||
         *managed_by == kManagedByMpiOperator || *managed_by == kManagedByTrainer;
}

bool ObjectManagedByUs(const nlohmann::json& object) {
  const nlohmann::json* p = &object;
  for (const char* k : {"spec", "runPolicy", "managedBy"}) {
    if (!p->is_object() || !p->contains(k)) return true;
    p = &(*p)[k];
  }
  return !p->is_string() || ManagedByUs(std::optional<std::string>(p->get<std::string>()));
}

bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253 || s.front() == '.' || s.front() == '-' || s.back() == '.' ||
      s.back() == '-' || s.find("..") != std::string::npos)
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
}

std::vector<ClaimRef> JobClaims(const Job& job) {
  std::map<std::string, ClaimRef> found;
  for (const auto& [type, spec] : job.replica_specs) {
    const json& tmpl = spec.pod_template;
    if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) continue;
    const json& pod_spec = tmpl["spec"];
    if (!pod_spec.contains("volumes") || !pod_spec["volumes"].is_array()) continue;
    const json& volumes = pod_spec["volumes"];
    for (size_t v = 0; v < volumes.size(); ++v) {
      if (!volumes[v].is_object() || !volumes[v].contains("persistentVolumeClaim")) continue;
      std::string claim = StringAt(volumes[v]["persistentVolumeClaim"], "claimName");
      if (!IsDnsSubdomain(claim) || found.count(claim)) continue;
      found[claim] = {
          claim, ReplicaSpecPath(job, type) + ".template.spec.volumes[" + std::to_string(v) + "]"};
    }
  }
  std::vector<ClaimRef> out;
  for (auto& [name, claim] : found) out.push_back(std::move(claim));
  return out;
}

}  // namespace trainctl::api
