// JAXJob wiring: jax.distributed's COORDINATOR_*, NUM_PROCESSES and PROCESS_ID.
#include "frameworks/plugins.h"

namespace trainctl::frameworks {

bool JaxFramework::IsMasterRole(const api::Job& job, const std::string& type, int index) const {
  return index == 0;
}

StatusOr<ReplicaEnv> JaxFramework::EnvFor(const api::Job& job, const std::string& type, int index,
                                          const Endpoints& endpoints) const {
  ReplicaEnv out;
  StatusOr<int> declared = DeclaredPort(job, "Worker");
  if (!declared.ok())
    return FailedPreconditionError("default container port is not exposed: " +
                                   declared.status().message());
  out.env.push_back(Env("PYTHONUNBUFFERED", "1"));
  out.env.push_back(Env("COORDINATOR_PORT", std::to_string(endpoints.Port("Worker", 0, *declared))));
  out.env.push_back(Env("COORDINATOR_ADDRESS", endpoints.Host("Worker", 0)));
  out.env.push_back(Env("NUM_PROCESSES", std::to_string(job.TotalReplicas())));
  out.env.push_back(Env("PROCESS_ID", std::to_string(index)));
  return out;
}

}  // namespace trainctl::frameworks
