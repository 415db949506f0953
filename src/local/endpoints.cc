#include "local/endpoints.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

namespace trainctl::local {

StatusOr<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return IoError(std::string("bind: ") + std::strerror(errno));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

StatusOr<LocalEndpoints> LocalEndpoints::Allocate(const api::Job& job) {
  LocalEndpoints out;
  std::set<int> used;
  for (const auto& [type, spec] : job.replica_specs) {
    for (int i = 0; i < spec.replicas.value_or(1); ++i) {
      StatusOr<int> port = FreePort();
      for (int tries = 0; port.ok() && used.count(*port) && tries < 20; ++tries) port = FreePort();
      if (!port.ok()) return port.status();
      used.insert(*port);
      out.ports_[{type, i}] = *port;
    }
  }
  return out;
}

int LocalEndpoints::Port(const std::string& type, int index, int declared) const {
  auto it = ports_.find({type, index});
  return it == ports_.end() ? declared : it->second;
}

}  // namespace trainctl::local
