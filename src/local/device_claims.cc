#include "local/device_claims.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "api/json_fields.h"
#include "api/kinds.h"

namespace trainctl::local {

using nlohmann::json;

json EncodeAssignment(const GpuAssignment& assignment) {
  json replicas = json::object();
  for (const auto& [replica, gpus] : assignment) {
    json list = json::array();
    for (const Gpu& g : gpus)
      list.push_back(
          {{"resource", g.resource}, {"index", g.index}, {"id", g.id}, {"name", g.name}});
    replicas[replica] = list;
  }
  return {{"replicas", replicas}};
}

GpuAssignment DecodeAssignment(const json& doc) {
  GpuAssignment out;
  if (!doc.is_object() || !doc.contains("replicas") || !doc["replicas"].is_object()) return out;
  for (const auto& [replica, list] : doc["replicas"].items()) {
    if (!list.is_array()) continue;
    for (const json& g : list) {
      if (!g.is_object() || !g.contains("resource") || !g["resource"].is_string() ||
          !g.contains("index") || !g["index"].is_number_integer())
        continue;
      out[replica].push_back({g["resource"].get<std::string>(), g["index"].get<int>(),
                              api::StringAt(g, "id"), api::StringAt(g, "name")});
    }
  }
  return out;
}

StatusOr<DeviceLock> DeviceLock::Acquire(const std::string& root) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  std::string path = root + "/devices.lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open " + path + ": " + std::strerror(errno));
  while (flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    close(fd);
    return IoError("cannot lock " + path + ": " + std::strerror(err));
  }
  return DeviceLock(fd);
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor releases the flock
}

std::vector<DeviceClaim> ReadDeviceClaims(const std::string& root, const JobKey& self) {
  std::vector<DeviceClaim> claims;
  // devices.json, not job.json: a runner records its devices before it writes its job.
  for (const JobKey& key : ListJobs(root, std::nullopt, "devices.json")) {
    if (key.kind == self.kind && key.namespace_ == self.namespace_ && key.name == self.name)
      continue;
    JobDir dir(root, key);
    int pid = 0;
    if (!dir.RunnerActive(&pid)) continue;
    StatusOr<json> doc = dir.ReadDevices();
    if (!doc.ok() || doc->is_null()) continue;
    DeviceClaim claim;
    claim.holder = api::ToLower(api::Info(key.kind).name) + " " + key.namespace_ + "/" + key.name +
                   " (runner pid " + std::to_string(pid) + ")";
    for (const auto& [replica, gpus] : DecodeAssignment(*doc))
      claim.gpus.insert(claim.gpus.end(), gpus.begin(), gpus.end());
    if (!claim.gpus.empty()) claims.push_back(std::move(claim));
  }
  return claims;
}

}  // namespace trainctl::local
