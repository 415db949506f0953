#include "operator/progress_probe.h"

#include <algorithm>

#include "api/kind_plugin.h"

namespace trainctl::op {
namespace {

constexpr Duration kMinPeriod{10000};

Duration PeriodOf(const api::ProgressPolicy& policy) {
  return std::max<Duration>(policy.timeout / 4, kMinPeriod);
}

bool Running(const engine::ReplicaObservation& o) {
  return o.phase == engine::Phase::kRunning && !o.terminating;
}

}  // namespace

ProbePlan PlanProbe(const api::Job& job, const api::ProgressPolicy& policy,
                    const std::vector<engine::ReplicaObservation>& observed,
                    const ProbeState& state, Time now) {
  ProbePlan plan;
  Duration period = PeriodOf(policy);
  if (state.last_probe) {
    Duration since = std::chrono::duration_cast<Duration>(now - *state.last_probe);
    if (since < period) {
      plan.next = period - since;
      return plan;
    }
    plan.since_seconds = (since.count() + 999) / 1000;
  } else {
    plan.since_seconds = std::chrono::duration_cast<std::chrono::seconds>(policy.timeout).count();
  }
  std::vector<const engine::ReplicaObservation*> running;
  for (const engine::ReplicaObservation& o : observed)
    if (Running(o)) running.push_back(&o);
  const api::KindPlugin& plugin = api::PluginFor(job.kind);
  std::stable_sort(
      running.begin(), running.end(),
      [&](const engine::ReplicaObservation* a, const engine::ReplicaObservation* b) {
        bool am = plugin.IsMasterRole(job, a->type, a->index) || job.info().IsLauncher(a->type);
        bool bm = plugin.IsMasterRole(job, b->type, b->index) || job.info().IsLauncher(b->type);
        if (am != bm) return am;
        if (a->index != b->index) return a->index < b->index;
        return a->type < b->type;
      });
  for (const engine::ReplicaObservation* o : running) {
    if (plan.pods.size() == kMaxPodsPerProbe) break;
    plan.pods.push_back(o->name);
  }
  plan.due = !plan.pods.empty();
  plan.next = period;
  return plan;
}

ProgressProber::ProgressProber(kube::Client* client, Metrics* metrics, ProbeBudget* budget)
    : client_(client), metrics_(metrics), budget_(budget) {}

std::optional<Duration> ProgressProber::Observe(const api::Job& job, const std::string& uid,
                                                std::vector<engine::ReplicaObservation>* observed,
                                                Time now) {
  std::optional<api::ProgressPolicy> policy = api::ProgressPolicyOf(job);
  if (!policy) return std::nullopt;
  ProbeState state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = jobs_[uid];
  }
  ProbePlan plan = PlanProbe(job, *policy, *observed, state, now);
  if (plan.due) {
    size_t asked = 0;
    std::optional<Time> seen;
    kube::PodLogOptions options;
    options.container = job.info().default_container;
    options.since_seconds = plan.since_seconds;
    options.limit_bytes = 1;
    bool start = true;
    if (state.slot) {
      start = now >= *state.slot;  // the turn reserved earlier (its requests are paid for)
    } else {
      Time slot = budget_->Reserve(plan.pods.size(), now);
      if (slot > now) {
        state.slot = slot;
        start = false;
      }
    }
    if (!start) {
      plan.next = std::chrono::duration_cast<Duration>(*state.slot - now);
      std::lock_guard<std::mutex> lock(mu_);
      jobs_[uid] = state;
    } else {
      state.slot.reset();
    }
    for (size_t i = 0; start && i < plan.pods.size(); ++i) {
      const std::string& pod = plan.pods[i];
      StatusOr<std::string> log = client_->PodLog(job.namespace_, pod, options);
      if (metrics_) metrics_->CountRequest("get", "pods/log", log.ok());
      if (!log.ok()) break;  // unknown: this probe proves nothing
      ++asked;
      if (!log->empty()) {
        seen = now;
        break;
      }
    }
    if (start && asked < plan.pods.size()) {
      // Give back what was reserved and not asked (a healthy job asks one pod, not four).
      budget_->GiveBack(plan.pods.size() - std::max<size_t>(asked, 1));
    }
    // Silence counts only when every planned pod answered (an error cuts a probe short).
    bool probed = start && (seen || asked == plan.pods.size());
    if (probed) {
      // No output seen: none for at least the window the probe covered.
      if (!seen && !state.last_output) seen = now - std::chrono::seconds(plan.since_seconds);
      if (seen) state.last_output = seen;
      state.last_probe = now;
      std::lock_guard<std::mutex> lock(mu_);
      jobs_[uid] = state;
    }
  }
  if (state.last_output && state.last_probe) {
    Time reported = *state.last_output + (now - *state.last_probe);
    for (engine::ReplicaObservation& o : *observed)
      if (Running(o)) o.last_output = reported;
  }
  return plan.next;
}

void ProgressProber::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(uid);
}

}  // namespace trainctl::op
