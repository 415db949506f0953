// bench_client.h: what the kube benchmarks share to reach their private test cluster.
//
// BenchEnv(name) is the variable's value or "". BenchAdminClient(clock) connects with the
// cluster's admin kubeconfig ($TRAINCTL_CLUSTER_DIR/kubeconfig), with no client-side rate
// limit (a benchmark measures the server and the client, not a limiter) and, when given,
// `direct_connections` for the transport; it exits the process with the error when the
// kubeconfig cannot be read or the client not made. Benchmarks only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "kube/client.h"
#include "kube/config_loader.h"
#include "kube/connect.h"

namespace trainctl::bench {

inline std::string BenchEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

inline std::unique_ptr<kube::Client> BenchAdminClient(
    const Clock* clock, std::optional<size_t> direct_connections = std::nullopt) {
  StatusOr<kube::RestConfig> config =
      kube::LoadKubeconfig(BenchEnv("TRAINCTL_CLUSTER_DIR") + "/kubeconfig", "");
  if (config.ok() && direct_connections) config->direct_connections = *direct_connections;
  kube::ClientOptions options;
  options.qps = -1;
  StatusOr<std::unique_ptr<kube::Client>> client =
      config.ok() ? kube::Connect(*config, clock, options)
                  : StatusOr<std::unique_ptr<kube::Client>>(config.status());
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    std::exit(1);
  }
  return std::move(client).value();
}

}  // namespace trainctl::bench
