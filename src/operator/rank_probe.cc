#include "operator/rank_probe.h"

#include <algorithm>

#include "api/json_fields.h"
#include "api/kind_plugin.h"
#include "api/replica_env.h"
#include "api/torchrun_report.h"
#include "api/validation.h"
#include "common/text.h"
#include "operator/metrics.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

constexpr size_t kOutputBytes = 2048;

bool Running(const engine::ReplicaObservation& o) {
  return o.phase == engine::Phase::kRunning && !o.terminating;
}

// The container's command and args, joined by spaces.
std::string CommandLine(const json& container) {
  std::string out;
  for (const char* key : {"command", "args"}) {
    auto list = container.find(key);
    if (list == container.end() || !list->is_array()) continue;
    for (const json& word : *list)
      if (word.is_string()) out += (out.empty() ? "" : " ") + word.get<std::string>();
  }
  return out;
}

// The value of `name` for the replica: the template's own env first, then what the kind
// injects.
std::string EnvOf(const json& container, const api::ReplicaEnv& injected, const std::string& name) {
  auto env = container.find("env");
  if (env != container.end() && env->is_array())
    for (const json& e : *env)
      if (e.is_object() && api::StringAt(e, "name") == name) return api::StringAt(e, "value");
  for (const api::EnvVar& var : injected.env)
    if (var.name == name) return var.value;
  return "";
}

}  // namespace

bool RunsTorchrun(const api::Job& job, const std::string& type) {
  const json* container = api::DefaultContainerAt(job, type).container;
  if (!container) return false;
  std::string line = CommandLine(*container);
  if (line.find("torchrun") == std::string::npos &&
      line.find("torch.distributed.run") == std::string::npos)
    return false;
  api::ReplicaEnv injected;  // PET_MAX_RESTARTS does not depend on the replica's index
  StatusOr<api::ReplicaEnv> env = api::PluginFor(job.kind).EnvFor(
      job, type, 0, api::ServiceEndpoints(job.name, job.namespace_));
  if (env.ok()) injected = std::move(env).value();
  return !api::TorchrunMayRestartWorkers(EnvOf(*container, injected, "PET_MAX_RESTARTS"), line);
}

RankProbePlan PlanRankProbe(const api::Job& job,
                            const std::vector<engine::ReplicaObservation>& observed,
                            const RankProbeState& state, Time now) {
  RankProbePlan plan;
  std::map<std::string, bool> torchrun;  // by type, looked up once
  std::vector<size_t> candidates;
  for (size_t i = 0; i < observed.size(); ++i) {
    const engine::ReplicaObservation& o = observed[i];
    if (!Running(o) || state.failures.count(o.uid)) continue;
    auto [it, added] = torchrun.try_emplace(o.type, false);
    if (added) it->second = RunsTorchrun(job, o.type);
    if (it->second) candidates.push_back(i);
  }
  if (candidates.empty()) return plan;
  plan.next = kRankProbePeriod;
  if (state.last_probe) {
    Duration since = std::chrono::duration_cast<Duration>(now - *state.last_probe);
    if (since < kRankProbePeriod) {
      plan.next = kRankProbePeriod - since;
      return plan;
    }
  }
  size_t start = state.turn % candidates.size();
  for (size_t k = 0; k < candidates.size() && plan.pods.size() < kMaxPodsPerRankProbe; ++k)
    plan.pods.push_back(candidates[(start + k) % candidates.size()]);
  plan.due = true;
  return plan;
}

std::optional<engine::ReplicaObservation::ProcessExit> ReadRankFailure(
    const api::Job& job, const engine::ReplicaObservation& replica, const std::string& log_end,
    Time now) {
  size_t line_start = 0;
  while (line_start <= log_end.size()) {
    size_t line_end = log_end.find('\n', line_start);
    if (line_end == std::string::npos) line_end = log_end.size();
    std::string_view line(log_end.data() + line_start, line_end - line_start);
    if (std::optional<api::TorchrunWorkerExit> exit = api::ParseTorchrunWorkerExit(line)) {
      engine::ReplicaObservation::ProcessExit out;
      out.local_rank = exit->local_rank;
      out.exit_code = exit->exit_code;
      out.at = now;
      out.output =
          std::string(LastLines(std::string_view(log_end).substr(0, line_start), kOutputBytes));
      if (const json* container = api::DefaultContainerAt(job, replica.type).container) {
        api::ReplicaEnv injected;
        StatusOr<api::ReplicaEnv> env = api::PluginFor(job.kind).EnvFor(
            job, replica.type, replica.index, api::ServiceEndpoints(job.name, job.namespace_));
        if (env.ok()) injected = std::move(env).value();
        out.rank = api::TorchrunGlobalRank(EnvOf(*container, injected, "PET_NODE_RANK"),
                                           EnvOf(*container, injected, "PET_NPROC_PER_NODE"),
                                           CommandLine(*container), exit->local_rank);
      }
      return out;
    }
    line_start = line_end + 1;
  }
  return std::nullopt;
}

RankProber::RankProber(kube::Client* client, Metrics* metrics, ProbeBudget* budget)
    : client_(client), metrics_(metrics), budget_(budget) {}

std::optional<Duration> RankProber::Observe(const api::Job& job, const std::string& uid,
                                            std::vector<engine::ReplicaObservation>* observed,
                                            Time now) {
  RankProbeState state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(uid);
    if (it != jobs_.end()) state = it->second;
  }
  RankProbePlan plan = PlanRankProbe(job, *observed, state, now);
  if (plan.due) {
    // A turn reserved earlier is paid for; else reserve one (the job comes back at it).
    if (!state.slot) state.slot = budget_->Reserve(plan.pods.size(), now);
    const bool start = now >= *state.slot;
    if (!start) plan.next = std::chrono::duration_cast<Duration>(*state.slot - now);
    if (start) {
      state.slot.reset();
      kube::PodLogOptions options;
      options.container = job.info().default_container;
      options.tail_lines = kRankProbeTailLines;
      options.limit_bytes = kRankProbeLimitBytes;
      for (size_t i : plan.pods) {
        const engine::ReplicaObservation& o = (*observed)[i];
        StatusOr<std::string> log = client_->PodLog(job.namespace_, o.name, options);
        if (metrics_) metrics_->CountRequest("get", "pods/log", log.ok());
        if (!log.ok()) continue;  // gone or not ready: asked again next time
        if (auto failure = ReadRankFailure(job, o, *log, now)) state.failures[o.uid] = *failure;
      }
      state.turn += plan.pods.size();
      state.last_probe = now;
    }
  }
  // Forget the failures of pods that are gone; put the rest on their observations.
  std::map<std::string, engine::ReplicaObservation::ProcessExit> kept;
  for (engine::ReplicaObservation& o : *observed) {
    auto it = state.failures.find(o.uid);
    if (it == state.failures.end() || o.uid.empty()) continue;
    o.process_failure = it->second;
    kept.insert(*it);
  }
  state.failures = std::move(kept);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state.failures.empty() && !state.last_probe && !state.slot)
      jobs_.erase(uid);
    else
      jobs_[uid] = state;
  }
  if (plan.next == Duration::zero()) return std::nullopt;
  return plan.next;
}

void RankProber::Forget(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.erase(uid);
}

}  // namespace trainctl::op
