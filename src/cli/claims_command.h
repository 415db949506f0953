// `trainctl claims [list|delete NAME]`: the folders that stand in for PersistentVolumeClaims on
// this machine (local/volumes.h, ClaimFolder), kept across jobs as a claim outlives its pods.
//
// list: NAMESPACE, CLAIM, SIZE, the local jobs that name it (running ones marked), PATH.
// delete: removes a claim's folder, refused (exit 1) while a running job names it.
// Local only; the namespace is -n (default "default"), every one with -A for list.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace trainctl::cli {

struct ClaimsOptions {
  std::string action = "list";  // list | delete
  std::vector<std::string> args;
  std::string output;  // "" or "json"
};

// One claim folder as read from the state folder, and the jobs that name it.
struct ClaimUse {
  std::string namespace_, name, path;
  unsigned long long bytes = 0;
  std::vector<std::string> jobs;     // "pytorchjob/x"
  std::vector<std::string> running;  // of those, the ones whose runner is active
};

// The table `claims list` prints (pure).
std::vector<std::vector<std::string>> ClaimRows(const std::vector<ClaimUse>& claims);

int ClaimsCommand(const GlobalOptions& global, const ClaimsOptions& options);

}  // namespace trainctl::cli
