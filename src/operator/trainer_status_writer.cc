#include "operator/trainer_status_writer.h"

#include <chrono>

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
  coalescer_.Put(key, std::move(status));
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

void TrainerStatusWriter::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (stopping_) break;
      lock.unlock();
      Flush();
      lock.lock();
    }
  });
}

void TrainerStatusWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  Flush(/*everything=*/true);
}

void TrainerStatusWriter::Flush(bool everything) {
  auto taken = everything ? coalescer_.TakeAll() : coalescer_.TakeDue(clock_->Now());
  for (auto& [key, status] : taken) Write(key, std::move(status));
}

void TrainerStatusWriter::Write(const std::string& key, api::TrainerStatus status) {
  api::StatusTarget target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) return;  // forgotten (over the bound): a newer report brings it
    target = it->second;
  }
  StatusOr<json> written =
      target.IsTrainJob()
          ? client_->Patch(kube::kTrainJobs, target.namespace_, target.name,
                           kube::PatchType::kMerge, TrainerStatusPatch(status).dump(), {}, "status")
          : client_->Patch(StatusTargetResource(target), target.namespace_, target.name,
                           kube::PatchType::kMerge, TrainerStatusAnnotationPatch(status).dump());
  if (written.ok()) {
    ++writes_;
    return;
  }
  ++failures_;
  if (written.status().code() != StatusCode::kNotFound) coalescer_.Return(key, std::move(status));
}

TrainerStatusWriterCounts TrainerStatusWriter::counts() const {
  return {coalescer_.counts(), writes_.load(), failures_.load()};
}

}  // namespace trainctl::op
