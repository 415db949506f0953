#include "operator/trainjob_why.h"

#include <algorithm>
#include <string>

#include "api/json_fields.h"
#include "engine/conditions.h"
#include "engine/diagnosis.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

// The CRD keeps at most this many conditions.
constexpr size_t kMaxTrainJobConditions = 8;

const json* FindType(const json& status, const char* type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array())
    return nullptr;
  for (const json& c : status["conditions"])
    if (api::StringAt(c, "type") == type) return &c;
  return nullptr;
}

bool IsTrue(const json& status, const char* type) {
  const json* c = FindType(status, type);
  return c && api::StringAt(*c, "status") == "True";
}

// The Failed condition keeps the first failure its first pass added (the JobSet's own message
// is recomputed every pass).
void AttributeFailure(const json& before, const std::vector<engine::ReplicaObservation>& observed,
                      json* status) {
  if (!IsTrue(*status, engine::kFailed)) return;
  json* failed = nullptr;
  for (json& c : (*status)["conditions"])
    if (api::StringAt(c, "type") == engine::kFailed) failed = &c;
  const std::string message = api::StringAt(*failed, "message");
  if (IsTrue(before, engine::kFailed)) {
    const std::string kept = api::StringAt(*FindType(before, engine::kFailed), "message");
    if (kept.size() > message.size() && kept.compare(0, message.size(), message) == 0 &&
        kept[message.size()] == '\n')
      (*failed)["message"] = kept;
    return;
  }
  if (std::optional<std::string> first = engine::FirstFailure(observed))
    (*failed)["message"] = message + "\n" + *first;
}

// Whether ReplicasReady is written at all: only while something keeps the nodes from running.
// All running, on their way (Starting) or suspended (upstream's own Suspended condition says
// so) is no condition: the `kubeflow` SDK reports a TrainJob Running only while it has none.
bool Told(const engine::Readiness& r) {
  return !r.ready && r.reason != "Starting" && r.reason != "Suspended";
}

void ClearReadiness(json* status) {
  if (!status->is_object() || !status->contains("conditions")) return;
  json& list = (*status)["conditions"];
  if (!list.is_array()) return;
  list.erase(std::remove_if(
                 list.begin(), list.end(),
                 [](const json& c) { return api::StringAt(c, "type") == engine::kReplicasReady; }),
             list.end());
}

// ReplicasReady through the engine's one rule (engine::ApplyReadiness), over metav1.Condition.
void ApplyReadiness(const engine::Readiness& readiness, Time now,
                    std::optional<Time> message_written_at, TrainJobWhy* out) {
  api::JobStatus view;
  const json* current = FindType(out->status, engine::kReplicasReady);
  if (current) {
    api::Condition c;
    c.type = engine::kReplicasReady;
    c.status = api::StringAt(*current, "status");
    c.reason = api::StringAt(*current, "reason");
    c.message = api::StringAt(*current, "message");
    c.last_transition_time =
        ParseRfc3339(api::StringAt(*current, "lastTransitionTime")).value_or(now);
    c.last_update_time = message_written_at.value_or(Time{});
    view.conditions.push_back(std::move(c));
  }
  std::vector<engine::Event> events;
  const bool changed = engine::ApplyReadiness(readiness, now, &view, &events, &out->refresh_after);
  for (engine::Event& e : events) out->events.push_back(std::move(e));
  if (!Told(readiness)) {  // nothing to tell: no condition (upstream's clients read it so)
    if (current) ClearReadiness(&out->status);
    return;
  }
  if (!changed) return;
  const api::Condition& next = view.conditions.front();
  json cond = {{"type", next.type},
               {"status", next.status},
               {"reason", next.reason},
               {"message", next.message},
               {"lastTransitionTime", FormatRfc3339(next.last_transition_time)}};
  json& list = out->status["conditions"];
  if (!list.is_array()) list = json::array();
  list.erase(std::remove_if(
                 list.begin(), list.end(),
                 [](const json& c) { return api::StringAt(c, "type") == engine::kReplicasReady; }),
             list.end());
  list.insert(list.begin(), std::move(cond));
  while (list.size() > kMaxTrainJobConditions) list.erase(list.begin() + 1);  // the oldest others
  out->message_written = true;
}

}  // namespace

json KeepFirstFailure(const json& before, json status) {
  if (status.is_object()) AttributeFailure(before, {}, &status);
  return status;
}

TrainJobWhy DecideTrainJobWhy(const json& before, json status, const api::Job& job,
                              const std::vector<engine::ReplicaObservation>& observed,
                              bool suspended, Time now, std::optional<Time> message_written_at,
                              const std::optional<engine::Readiness>& queue_why) {
  TrainJobWhy out;
  if (!status.is_object()) status = json::object();
  AttributeFailure(before, observed, &status);
  out.status = std::move(status);
  if (IsTrue(out.status, engine::kFailed) || IsTrue(out.status, "Complete")) {
    ClearReadiness(&out.status);
    if (out.status.empty()) out.status = nullptr;  // the CRD wants a property: nothing to write
    return out;
  }
  engine::Readiness readiness = suspended ? queue_why.value_or(engine::SuspendedReadiness(job))
                                          : engine::AssessReplicas(job, observed, now);
  ApplyReadiness(readiness, now, message_written_at, &out);
  return out;
}

}  // namespace trainctl::op
