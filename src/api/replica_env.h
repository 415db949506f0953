// How replicas are wired together: the Endpoints a substrate supplies (where each replica can
// be reached), the env a kind computes for one replica from them (KindPlugin::EnvFor), the
// replica naming rule of both substrates, and the port a replica's template declares.
//
// On Kubernetes the endpoints are the per-replica headless services (`<job>-master-0`,
// ServiceEndpoints below); locally they are 127.0.0.1 with a free port per replica
// (local::LocalEndpoints). Pure and thread-safe; errors (e.g. a missing port) are values.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"

namespace trainctl::api {

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
  // True when every replica of a group shares one pod template (a JobSet's Indexed Job): a
  // replica's own index is then read in the pod (a fieldRef to the Job's completion-index
  // annotation), not written as a value.
  virtual bool IndexFromPod() const { return false; }
};

// The annotation an Indexed Job's pod carries its index in.
inline constexpr const char* kCompletionIndexAnnotation =
    "batch.kubernetes.io/job-completion-index";

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
// default container (TF_CONFIG), `first_container_only` env that goes only to the pod's first
// container whatever its name (MPIJob's, as both MPI controllers write it); the rest goes to
// every container.
struct ReplicaEnv {
  std::vector<EnvVar> env;
  bool default_container_only = false;
  bool first_container_only = false;
};

// "<job>-<lowercase type>-<index>" with '/' replaced by '-' (pod and service name).
std::string ReplicaName(const std::string& job_name, const std::string& type, int index);

// The one replica naming rule for both substrates (pod name on a cluster, process and log name
// locally): "<job>-launcher" for the launcher of a kind that has one (MPIJob's Launcher,
// upstream's name; a job has one launcher), ReplicaName(job.name, type, index) otherwise.
std::string ReplicaName(const Job& job, const std::string& type, int index);

// The containerPort named `port_name` on the default container of `type` (after defaulting).
StatusOr<int> DeclaredPort(const Job& job, const std::string& type);

}  // namespace trainctl::api
