#include "operator/expectations.h"

#include <algorithm>

namespace trainctl::op {

void Expectations::ExpectCreate(const std::string& job, const engine::ReplicaRef& replica, Time now,
                                int attempt) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job][replica.name] = {true, replica, now, attempt};
}

void Expectations::ExpectDelete(const std::string& job, const std::string& pod_name, Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[job][pod_name] = {false, {"", 0, pod_name}, now};
}

void Expectations::Cancel(const std::string& job, const std::string& pod_name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  it->second.erase(pod_name);
  if (it->second.empty()) jobs_.erase(it);
}

std::vector<engine::ReplicaObservation> Expectations::Overlay(
    const std::string& job, std::vector<engine::ReplicaObservation> observed, Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return observed;
  auto& pending = it->second;
  for (auto p = pending.begin(); p != pending.end();) {
    const std::string& name = p->first;
    bool expired = now - p->second.since >= ttl_;
    engine::ReplicaObservation* seen = nullptr;
    for (engine::ReplicaObservation& o : observed)
      if (o.name == name) seen = &o;
    bool satisfied = p->second.create ? seen != nullptr : (!seen || seen->terminating);
    if (satisfied || expired) {
      p = pending.erase(p);
      continue;
    }
    if (p->second.create) {
      engine::ReplicaObservation o;
      o.name = name;
      o.type = p->second.replica.type;
      o.index = p->second.replica.index;
      o.attempt = p->second.attempt;
      o.phase = engine::Phase::kPending;
      observed.push_back(std::move(o));
    } else {
      seen->terminating = true;
    }
    ++p;
  }
  if (pending.empty()) jobs_.erase(it);
  return observed;
}

void Expectations::ExpectService(const std::string& job, const std::string& service_name,
                                 Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  services_[job][service_name] = now;
}

void Expectations::CancelService(const std::string& job, const std::string& service_name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = services_.find(job);
  if (it == services_.end()) return;
  it->second.erase(service_name);
  if (it->second.empty()) services_.erase(it);
}

std::vector<std::string> Expectations::OverlayServices(const std::string& job,
                                                       std::vector<std::string> names, Time now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = services_.find(job);
  if (it == services_.end()) return names;
  for (auto p = it->second.begin(); p != it->second.end();) {
    bool seen = std::find(names.begin(), names.end(), p->first) != names.end();
    if (seen || now - p->second >= ttl_) {
      p = it->second.erase(p);
      continue;
    }
    names.push_back(p->first);
    ++p;
  }
  if (it->second.empty()) services_.erase(it);
  return names;
}

void Expectations::Forget(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(job);
  services_.erase(job);
}

size_t Expectations::Pending(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.size();
}

}  // namespace trainctl::op
