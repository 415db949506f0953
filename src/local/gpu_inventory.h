// Which GPUs this machine has, read once per `trainctl run` and only for a job that asks for
// GPUs:
//
// - `TRAINCTL_GPU_INVENTORY` set (e.g. "nvidia.com/gpu=8" or "nvidia.com/gpu=2,amd.com/gpu=1";
//   "" or "none" for no GPU): that inventory, devices numbered 0..n-1. Tests use it on machines
//   without GPUs; users can use it to hand trainctl a subset.
// - otherwise NVIDIA devices from `nvidia-smi --query-gpu=index,uuid,name` (at most 15 s; a
//   missing or failing nvidia-smi means none, and says why in `source`), and AMD devices from the
//   KFD topology in sysfs (nodes with a non-zero gpu_id, in node order).
// - a caller's CUDA_VISIBLE_DEVICES (indices or UUIDs) narrows the NVIDIA devices to those, as
//   it would for any CUDA program started from that shell.
//
// The parsers are pure; ReadGpuInventory does the I/O.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "local/gpus.h"

namespace trainctl::local {

inline constexpr char kGpuInventoryEnv[] = "TRAINCTL_GPU_INVENTORY";

// "nvidia.com/gpu=2,amd.com/gpu=1" → 2 NVIDIA (ids "0","1") and 1 AMD device. kInvalid names
// the variable and the part that is wrong.
StatusOr<GpuInventory> ParseInventorySpec(const std::string& text);

// nvidia-smi's CSV without header ("0, GPU-8d1c…, NVIDIA H100 80GB HBM3" per line); lines that
// do not parse are skipped.
std::vector<Gpu> ParseNvidiaSmi(const std::string& csv);

// Keeps the NVIDIA devices named in `visible` (a CUDA_VISIBLE_DEVICES value: indices or UUIDs,
// comma-separated; CUDA stops at the first entry it does not know, and so does this).
std::vector<Gpu> RestrictToVisible(const std::vector<Gpu>& gpus, const std::string& visible);

// Reads the inventory as described above. `env` is the caller's environment ("NAME=value").
// Fails only for a malformed TRAINCTL_GPU_INVENTORY.
StatusOr<GpuInventory> ReadGpuInventory(const std::vector<std::string>& env);

}  // namespace trainctl::local
