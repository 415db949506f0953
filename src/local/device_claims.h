// Which GPUs running `trainctl run` jobs hold, kept in the state folder so that two jobs started
// at once never get the same device.
//
// Each job's runner records its replicas' devices in the job's devices.json; a record counts
// only while that job's runner holds runner.lock, so a runner that dies (SIGKILL, OOM, reboot)
// frees its devices by itself. Choosing devices and recording them is one step across runners:
// it happens under `<root>/devices.lock` (an exclusive flock, held for milliseconds).
// I/O except Encode/DecodeAssignment.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "local/gpus.h"
#include "local/state_store.h"

namespace trainctl::local {

// {"replicas": {"<replica>": [{"resource", "index", "id", "name"}, …]}}
nlohmann::json EncodeAssignment(const GpuAssignment& assignment);
// The inverse; entries that are not shaped so are skipped (a damaged file frees its devices).
GpuAssignment DecodeAssignment(const nlohmann::json& doc);

// Holds <root>/devices.lock from Acquire until destroyed.
class DeviceLock {
 public:
  static StatusOr<DeviceLock> Acquire(const std::string& root);
  DeviceLock(DeviceLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DeviceLock& operator=(DeviceLock&&) = delete;
  DeviceLock(const DeviceLock&) = delete;
  ~DeviceLock();

 private:
  explicit DeviceLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The devices held by every job under `root` whose runner is alive, except `self`.
std::vector<DeviceClaim> ReadDeviceClaims(const std::string& root, const JobKey& self);

}  // namespace trainctl::local
