// PyTorchJob wiring: MASTER_*/WORLD_SIZE/RANK and torchrun's PET_* (incl. elastic).
#include <cctype>

#include "frameworks/plugins.h"

namespace trainctl::frameworks {
namespace {

// nprocPerNode as an integer; "auto", "cpu", "gpu" (or unset) count as 1, as upstream.
int NprocAsInt(const api::Job& job) {
  if (!job.nproc_per_node || job.nproc_per_node->empty()) return 1;
  for (char c : *job.nproc_per_node)
    if (!std::isdigit(static_cast<unsigned char>(c))) return 1;
  return std::stoi(*job.nproc_per_node);
}

}  // namespace

bool PyTorchFramework::IsMasterRole(const api::Job& job, const std::string& type,
                                    int index) const {
  if (job.HasType("Master")) return type == "Master";
  return type == "Worker" && index == 0;
}

StatusOr<ReplicaEnv> PyTorchFramework::EnvFor(const api::Job& job, const std::string& type,
                                              int index, const Endpoints& endpoints) const {
  ReplicaEnv out;
  std::vector<EnvVar>& env = out.env;
  env.push_back(Env("PYTHONUNBUFFERED", "1"));
  if (job.HasType("Master")) {
    StatusOr<int> declared = DeclaredPort(job, "Master");
    if (!declared.ok()) return declared.status();
    std::string port = std::to_string(endpoints.Port("Master", 0, *declared));
    std::string addr = endpoints.Host("Master", 0);
    int rank = type == "Master" ? index : index + 1;
    env.push_back(Env("MASTER_PORT", port));
    env.push_back(Env("PET_MASTER_PORT", port));
    env.push_back(Env("MASTER_ADDR", addr));
    env.push_back(Env("PET_MASTER_ADDR", addr));
    env.push_back(Env("WORLD_SIZE", std::to_string(job.TotalReplicas() * NprocAsInt(job))));
    env.push_back(Env("RANK", std::to_string(rank)));
    env.push_back(Env("PET_NODE_RANK", std::to_string(rank)));
  }
  if (job.nproc_per_node) env.push_back(Env("PET_NPROC_PER_NODE", *job.nproc_per_node));
  if (job.elastic_policy) {
    const api::ElasticPolicy& ep = *job.elastic_policy;
    std::string host = ep.rdzv_host ? *ep.rdzv_host : endpoints.Host("Worker", 0);
    int port = 0;
    if (ep.rdzv_port) {
      port = *ep.rdzv_port;
    } else {
      StatusOr<int> declared = DeclaredPort(job, "Worker");
      if (!declared.ok()) return declared.status();
      port = endpoints.Port("Worker", 0, *declared);
    }
    env.push_back(Env("PET_RDZV_ENDPOINT", host + ":" + std::to_string(port)));
    env.push_back(Env("PET_RDZV_BACKEND", ep.rdzv_backend.value_or("c10d")));
    if (ep.min_replicas && ep.max_replicas) {
      env.push_back(Env("PET_NNODES", std::to_string(*ep.min_replicas) + ":" +
                                          std::to_string(*ep.max_replicas)));
    } else {
      env.push_back(Env("PET_NNODES", std::to_string(job.ReplicasOf("Worker"))));
    }
    if (ep.max_restarts) env.push_back(Env("PET_MAX_RESTARTS", std::to_string(*ep.max_restarts)));
    if (ep.n_proc_per_node)
      env.push_back(Env("PET_NPROC_PER_NODE", std::to_string(*ep.n_proc_per_node)));
    if (ep.rdzv_id) env.push_back(Env("PET_RDZV_ID", *ep.rdzv_id));
    if (!ep.rdzv_conf.empty()) {
      std::string conf;
      for (const api::RdzvConf& kv : ep.rdzv_conf)
        conf += (conf.empty() ? "" : ",") + kv.key + "=" + kv.value;
      env.push_back(Env("PET_RDZV_CONF", conf));
    }
    if (ep.standalone) env.push_back(Env("PET_STANDALONE", ""));
  } else {
    env.push_back(Env("PET_NNODES", std::to_string(job.TotalReplicas())));
  }
  return out;
}

}  // namespace trainctl::frameworks
