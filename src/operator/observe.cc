#include "operator/observe.h"

#include <charconv>

#include "api/checkpoint_notice.h"
#include "api/kinds.h"
#include "api/restart_scope.h"

namespace trainctl::op {
namespace {

static_assert(std::string_view(kube::kPodNoticeAnnotation) == api::kNoticeAnnotation);
static_assert(std::string_view(kube::kPodNoticeDoneAnnotation) == api::kNoticeDoneAnnotation);

// What the pod's detail says about why the replica is not running and how it ended.
void Explain(const kube::PodDetail& d, const std::string& default_container,
             engine::ReplicaObservation* o) {
  if (o->phase == engine::Phase::kPending) {
    if (!d.unschedulable.empty()) {
      o->waiting_reason = "Unschedulable";
      o->waiting_message = d.unschedulable;
    } else if (!d.waiting_reason.empty()) {
      o->waiting_reason = d.waiting_reason;
      o->waiting_message = d.waiting_message;
    } else if (!d.scheduled && !d.scheduling_seen && !d.scheduler_name.empty()) {
      o->waiting_reason = "WaitingForScheduler";
      o->waiting_message = "no scheduler named \"" + d.scheduler_name +
                           "\" has looked at the pods yet (is it installed and running?)";
    }
  } else if (o->phase == engine::Phase::kRunning && !d.waiting_init &&
             d.waiting_container == default_container && !d.waiting_reason.empty()) {
    o->waiting_reason = d.waiting_reason;  // CrashLoopBackOff between in-place restarts
    o->waiting_message = d.waiting_message;
  }
  for (const kube::ContainerEnd& end : d.ends) {
    if (end.container != default_container) continue;
    o->end_reason = end.reason;
    o->end_message = end.message;
    if (end.finished_at > 0) o->finished_at = Time(std::chrono::seconds(end.finished_at));
  }
  if (o->phase == engine::Phase::kFailed && !d.pod_reason.empty()) {
    o->end_reason =
        d.pod_reason;  // Evicted, NodeLost, DeadlineExceeded: the pod's, not a container's
    if (o->end_message.empty()) o->end_message = d.pod_message;
  }
}

}  // namespace

const std::vector<std::string>& ObservedLabels() {
  static const std::vector<std::string> labels = {api::kLabelJobName, api::kLabelReplicaType,
                                                  api::kLabelReplicaIndex,
                                                  api::kRestartAttemptLabel, api::kLabelJobRole};
  return labels;
}

const std::vector<std::string>& TrainJobObservedLabels() {
  static const std::vector<std::string> labels = {
      "jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/replicatedjob-name",
      "batch.kubernetes.io/job-completion-index", "jobset.sigs.k8s.io/restart-attempt"};
  return labels;
}

namespace {

// The container whose state stands for the replica's (see ReplicaObserver::Type).
std::string ReplicaContainer(const api::ReplicaSpec& spec, const std::string& default_container) {
  const nlohmann::json* containers = nullptr;
  if (spec.pod_template.is_object() && spec.pod_template.contains("spec") &&
      spec.pod_template["spec"].is_object() && spec.pod_template["spec"].contains("containers"))
    containers = &spec.pod_template["spec"]["containers"];
  if (!containers || !containers->is_array() || containers->empty()) return default_container;
  for (const nlohmann::json& c : *containers)
    if (c.is_object() && c.value("name", "") == default_container) return default_container;
  const nlohmann::json& first = containers->front();
  return first.is_object() && first.contains("name") && first["name"].is_string()
             ? first["name"].get<std::string>()
             : default_container;
}

}  // namespace

ReplicaObserver::ReplicaObserver(const api::Job& job) : job_(job) {
  const std::string default_container = job.info().default_container;
  for (const auto& [type, spec] : job.replica_specs)
    types_.push_back({api::ToLower(type), type, ReplicaContainer(spec, default_container)});
}

std::map<std::string, std::string> ReplicaObserver::Containers() const {
  std::map<std::string, std::string> out;
  for (const Type& t : types_) out[t.exact] = t.container;
  return out;
}

std::optional<engine::ReplicaObservation> ReplicaObserver::Observe(
    const kube::PodSummary& pod) const {
  const std::string* type_label = pod.Label(1);
  const std::string* index_label = pod.Label(2);
  // mpi-operator's pods (v2beta1) name their role, not a replica type: launcher or worker.
  const bool by_role = !type_label && job_.IsMpiV2();
  if (by_role) type_label = pod.Label(4);
  if (!type_label) return std::nullopt;
  const Type* found = nullptr;
  for (const Type& t : types_)
    if (t.lower == *type_label) found = &t;  // the last match, as the spec map orders them
  if (!found) return std::nullopt;
  const std::string* type = &found->exact;
  const std::string& container = found->container;
  int index = -1;
  if (!index_label) {
    // The MPI launcher carries no index label (as upstream's); there is one launcher.
    if (!job_.info().IsLauncher(*type)) return std::nullopt;
    index = 0;
  } else {
    auto [ptr, ec] =
        std::from_chars(index_label->data(), index_label->data() + index_label->size(), index);
    if (ec != std::errc() || ptr != index_label->data() + index_label->size() || index < 0)
      return std::nullopt;
    // A launcher that works too is index 0 of the hostfile, and the workers count from 1.
    if (by_role && job_.info().IsLauncher(*type)) index = 0;
    if (by_role && !job_.info().IsLauncher(*type) && job_.run_launcher_as_worker.value_or(false) &&
        --index < 0)
      return std::nullopt;
  }
  engine::ReplicaObservation o;
  o.name = pod.name;
  o.uid = kube::FormatUid(pod.uid);
  o.type = *type;
  o.index = index;
  switch (pod.phase) {
    case kube::PodPhase::kRunning:
      o.phase = engine::Phase::kRunning;
      break;
    case kube::PodPhase::kSucceeded:
      o.phase = engine::Phase::kSucceeded;
      break;
    case kube::PodPhase::kFailed:
      o.phase = engine::Phase::kFailed;
      break;
    default:
      o.phase = engine::Phase::kPending;
      break;
  }
  for (const kube::ContainerSummary& c : pod.containers) {
    if (c.name != container) continue;
    o.restarts = c.restart_count;
    if (c.running_since > 0) o.started_at = Time(std::chrono::seconds(c.running_since));
    o.awaiting_restart = c.terminated && o.phase == engine::Phase::kRunning;
    // The current end, or the last one of a container restarted in place (its lastState).
    if (c.exit_code >= 0 &&
        (c.terminated || c.restart_count > 0 || o.phase == engine::Phase::kFailed ||
         o.phase == engine::Phase::kSucceeded))
      o.exit_code = c.exit_code;
  }
  if (const std::string* attempt = pod.Label(3)) {
    int value = 0;
    auto [ptr, ec] = std::from_chars(attempt->data(), attempt->data() + attempt->size(), value);
    if (ec == std::errc() && ptr == attempt->data() + attempt->size() && value >= 0)
      o.attempt = value;  // a Gang job's replica (api/restart_scope.h)
  }
  if (pod.detail) {
    o.notice = pod.detail->notice;
    o.notice_done = pod.detail->notice_done;
  }
  o.terminating = pod.terminating;
  if (pod.detail) Explain(*pod.detail, container, &o);
  return o;
}

std::vector<engine::ReplicaObservation> ObserveReplicas(const api::Job& job,
                                                        const std::vector<kube::PodSummary>& pods) {
  ReplicaObserver observer(job);
  std::vector<engine::ReplicaObservation> out;
  for (const kube::PodSummary& pod : pods)
    if (std::optional<engine::ReplicaObservation> o = observer.Observe(pod)) out.push_back(*o);
  return out;
}

}  // namespace trainctl::op
