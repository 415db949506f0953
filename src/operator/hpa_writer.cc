#include "operator/hpa_writer.h"

#include "api/json_fields.h"
#include "operator/hpa.h"

namespace trainctl::op {

using nlohmann::json;

void HpaWriter::Count(const std::string& verb, bool ok) {
  if (metrics_) metrics_->CountRequest(verb, kHorizontalPodAutoscalers.plural, ok);
}

Status HpaWriter::Sync(const api::Job& job) {
  std::string uid = job.metadata.is_object() ? api::StringAt(job.metadata, "uid") : "";
  std::optional<json> desired = DesiredHpa(job);
  bool suspended = job.run_policy.suspend.value_or(false);
  std::string target = desired && !suspended ? (*desired)["spec"].dump() : "absent";
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = done_.find(uid);
    if (it != done_.end() ? it->second == target : !desired) return Status::Ok();
  }
  json existing;
  StatusOr<json> got = client_->Get(kHorizontalPodAutoscalers, job.namespace_, job.name);
  Count("get", got.ok() || got.status().code() == StatusCode::kNotFound);
  if (got.ok()) {
    existing = std::move(*got);
  } else if (got.status().code() != StatusCode::kNotFound) {
    return got.status();
  }
  Status st = Status::Ok();
  switch (DecideHpa(job, desired, existing)) {
    case HpaAction::kNone:
      break;
    case HpaAction::kCreate: {
      StatusOr<json> created = client_->Create(kHorizontalPodAutoscalers, job.namespace_, *desired);
      Count("create", created.ok());
      st = created.status();
      break;
    }
    case HpaAction::kUpdate: {
      json updated = existing;
      updated["spec"] = (*desired)["spec"];
      StatusOr<json> written = client_->Update(kHorizontalPodAutoscalers, job.namespace_, updated);
      Count("update", written.ok());
      st = written.status();
      break;
    }
    case HpaAction::kDelete: {
      kube::DeleteOptions options;
      options.precondition_uid = api::StringAt(existing["metadata"], "uid");
      st = client_->Delete(kHorizontalPodAutoscalers, job.namespace_, job.name, options);
      Count("delete", st.ok() || st.code() == StatusCode::kNotFound);
      if (st.code() == StatusCode::kNotFound) st = Status::Ok();
      break;
    }
  }
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  done_[uid] = target;
  return Status::Ok();
}

void HpaWriter::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  done_.erase(uid);
}

}  // namespace trainctl::op
