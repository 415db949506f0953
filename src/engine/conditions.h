// Job condition bookkeeping with upstream's list semantics (docs/compatibility.md).
//
// Pure functions over api::JobStatus. Failed=True is terminal: once set, no condition changes.
#pragma once

#include <string>

#include "api/job.h"
#include "common/clock.h"

namespace trainctl::engine {

inline constexpr const char* kCreated = "Created";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kRestarting = "Restarting";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kSuspended = "Suspended";
inline constexpr const char* kFailed = "Failed";
// trainctl's own: why replicas are not running (False) or that all run (True). Kept first in
// the list, so that it is never the last condition (the state upstream's printer column and
// SDK read). Removed once the job finishes.
inline constexpr const char* kReplicasReady = "ReplicasReady";
// The Restarting reason of a Gang job's restart of every replica (api/restart_scope.h).
inline constexpr const char* kGangRestartReason = "GangRestart";

// Sets a condition: no change when one of that type has the same status and reason; keeps the
// transition time when only the reason changes; Restarting and Running replace each other;
// Succeeded/Failed flip Running to False in place; the new entry goes last.
// Returns true when the list changed.
bool SetCondition(api::JobStatus* status, const std::string& type, const std::string& value,
                  const std::string& reason, const std::string& message, Time now);

const api::Condition* FindCondition(const api::JobStatus& status, const std::string& type);
bool HasCondition(const api::JobStatus& status, const std::string& type);  // status True
bool IsFinished(const api::JobStatus& status);  // Succeeded or Failed is True

}  // namespace trainctl::engine
