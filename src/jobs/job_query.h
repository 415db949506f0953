// What the job commands are asked for, independent of where jobs live: `[KIND] NAME` and
// `KIND/NAME` references, `get`'s optional KIND and NAME, and whether a job (as JSON, stored
// locally or read from the API server) meets the condition `wait` waits for. Pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "common/status.h"

namespace trainctl::jobs {

struct JobRef {
  std::optional<api::Kind> kind;  // unset: any kind with that name
  std::string name;
};

// `[KIND] NAME` or `KIND/NAME`; kInvalid names the unknown kind or the expected shape.
StatusOr<JobRef> ParseJobRef(const std::vector<std::string>& args);

// `get [KIND] [NAME]`: a single argument is a kind when it names one, else a job name.
StatusOr<JobRef> ParseGetArgs(const std::vector<std::string>& args);

// The condition `wait --for` takes: "condition=Running" or "Running"; kInvalid for others.
StatusOr<std::string> ParseWaitCondition(const std::string& for_flag);

enum class WaitState { kPending, kMet, kFailed, kFinishedWithout };
struct WaitOutcome {
  WaitState state = WaitState::kPending;
  std::string message;    // the Failed condition's message, for kFailed
  bool finished = false;  // the job has a true Succeeded or Failed condition
};

// Compares status.conditions (type, status "True") of `job` with `condition`. A Failed job
// ends the wait for any other condition; so does a Succeeded job without the condition.
WaitOutcome EvaluateWait(const nlohmann::json& job, const std::string& condition);

// "pytorchjob.kubeflow.org", as kubectl names the resource in its messages.
std::string ResourceName(api::Kind kind);

}  // namespace trainctl::jobs
