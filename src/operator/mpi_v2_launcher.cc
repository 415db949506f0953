#include "operator/mpi_v2_launcher.h"

#include "api/json_fields.h"
#include "engine/conditions.h"
#include "operator/cache_types.h"

namespace trainctl::op {

using nlohmann::json;

namespace {

constexpr const char* kLauncher = "Launcher";
// Upstream truncates a condition message to this many bytes.
constexpr size_t kMaxMessage = 1024;

// The condition `type` of a Job's status when it is True.
const json* TrueCondition(const json& status, const char* type) {
  if (!status.is_object()) return nullptr;
  auto conditions = status.find("conditions");
  if (conditions == status.end() || !conditions->is_array()) return nullptr;
  for (const json& c : *conditions)
    if (c.is_object() && api::StringAt(c, "type") == type && api::StringAt(c, "status") == "True")
      return &c;
  return nullptr;
}

engine::ReplicaObservation Named(const api::Job& job, engine::Phase phase) {
  engine::ReplicaObservation o;
  o.name = job.name + "-launcher";
  o.type = kLauncher;
  o.index = 0;
  o.phase = phase;
  return o;
}

}  // namespace

std::optional<LauncherJobSummary> ProjectLauncherJob(const json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
    return std::nullopt;
  const json& meta = object["metadata"];
  LauncherJobSummary out;
  out.namespace_ = api::StringAt(meta, "namespace");
  out.name = api::StringAt(meta, "name");
  std::optional<kube::Uid> uid = kube::ParseUid(api::StringAt(meta, "uid"));
  if (out.namespace_.empty() || out.name.empty() || !uid) return std::nullopt;
  out.uid = *uid;
  if (std::optional<kube::Uid> owner = kube::ParseUid(ControllerOwnerUid(object)))
    out.owner_uid = *owner;
  if (object.contains("spec") && object["spec"].is_object()) {
    auto suspend = object["spec"].find("suspend");
    out.suspended =
        suspend != object["spec"].end() && suspend->is_boolean() && suspend->get<bool>();
  }
  const json status = object.value("status", json::object());
  out.complete = TrueCondition(status, "Complete") != nullptr;
  if (const json* failed = TrueCondition(status, "Failed")) {
    out.failed = true;
    out.failed_reason = api::StringAt(*failed, "reason");
    out.failed_message = api::StringAt(*failed, "message");
  }
  return out;
}

LauncherFailure DescribeLauncherFailure(const api::Job& job, const LauncherJobSummary& launcher,
                                        const engine::ReplicaObservation* last_failed) {
  LauncherFailure out{launcher.failed_reason, launcher.failed_message};
  if (out.reason.empty()) out.reason = "MPIJobFailed";
  if (out.message.empty())
    out.message = "MPIJob " + job.namespace_ + "/" + job.name + " has failed";
  if (launcher.failed_reason == "BackoffLimitExceeded" && last_failed) {
    out.reason += "/" + last_failed->end_reason;
    if (!last_failed->end_message.empty()) out.message += ": " + last_failed->end_message;
    if (out.message.size() > kMaxMessage) out.message.resize(kMaxMessage);
  }
  return out;
}

std::optional<engine::ReplicaObservation> ObserveMpiV2Launcher(
    const api::Job& job, const LauncherJobSummary* launcher,
    const std::vector<engine::ReplicaObservation>& pods) {
  if (!launcher) return std::nullopt;
  const engine::ReplicaObservation* succeeded = nullptr;
  const engine::ReplicaObservation* last_failed = nullptr;
  const engine::ReplicaObservation* running = nullptr;
  const engine::ReplicaObservation* pending = nullptr;
  for (const engine::ReplicaObservation& o : pods) {
    if (o.type != kLauncher) continue;
    switch (o.phase) {
      case engine::Phase::kSucceeded:
        succeeded = &o;
        break;
      case engine::Phase::kFailed:
        last_failed = &o;
        break;
      case engine::Phase::kRunning:
        if (!o.terminating) running = &o;
        break;
      default:
        if (!o.terminating) pending = &o;
        break;
    }
  }
  if (launcher->complete) {
    if (succeeded) return *succeeded;
    return Named(job, engine::Phase::kSucceeded);
  }
  if (launcher->failed) {
    engine::ReplicaObservation o = last_failed ? *last_failed : Named(job, engine::Phase::kFailed);
    o.phase = engine::Phase::kFailed;
    LauncherFailure why = DescribeLauncherFailure(job, *launcher, last_failed);
    o.end_reason = why.reason;
    o.end_message = why.message;
    return o;
  }
  if (running) return *running;
  if (succeeded) {
    // Its pod is done and the Job not yet marked Complete (a moment): the launcher is still
    // at work as far as the job goes, not waiting to start.
    engine::ReplicaObservation o = *succeeded;
    o.phase = engine::Phase::kRunning;
    return o;
  }
  if (pending) return *pending;
  // Between a failed pod and the Job's next one, or before its first: the Job is at work.
  engine::ReplicaObservation o = Named(job, engine::Phase::kPending);
  if (last_failed) {
    o.end_reason = last_failed->end_reason;
    o.end_message = last_failed->end_message;
    o.exit_code = last_failed->exit_code;
  }
  return o;
}

api::Job MpiV2EngineView(const api::Job& job) {
  api::Job view = job;
  auto it = view.replica_specs.find(kLauncher);
  if (it != view.replica_specs.end()) it->second.restart_policy = "Never";
  return view;
}

void ApplyLauncherFailure(const LauncherFailure& failure, engine::Plan* plan) {
  std::string engine_reason;
  for (api::Condition& c : plan->status.conditions) {
    if (c.type != engine::kFailed || c.status != "True") continue;
    engine_reason = c.reason;
    c.reason = failure.reason;
    c.message = failure.message;
  }
  if (engine_reason.empty()) return;
  for (engine::Event& e : plan->events) {
    if (e.reason != engine_reason) continue;
    e = {"Warning", failure.reason, failure.message};
  }
}

}  // namespace trainctl::op
