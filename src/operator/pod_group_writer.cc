#include "operator/pod_group_writer.h"

#include "api/json_fields.h"
#include "api/kinds.h"
#include "operator/cache_types.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

std::string Uid(const api::Job& job) {
  return job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : "";
}

}  // namespace

void PodGroupWriter::Count(const std::string& verb, bool ok) {
  if (metrics_) metrics_->CountRequest(verb, "podgroups", ok);
}

void PodGroupWriter::Event(const api::Job& job, const std::string& type, const std::string& reason,
                           const std::string& message) {
  if (!recorder_) return;
  kube::EventInput e;
  e.object = {api::kApiVersion, job.info().name, job.namespace_, job.name, Uid(job)};
  e.type = type;
  e.reason = reason;
  e.message = message;
  recorder_->Record(std::move(e));
}

StatusOr<GangHold> PodGroupWriter::Ensure(const api::Job& job) {
  kube::Resource resource = PodGroupResource(gang_.kind);
  if (gang_.kind == GangKind::kSchedulerPlugins) {
    // Nothing is read back from a scheduler-plugins group: when what was last written is still
    // what the job asks for, there is nothing to do (Volcano's phase must be read every time).
    StatusOr<json> desired = DesiredPodGroup(job, gang_, json());
    if (!desired.ok()) return desired.status();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = written_.find(Uid(job));
    if (it != written_.end() && it->second == (*desired)["spec"].dump()) return GangHold{};
  }
  json existing;
  StatusOr<json> got = client_->Get(resource, job.namespace_, job.name);
  Count("get", got.ok() || got.status().code() == StatusCode::kNotFound);
  if (got.ok()) {
    existing = std::move(*got);
  } else if (got.status().code() != StatusCode::kNotFound) {
    return got.status();
  }
  if (existing.is_object() && ControllerOwnerUid(existing) != Uid(job))
    return AlreadyExistsError("PodGroup \"" + job.name + "\" exists and is not controlled by " +
                              std::string(job.info().name) + " " + job.name);
  StatusOr<json> desired = DesiredPodGroup(job, gang_, existing);
  if (!desired.ok()) return desired.status();
  std::string spec = (*desired)["spec"].dump();
  std::string last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = written_.find(Uid(job));
    if (it != written_.end()) last = it->second;
  }
  if (!existing.is_object()) {
    StatusOr<json> created = client_->Create(resource, job.namespace_, *desired);
    Count("create", created.ok());
    if (!created.ok()) return created.status();
    existing = std::move(*created);
  } else if (last != spec) {
    // After a restart nothing is remembered: compare with what the server holds (it may write
    // quantities canonically, which costs one needless update at most).
    if (!last.empty() || existing.value("spec", json::object()) != (*desired)["spec"]) {
      json updated = existing;
      for (auto it = (*desired)["spec"].begin(); it != (*desired)["spec"].end(); ++it)
        updated["spec"][it.key()] = it.value();
      if (updated["spec"].contains("minResources") && !(*desired)["spec"].contains("minResources"))
        updated["spec"].erase("minResources");
      StatusOr<json> written = client_->Update(resource, job.namespace_, updated);
      Count("update", written.ok());
      if (!written.ok()) return written.status();
      existing = std::move(*written);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    written_[Uid(job)] = spec;
  }
  return GangHoldOf(gang_, existing);
}

Status PodGroupWriter::Remove(const api::Job& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = written_.find(Uid(job));
    if (it != written_.end() && it->second.empty()) return Status::Ok();  // already removed
  }
  Status st = client_->Delete(PodGroupResource(gang_.kind), job.namespace_, job.name,
                              kube::DeleteOptions{});
  Count("delete", st.ok() || st.code() == StatusCode::kNotFound);
  if (st.ok()) {
    Event(job, "Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup");
    Event(job, "Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: " + job.name);
  } else if (st.code() != StatusCode::kNotFound) {
    Event(job, "Warning", "FailedDeletePodGroup", "Error deleting: " + st.message());
    return st;
  }
  std::lock_guard<std::mutex> lock(mu_);
  written_[Uid(job)] = "";
  return Status::Ok();
}

void PodGroupWriter::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  written_.erase(uid);
}

}  // namespace trainctl::op
