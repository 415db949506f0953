// The job commands against a Kubernetes API server (`--backend kubernetes`, or --kubeconfig):
// get, describe, logs, delete and wait read and write kubeflow.org/v1 jobs, their pods and
// events through kube::Client, and print what the local commands print. Exit codes as in
// commands.h; errors name the job, the namespace and the server.
#pragma once

#include <string>
#include <vector>

#include "cli/backend.h"

namespace trainctl::cli {

class ClusterBackend final : public Backend {
 public:
  explicit ClusterBackend(GlobalOptions global) : global_(std::move(global)) {}
  int Get(const std::vector<std::string>& args, const std::string& output) override;
  // The table, or with -o json the data layer's document (jobs::DetailDocument), as locally.
  int Describe(const std::vector<std::string>& args, const std::string& output) override;
  int Logs(const std::vector<std::string>& args, const std::string& replica, bool follow) override;
  int Metrics(const std::vector<std::string>& args, const std::string& output,
                      const std::string& replica) override;
  // Refused: metadata patches of cluster jobs are kubectl's.
  int Patch(const std::vector<std::string>& args, const std::string& patch) override;
  int Delete(const std::vector<std::string>& args, bool delete_workspace) override;
  int Wait(const std::vector<std::string>& args, const std::string& for_condition,
           const std::string& timeout) override;

 private:
  GlobalOptions global_;
};

}  // namespace trainctl::cli
