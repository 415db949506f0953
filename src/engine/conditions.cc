#include "engine/conditions.h"

#include <algorithm>

namespace trainctl::engine {

const api::Condition* FindCondition(const api::JobStatus& status, const std::string& type) {
  for (const api::Condition& c : status.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool HasCondition(const api::JobStatus& status, const std::string& type) {
  const api::Condition* c = FindCondition(status, type);
  return c && c->status == "True";
}

bool IsFinished(const api::JobStatus& status) {
  return HasCondition(status, kSucceeded) || HasCondition(status, kFailed);
}

bool SetCondition(api::JobStatus* status, const std::string& type, const std::string& value,
                  const std::string& reason, const std::string& message, Time now) {
  if (HasCondition(*status, kFailed)) return false;
  api::Condition next{type, value, reason, message, now, now};
  if (const api::Condition* current = FindCondition(*status, type)) {
    if (current->status == value && current->reason == reason) return false;
    if (current->status == value) next.last_transition_time = current->last_transition_time;
  }
  std::vector<api::Condition>& list = status->conditions;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const api::Condition& c) {
                              if (c.type == type) return true;
                              if (type == kRestarting && c.type == kRunning) return true;
                              if (type == kRunning && c.type == kRestarting) return true;
                              return false;
                            }),
             list.end());
  if (type == kSucceeded || type == kFailed) {
    for (api::Condition& c : list) {
      if (c.type == kRunning && c.status == "True") {
        c.status = "False";
        c.last_transition_time = now;
        c.last_update_time = now;
      }
    }
  }
  list.push_back(std::move(next));
  return true;
}

}  // namespace trainctl::engine
