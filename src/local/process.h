// Process groups for local replicas: spawn, signal, reap.
//
// Spawn starts `argv` in a new session (so the replica and everything it forks share one
// process group), with exactly the given environment and working directory, stdout and stderr
// appended to a log file, and no inherited descriptors besides those. Signals go to the whole
// group. Reaping is non-blocking and per child (never waitpid(-1)), so it composes with other
// children of the process. Not thread-safe; one owner per ProcessGroup.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace trainctl::local {

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path or a name resolved via env PATH
  std::vector<std::string> env;   // "NAME=value"
  std::string cwd;
  std::string log_path;  // stdout+stderr appended here
};

class ProcessGroup {
 public:
  // Starts the process. On exec failure (e.g. the file is not executable) returns an error and
  // writes the reason to the log file too.
  static StatusOr<ProcessGroup> Spawn(const LaunchSpec& spec);

  ProcessGroup(ProcessGroup&& other) noexcept;
  ProcessGroup& operator=(ProcessGroup&& other) noexcept;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();

  pid_t pid() const { return pid_; }
  // A descriptor that becomes readable when the leader exits (pidfd), or -1 if unsupported.
  int wait_fd() const { return pidfd_; }

  // Sends `sig` to every process of the group. Safe after the leader exited (group members
  // that outlived it still get the signal).
  void Signal(int sig) const;
  // Non-blocking: the exit code once the leader has exited (128+signal when killed by one).
  std::optional<int> Poll();
  // True while any process of the group still exists (the leader or its descendants).
  bool GroupAlive() const;

 private:
  ProcessGroup(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::optional<int> exit_code_;
};

// Finds an executable for `name`: paths with a '/' are taken relative to `cwd`; bare names are
// searched in `path_env` (a PATH value). Returns the absolute path, or NotFound.
StatusOr<std::string> ResolveExecutable(const std::string& name, const std::string& cwd,
                                        const std::string& path_env);

}  // namespace trainctl::local
