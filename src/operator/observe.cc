#include "operator/observe.h"

#include <charconv>

#include "api/kinds.h"

namespace trainctl::op {

const std::vector<std::string>& ObservedLabels() {
  static const std::vector<std::string> labels = {api::kLabelJobName, api::kLabelReplicaType,
                                                  api::kLabelReplicaIndex};
  return labels;
}

std::vector<engine::ReplicaObservation> ObserveReplicas(const api::Job& job,
                                                        const std::vector<kube::PodSummary>& pods) {
  std::vector<engine::ReplicaObservation> out;
  const std::string default_container = job.info().default_container;
  for (const kube::PodSummary& pod : pods) {
    const std::string* type_label = pod.Label(1);
    const std::string* index_label = pod.Label(2);
    if (!type_label) continue;
    std::string type;
    for (const auto& [t, spec] : job.replica_specs)
      if (api::ToLower(t) == *type_label) type = t;
    if (type.empty()) continue;
    int index = -1;
    if (!index_label) {
      // The MPI launcher carries no index label (as upstream's); there is one launcher.
      if (!job.info().IsLauncher(type)) continue;
      index = 0;
    } else {
      auto [ptr, ec] =
          std::from_chars(index_label->data(), index_label->data() + index_label->size(), index);
      if (ec != std::errc() || ptr != index_label->data() + index_label->size() || index < 0)
        continue;
    }
    engine::ReplicaObservation o;
    o.name = pod.name;
    o.type = type;
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
      if (c.name != default_container) continue;
      o.restarts = c.restart_count;
      if (c.exit_code >= 0 && (c.terminated || o.phase == engine::Phase::kFailed ||
                               o.phase == engine::Phase::kSucceeded))
        o.exit_code = c.exit_code;
    }
    o.terminating = pod.terminating;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace trainctl::op
