#include "operator/decide.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "api/json_fields.h"
#include "api/replica_env.h"
#include "engine/conditions.h"
#include "operator/kueue_workload.h"
#include "operator/mpi_children.h"

namespace trainctl::op {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Index of `name` when it is "<job>-<lowercase type>-<n>", else -1.
int ServiceIndex(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || !name.starts_with(prefix)) return -1;
  int index = -1;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(begin, end, index);
  return ec == std::errc() && ptr == end ? index : -1;
}

// Whether `name`, whose index after `prefix` is `index` (ServiceIndex), is the very name
// ReplicaName gives that index: no sign, no leading zero ("-01" and "-+1" are other services).
bool IsReplicaName(std::string_view name, std::string_view prefix, int index) {
  char digits[16];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
  return ec == std::errc() && name.substr(prefix.size()) == std::string_view(digits, end);
}

}  // namespace

ChildActions PlanChildren(const api::Job& job, const engine::Plan& plan,
                          const std::vector<std::string>& services,
                          const std::vector<engine::ReplicaObservation>& observed,
                          const ChildOptions& options) {
  ChildActions out;
  bool mpi = job.info().has_launcher();
  int running_workers = 0;
  for (const engine::ReplicaObservation& o : observed)
    if (o.type == "Worker" && o.phase != engine::Phase::kPending && !o.terminating)
      ++running_workers;  // Running, or already finished: nothing more to wait for
  bool workers_up = running_workers >= job.ReplicasOf("Worker");
  for (engine::ReplicaRef ref : plan.create) {
    if (ref.name.empty()) ref.name = PodName(job, ref.type, ref.index);
    if (job.IsMpiV2() && job.info().IsLauncher(ref.type)) {
      // Its pod is the launcher Job's to make. Under WaitForWorkersReady the engine plans it
      // only once every worker runs (engine/groups.h).
      out.create_launcher_job = true;
      continue;
    }
    if (job.info().IsLauncher(ref.type) && options.mpi_launcher_waits_for_workers && !workers_up) {
      out.launcher_held = true;
      continue;
    }
    out.create_pods.push_back(std::move(ref));
  }
  for (const engine::ReplicaRef& ref : plan.remove) {
    if (job.IsMpiV2() && job.info().IsLauncher(ref.type)) continue;  // the launcher Job's pod
    std::string uid;
    for (const engine::ReplicaObservation& o : observed)
      if (o.name == ref.name && !o.terminating) uid = o.uid;
    out.delete_pods.push_back({ref.name, uid});
  }
  if (mpi) return out;  // MPI replicas have no services

  // Views of `services`, which outlives them: a big job's sync copies no name, and finds its
  // missing services by index rather than by building and looking up every replica's name.
  std::set<std::string_view, std::less<>> removing;
  bool finished = engine::IsFinished(plan.status);
  bool suspended = !finished && job.run_policy.suspend.value_or(false);
  if (suspended) {
    removing.insert(services.begin(), services.end());
  } else if (finished) {
    std::set<std::string_view, std::less<>> existing(services.begin(), services.end());
    for (const PodDelete& pod : out.delete_pods)
      if (auto it = existing.find(pod.name); it != existing.end()) removing.insert(*it);
  } else {
    for (const auto& [type, spec] : job.replica_specs) {
      int replicas = std::max(0, spec.replicas.value_or(1));
      std::string prefix = api::ReplicaName(job.name, type, 0);
      prefix.pop_back();  // "<job>-<type>-"
      std::vector<bool> present(static_cast<size_t>(replicas));
      for (std::string_view name : services) {
        int index = ServiceIndex(name, prefix);
        if (index >= replicas)
          removing.insert(name);
        else if (index >= 0 && IsReplicaName(name, prefix, index))
          present[static_cast<size_t>(index)] = true;
      }
      for (int index = 0; index < replicas; ++index)
        if (!present[static_cast<size_t>(index)])
          out.create_services.push_back({type, index, api::ReplicaName(job.name, type, index)});
    }
  }
  for (std::string_view name : removing) out.delete_services.emplace_back(name);
  return out;
}

std::vector<ChildCreate> PairCreates(const ChildActions& actions) {
  std::map<std::pair<std::string, int>, const engine::ReplicaRef*> unpaired;
  for (const engine::ReplicaRef& service : actions.create_services)
    unpaired.emplace(std::make_pair(service.type, service.index), &service);
  std::vector<ChildCreate> pods;
  pods.reserve(actions.create_pods.size());
  for (const engine::ReplicaRef& pod : actions.create_pods) {
    ChildCreate step{std::nullopt, pod};
    if (auto it = unpaired.find({pod.type, pod.index}); it != unpaired.end()) {
      step.service = *it->second;
      unpaired.erase(it);
    }
    pods.push_back(std::move(step));
  }
  std::vector<ChildCreate> out;
  out.reserve(unpaired.size() + pods.size());
  for (const engine::ReplicaRef& service : actions.create_services)
    if (unpaired.count({service.type, service.index})) out.push_back({service, std::nullopt});
  out.insert(out.end(), std::make_move_iterator(pods.begin()), std::make_move_iterator(pods.end()));
  return out;
}

void PrepareStatusForEngine(api::Job* job) {
  auto& conditions = job->status.conditions;
  for (auto it = conditions.begin(); it != conditions.end(); ++it) {
    if (it->type != engine::kCreated || it->status != "False") continue;
    if (EndsWith(it->reason, "FailedValidation")) {
      conditions.erase(it);
    } else if (it->reason == "FailedCreatePod" || it->reason == "FailedCreateService") {
      it->status = "True";
      it->reason = std::string(job->info().name) + "Created";
      it->message = std::string(job->info().name) + " " + job->name + " is created.";
    }
    return;
  }
}

void MarkCreateFailure(const api::Job& job, api::JobStatus* status, const std::string& reason,
                       const std::string& message, Time now) {
  if (engine::IsFinished(*status)) return;
  for (api::Condition& c : status->conditions) {
    if (c.type != engine::kCreated) continue;
    if (c.status == "False" && c.reason == reason && c.message == message) return;
    if (c.status != "False") c.last_transition_time = now;
    c.status = "False";
    c.reason = reason;
    c.message = message;
    c.last_update_time = now;
    return;
  }
  status->conditions.insert(status->conditions.begin(),
                            api::Condition{engine::kCreated, "False", reason, message, now, now});
  (void)job;
}

std::optional<nlohmann::json> InvalidJobStatus(const nlohmann::json& object,
                                               const std::string& kind, const std::string& message,
                                               Time now) {
  nlohmann::json status = nlohmann::json::object();
  if (object.is_object() && object.contains("status") && object["status"].is_object())
    status = object["status"];
  nlohmann::json conditions = nlohmann::json::array();
  std::string reason = kind + "FailedValidation";
  if (status.contains("conditions") && status["conditions"].is_array()) {
    for (const nlohmann::json& c : status["conditions"]) {
      if (c.is_object() && api::StringAt(c, "type") == engine::kCreated && c["type"].is_string()) {
        if (api::StringAt(c, "status") == "False" && api::StringAt(c, "reason") == reason &&
            api::StringAt(c, "message") == message)
          return std::nullopt;
        continue;
      }
      if (c.is_object()) conditions.push_back(c);
    }
  }
  std::string at = FormatRfc3339(now);
  conditions.insert(conditions.begin(), nlohmann::json{{"type", engine::kCreated},
                                                       {"status", "False"},
                                                       {"reason", reason},
                                                       {"message", message},
                                                       {"lastUpdateTime", at},
                                                       {"lastTransitionTime", at}});
  status["conditions"] = std::move(conditions);
  if (!status.contains("replicaStatuses") || !status["replicaStatuses"].is_object())
    status["replicaStatuses"] = nlohmann::json::object();
  status["lastReconcileTime"] = at;
  return status;
}

bool SameStatus(api::JobStatus a, api::JobStatus b) {
  a.last_reconcile_time.reset();
  b.last_reconcile_time.reset();
  return a == b;
}

bool OnlyReplicaCountsDiffer(api::JobStatus a, api::JobStatus b) {
  for (api::JobStatus* s : {&a, &b})
    for (auto& [type, rs] : s->replica_statuses) rs.active = rs.succeeded = rs.failed = 0;
  return SameStatus(std::move(a), std::move(b));
}

bool OnlyNotReadyDetailsDiffer(api::JobStatus a, api::JobStatus b) {
  for (api::JobStatus* s : {&a, &b}) {
    bool not_ready = false;
    for (api::Condition& c : s->conditions) {
      if (c.type != engine::kReplicasReady) continue;
      // A suspended job's replicas stopping is what Kueue waits for (every `active` at 0)
      // before it hands the quota on: never held longer.
      not_ready = c.status == "False" && c.reason != "Suspended" && !IsKueueReason(c.reason);
      c.message.clear();
      c.last_update_time = Time{};
    }
    if (!not_ready) return false;
  }
  // The reasons are compared with the rest.
  return OnlyReplicaCountsDiffer(std::move(a), std::move(b));
}

bool OnlyFirstStatus(api::JobStatus a, api::JobStatus b) {
  if (engine::FindCondition(b, engine::kCreated) || !engine::FindCondition(a, engine::kCreated))
    return false;
  std::erase_if(a.conditions, [](const api::Condition& c) {
    return c.type == engine::kCreated ||
           (c.type == engine::kReplicasReady && c.status == "False" &&
            (c.reason == "Starting" || c.reason == "Suspended")) ||
           (c.type == engine::kSuspended && c.status == "True") ||
           (c.type == engine::kRunning && c.status == "False");
  });
  std::erase_if(b.conditions,
                [](const api::Condition& c) { return c.type == engine::kReplicasReady; });
  if (!b.start_time) a.start_time.reset();
  a.replica_statuses.clear();
  b.replica_statuses.clear();
  return SameStatus(std::move(a), std::move(b));
}

}  // namespace trainctl::op
