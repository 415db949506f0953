// PodSummary: the compact projection of a Pod that controllers cache instead of the JSON
// document (a few hundred bytes instead of tens of kilobytes): identity, the controller
// owner, the labels the caller asked to keep, phase, deletion, node, and per container the
// restart count and last exit code.
//
// ProjectPod is pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainctl::kube {

using Uid = std::array<uint8_t, 16>;
// "0a1b…" (8-4-4-4-12 hex) → bytes; nullopt when it is not a UUID.
std::optional<Uid> ParseUid(const std::string& text);
std::string FormatUid(const Uid& uid);

enum class PodPhase : uint8_t { kUnknown, kPending, kRunning, kSucceeded, kFailed };

struct ContainerSummary {
  std::string name;
  int32_t restart_count = 0;
  int32_t exit_code = -1;   // of the current terminated state, else the last one; -1 = none
  bool terminated = false;  // the current state is terminated
};

struct PodSummary {
  std::string namespace_;
  std::string name;
  std::string resource_version;
  std::string node_name;
  Uid uid{};
  Uid owner_uid{};  // the controller owner's; zero when there is none
  PodPhase phase = PodPhase::kUnknown;
  bool terminating = false;  // metadata.deletionTimestamp is set
  // Values of the kept labels, in the order of ProjectPod's `keep_labels` ("" = absent); the
  // keys are not stored per pod.
  std::vector<std::string> label_values;
  std::vector<ContainerSummary> containers;

  // The value of kept label number `i` (its position in keep_labels), or nullptr when absent.
  const std::string* Label(size_t i) const {
    return i < label_values.size() && !label_values[i].empty() ? &label_values[i] : nullptr;
  }
  bool HasOwner() const { return owner_uid != Uid{}; }
};

// Projects a Pod; nullopt when it has no name. Only labels in `keep_labels` are kept.
std::optional<PodSummary> ProjectPod(const nlohmann::json& pod,
                                     const std::vector<std::string>& keep_labels);

}  // namespace trainctl::kube
