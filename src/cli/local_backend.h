// LocalBackend: the job commands on this machine — jobs in the state folder that `trainctl run`
// writes (local/state_store.h), read through the data layer (jobs/local_source.h). Implemented in
// commands.cc beside `run`.
#pragma once

#include "cli/backend.h"

namespace trainctl::cli {

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(GlobalOptions global) : global_(std::move(global)) {}
  int Get(const std::vector<std::string>& args, const std::string& output) override;
  int Describe(const std::vector<std::string>& args, const std::string& output) override;
  int Logs(const std::vector<std::string>& args, const std::string& replica, bool follow) override;
  int Metrics(const std::vector<std::string>& args, const std::string& output,
                      const std::string& replica) override;
  int Patch(const std::vector<std::string>& args, const std::string& patch) override;
  int Delete(const std::vector<std::string>& args, bool delete_workspace) override;
  int Wait(const std::vector<std::string>& args, const std::string& for_condition,
           const std::string& timeout) override;

 private:
  GlobalOptions global_;
};

}  // namespace trainctl::cli
