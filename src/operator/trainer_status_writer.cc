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

void TrainerStatusWriter::Accept(const std::string& ns, const std::string& name,
                                 api::TrainerStatus status) {
  coalescer_.Put(ns + "/" + name, std::move(status));
}

bool TrainerStatusWriter::Exists(const std::string& ns, const std::string& name) {
  const std::string key = ns + "/" + name;
  const Time now = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seen_.find(key);
    if (it != seen_.end() && it->second > now) return true;
  }
  if (!client_->Get(kube::kTrainJobs, ns, name).ok()) return false;
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
  const size_t slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  StatusOr<json> written = client_->Patch(kube::kTrainJobs, ns, name, kube::PatchType::kMerge,
                                          TrainerStatusPatch(status).dump(), {}, "status");
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
