// `trainctl history [list|show NAME|search TEXT]`: finished jobs kept after `delete` and TTL
// (history/store.h, docs/history.md). Local jobs: <state root>/history.db; before answering,
// the local sweep runs (SweepLocal), so finished job folders without a record are recorded (a
// runner that was killed, a job from before the history existed). `--file PATH` reads another history file instead. On a cluster
// (`--backend kubernetes`, or `--dashboard ADDRESS`) the operator's history is read through its
// dashboard (jobs/history_reader.h), with the rows and records RBAC lets the token read.
// Exit codes as in commands.h.
//
// Also the capture and the sweep the job commands call: OpenLocalHistory, CaptureInto and
// SweepLocal, which never fail a job command (a history that cannot be written is a warning).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "history/store.h"
#include "local/state_store.h"

namespace trainctl::cli {

struct HistoryOptions {
  std::string action;  // "list" (default), "show", "search"
  std::vector<std::string> args;
  std::string output;  // "" or "json"
  bool logs = false;   // show: print every replica's kept log
  size_t limit = 50;
  // Another history file to read (the operator's, --history sqlite:PATH, copied from its
  // volume); "" the local one.
  std::string file;
  // The operator's dashboard: at this address ("" through the API server's proxy to
  // `dashboard_service`, "" the default Service), shown this token ("" $TRAINCTL_TOKEN, else
  // the kubeconfig's).
  std::string dashboard;
  std::string dashboard_service;
  std::string token;
};

int HistoryCommand(const GlobalOptions& global, const HistoryOptions& options);

// The local history of `state_root`, or nullptr after a warning on stderr.
std::unique_ptr<history::HistoryStore> OpenLocalHistory(const std::string& state_root);
// Records the local job `key` in `store` when it has finished; warns on failure.
void CaptureInto(history::HistoryStore* store, const std::string& state_root,
                 const local::JobKey& key);
// The local sweep (jobs/local_sweep.h) of namespace `ns` (nullopt: all) with the local history,
// opened only when a finished job needs it; warnings on stderr.
void SweepLocal(const std::string& state_root, const std::optional<std::string>& ns);

}  // namespace trainctl::cli
