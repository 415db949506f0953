#include "kube/pod_summary.h"

#include "common/clock.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

const json* Child(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string Str(const json& j, const char* key) {
  const json* c = Child(j, key);
  return c && c->is_string() ? c->get<std::string>() : std::string();
}

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
std::pair<std::string, std::string> WaitingOf(const json& status) {
  const json* state = Child(status, "state");
  const json* waiting = state ? Child(*state, "waiting") : nullptr;
  if (!waiting) return {"", ""};
  return {Str(*waiting, "reason"), Str(*waiting, "message")};
}

void AddEnd(const json& status, PodDetail* d) {
  const json* terminated = nullptr;
  for (const char* which : {"state", "lastState"}) {
    const json* state = Child(status, which);
    terminated = state ? Child(*state, "terminated") : nullptr;
    if (terminated) break;
  }
  if (!terminated || !terminated->is_object()) return;
  ContainerEnd end;
  end.container = Str(status, "name");
  end.reason = Str(*terminated, "reason");
  end.message = Tail(Str(*terminated, "message"));
  if (std::optional<Time> at = ParseRfc3339(Str(*terminated, "finishedAt")))
    end.finished_at =
        std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count();
  d->ends.push_back(std::move(end));
}

// The detail of a pod, or null when it runs with nothing to explain.
std::shared_ptr<const PodDetail> DetailOf(const json& pod, const json& status, PodPhase phase) {
  auto d = std::make_shared<PodDetail>();
  if (const json* spec = Child(pod, "spec")) {
    std::string scheduler = Str(*spec, "schedulerName");
    if (scheduler != "default-scheduler") d->scheduler_name = scheduler;
    d->scheduled = !Str(*spec, "nodeName").empty();
  }
  if (const json* conditions = Child(status, "conditions"); conditions && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (Str(c, "type") != "PodScheduled") continue;
      d->scheduling_seen = true;
      if (Str(c, "status") == "True") d->scheduled = true;
      if (Str(c, "status") == "False" && Str(c, "reason") == "Unschedulable")
        d->unschedulable = Head(Str(c, "message"));
    }
  }
  d->pod_reason = Str(status, "reason");
  d->pod_message = Head(Str(status, "message"));
  // The first init container that has not completed is what the pod waits for.
  if (const json* init = Child(status, "initContainerStatuses"); init && init->is_array()) {
    for (const json& c : *init) {
      const json* state = Child(c, "state");
      const json* done = state ? Child(*state, "terminated") : nullptr;
      if (done && done->is_object() && done->value("exitCode", 1) == 0) continue;
      auto [reason, message] = WaitingOf(c);
      if (reason.empty() && state && Child(*state, "running")) {
        if (phase != PodPhase::kPending) continue;  // a sidecar
        reason = "PodInitializing";
        message = "init container " + Str(c, "name") + " is running";
      }
      if (reason.empty()) continue;
      d->waiting_container = Str(c, "name");
      d->waiting_init = true;
      d->waiting_reason = reason;
      d->waiting_message = Head(message);
      break;
    }
  }
  if (const json* cs = Child(status, "containerStatuses"); cs && cs->is_array()) {
    for (const json& c : *cs) {
      AddEnd(c, d.get());
      auto [reason, message] = WaitingOf(c);
      if (reason.empty() || !d->waiting_reason.empty()) continue;
      d->waiting_container = Str(c, "name");
      d->waiting_reason = reason;
      d->waiting_message = Head(message);
    }
  }
  // A running pod keeps its detail only while a container waits (CrashLoopBackOff): an old end
  // of a restarted container alone is not worth a few hundred bytes per pod in the cache.
  bool waiting = !d->unschedulable.empty() || !d->waiting_reason.empty();
  if (phase == PodPhase::kRunning && !waiting && d->pod_reason.empty()) return nullptr;
  bool for_scheduler = !d->scheduler_name.empty() && !d->scheduled && !d->scheduling_seen;
  if (phase == PodPhase::kPending && !waiting && !for_scheduler && d->pod_reason.empty())
    return nullptr;
  if (phase == PodPhase::kSucceeded && d->pod_reason.empty()) return nullptr;  // nothing to explain
  if (!waiting && !for_scheduler && d->pod_reason.empty() && d->ends.empty()) return nullptr;
  return d;
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
  std::string out;
  for (size_t i = 0; i < uid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[uid[i] >> 4];
    out += hex[uid[i] & 15];
  }
  return out;
}

std::optional<PodSummary> ProjectPod(const json& pod, const std::vector<std::string>& keep_labels) {
  const json* md = Child(pod, "metadata");
  if (!md) return std::nullopt;
  PodSummary s;
  s.name = Str(*md, "name");
  if (s.name.empty()) return std::nullopt;
  s.namespace_ = Str(*md, "namespace");
  s.resource_version = Str(*md, "resourceVersion");
  s.uid = ParseUid(Str(*md, "uid")).value_or(Uid{});
  s.terminating = Child(*md, "deletionTimestamp") && !Child(*md, "deletionTimestamp")->is_null();
  if (const json* owners = Child(*md, "ownerReferences"); owners && owners->is_array()) {
    for (const json& o : *owners) {
      const json* controller = Child(o, "controller");
      if (controller && controller->is_boolean() && controller->get<bool>())
        s.owner_uid = ParseUid(Str(o, "uid")).value_or(Uid{});
    }
  }
  if (const json* labels = Child(*md, "labels"); labels && labels->is_object()) {
    bool any = false;
    std::vector<std::string> values(keep_labels.size());
    for (size_t i = 0; i < keep_labels.size(); ++i) {
      auto it = labels->find(keep_labels[i]);
      if (it != labels->end() && it->is_string()) {
        values[i] = it->get<std::string>();
        any = true;
      }
    }
    if (any) s.label_values = std::move(values);
  }
  if (const json* spec = Child(pod, "spec")) s.node_name = Str(*spec, "nodeName");
  const json* status = Child(pod, "status");
  if (status) {
    s.phase = PhaseOf(Str(*status, "phase"));
    if (const json* cs = Child(*status, "containerStatuses"); cs && cs->is_array()) {
      for (const json& c : *cs) {
        ContainerSummary container;
        container.name = Str(c, "name");
        if (const json* rc = Child(c, "restartCount"); rc && rc->is_number_integer())
          container.restart_count = rc->get<int32_t>();
        const json* state = Child(c, "state");
        const json* terminated = state ? Child(*state, "terminated") : nullptr;
        if (!terminated) {
          const json* last = Child(c, "lastState");
          terminated = last ? Child(*last, "terminated") : nullptr;
        } else {
          container.terminated = true;
        }
        if (terminated) {
          if (const json* code = Child(*terminated, "exitCode"); code && code->is_number_integer())
            container.exit_code = code->get<int32_t>();
        }
        s.containers.push_back(std::move(container));
      }
    }
    s.detail = DetailOf(pod, *status, s.phase);
  }
  s.containers.shrink_to_fit();
  return s;
}

}  // namespace trainctl::kube
