#include "kube/pod_summary.h"

#include "common/clock.h"
#include "kube/json_node.h"
#include "kube/object_identity.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

PodPhase PhaseOf(const std::string& p) {
  if (p == "Pending") return PodPhase::kPending;
  if (p == "Running") return PodPhase::kRunning;
  if (p == "Succeeded") return PodPhase::kSucceeded;
  if (p == "Failed") return PodPhase::kFailed;
  return PodPhase::kUnknown;
}

std::string Head(std::string text) {
  if (text.size() > kMaxDetailText) text.resize(kMaxDetailText);
  return text;
}

std::string Tail(const std::string& text) {
  return text.size() > kMaxDetailText ? text.substr(text.size() - kMaxDetailText) : text;
}

// The waiting state of a container status, as {reason, message}; reason "" when not waiting.
template <typename Node>
std::pair<std::string, std::string> WaitingOf(const Node& status) {
  Node waiting = status["state"]["waiting"];
  if (!waiting) return {"", ""};
  return {waiting["reason"].str(), waiting["message"].str()};
}

template <typename Node>
void AddEnd(const Node& status, PodDetail* d) {
  Node terminated;
  for (const char* which : {"state", "lastState"}) {
    terminated = status[which]["terminated"];
    if (terminated) break;
  }
  if (!terminated.is_object()) return;
  ContainerEnd end;
  end.container = status["name"].str();
  end.reason = terminated["reason"].str();
  end.message = Tail(terminated["message"].str());
  if (std::optional<Time> at = ParseRfc3339(terminated["finishedAt"].str()))
    end.finished_at =
        std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count();
  d->ends.push_back(std::move(end));
}

// The projection below is written once against a Node (json_node.h): nlohmann-json for watch
// events and single objects, simdjson's DOM for whole list pages.

// The detail of a pod, or null when it runs with nothing to explain.
template <typename Node>
std::shared_ptr<const PodDetail> DetailOf(const Node& pod, const Node& status, PodPhase phase) {
  auto d = std::make_shared<PodDetail>();
  if (Node annotations = pod["metadata"]["annotations"]; annotations.is_object()) {
    if (Node v = annotations[kPodNoticeAnnotation]; v.is_string()) d->notice = v.str();
    if (Node v = annotations[kPodNoticeDoneAnnotation]; v.is_string())
      d->notice_done = v.str() != "false";
  }
  if (Node spec = pod["spec"]) {
    std::string scheduler = spec["schedulerName"].str();
    if (scheduler != "default-scheduler") d->scheduler_name = scheduler;
    d->scheduled = !spec["nodeName"].str().empty();
  }
  status["conditions"].each([&](const Node& c) {
    if (c["type"].str() != "PodScheduled") return;
    d->scheduling_seen = true;
    if (c["status"].str() == "True") d->scheduled = true;
    if (c["status"].str() == "False" && c["reason"].str() == "Unschedulable")
      d->unschedulable = Head(c["message"].str());
  });
  d->pod_reason = status["reason"].str();
  d->pod_message = Head(status["message"].str());
  // The first init container that has not completed is what the pod waits for.
  bool found = false;
  status["initContainerStatuses"].each([&](const Node& c) {
    if (found) return;
    Node state = c["state"];
    Node done = state["terminated"];
    if (done.is_object() && done["exitCode"].number().value_or(1) == 0) return;
    auto [reason, message] = WaitingOf(c);
    if (reason.empty() && state["running"]) {
      if (phase != PodPhase::kPending) return;  // a sidecar
      reason = "PodInitializing";
      message = "init container " + c["name"].str() + " is running";
    }
    if (reason.empty()) return;
    d->waiting_container = c["name"].str();
    d->waiting_init = true;
    d->waiting_reason = reason;
    d->waiting_message = Head(message);
    found = true;
  });
  // A container restarted in place after a failed run: running again, or ended again and
  // waiting out the kubelet's back-off (a real kubelet reports `terminated` for most of it and
  // `waiting: CrashLoopBackOff` only around the restart). Either way a crash loop.
  bool failed_before = false;
  status["containerStatuses"].each([&](const Node& c) {
    AddEnd(c, d.get());
    if (c["restartCount"].integer().value_or(0) > 0 &&
        ((c["state"]["running"] &&
          c["lastState"]["terminated"]["exitCode"].integer().value_or(0) != 0) ||
         c["state"]["terminated"]["exitCode"].integer().value_or(0) != 0))
      failed_before = true;
    auto [reason, message] = WaitingOf(c);
    if (reason.empty() || !d->waiting_reason.empty()) return;
    d->waiting_container = c["name"].str();
    d->waiting_reason = reason;
    d->waiting_message = Head(message);
  });
  // A running pod keeps its detail while a container waits (CrashLoopBackOff) or runs again
  // after a failed run (its last end: the crash loop's exit code, time and termination message,
  // engine::InCrashLoop). A pod that never restarted after a failure costs nothing here.
  if (!d->notice.empty() || d->notice_done) return d;  // told a checkpoint notice
  bool waiting = !d->unschedulable.empty() || !d->waiting_reason.empty();
  if (phase == PodPhase::kRunning && !waiting && !failed_before && d->pod_reason.empty())
    return nullptr;
  bool for_scheduler = !d->scheduler_name.empty() && !d->scheduled && !d->scheduling_seen;
  if (phase == PodPhase::kPending && !waiting && !for_scheduler && d->pod_reason.empty())
    return nullptr;
  if (phase == PodPhase::kSucceeded && d->pod_reason.empty()) return nullptr;  // nothing to explain
  if (!waiting && !for_scheduler && d->pod_reason.empty() && d->ends.empty()) return nullptr;
  return d;
}

template <typename Node>
std::optional<PodSummary> Project(const Node& pod, const std::vector<std::string>& keep_labels) {
  Node md = pod["metadata"];
  if (!md) return std::nullopt;
  PodSummary s;
  s.name = md["name"].str();
  if (s.name.empty()) return std::nullopt;
  s.namespace_ = md["namespace"].str();
  s.resource_version = md["resourceVersion"].str();
  s.uid = ParseUid(md["uid"].str()).value_or(Uid{});
  Node deletion = md["deletionTimestamp"];
  s.terminating = deletion && !deletion.is_null();
  md["ownerReferences"].each([&](const Node& o) {
    if (o["controller"].is_true()) s.owner_uid = ParseUid(o["uid"].str()).value_or(Uid{});
  });
  if (Node labels = md["labels"]; labels.is_object()) {
    bool any = false;
    std::vector<std::string> values(keep_labels.size());
    for (size_t i = 0; i < keep_labels.size(); ++i) {
      if (Node v = labels[keep_labels[i]]; v.is_string()) {
        values[i] = v.str();
        any = true;
      }
    }
    if (any) s.label_values = std::move(values);
  }
  if (Node spec = pod["spec"]) s.node_name = spec["nodeName"].str();
  if (Node status = pod["status"]) {
    s.phase = PhaseOf(status["phase"].str());
    status["containerStatuses"].each([&](const Node& c) {
      ContainerSummary container;
      container.name = c["name"].str();
      if (std::optional<int64_t> rc = c["restartCount"].integer())
        container.restart_count = static_cast<int32_t>(*rc);
      Node terminated = c["state"]["terminated"];
      if (!terminated) {
        terminated = c["lastState"]["terminated"];
      } else {
        container.terminated = true;
      }
      if (std::optional<int64_t> code = terminated["exitCode"].integer())
        container.exit_code = static_cast<int32_t>(*code);
      if (Node running = c["state"]["running"]; running.is_object() && container.restart_count > 0)
        if (std::optional<Time> at = ParseRfc3339(running["startedAt"].str()))
          container.running_since =
              std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count();
      s.containers.push_back(std::move(container));
    });
    s.detail = DetailOf(pod, status, s.phase);
  }
  s.containers.shrink_to_fit();
  return s;
}

}  // namespace

std::optional<Uid> ParseUid(const std::string& text) {
  if (text.size() != 36) return std::nullopt;
  Uid uid{};
  size_t out = 0;
  for (size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return std::nullopt;
      ++i;
      continue;
    }
    int hi = HexValue(text[i]), lo = HexValue(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    uid[out++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return uid;
}

std::string FormatUid(const Uid& uid) {
  static const char* hex = "0123456789abcdef";
  char out[36];  // 32 hex digits and 4 dashes: the string is made once, not grown
  size_t n = 0;
  for (size_t i = 0; i < uid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[n++] = '-';
    out[n++] = hex[uid[i] >> 4];
    out[n++] = hex[uid[i] & 15];
  }
  return std::string(out, n);
}

std::optional<PodSummary> ProjectPod(const json& pod, const std::vector<std::string>& keep_labels) {
  return Project(JsonNode(&pod), keep_labels);
}

std::optional<std::vector<std::pair<std::string, PodSummary>>> ProjectPodList(
    std::string_view body, const std::vector<std::string>& keep_labels) {
  std::vector<std::pair<std::string, PodSummary>> out;
  bool read = ForEachListItem(body, [&](const SimdNode& item) {
    std::optional<PodSummary> pod = Project(item, keep_labels);
    if (!pod) return;
    std::string key = StoreKey(pod->namespace_, pod->name);
    out.emplace_back(std::move(key), std::move(*pod));
  });
  if (!read) return std::nullopt;
  return out;
}

std::optional<EventProjection<PodSummary>> ProjectPodEvent(
    std::string_view event_text, const std::vector<std::string>& keep_labels) {
  return ProjectEventObject<PodSummary>(
      event_text, [&](const SimdNode& pod) { return Project(pod, keep_labels); });
}

}  // namespace trainctl::kube
