// The seven kubeflow.org/v1 job kinds and their fixed facts (names, replica types, defaults,
// the versions they are served as: MPIJob also as kubeflow.org/v2beta1).
//
// Each kind's facts are given by its plugin (src/kinds/<kind>.cc, api/kind_plugin.h); the
// lookups here read the registry, are immutable and thread-safe. Values match the upstream
// operator (upstream v1 behaviour, docs/compatibility.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainctl::api {

enum class Kind {
  kPyTorchJob,
  kTFJob,
  kXGBoostJob,
  kMPIJob,
  kPaddleJob,
  kJAXJob,
  kMXJob,
  kTrainJob,  // Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1)
};

inline constexpr const char* kGroup = "kubeflow.org";
inline constexpr const char* kApiVersion = "kubeflow.org/v1";
// MPIJob is also served as mpi-operator's v2beta1 (SSH launcher, launcher as a batch Job).
inline constexpr const char* kApiVersionMpiV2 = "kubeflow.org/v2beta1";
inline constexpr const char* kManagedByKubeflow = "kubeflow.org/training-operator";
// v2beta1's name for its own controller in spec.runPolicy.managedBy.
inline constexpr const char* kManagedByMpiOperator = "kubeflow.org/mpi-operator";
inline constexpr const char* kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";

inline constexpr const char* kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr const char* kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr const char* kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr const char* kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr const char* kLabelJobRole = "training.kubeflow.org/job-role";

// How the engine judges a job of one kind from its replica counts (success, failure, running,
// restarting; docs/compatibility.md). Data that engine/status_rules.cc interprets.
struct StatusRules {
  enum class Shape {
    // The Master decides when the job has one, else the Workers; a failure restarts the job
    // unless the restart policy is Never (or ExitCode once Failed). PyTorch, Paddle, JAX.
    kMasterOrWorkers,
    // The Chief (or Master) decides, else Worker 0 (all Workers under successPolicy
    // AllWorkers); a failure fails the job unless it is Restarting. TF.
    kChiefOrWorkers,
    // One lead type decides; a failure restarts only under ExitCode. XGBoost, MPI, MX.
    kLeadType,
    // JobSet's rules (Trainer v2): the job succeeds when every group of its successPolicy
    // (Job::success_groups, all groups when empty) has succeeded, or any of them under
    // operator Any; a failure restarts unless the group's restart policy is Never.
    kJobSet,
  };
  Shape shape = Shape::kMasterOrWorkers;
  // The order in which replica types are evaluated; empty: KindInfo::replica_types.
  std::vector<std::string> type_order = {};
  // kMasterOrWorkers: a Master decides when the job has one (false: the Workers always, JAX).
  bool master_decides = true;
  // kMasterOrWorkers: with an elasticPolicy, one succeeded Worker completes the job (PyTorch).
  bool elastic_success = false;
  // kLeadType: the first of these types the job has decides, else the last one.
  std::vector<std::string> lead_types = {};
  // kLeadType: Running is set again when the lead completes and on every failure (XGBoost).
  bool running_on_finish = false;
  // kLeadType: failure messages name the job "<failed_prefix> <name>" (MX: "mxjob"); empty:
  // "<Kind> <name>" as every other message.
  std::string failed_prefix = {};
};

struct KindInfo {
  Kind kind;
  const char* name;                        // "PyTorchJob"
  const char* plural;                      // "pytorchjobs"
  const char* spec_map_field;              // "pytorchReplicaSpecs"
  std::vector<std::string> replica_types;  // exact case
  const char* default_container;           // "pytorch"
  const char* port_name;                   // "pytorchjob-port"
  int default_port;                        // 23456
  const char* default_restart_policy;      // "OnFailure"
  const char* framework_label;             // metrics label "pytorch"
  const char* controller_name;             // "pytorchjob-controller"
  bool normalizes_type_case;               // defaulting fixes "WORKER" → "Worker"
  bool injects_default_port;               // defaulting appends the default port
  bool uses_selector = false;  // replicaStatuses carry their label selector (scale subresource)
  bool supports_hpa = false;   // the operator keeps an HPA from elasticPolicy.metrics
  // The replica type whose process starts every rank itself (MPIJob's "Launcher": mpirun), or
  // "". A job of such a kind gets the MPI children on both substrates: the launcher is named
  // "<job>-launcher" (and may wait for the workers), the workers are idle hosts without
  // services, and a hostfile lists them.
  const char* launcher_type = "";
  StatusRules status_rules;
  // The apiVersions a manifest of this kind may say; the first is the one the operator serves.
  std::vector<std::string> api_versions = {kApiVersion};
  // The replica groups come from a runtime the job names (Trainer v2's TrainJob): the spec has
  // no replica-spec map and no runPolicy, the generic checks of those do not apply, and
  // `replica_types` is empty (Job::ReplicaTypes() gives the job's own).
  bool runtime_resolved = false;
  // `trainctl operator` serves the kind (its CRD, informers, webhook). False for a kind that
  // runs only on this machine so far.
  bool operator_serves = true;
  // The CLI's short name ("tj"), or "".
  const char* short_name = "";

  bool has_launcher() const { return launcher_type && *launcher_type; }
  bool IsLauncher(std::string_view type) const { return has_launcher() && type == launcher_type; }
};

// Every kind's facts, in api::Kind order.
const std::vector<KindInfo>& AllKinds();
const KindInfo& Info(Kind kind);
// Case-sensitive kind name ("PyTorchJob"), as in a manifest.
std::optional<Kind> KindFromName(std::string_view name);
// Case-insensitive lookup of a kind by name, singular, plural or short ("pytorchjob",
// "pytorchjobs", "PyTorchJob", "tj"), as the CLI accepts it.
std::optional<Kind> KindFromCliName(std::string_view name);

std::string ToLower(std::string_view s);

}  // namespace trainctl::api
