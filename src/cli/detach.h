// `trainctl run --detach`: the runner goes on in a background process, and the command returns
// once the job's state folder is set up (or set-up failed), so its caller can find the job at
// once and sees set-up errors as if the run were in the foreground.
//
// Process I/O (fork, pipes, file descriptors). Call before any thread is started.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace trainctl::cli {

// Handed to the background process: tells the waiting parent how set-up went. Only the first
// report counts. On success, stdout and stderr of the background process go to `log_path` (the
// runner's own log) before the parent is released.
class SetupReporter {
 public:
  explicit SetupReporter(int fd) : fd_(fd) {}
  void Report(const Status& status, const std::string& log_path);

 private:
  int fd_;
};

// Starts `child_main` in a new session (stdin from /dev/null, SIGHUP and SIGPIPE ignored); the
// child exits with its return value and never returns here. The parent waits for the child's
// report and returns the child's pid, or the reported error (an InternalError when the child
// ended without reporting).
StatusOr<int> RunDetached(const std::function<int(SetupReporter&)>& child_main);

}  // namespace trainctl::cli
