// The seven kubeflow.org/v1 job kinds and their fixed facts (names, replica types, defaults).
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

enum class Kind { kPyTorchJob, kTFJob, kXGBoostJob, kMPIJob, kPaddleJob, kJAXJob, kMXJob };

inline constexpr const char* kGroup = "kubeflow.org";
inline constexpr const char* kApiVersion = "kubeflow.org/v1";
inline constexpr const char* kManagedByKubeflow = "kubeflow.org/training-operator";
inline constexpr const char* kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";

inline constexpr const char* kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr const char* kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr const char* kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr const char* kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr const char* kLabelJobRole = "training.kubeflow.org/job-role";

struct KindInfo {
  Kind kind;
  const char* name;             // "PyTorchJob"
  const char* plural;           // "pytorchjobs"
  const char* spec_map_field;   // "pytorchReplicaSpecs"
  std::vector<std::string> replica_types;  // exact case
  const char* default_container;           // "pytorch"
  const char* port_name;                   // "pytorchjob-port"
  int default_port;                        // 23456
  const char* default_restart_policy;      // "OnFailure"
  const char* framework_label;             // metrics label "pytorch"
  const char* controller_name;             // "pytorchjob-controller"
  bool normalizes_type_case;               // defaulting fixes "WORKER" → "Worker"
  bool injects_default_port;               // defaulting appends the default port
};

// Every kind's facts, in api::Kind order.
const std::vector<KindInfo>& AllKinds();
const KindInfo& Info(Kind kind);
// Case-sensitive kind name ("PyTorchJob"), as in a manifest.
std::optional<Kind> KindFromName(std::string_view name);
// Case-insensitive lookup of a kind by name, singular or plural ("pytorchjob", "pytorchjobs",
// "PyTorchJob"), as the CLI accepts it.
std::optional<Kind> KindFromCliName(std::string_view name);

std::string ToLower(std::string_view s);

}  // namespace trainctl::api
