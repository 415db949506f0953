#include "kube/leader_election.h"

#include <cstdio>
#include <ctime>

#include "kube/json_path.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

const Resource& LeaseResource() { return kLeases; }

std::optional<LeaseRecord> RecordOf(const json& lease) {
  if (!lease.is_object() || !lease.contains("spec") || !lease["spec"].is_object())
    return LeaseRecord{};
  const json& s = lease["spec"];
  LeaseRecord r;
  auto str = [&](const char* k) {
    return s.contains(k) && s[k].is_string() ? s[k].get<std::string>() : std::string();
  };
  auto num = [&](const char* k) {
    return s.contains(k) && s[k].is_number_integer() ? s[k].get<int>() : 0;
  };
  r.holder = str("holderIdentity");
  r.lease_duration_seconds = num("leaseDurationSeconds");
  r.acquire_time = str("acquireTime");
  r.renew_time = str("renewTime");
  r.transitions = num("leaseTransitions");
  return r;
}

json SpecOf(const LeaseRecord& r) {
  json spec = {{"holderIdentity", r.holder},
               {"leaseDurationSeconds", r.lease_duration_seconds},
               {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return spec;
}

}  // namespace

LeaseAction DecideLease(const LeaseView& view, const std::string& identity, Time now,
                        Duration lease_duration) {
  if (!view.record) return LeaseAction::kCreate;
  if (view.record->holder == identity) return LeaseAction::kRenew;
  if (view.record->holder.empty()) return LeaseAction::kTakeOver;
  if (now - view.observed_at >= lease_duration) return LeaseAction::kTakeOver;
  return LeaseAction::kWait;
}

std::string FormatMicroTime(Time t) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(us % 1000000));
  return buf;
}

LeaderElector::LeaderElector(Client* client, const Clock* clock, LeaderElectionConfig config,
                             Callbacks callbacks)
    : client_(client),
      clock_(clock),
      config_(std::move(config)),
      callbacks_(std::move(callbacks)) {}

void LeaderElector::Stop() {
  stopping_ = true;
  cv_.notify_all();
}

void LeaderElector::SleepFor(Duration d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_.load(); });
}

bool LeaderElector::TryAcquireOrRenew() {
  Time now = clock_->Now();
  StatusOr<json> current = client_->Get(LeaseResource(), config_.namespace_, config_.name);
  LeaseView view;
  if (current.ok()) {
    std::optional<LeaseRecord> record = RecordOf(*current);
    std::string rv = StringAt(*current, {"metadata", "resourceVersion"});
    if (!observed_ || !(*observed_ == *record) || rv != observed_resource_version_) {
      observed_ = record;
      observed_resource_version_ = rv;
      observed_at_ = now;
    }
    view.record = observed_;
    view.observed_at = observed_at_;
    if (!record->holder.empty() && record->holder != config_.identity &&
        record->holder != last_leader_) {
      last_leader_ = record->holder;
      if (callbacks_.on_new_leader) callbacks_.on_new_leader(record->holder);
    }
  } else if (current.status().code() != StatusCode::kNotFound) {
    return false;  // cannot see the lease: certainly not renewed
  }
  int seconds = static_cast<int>(config_.lease_duration.count() / 1000);
  LeaseRecord next;
  next.holder = config_.identity;
  next.lease_duration_seconds = seconds > 0 ? seconds : 1;
  next.renew_time = FormatMicroTime(now);
  switch (DecideLease(view, config_.identity, now, config_.lease_duration)) {
    case LeaseAction::kWait:
      return false;
    case LeaseAction::kCreate: {
      next.acquire_time = next.renew_time;
      json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                    {"kind", "Lease"},
                    {"metadata", {{"name", config_.name}, {"namespace", config_.namespace_}}},
                    {"spec", SpecOf(next)}};
      StatusOr<json> created = client_->Create(LeaseResource(), config_.namespace_, lease);
      if (!created.ok()) return false;
      observed_ = next;
      observed_resource_version_ = StringAt(*created, {"metadata", "resourceVersion"});
      observed_at_ = now;
      return true;
    }
    case LeaseAction::kRenew:
      next.acquire_time = observed_->acquire_time;
      next.transitions = observed_->transitions;
      break;
    case LeaseAction::kTakeOver:
      next.acquire_time = next.renew_time;
      next.transitions = observed_->transitions + 1;
      break;
  }
  json lease = *current;
  lease["spec"] = SpecOf(next);
  StatusOr<json> updated = client_->Update(LeaseResource(), config_.namespace_, lease);
  if (!updated.ok()) return false;  // 409: somebody else wrote first
  observed_ = next;
  observed_resource_version_ = StringAt(*updated, {"metadata", "resourceVersion"});
  observed_at_ = now;
  return true;
}

void LeaderElector::Release() {
  StatusOr<json> current = client_->Get(LeaseResource(), config_.namespace_, config_.name);
  if (!current.ok()) return;
  std::optional<LeaseRecord> record = RecordOf(*current);
  if (!record || record->holder != config_.identity) return;
  LeaseRecord released = *record;
  released.holder = "";
  released.lease_duration_seconds = 1;
  released.renew_time = FormatMicroTime(clock_->Now());
  json lease = *current;
  lease["spec"] = SpecOf(released);
  // Best effort: if this write fails the lease simply expires after its duration.
  client_->Update(LeaseResource(), config_.namespace_, lease).status().IgnoreError();
}

void LeaderElector::Run() {
  while (!stopping_ && !TryAcquireOrRenew()) SleepFor(config_.retry_period);
  if (stopping_) return;
  leading_ = true;
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  Time last_renew = clock_->Now();
  while (!stopping_) {
    SleepFor(config_.retry_period);
    if (stopping_) break;
    if (TryAcquireOrRenew()) {
      last_renew = clock_->Now();
    } else if (clock_->Now() - last_renew >= config_.renew_deadline) {
      break;  // lost it, or cannot prove we still hold it
    }
  }
  leading_ = false;
  if (stopping_ && config_.release_on_stop) Release();
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace trainctl::kube
