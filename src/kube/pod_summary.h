// PodSummary: the compact projection of a Pod that controllers cache instead of the JSON
// document (a few hundred bytes instead of tens of kilobytes): identity, the controller
// owner, the labels the caller asked to keep, phase, deletion, node, and per container the
// restart count and last exit code; and, only for a pod that is stuck or has ended (null for a
// healthy running pod, so it costs nothing there), what explains it: the scheduler's verdict,
// a waiting container's reason, how containers ended, the pod's own reason (Evicted, …).
//
// ProjectPod, ProjectPodList and ProjectPodEvent are pure and thread-safe. All three project the
// same way (one template, over nlohmann-json and over simdjson's DOM).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/watch_decoder.h"

namespace trainctl::kube {

using Uid = std::array<uint8_t, 16>;
// "0a1b…" (8-4-4-4-12 hex) → bytes; nullopt when it is not a UUID.
std::optional<Uid> ParseUid(const std::string& text);
std::string FormatUid(const Uid& uid);

enum class PodPhase : uint8_t { kUnknown, kPending, kRunning, kSucceeded, kFailed };

struct ContainerSummary {
  std::string name;
  int32_t restart_count = 0;
  int32_t exit_code = -1;   // of the current terminated state, else the last one; -1 = none
  bool terminated = false;  // the current state is terminated
  // For a container restarted in place that runs again: when this run started (Unix seconds;
  // 0 = not restarted, not running, or unknown). Tells a crash loop from a recovery
  // (engine::InCrashLoop) without keeping the pod's detail.
  int64_t running_since = 0;
};

// Texts longer than this (termination messages, scheduler messages) keep their tail/head.
inline constexpr size_t kMaxDetailText = 2048;

struct ContainerEnd {
  std::string container;
  std::string reason;       // OOMKilled, Error, Completed, …
  std::string message;      // the termination message (tail, at most kMaxDetailText)
  int64_t finished_at = 0;  // Unix seconds; 0 = unknown
};

// Why a pod is not running, or how its containers ended. Empty strings: not known.
struct PodDetail {
  std::string unschedulable;     // PodScheduled=False reason Unschedulable: the message
  std::string scheduler_name;    // spec.schedulerName, when it is not the default scheduler
  bool scheduled = false;        // a PodScheduled condition is True (or the pod has a node)
  bool scheduling_seen = false;  // a PodScheduled condition exists
  std::string waiting_container;
  bool waiting_init = false;   // the waiting container is an init container
  std::string waiting_reason;  // state.waiting.reason, or PodInitializing for a running init
  std::string waiting_message;
  std::string pod_reason;  // status.reason: Evicted, NodeLost, DeadlineExceeded, …
  std::string pod_message;
  std::vector<ContainerEnd> ends;  // containers with a terminated (current or last) state
  // The checkpoint notice it was told (annotation kPodNoticeAnnotation, "" : none) and its done
  // report (kPodNoticeDoneAnnotation, set and not "false"): a told pod keeps its detail, so
  // that the pods of jobs without a notice cost no more.
  std::string notice;
  bool notice_done = false;
};

// The checkpoint notice's pod annotations (the values of api/checkpoint_notice.h's constants):
// what the replica was told, and its report that it is done.
inline constexpr const char* kPodNoticeAnnotation = "trainctl.dev/checkpoint-notice";
inline constexpr const char* kPodNoticeDoneAnnotation = "trainctl.dev/checkpoint-done";

struct PodSummary {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  std::string node_name;
  Uid uid{};
  Uid owner_uid{};  // the controller owner's; zero when there is none
  PodPhase phase = PodPhase::kUnknown;
  bool terminating = false;  // metadata.deletionTimestamp is set
  // Values of the kept labels, in the order of ProjectPod's `keep_labels` ("" = absent); the
  // keys are not stored per pod.
  std::vector<std::string> label_values;
  std::vector<ContainerSummary> containers;
  std::shared_ptr<const PodDetail> detail;  // null when the pod runs with nothing to explain

  // The value of kept label number `i` (its position in keep_labels), or nullptr when absent.
  const std::string* Label(size_t i) const {
    return i < label_values.size() && !label_values[i].empty() ? &label_values[i] : nullptr;
  }
  bool HasOwner() const { return owner_uid != Uid{}; }
};

// Projects a Pod; nullopt when it has no name. Only labels in `keep_labels` are kept.
std::optional<PodSummary> ProjectPod(const nlohmann::json& pod,
                                     const std::vector<std::string>& keep_labels);

// Every pod of a list response's body (a PodList page), projected straight from the text
// without an nlohmann document (a tenth of the time, and no document of the whole page in
// memory): the store key ("<namespace>/<name>", or "<name>") and summary of each pod that has a
// name. nullopt when the body is not a JSON object with an `items` array that simdjson accepts
// (malformed, over kApiJsonLimits' size, nested deeper than simdjson's 1024 levels): the caller
// then takes the ordinary path, which says what is wrong.
std::optional<std::vector<std::pair<std::string, PodSummary>>> ProjectPodList(
    std::string_view body, const std::vector<std::string>& keep_labels);

// A watch event's pod, straight from the event's text (WatchEvent::text): its store key and
// what ProjectPod gives. nullopt when simdjson does not accept the text or it has no object:
// the caller then decodes the event and takes ProjectPod.
std::optional<EventProjection<PodSummary>> ProjectPodEvent(
    std::string_view event_text, const std::vector<std::string>& keep_labels);

}  // namespace trainctl::kube
