// The job commands against a Kubernetes API server (`--backend kubernetes`, or --kubeconfig):
// get, describe, logs, delete and wait read and write kubeflow.org/v1 jobs, their pods and
// events through kube::Client, and print what the local commands print. Exit codes as in
// commands.h; errors name the job, the namespace and the server.
#pragma once

#include <string>
#include <vector>

#include "cli/commands.h"

namespace trainctl::cli {

int ClusterGet(const GlobalOptions& global, const std::vector<std::string>& args,
               const std::string& output);
int ClusterDescribe(const GlobalOptions& global, const std::vector<std::string>& args);
int ClusterLogs(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& replica, bool follow);
int ClusterDelete(const GlobalOptions& global, const std::vector<std::string>& args);
int ClusterWait(const GlobalOptions& global, const std::vector<std::string>& args,
                const std::string& for_condition, const std::string& timeout);

}  // namespace trainctl::cli
