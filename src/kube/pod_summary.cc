#include "kube/pod_summary.h"

#include <simdjson.h>

#include "api/json_bounds.h"
#include "common/clock.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

// The projection below is written once against a read-only view of a JSON value, `Node`, with
// two implementations: over nlohmann-json (watch events, single objects) and over simdjson's
// DOM (whole list pages, without building an nlohmann document). A Node is empty when the
// value is absent; asking an empty or mistyped Node for anything gives nothing.

class JsonNode {
 public:
  JsonNode() = default;
  explicit JsonNode(const json* j) : j_(j) {}
  explicit operator bool() const { return j_ != nullptr; }
  JsonNode operator[](const char* key) const {
    if (!j_ || !j_->is_object()) return {};
    auto it = j_->find(key);
    return it == j_->end() ? JsonNode() : JsonNode(&*it);
  }
  JsonNode operator[](const std::string& key) const { return (*this)[key.c_str()]; }
  bool is_null() const { return j_ && j_->is_null(); }
  bool is_object() const { return j_ && j_->is_object(); }
  bool is_string() const { return j_ && j_->is_string(); }
  std::string str() const { return is_string() ? j_->get<std::string>() : std::string(); }
  bool is_true() const { return j_ && j_->is_boolean() && j_->get<bool>(); }
  // An integer (not a float); nullopt otherwise.
  std::optional<int64_t> integer() const {
    if (!j_ || !j_->is_number_integer()) return std::nullopt;
    return j_->is_number_unsigned() ? static_cast<int64_t>(j_->get<uint64_t>())
                                    : j_->get<int64_t>();
  }
  // Any number, truncated to an integer; nullopt otherwise.
  std::optional<int64_t> number() const {
    if (j_ && j_->is_number_float()) return static_cast<int64_t>(j_->get<double>());
    return integer();
  }
  template <typename F>
  void each(F&& f) const {
    if (j_ && j_->is_array())
      for (const json& e : *j_) f(JsonNode(&e));
  }

 private:
  const json* j_ = nullptr;
};

class SimdNode {
 public:
  SimdNode() = default;
  explicit SimdNode(simdjson::dom::element e) : e_(e), present_(true) {}
  explicit operator bool() const { return present_; }
  SimdNode operator[](const char* key) const {
    simdjson::dom::object object;
    simdjson::dom::element child;
    if (!present_ || e_.get(object) || object.at_key(key).get(child)) return {};
    return SimdNode(child);
  }
  SimdNode operator[](const std::string& key) const { return (*this)[key.c_str()]; }
  bool is_null() const { return present_ && e_.is_null(); }
  bool is_object() const { return present_ && e_.is_object(); }
  bool is_string() const { return present_ && e_.is_string(); }
  std::string str() const {
    std::string_view v;
    return present_ && !e_.get(v) ? std::string(v) : std::string();
  }
  bool is_true() const {
    bool v = false;
    return present_ && !e_.get(v) && v;
  }
  std::optional<int64_t> integer() const {
    if (!present_) return std::nullopt;
    int64_t i;
    if (!e_.get(i)) return i;
    uint64_t u;
    if (!e_.get(u)) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  std::optional<int64_t> number() const {
    double d;
    if (present_ && e_.is_double() && !e_.get(d)) return static_cast<int64_t>(d);
    return integer();
  }
  template <typename F>
  void each(F&& f) const {
    simdjson::dom::array array;
    if (!present_ || e_.get(array)) return;
    for (simdjson::dom::element e : array) f(SimdNode(e));
  }

 private:
  simdjson::dom::element e_;
  bool present_ = false;
};

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

// The detail of a pod, or null when it runs with nothing to explain.
template <typename Node>
std::shared_ptr<const PodDetail> DetailOf(const Node& pod, const Node& status, PodPhase phase) {
  auto d = std::make_shared<PodDetail>();
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
  status["containerStatuses"].each([&](const Node& c) {
    AddEnd(c, d.get());
    auto [reason, message] = WaitingOf(c);
    if (reason.empty() || !d->waiting_reason.empty()) return;
    d->waiting_container = c["name"].str();
    d->waiting_reason = reason;
    d->waiting_message = Head(message);
  });
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
  std::string out;
  for (size_t i = 0; i < uid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[uid[i] >> 4];
    out += hex[uid[i] & 15];
  }
  return out;
}

std::optional<PodSummary> ProjectPod(const json& pod, const std::vector<std::string>& keep_labels) {
  return Project(JsonNode(&pod), keep_labels);
}

std::optional<std::vector<std::pair<std::string, PodSummary>>> ProjectPodList(
    std::string_view body, const std::vector<std::string>& keep_labels) {
  if (body.size() > api::kApiJsonLimits.max_bytes) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size()).get(doc)) return std::nullopt;
  SimdNode list(doc);
  if (!list.is_object()) return std::nullopt;
  simdjson::dom::array items;
  simdjson::dom::element items_value;
  if (doc.get_object().at_key("items").get(items_value) || items_value.get(items))
    return std::nullopt;
  std::vector<std::pair<std::string, PodSummary>> out;
  out.reserve(items.size());
  for (simdjson::dom::element item : items) {
    std::optional<PodSummary> pod = Project(SimdNode(item), keep_labels);
    if (!pod) continue;
    std::string key = pod->namespace_.empty() ? pod->name : pod->namespace_ + "/" + pod->name;
    out.emplace_back(std::move(key), std::move(*pod));
  }
  return out;
}

}  // namespace trainctl::kube
