#include "recording/history_snapshot.h"

#include "api/json_fields.h"
#include "api/trainer_status.h"
#include "jobs/cluster_view.h"

namespace trainctl::recording {

jobs::ClusterSnapshot MakeSnapshot(nlohmann::json job, api::Kind kind,
                                   const std::vector<engine::ReplicaObservation>& replicas,
                                   const std::map<std::string, std::string>& node_of,
                                   const SnapshotLayout& layout) {
  jobs::ClusterSnapshot out;
  job["apiVersion"] = api::Info(kind).api_versions.front();  // a listed item may lack them
  job["kind"] = api::Info(kind).name;
  std::string prefix = api::StringAt(job.value("metadata", nlohmann::json::object()), "name") + "-";
  if (layout.resolved) out.metrics_replica = "";
  std::vector<nlohmann::json> rows;
  for (const engine::ReplicaObservation& r : replicas) {
    auto node = node_of.find(r.name);
    rows.push_back(jobs::ReplicaRowFromObservation(r, node == node_of.end() ? "" : node->second));
    jobs::LogTarget t;
    t.pod = r.name;
    t.short_name = r.name.rfind(prefix, 0) == 0 ? r.name.substr(prefix.size()) : r.name;
    auto container = layout.containers.find(r.type);
    t.container = container != layout.containers.end() ? container->second
                                                       : api::Info(kind).default_container;
    t.started = r.phase != engine::Phase::kPending || r.exit_code.has_value() || r.restarts > 0;
    t.restarts = r.restarts;
    t.state = rows.back()["state"].get<std::string>();
    // Rank 0's pod; of two (one being replaced), the one that has run.
    if (layout.resolved && layout.metrics && r.type == layout.metrics->type &&
        r.index == layout.metrics->index && (out.metrics_replica->empty() || t.started))
      out.metrics_replica = t.short_name;
    out.targets.push_back(std::move(t));
  }
  std::sort(out.targets.begin(), out.targets.end(),
            [](const jobs::LogTarget& a, const jobs::LogTarget& b) {
              return a.short_name < b.short_name;
            });
  out.replicas = jobs::SortedReplicaRows(std::move(rows));
  out.job = std::move(job);
  api::ShowTrainerStatusAnnotation(&out.job);  // a v1 job's last progress report
  return out;
}

}  // namespace trainctl::recording
