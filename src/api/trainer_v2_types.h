// The typed parts of Kubeflow Trainer v2's API (trainer.kubeflow.org/v1alpha1, as Trainer
// v2.3.0 defines it) that trainctl decides on: a TrainJob's spec and a TrainingRuntime or
// ClusterTrainingRuntime. Plain value types, no behaviour: decoding and checking a runtime is
// api/training_runtime.h, a TrainJob's spec is decoded by its plugin (kinds/trainjob.cc), and
// api/trainjob_resolve.h turns the two into the replica groups the engine plans over.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace trainctl::api {

inline constexpr const char* kTrainerGroup = "trainer.kubeflow.org";
inline constexpr const char* kTrainerApiVersion = "trainer.kubeflow.org/v1alpha1";
inline constexpr const char* kTrainingRuntimeKind = "TrainingRuntime";
inline constexpr const char* kClusterTrainingRuntimeKind = "ClusterTrainingRuntime";
inline constexpr const char* kManagedByTrainer = "trainer.kubeflow.org/trainjob-controller";

// The label on a runtime's replicated job that routes a TrainJob's section to it, and its
// values; the container each must have.
inline constexpr const char* kLabelAncestorStep = "trainer.kubeflow.org/trainjob-ancestor-step";
inline constexpr const char* kAncestorTrainer = "trainer";
inline constexpr const char* kAncestorDataset = "dataset-initializer";
inline constexpr const char* kAncestorModel = "model-initializer";
inline constexpr const char* kTrainerContainer = "node";
inline constexpr const char* kLabelFramework = "trainer.kubeflow.org/framework";
// The port Trainer v2 gives the trainer's rendezvous (PET_MASTER_PORT, the JAX coordinator,
// the XGBoost tracker).
inline constexpr int kTrainerPort = 29500;
// MPI: where the launcher finds its hostfile, and the objects the operator makes for it
// (<job><suffix>), as upstream's MPI plugin names them.
inline constexpr const char* kTrainJobMpiHostfileDir = "/etc/mpi";
inline constexpr const char* kTrainJobMpiHostfile = "/etc/mpi/hostfile";
inline constexpr const char* kTrainJobMpiSecretSuffix = "-mpi-ssh-auth";
inline constexpr const char* kTrainJobMpiHostfileSuffix = "-mpi-hostfile";

struct RuntimeRef {
  std::string name;
  std::string api_group;  // "" until defaulted: trainer.kubeflow.org
  std::string kind;       // "" until defaulted: ClusterTrainingRuntime
};

// spec.initializer.dataset / .model.
struct InitializerSpec {
  std::optional<std::string> storage_uri;
  nlohmann::json env;  // []EnvVar verbatim, null when absent
  std::optional<std::string> secret_ref;
};

// spec.trainer: what the TrainJob overrides in the runtime's trainer step.
struct TrainerSpec {
  std::optional<std::string> image;
  std::optional<std::vector<std::string>> command, args;
  nlohmann::json env;  // []EnvVar verbatim, null when absent
  std::optional<int32_t> num_nodes;
  nlohmann::json resources_per_node;  // ResourceRequirements verbatim, null when absent
  std::optional<int32_t> num_proc_per_node;
};

// A TrainJob's own spec fields (suspend, activeDeadlineSeconds and managedBy go to the job's
// RunPolicy, which the engine reads for every kind).
struct TrainJobSpec {
  RuntimeRef runtime_ref;
  std::optional<InitializerSpec> dataset, model;
  std::optional<TrainerSpec> trainer;
  nlohmann::json runtime_patches;  // []RuntimePatch verbatim, null when absent
};

// mlPolicy: which framework wires the trainer nodes.
enum class MlPolicy { kPlain, kTorch, kMpi, kJax, kXGBoost, kFlux };
const char* MlPolicyName(MlPolicy policy);  // "torch", …; "plain" for none

struct MpiPolicy {
  int32_t num_proc_per_node = 1;
  std::string implementation = "OpenMPI";
  std::string ssh_auth_mount_path = "/root/.ssh";
  bool run_launcher_as_node = false;
};

struct EnvInjectionTarget {
  std::string job_name;
  std::vector<std::string> container_names;
};

// A TrainingRuntime (namespaced) or ClusterTrainingRuntime, decoded and defaulted.
struct TrainingRuntime {
  std::string kind;  // TrainingRuntime | ClusterTrainingRuntime
  std::string name;
  std::string namespace_;  // "" for a ClusterTrainingRuntime
  std::string source;      // where it was read ("runtimes.yaml (document 2)", "built-in")
  int32_t num_nodes = 1;   // mlPolicy.numNodes
  MlPolicy policy = MlPolicy::kPlain;
  MpiPolicy mpi;
  int32_t flux_num_proc_per_node = 1;
  std::vector<EnvInjectionTarget> torch_env_targets;
  nlohmann::json pod_group_policy;  // verbatim, null when absent
  nlohmann::json object;            // the whole document as read (the snapshot a job keeps)
};

}  // namespace trainctl::api
