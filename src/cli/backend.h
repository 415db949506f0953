// Backend: where the job commands find jobs — this machine's state folder (LocalBackend,
// cli/local_backend.h) or a Kubernetes API server (ClusterBackend, cli/cluster_commands.h).
// main() picks one with ChooseBackend, once; each command is one call. Every call returns the
// process exit status (commands.h) and has printed its output or "error: <message>".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace trainctl::cli {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int Get(const std::vector<std::string>& args, const std::string& output) = 0;
  virtual int Describe(const std::vector<std::string>& args, const std::string& output) = 0;
  virtual int Logs(const std::vector<std::string>& args, const std::string& replica,
                   bool follow) = 0;
  // `metrics [KIND] NAME [-r REPLICA] [-o json]`: the series from the job's output
  // (cli/job_commands.h).
  virtual int Metrics(const std::vector<std::string>& args, const std::string& output,
                      const std::string& replica) = 0;
  virtual int Patch(const std::vector<std::string>& args, const std::string& patch) = 0;
  // `delete_workspace`: also the PVCs the job's templates name (locally, their folders).
  virtual int Delete(const std::vector<std::string>& args, bool delete_workspace) = 0;
  virtual int Wait(const std::vector<std::string>& args, const std::string& for_condition,
                   const std::string& timeout) = 0;
};

// The backend `global` selects (UseCluster's rule); kInvalid for an unknown backend name.
StatusOr<std::unique_ptr<Backend>> ChooseBackend(const GlobalOptions& global,
                                                 const std::string& env_backend);

}  // namespace trainctl::cli
