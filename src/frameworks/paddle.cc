// PaddleJob wiring: PADDLE_* for collective mode (no Master) and parameter-server mode.
#include "frameworks/plugins.h"

namespace trainctl::frameworks {

bool PaddleFramework::IsMasterRole(const api::Job& job, const std::string& type,
                                   int index) const {
  return type == "Master";
}

StatusOr<ReplicaEnv> PaddleFramework::EnvFor(const api::Job& job, const std::string& type,
                                             int index, const Endpoints& endpoints) const {
  ReplicaEnv out;
  std::vector<EnvVar>& env = out.env;
  env.push_back(Env("PYTHONUNBUFFERED", "1"));
  env.push_back(Env("PADDLE_JOB_ID", job.name));
  env.push_back(Env("PADDLE_NNODES", std::to_string(job.TotalReplicas())));
  bool ps_mode = job.HasType("Master");
  std::string master_type = ps_mode ? "Master" : "Worker";
  StatusOr<int> declared = DeclaredPort(job, master_type);
  int port = endpoints.Port(master_type, 0, declared.ok() ? *declared : job.info().default_port);
  if (type == master_type && index == 0) {
    env.push_back({"POD_IP_DUMMY", "", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}});
    env.push_back(Env("PADDLE_MASTER", "$(POD_IP_DUMMY):" + std::to_string(port)));
  } else {
    env.push_back(Env("PADDLE_MASTER", endpoints.Host(master_type, 0) + ":" + std::to_string(port)));
  }
  if (ps_mode) {
    if (type == "Master") env.push_back(Env("PADDLE_SERVER_NUM", "1"));
    if (type == "Worker") env.push_back(Env("PADDLE_TRAINER_NUM", "1"));
  }
  return out;
}

}  // namespace trainctl::frameworks
