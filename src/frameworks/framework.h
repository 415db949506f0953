// Framework plugins: how each kind wires its replicas together.
//
// A plugin knows the master role and computes the environment each replica gets (as upstream
// v1, docs/compatibility.md) from the job and an Endpoints object supplied by the substrate: on
// Kubernetes the endpoints are the per-replica headless services (`<job>-master-0`), locally
// they are 127.0.0.1 with a free port per replica. The plugins are stateless singletons; all
// functions are pure and thread-safe. Errors (e.g. a missing port) are returned as values.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"

namespace trainctl::frameworks {

struct EnvVar {
  std::string name;
  std::string value;
  nlohmann::json value_from;  // e.g. {"fieldRef": {"fieldPath": "status.podIP"}}; null if unset
  bool operator==(const EnvVar&) const = default;
};

// Where replicas can be reached; supplied by the substrate.
class Endpoints {
 public:
  virtual ~Endpoints() = default;
  // Host other replicas use for (type, index); "<job>-<type>-<index>" on Kubernetes.
  virtual std::string Host(const std::string& type, int index) const = 0;
  // Host written into TF_CONFIG: "<job>-<type>-<index>.<ns>.svc[.<domain>]" on Kubernetes.
  virtual std::string ServiceHost(const std::string& type, int index) const = 0;
  // Port (type, index) listens on; `declared` is the port its pod template declares.
  virtual int Port(const std::string& type, int index, int declared) const = 0;
};

// Kubernetes endpoints: per-replica headless services in the job's namespace.
class ServiceEndpoints final : public Endpoints {
 public:
  // `cluster_domain` is the operator's CUSTOM_CLUSTER_DOMAIN (may be empty).
  ServiceEndpoints(std::string job_name, std::string ns, std::string cluster_domain = "");
  std::string Host(const std::string& type, int index) const override;
  std::string ServiceHost(const std::string& type, int index) const override;
  int Port(const std::string& type, int index, int declared) const override { return declared; }

 private:
  std::string job_name_, namespace_, cluster_domain_;
};

// The env of one replica. `default_container_only` marks env that goes only to the kind's
// default container (TF_CONFIG); the rest goes to every container.
struct ReplicaEnv {
  std::vector<EnvVar> env;
  bool default_container_only = false;
};

class Framework {
 public:
  virtual ~Framework() = default;
  // True for the pod that gets the label job-role=master.
  virtual bool IsMasterRole(const api::Job& job, const std::string& type, int index) const = 0;
  virtual StatusOr<ReplicaEnv> EnvFor(const api::Job& job, const std::string& type, int index,
                                      const Endpoints& endpoints) const = 0;
};

const Framework& ForKind(api::Kind kind);

// "<job>-<lowercase type>-<index>" with '/' replaced by '-' (pod and service name).
std::string ReplicaName(const std::string& job_name, const std::string& type, int index);

// The one replica naming rule for both substrates (pod name on a cluster, process and log name
// locally): "<job>-launcher" for an MPIJob's Launcher (upstream's name; a job has one
// launcher), ReplicaName(job.name, type, index) otherwise.
std::string ReplicaName(const api::Job& job, const std::string& type, int index);

// The containerPort named `port_name` on the default container of `type` (after defaulting).
StatusOr<int> DeclaredPort(const api::Job& job, const std::string& type);

// MPI: the hostfile the launcher reads (`<worker host> slots=<n>` per worker) and
// discover_hosts.sh for the given running workers; see reference §3.4 MPIJob.
std::string MpiHostfile(const api::Job& job, const Endpoints& endpoints, bool gpu_launcher);
std::string MpiDiscoverHosts(const api::Job& job, const std::vector<std::string>& running_workers,
                             bool gpu_launcher);
// Env for the launcher's first container (the OMPI_MCA_* and I_MPI_* wiring).
std::vector<EnvVar> MpiLauncherEnv(const api::Job& job, const std::string& config_dir,
                                   bool gpu_launcher);

}  // namespace trainctl::frameworks
