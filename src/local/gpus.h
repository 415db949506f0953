// GPUs for `trainctl run`: what a job's replicas ask for (`resources.limits["nvidia.com/gpu"]`,
// `["amd.com/gpu"]` of the default container), which of this machine's devices each replica
// gets, and the environment that makes a replica see exactly those (CUDA_VISIBLE_DEVICES;
// ROCR_VISIBLE_DEVICES + HIP_VISIBLE_DEVICES).
//
// Contract: a replica gets devices of its own, never one another replica (of this job or of
// another running job) holds, unless sharing is asked for; a job that asks for more than the
// machine has, or for more than is free, is refused before anything starts, with the replica
// type, the count asked and the count present. Replicas without a GPU limit are left alone.
// An MPIJob's Launcher sees its own devices and its Workers' (its mpirun forks the ranks here).
//
// Pure and thread-safe: the inventory is read by gpu_inventory.h, what other jobs hold by
// device_claims.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/job.h"
#include "common/status.h"

namespace trainctl::local {

inline constexpr char kNvidiaGpu[] = "nvidia.com/gpu";
inline constexpr char kAmdGpu[] = "amd.com/gpu";

struct Gpu {
  std::string resource;  // kNvidiaGpu or kAmdGpu
  int index = 0;         // the driver's index (nvidia-smi, KFD node order)
  std::string id;        // what the visibility variable takes: a UUID when known, else the index
  std::string name;      // model, for messages ("NVIDIA H100 80GB HBM3"); may be empty
  bool operator==(const Gpu&) const = default;
};

struct GpuInventory {
  std::vector<Gpu> gpus;
  // Where the list came from, for messages: "nvidia-smi", "TRAINCTL_GPU_INVENTORY", ...
  std::string source;
  int Count(const std::string& resource) const;
};

// One replica type's ask: `replicas` × `per_replica` devices of `resource`.
struct GpuAsk {
  std::string type;
  int replicas = 0;
  int per_replica = 0;
  std::string resource;
  std::string field;  // e.g. spec.pytorchReplicaSpecs[Worker].template.spec.containers[0]
                      //      .resources.limits[nvidia.com/gpu]
};

// What every replica type with replicas > 0 asks for (limits, else requests), in the kind's
// replica-type order. A count that is not a whole number ≥ 0 is kInvalid naming the field.
StatusOr<std::vector<GpuAsk>> GpuAsks(const api::Job& job);

// Devices another running job holds.
struct DeviceClaim {
  std::string holder;  // "pytorchjob default/other (runner pid 123)"
  std::vector<Gpu> gpus;
};

// Replica name → its devices. Replicas that ask for none are absent.
using GpuAssignment = std::map<std::string, std::vector<Gpu>>;

// Gives each replica its devices: lowest free indices first, replica after replica (adjacent
// on an idle machine).
// Errors (nothing assigned): kInvalid when the job, or one replica, asks for more than the
// machine has; kAlreadyExists when enough exist but others hold them (names the holders).
// `share`: devices may be shared (with other replicas and jobs); each replica still gets
// `per_replica` distinct devices, spread round-robin, and only an ask above the machine's count
// for a single replica is refused.
StatusOr<GpuAssignment> AssignGpus(const api::Job& job, const std::vector<GpuAsk>& asks,
                                   const GpuInventory& inventory,
                                   const std::vector<DeviceClaim>& held, bool share);

// The devices (type, index)'s processes see: its own, and for an MPIJob's Launcher its Workers'
// too (sorted by resource and index, without repeats).
std::vector<Gpu> VisibleGpus(const api::Job& job, const GpuAssignment& assignment,
                             const std::string& type, int index);

// The environment for `gpus` (empty: none): CUDA_VISIBLE_DEVICES=<ids> for NVIDIA;
// ROCR_VISIBLE_DEVICES=<ids> and HIP_VISIBLE_DEVICES=0..n-1 (HIP numbers what ROCr shows) for
// AMD.
std::vector<std::pair<std::string, std::string>> GpuEnv(const std::vector<Gpu>& gpus);

}  // namespace trainctl::local
