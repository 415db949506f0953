// Job: the typed model of every kubeflow.org/v1 job kind, decoded from and encoded to JSON.
//
// The model keeps the original `metadata` and `spec` documents so that every field the model
// does not know (and every pod-template field) survives a decode/encode round trip unchanged;
// the typed members are the fields trainctl decides on. Decoding checks JSON types and reports
// every problem with its field path; it does not default or validate (see defaults.h and
// validation.h). Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/field_error.h"
#include "api/kinds.h"
#include "api/trainer_v2_types.h"
#include "common/clock.h"
#include "common/status.h"

namespace trainctl::api {

// A replica group that waits for another before its replicas are made (JobSet's dependsOn:
// Trainer v2's initializers before the trainer; MPIJob v2beta1's launcher under
// launcherCreationPolicy WaitForWorkersReady). Set by a kind's defaulting, never read from or
// written to a manifest; engine/groups.h judges it.
struct GroupDependency {
  enum class Until { kReady, kComplete };  // every replica of `type` runs / has succeeded
  std::string type;
  Until until = Until::kReady;
  std::string why;  // the spec that asks for it, for messages ("launcherCreationPolicy …")
};

struct ReplicaSpec {
  std::optional<int32_t> replicas;
  std::string restart_policy;   // "" until defaulted: Always | OnFailure | Never | ExitCode
  nlohmann::json pod_template;  // core/v1 PodTemplateSpec, verbatim (null when absent)
  std::vector<GroupDependency> depends_on;  // kind-derived (above); empty: made at once
};

struct RunPolicy {
  std::optional<std::string> clean_pod_policy;  // All | Running | None
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> backoff_limit;
  std::optional<bool> suspend;
  std::optional<std::string> managed_by;
  nlohmann::json scheduling_policy;  // verbatim, null when absent
};

// The one managedBy rule, for the engine, the operator and the local runner: a job is ours when
// spec.runPolicy.managedBy is absent, empty, kManagedByKubeflow or (v2beta1's name for the MPI
// controller) kManagedByMpiOperator; any other controller's job (MultiKueue's) is left alone.
bool ManagedByUs(const std::optional<std::string>& managed_by);
// The same rule on a raw object (before it is decoded): reads spec.runPolicy.managedBy.
bool ObjectManagedByUs(const nlohmann::json& object);

struct RdzvConf {
  std::string key, value;
};

// PyTorch's elasticPolicy (Paddle's uses min/max/maxRestarts only).
struct ElasticPolicy {
  std::optional<int32_t> min_replicas, max_replicas, rdzv_port, n_proc_per_node, max_restarts;
  std::optional<std::string> rdzv_backend, rdzv_host, rdzv_id;
  std::vector<RdzvConf> rdzv_conf;
  bool standalone = false;
};

struct Condition {
  std::string type;    // Created | Running | Restarting | Succeeded | Suspended | Failed
  std::string status;  // True | False | Unknown
  std::string reason;
  std::string message;
  Time last_update_time{};
  Time last_transition_time{};
  bool operator==(const Condition&) const = default;
};

struct ReplicaStatus {
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  std::string selector;
  // trainctl extensions (docs/compatibility.md): `restarts` is every retry of this type so far,
  // counted against backoffLimit: `past_restarts` (replicas recreated after a retryable failure,
  // with the in-place restarts they had, remembered here because those replicas are gone) plus
  // the in-place container restarts of the replicas that exist now. The one restart count that
  // `describe`, the SDK and the replica tables agree on.
  int32_t restarts = 0;
  int32_t past_restarts = 0;
  bool operator==(const ReplicaStatus&) const = default;
};

struct JobStatus {
  std::vector<Condition> conditions;
  std::map<std::string, ReplicaStatus> replica_statuses;
  std::optional<Time> start_time, completion_time, last_reconcile_time;
  bool operator==(const JobStatus&) const = default;
};

struct Job {
  Kind kind = Kind::kPyTorchJob;
  std::string api_version = kApiVersion;               // one of info().api_versions
  nlohmann::json metadata = nlohmann::json::object();  // verbatim
  nlohmann::json spec = nlohmann::json::object();      // verbatim; per-kind extras live here
  std::string name;
  std::string namespace_ = "default";
  std::map<std::string, ReplicaSpec> replica_specs;  // nullopt map ⇒ has_replica_specs false
  bool has_replica_specs = false;
  RunPolicy run_policy;

  // Per-kind typed fields (absent for kinds that do not have them).
  std::optional<std::string> nproc_per_node;        // PyTorch spec.nprocPerNode
  std::optional<ElasticPolicy> elastic_policy;      // PyTorch / Paddle
  std::string success_policy;                       // TF: "" | AllWorkers
  bool enable_dynamic_worker = false;               // TF
  std::optional<int32_t> slots_per_worker;          // MPI
  std::string main_container;                       // MPI
  std::optional<std::string> mpi_clean_pod_policy;  // MPI legacy spec.cleanPodPolicy
  // MPIJob kubeflow.org/v2beta1 only ("" / nullopt until defaulted).
  std::optional<bool> run_launcher_as_worker;
  std::string ssh_auth_mount_path;       // default /root/.ssh
  std::string launcher_creation_policy;  // AtStartup | WaitForWorkersReady
  std::string mpi_implementation;        // OpenMPI | Intel | MPICH
  // TrainJob (trainer.kubeflow.org/v1alpha1) only: its typed spec (decoded), then what
  // resolving it against its runtime set (api/trainjob_resolve.h): the runtime it was made from
  // (its snapshot), the replica groups in the runtime's order, the trainer step's group, and the
  // runtime's successPolicy (every group when `success_groups` is empty). Unresolved: empty.
  std::optional<TrainJobSpec> train_job;
  std::optional<TrainingRuntime> runtime;
  std::vector<std::string> group_order;
  std::string trainer_group;
  std::vector<std::string> success_groups;
  bool success_any = false;

  JobStatus status;

  const KindInfo& info() const { return Info(kind); }
  // Replicas of one type with nil counted as 1 (upstream's totalReplicas rule).
  int32_t ReplicasOf(const std::string& type) const;
  int32_t TotalReplicas() const;
  bool HasType(const std::string& type) const { return replica_specs.count(type) > 0; }
  // An MPIJob of kubeflow.org/v2beta1 (mpi-operator's API).
  bool IsMpiV2() const { return kind == Kind::kMPIJob && api_version == kApiVersionMpiV2; }
  // MPI's two roles: the group whose mpirun starts the ranks, and the group of hosts it starts
  // them on. An MPIJob's Launcher and Worker; a TrainJob on an MPI runtime's trainer step (its
  // `launcher`) and its `node` job. "" for both in any other job.
  std::string MpiLauncherGroup() const;
  std::string MpiWorkerGroup() const;
  bool IsMpiLauncher(const std::string& type) const {
    return !type.empty() && type == MpiLauncherGroup();
  }
  // Whether the job's MPI follows mpi-operator v2beta1's mechanics (SSH keys at
  // sshAuthMountPath, the hostfile in the implementation's format, a launcher that may run
  // ranks itself, slots_per_worker): a v2beta1 MPIJob, or an MPI TrainJob once resolved (its
  // runtime's mpi policy fills those fields).
  bool UsesMpiV2Mechanics() const { return IsMpiV2() || IsMpiTrainJob(); }
  bool IsMpiTrainJob() const {
    return kind == Kind::kTrainJob && runtime && runtime->policy == MlPolicy::kMpi;
  }
  // The replica types in the order the engine evaluates them: the kind's own, or a TrainJob's
  // groups in its runtime's order.
  const std::vector<std::string>& ReplicaTypes() const {
    return group_order.empty() ? info().replica_types : group_order;
  }
};

// Decodes one document. The document must be an object with a known kind and one of the
// apiVersions that kind is served as (kubeflow.org/v1; an MPIJob also kubeflow.org/v2beta1); type
// errors are reported with field paths. `status` is decoded when present.
StatusOr<Job> DecodeJob(const nlohmann::json& doc);

// Encodes the job: the original metadata/spec with the typed fields written over them, and the
// status when it has any content.
nlohmann::json EncodeJob(const Job& job);
nlohmann::json EncodeStatus(const JobStatus& status);
StatusOr<JobStatus> DecodeStatus(const nlohmann::json& status);

// The pod template's container list (empty when missing), and the default container's index.
const nlohmann::json* Containers(const nlohmann::json& pod_template);
std::optional<size_t> DefaultContainerIndex(const nlohmann::json& pod_template,
                                            const std::string& default_name);

// A lowercase RFC 1123 subdomain, as object names such as a PVC's are: a-z, 0-9, '-', '.', at
// most 253, no empty label.
bool IsDnsSubdomain(const std::string& s);

// A PersistentVolumeClaim a job's pod templates name, and the first volume naming it.
struct ClaimRef {
  std::string claim;
  std::string field;  // e.g. spec.pytorchReplicaSpecs[Master].template.spec.volumes[0]
};

// Every valid claimName the job's pod templates' volumes name, once each, in name order. Pure.
std::vector<ClaimRef> JobClaims(const Job& job);

}  // namespace trainctl::api
