// Local endpoints: every replica is 127.0.0.1 and gets its own free TCP port, so any number of
// jobs can run side by side on one machine. Ports are picked once per run by binding port 0.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "api/job.h"
#include "api/replica_env.h"
#include "common/status.h"

namespace trainctl::local {

class LocalEndpoints final : public api::Endpoints {
 public:
  // Allocates one free port per replica of `job`.
  static StatusOr<LocalEndpoints> Allocate(const api::Job& job);
  std::string Host(const std::string& type, int index) const override { return "127.0.0.1"; }
  std::string ServiceHost(const std::string& type, int index) const override { return "127.0.0.1"; }
  int Port(const std::string& type, int index, int declared) const override;
  const std::map<std::pair<std::string, int>, int>& ports() const { return ports_; }

 private:
  std::map<std::pair<std::string, int>, int> ports_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
StatusOr<int> FreePort();

}  // namespace trainctl::local
