#include "operator/trainer_status_writer.h"

namespace trainctl::op {

using nlohmann::json;

json TrainerStatusPatch(const api::TrainerStatus& status) {
  json trainer = api::TrainerStatusJson(status);
  for (const char* key : {"progressPercentage", "estimatedRemainingSeconds", "metrics"})
    if (!trainer.contains(key)) trainer[key] = nullptr;
  return {{"status", {{"trainerStatus", std::move(trainer)}}}};
}

json TrainerStatusAnnotationPatch(const api::TrainerStatus& status) {
  return {{"metadata",
           {{"annotations",
             {{api::kTrainerStatusAnnotation, api::TrainerStatusJson(status).dump()}}}}}};
}

kube::Resource StatusTargetResource(const api::StatusTarget& t) {
  if (t.IsTrainJob()) return kube::kTrainJobs;
  const size_t slash = t.group_version.find('/');
  return {t.group_version.substr(0, slash), t.group_version.substr(slash + 1), t.plural};
}

namespace {

std::string KeyOf(const api::StatusTarget& t) {
  return t.plural + "/" + t.namespace_ + "/" + t.name;
}

}  // namespace

void TrainerStatusWriter::Accept(const api::StatusTarget& target, api::TrainerStatus status) {
  const std::string key = KeyOf(target);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (targets_.size() >= 4096 && !targets_.count(key)) targets_.clear();
    targets_[key] = target;
  }
  writer_.Put(key, std::move(status));
}

bool TrainerStatusWriter::Exists(const api::StatusTarget& target) {
  const std::string key = KeyOf(target);
  const Time now = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seen_.find(key);
    if (it != seen_.end() && it->second > now) return true;
  }
  if (!client_->Get(StatusTargetResource(target), target.namespace_, target.name).ok())
    return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (seen_.size() >= 4096) seen_.clear();
  seen_[key] = now + Duration(30000);
  return true;
}

Status TrainerStatusWriter::Write(const std::string& key, const api::TrainerStatus& status) {
  api::StatusTarget target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) return Status::Ok();  // forgotten (over the bound): a newer
    target = it->second;                            // report brings it back
  }
  if (target.IsTrainJob())
    return client_
        ->Patch(kube::kTrainJobs, target.namespace_, target.name, kube::PatchType::kMerge,
                TrainerStatusPatch(status).dump(), {}, "status")
        .status();
  return client_
      ->Patch(StatusTargetResource(target), target.namespace_, target.name, kube::PatchType::kMerge,
              TrainerStatusAnnotationPatch(status).dump())
      .status();
}

}  // namespace trainctl::op
