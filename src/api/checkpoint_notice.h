// The checkpoint notice, read from a job's annotations (docs/status-machine.md, "Checkpoint
// notice"):
//
//   trainctl.dev/checkpoint-notice-seconds: "30"   1..86400: how long replicas get to checkpoint
//   trainctl.dev/checkpoint-signal: SIGUSR1        optional, local runs only: also signal the
//                                                  replica's process group
//   trainctl.dev/checkpoint-notice: {…}            written by trainctl: the pending notice
//
// Before a job's replicas are stopped for a reason that is not their own failure (its active
// deadline, a suspend, a gang restart, a local `trainctl delete`), every replica is told: the
// notice (JSON: reason, stopAt, attempt, seconds) appears in the file named by
// TRAINCTL_NOTICE_FILE. The stop then waits until stopAt, or until every replica reported that
// it is done (locally: it created the file named by TRAINCTL_NOTICE_DONE_FILE; on a cluster:
// the pod annotation trainctl.dev/checkpoint-done). The active deadline itself never moves: its
// notice comes N seconds before it.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "api/field_error.h"
#include "api/job.h"
#include "common/clock.h"

namespace trainctl::api {

inline constexpr const char* kNoticeSecondsAnnotation = "trainctl.dev/checkpoint-notice-seconds";
inline constexpr const char* kNoticeSignalAnnotation = "trainctl.dev/checkpoint-signal";
// On the job: the pending notice (trainctl's record). On a pod: the notice it was told.
inline constexpr const char* kNoticeAnnotation = "trainctl.dev/checkpoint-notice";
// On a pod, set by the replica (or anyone): it has checkpointed; any value but "false".
inline constexpr const char* kNoticeDoneAnnotation = "trainctl.dev/checkpoint-done";
// On a cluster: the finalizer that holds a notice job's deletion until its replicas were told
// and are done (or its seconds ran out).
inline constexpr const char* kNoticeFinalizer = "trainctl.dev/checkpoint-notice";
inline constexpr const char* kNoticeFileEnv = "TRAINCTL_NOTICE_FILE";
inline constexpr const char* kNoticeDoneFileEnv = "TRAINCTL_NOTICE_DONE_FILE";
// On a cluster: the downward-API volume that shows a pod's notice annotation as a file.
inline constexpr const char* kNoticeVolumeName = "trainctl-checkpoint-notice";
inline constexpr const char* kNoticeMountPath = "/etc/trainctl/notice";
inline constexpr const char* kNoticeFileName = "notice.json";

// Reasons a notice names.
inline constexpr const char* kNoticeForDeadline = "ActiveDeadline";
inline constexpr const char* kNoticeForSuspend = "Suspended";
inline constexpr const char* kNoticeForGangRestart = "GangRestart";
inline constexpr const char* kNoticeForDelete = "Deleted";

struct NoticePolicy {
  int seconds = 0;
  int signal = 0;  // 0: none
  std::string signal_name;
};

// The job's notice policy; nullopt when it has none or its annotations are invalid (errors go
// to `errors` when it is not null, with the annotation's field path).
std::optional<NoticePolicy> NoticePolicyOf(const Job& job, FieldErrorList* errors = nullptr);

struct Notice {
  std::string reason;
  Time stop_at{};
  int attempt = 0;  // the job's attempt it was given in (gang restart)
  int seconds = 0;
  bool operator==(const Notice&) const = default;
};

// The notice as recorded and as replicas read it: one line of JSON.
std::string EncodeNotice(const Notice& notice);
// nullopt for "" or anything that is not a notice.
std::optional<Notice> DecodeNotice(const std::string& text);

// The job's pending notice (its trainctl.dev/checkpoint-notice annotation) and its raw value.
std::optional<Notice> RecordedNotice(const Job& job);
std::string RecordedNoticeText(const Job& job);

// Whether the job (its metadata) carries kNoticeFinalizer / has a deletionTimestamp.
bool HasNoticeFinalizer(const nlohmann::json& metadata);
bool BeingDeleted(const nlohmann::json& metadata);
// metadata.finalizers with kNoticeFinalizer added (`add`) or removed, others kept in order.
nlohmann::json FinalizersWithNotice(const nlohmann::json& metadata, bool add);

// Whether a signal name is one the notice may send, and its number (0: not one).
int NoticeSignalNumber(const std::string& name);

}  // namespace trainctl::api
