#include "operator/mpi_writer.h"

#include "api/json_fields.h"
#include "api/kinds.h"
#include "common/ssh_keys.h"
#include "operator/cache_types.h"
#include "operator/mpi_children.h"
#include "operator/mpi_v2_children.h"

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
    return NotTheJobs(job, name);
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
    before.rbac = true;
  }
  if (Status st = WriteConfig(job, config, before); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  written_[uid] = {true, config_text};
  return Status::Ok();
}

void MpiWriter::Warn(const api::Job& job, const std::string& reason, const std::string& message) {
  if (!recorder_) return;
  kube::EventInput e;
  e.object = {api::kApiVersion, "MPIJob", job.namespace_, job.name, Uid(job)};
  e.type = "Warning";
  e.reason = reason;
  e.message = message;
  recorder_->Record(std::move(e));
}

Status MpiWriter::NotTheJobs(const api::Job& job, const std::string& name) {
  std::string message = "Resource \"" + name + "\" of MPIJobKind \"MPIJob\" already exists and " +
                        "is not managed by MPIJob";
  Warn(job, "ErrResourceExists", message);
  return AlreadyExistsError(message);
}

Status MpiWriter::WriteConfig(const api::Job& job, const json& config, const Written& before) {
  if (before.config == config["data"].dump()) return Status::Ok();
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
    written_[Uid(job)].rbac = before.rbac;  // a retry writes only what is still missing
  }
  return st;
}

Status MpiWriter::EnsureV2(const api::Job& job, const std::vector<std::string>& running_workers,
                           const std::string& cluster_domain, bool makes_pods) {
  std::string uid = Uid(job);
  Written before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = written_[uid];
  }
  json config = MpiV2ConfigMap(job, cluster_domain, running_workers);
  if (!before.rbac) {
    // The operator may create Secrets but not read them (docs/security.md). The ConfigMap,
    // which it may read, is made first and witnesses the Secret: a `<job>-ssh` that exists
    // when this pass made the job's ConfigMap is someone else's; one that exists beside the
    // job's older ConfigMap is the job's own, from an earlier pass.
    StatusOr<json> made = client_->Create(kube::kConfigMaps, job.namespace_, config);
    Count("create", kube::kConfigMaps,
          made.ok() || made.status().code() == StatusCode::kAlreadyExists);
    if (!made.ok() && made.status().code() != StatusCode::kAlreadyExists) return made.status();
    if (!made.ok()) {
      if (Status st = Upsert(job, kube::kConfigMaps, config, "data", true); !st.ok()) return st;
    }
    Status secret = CreateSecret(job);
    if (secret.code() == StatusCode::kAlreadyExists && made.ok())
      return NotTheJobs(job, job.name + "-ssh");
    if (!secret.ok() && secret.code() != StatusCode::kAlreadyExists) return secret;
    if (Status st = Upsert(job, kube::kServices, MpiV2Service(job), nullptr, true); !st.ok())
      return st;
  } else {
    if (Status st = WriteConfig(job, config, before); !st.ok()) return st;
    if (makes_pods) {
      if (Status st = RecreateSecret(job); !st.ok()) return st;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  written_[uid] = {true, config["data"].dump()};
  return Status::Ok();
}

Status MpiWriter::CreateSecret(const api::Job& job) {
  StatusOr<SshKeyPair> keys = GenerateSshKeyPair();
  if (!keys.ok()) return keys.status();
  Status secret = client_->CreateOnly(kube::kSecrets, job.namespace_, MpiV2SshSecret(job, *keys));
  Count("create", kube::kSecrets, secret.ok() || secret.code() == StatusCode::kAlreadyExists);
  return secret;
}

Status MpiWriter::RecreateSecret(const api::Job& job) {
  Status secret = CreateSecret(job);
  if (secret.code() == StatusCode::kAlreadyExists) return Status::Ok();  // still there
  if (!secret.ok()) return secret;
  Warn(job, "SSHAuthSecretRecreated",
       "Secret " + job.name +
           "-ssh was gone (deleted?) and was made again with new keys for the "
           "pods made now; the running pods' volumes get the new keys when the kubelet next "
           "refreshes them");
  return Status::Ok();
}

Status MpiWriter::CreateLauncherJob(const api::Job& job) {
  StatusOr<BuiltJob> built = BuildMpiV2Launcher(job);
  if (!built.ok()) {
    Warn(job, "FailedCreatePod", "Error creating: " + built.status().message());
    return built.status();
  }
  for (const engine::Event& e : built->events)
    if (e.type == "Warning") Warn(job, e.reason, e.message);
  Status st = Upsert(job, kube::kBatchJobs, built->job, nullptr, true);
  if (!st.ok() && st.code() != StatusCode::kAlreadyExists)
    Warn(job, "FailedCreatePod", "Error creating: " + st.message());
  return st;
}

Status MpiWriter::SuspendLauncherJob(const api::Job& job, bool suspend) {
  StatusOr<json> patched =
      client_->Patch(kube::kBatchJobs, job.namespace_, job.name + "-launcher",
                     kube::PatchType::kMerge, json({{"spec", {{"suspend", suspend}}}}).dump());
  Count("patch", kube::kBatchJobs, patched.ok());
  if (!patched.ok() && patched.status().code() == StatusCode::kNotFound) return Status::Ok();
  return patched.status();
}

void MpiWriter::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  written_.erase(uid);
}

}  // namespace trainctl::op
