// `trainctl ui`: serves the dashboard (ui/dashboard.h) on this machine until SIGINT or
// SIGTERM. Binds 127.0.0.1 on a free port unless --listen says otherwise; the first line on
// stdout is the address to open, with this run's token in it. With --kubeconfig or
// --backend kubernetes, the cluster's jobs are listed too, read with the user's credentials.
// Its main thread is the dashboard's one timer: every --sweep-every it runs the local sweep
// (ui::Dashboard::Sweep: a lost runner recorded, finished jobs recorded in the history, jobs
// whose TTL has passed removed), and once before serving. "0" turns it off: the dashboard then
// only reads the state folder.
#pragma once

#include <string>

#include "cli/commands.h"

namespace trainctl::cli {

struct UiOptions {
  std::string listen = "127.0.0.1:0";
  std::string sweep_every = "2s";
};

int UiCommand(const GlobalOptions& global, const UiOptions& options);

}  // namespace trainctl::cli
