// `trainctl runtimes [list|install FILE|DIR]`: the Trainer v2 runtimes a TrainJob run on this
// machine may name (local/runtimes.h).
//
// list: NAME, KIND, FRAMEWORK (the trainer.kubeflow.org/framework label), POLICY (mlPolicy),
// NODES (mlPolicy.numNodes), SOURCE (built-in, the installed file, or the --runtimes path);
// `-o json` the same as a list of objects. install: checks every runtime of FILE|DIR, then
// writes each into the state folder, replacing one of the same kind, namespace and name; a bad
// runtime is exit 2 with its file, document and field path, and nothing is written.
#pragma once

#include <string>
#include <vector>

#include "api/training_runtime.h"
#include "cli/commands.h"

namespace trainctl::cli {

struct RuntimesOptions {
  std::string action = "list";  // list | install
  std::vector<std::string> args;
  std::string output;  // "" or "json"
};

// The table `runtimes list` prints (pure).
std::vector<std::vector<std::string>> RuntimeRows(const api::RuntimeCatalog& catalog);

int RuntimesCommand(const GlobalOptions& global, const RuntimesOptions& options);

}  // namespace trainctl::cli
