// XGBoostJob wiring: MASTER_*/WORLD_SIZE/RANK for the tracker, WORKER_* for LightGBM.
#include "frameworks/plugins.h"

namespace trainctl::frameworks {

bool XGBoostFramework::IsMasterRole(const api::Job& job, const std::string& type,
                                    int index) const {
  return type == "Master";
}

StatusOr<ReplicaEnv> XGBoostFramework::EnvFor(const api::Job& job, const std::string& type,
                                              int index, const Endpoints& endpoints) const {
  ReplicaEnv out;
  StatusOr<int> master_port = DeclaredPort(job, "Master");
  if (!master_port.ok()) return master_port.status();
  int total = 0;
  for (const auto& [t, spec] : job.replica_specs) total += spec.replicas.value_or(0);
  int rank = type == "Master" ? index : index + job.ReplicasOf("Master");
  out.env.push_back(Env("MASTER_PORT", std::to_string(endpoints.Port("Master", 0, *master_port))));
  out.env.push_back(Env("MASTER_ADDR", endpoints.Host("Master", 0)));
  out.env.push_back(Env("WORLD_SIZE", std::to_string(total)));
  out.env.push_back(Env("RANK", std::to_string(rank)));
  out.env.push_back(Env("PYTHONUNBUFFERED", "1"));
  if (total > 1 && job.HasType("Worker")) {
    StatusOr<int> worker_port = DeclaredPort(job, "Worker");
    if (!worker_port.ok()) return worker_port.status();
    out.env.push_back(
        Env("WORKER_PORT", std::to_string(endpoints.Port("Worker", 0, *worker_port))));
    std::string addrs;
    for (int i = 0; i < total - 1; ++i)
      addrs += (i ? "," : "") + endpoints.Host("Worker", i);
    out.env.push_back(Env("WORKER_ADDRS", addrs));
  }
  return out;
}

}  // namespace trainctl::frameworks
