#include "kube/pod_summary.h"

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
  }
  s.containers.shrink_to_fit();
  return s;
}

}  // namespace trainctl::kube
