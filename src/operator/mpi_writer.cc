#include "operator/mpi_writer.h"

#include "api/json_fields.h"
#include "api/kinds.h"
#include "operator/cache_types.h"
#include "operator/mpi_children.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

const kube::Resource kServiceAccounts{"", "v1", "serviceaccounts"};
const kube::Resource kRoles{"rbac.authorization.k8s.io", "v1", "roles"};
const kube::Resource kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings"};

std::string Uid(const api::Job& job) {
  return job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : "";
}

}  // namespace

void MpiWriter::Count(const std::string& verb, const kube::Resource& r, bool ok) {
  if (metrics_) metrics_->CountRequest(verb, r.plural, ok);
}

Status MpiWriter::Upsert(const api::Job& job, const kube::Resource& resource, const json& object,
                         const char* compared_field, bool must_be_owned) {
  StatusOr<json> created = client_->Create(resource, job.namespace_, object);
  Count("create", resource, created.ok() || created.status().code() == StatusCode::kAlreadyExists);
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  std::string name = object["metadata"]["name"];
  StatusOr<json> current = client_->Get(resource, job.namespace_, name);
  Count("get", resource, current.ok());
  if (!current.ok()) return current.status();
  if (ControllerOwnerUid(*current) != Uid(job)) {
    if (!must_be_owned) return Status::Ok();
    std::string message = "Resource \"" + name + "\" of MPIJobKind \"MPIJob\" already exists and " +
                          "is not managed by MPIJob";
    if (recorder_) {
      kube::EventInput e;
      e.object = {api::kApiVersion, "MPIJob", job.namespace_, job.name, Uid(job)};
      e.type = "Warning";
      e.reason = "ErrResourceExists";
      e.message = message;
      recorder_->Record(std::move(e));
    }
    return AlreadyExistsError(message);
  }
  if (!compared_field ||
      (current->contains(compared_field) && (*current)[compared_field] == object[compared_field]))
    return Status::Ok();
  json updated = *current;
  updated[compared_field] = object[compared_field];
  StatusOr<json> st = client_->Update(resource, job.namespace_, updated);
  Count("update", resource, st.ok());
  return st.status();
}

Status MpiWriter::Ensure(const api::Job& job, const std::vector<std::string>& running_workers) {
  std::string uid = Uid(job);
  json config = MpiConfigMap(job, running_workers);
  std::string config_text = config["data"].dump();
  Written before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = written_[uid];
  }
  if (!before.rbac) {
    if (Status st = Upsert(job, kServiceAccounts, MpiLauncherServiceAccount(job), nullptr, false);
        !st.ok())
      return st;
    if (Status st = Upsert(job, kRoles, MpiLauncherRole(job), "rules", true); !st.ok()) return st;
    if (Status st = Upsert(job, kRoleBindings, MpiLauncherRoleBinding(job), nullptr, true);
        !st.ok())
      return st;
  }
  if (before.config != config_text) {
    Status st = Status::Ok();
    if (!before.config.empty()) {
      // Ours, written before: only the data changed (discover_hosts.sh).
      StatusOr<json> patched =
          client_->Patch(kube::kConfigMaps, job.namespace_, config["metadata"]["name"],
                         kube::PatchType::kMerge, json({{"data", config["data"]}}).dump());
      Count("patch", kube::kConfigMaps, patched.ok());
      st = patched.status();
    }
    if (before.config.empty() || st.code() == StatusCode::kNotFound)
      st = Upsert(job, kube::kConfigMaps, config, "data", true);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      written_[uid].rbac = true;
      return st;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  written_[uid] = {true, config_text};
  return Status::Ok();
}

void MpiWriter::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  written_.erase(uid);
}

}  // namespace trainctl::op
