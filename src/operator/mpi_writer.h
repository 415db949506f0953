// MpiWriter: makes the API server hold an MPIJob's launcher ServiceAccount, Role, RoleBinding
// and `<job>-config` ConfigMap as mpi_children.h builds them, before its pods are created; for
// an MPIJob of v2beta1 instead its `<job>-ssh` Secret (a key pair made when the Secret is
// created, never replaced; made again only when deleted), `<job>-config` ConfigMap and headless
// Service, and its launcher's batch Job (mpi_v2_children.h), whose spec.suspend follows the
// MPIJob's.
//
// Each object is created when missing; an existing Role or ConfigMap that differs is updated;
// an existing object controlled by someone else is an error (Warning event ErrResourceExists,
// as upstream), except the ServiceAccount, which may be the user's. What was last written is
// remembered per job uid, so a reconcile with nothing new makes no request (the ConfigMap
// changes only when the set of Running workers does). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/status.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "operator/metrics.h"

namespace trainctl::op {

class MpiWriter {
 public:
  MpiWriter(kube::Client* client, kube::EventRecorder* recorder, Metrics* metrics)
      : client_(client), recorder_(recorder), metrics_(metrics) {}

  // `running_workers`: names of the job's worker pods that are Running now.
  Status Ensure(const api::Job& job, const std::vector<std::string>& running_workers);
  // v2beta1: the Secret, ConfigMap and Service. `cluster_domain` as in the pods' host names.
  // `makes_pods`: this pass creates a pod or the launcher Job, which mount the Secret; it is
  // then created again should someone have deleted it (with new keys, which the kubelet also
  // brings to the running pods' volumes; a Warning event says so). Otherwise a Secret made
  // once is not asked for again (the operator may create Secrets, never read them).
  Status EnsureV2(const api::Job& job, const std::vector<std::string>& running_workers,
                  const std::string& cluster_domain, bool makes_pods);
  // v2beta1: creates the launcher's batch Job (one there already that is the job's is kept).
  Status CreateLauncherJob(const api::Job& job);
  // v2beta1: sets the launcher Job's spec.suspend (the MPIJob was suspended or resumed).
  Status SuspendLauncherJob(const api::Job& job, bool suspend);
  // Drops what is remembered of a job that is gone.
  void Forget(const std::string& uid);

 private:
  struct Written {
    bool rbac = false;   // v1: the launcher's RBAC; v2beta1: the Secret and the Service
    std::string config;  // the ConfigMap's data as last written (JSON text)
  };
  // Writes the ConfigMap when its data differs from what was last written for `uid`.
  Status WriteConfig(const api::Job& job, const nlohmann::json& config, const Written& before);
  // An object `name` the job needs is someone else's: upstream's ErrResourceExists, as an
  // event and the error.
  Status NotTheJobs(const api::Job& job, const std::string& name);
  // v2beta1: creates `<job>-ssh` with a new key pair (CreateOnly: AlreadyExists when there).
  Status CreateSecret(const api::Job& job);
  // v2beta1: creates the Secret again when it is gone (AlreadyExists: nothing to do).
  Status RecreateSecret(const api::Job& job);
  // A Warning event on the job.
  void Warn(const api::Job& job, const std::string& reason, const std::string& message);
  // Create, or on AlreadyExists read it, check the controller, and update when `differs`.
  Status Upsert(const api::Job& job, const kube::Resource& resource, const nlohmann::json& object,
                const char* compared_field, bool must_be_owned);
  void Count(const std::string& verb, const kube::Resource& r, bool ok);

  kube::Client* client_;
  kube::EventRecorder* recorder_;
  Metrics* metrics_;
  std::mutex mu_;
  std::map<std::string, Written> written_;
};

}  // namespace trainctl::op
