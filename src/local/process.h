// Process groups for local replicas: spawn, signal, reap.
//
// Spawn starts `argv` in a new session (so the replica and everything it forks share one
// process group), with exactly the given environment and working directory, stdout and stderr
// appended to a log file, and no inherited descriptors besides those. Signals go to the whole
// group. Reaping is non-blocking and per child (never waitpid(-1)), so it composes with other
// children of the process. Not thread-safe; one owner per ProcessGroup.
//
// With a supervisor (local/supervisor.h) the child is the supervisor, which starts `argv` in a
// group of its own and outlives it only to kill what is left: signals go to the replica's group,
// the exit code is the replica's, and the replica and all its descendants die with the caller
// even when the caller is SIGKILLed. Spawn must then be called from the thread that lives as
// long as the process (PR_SET_PDEATHSIG follows the spawning thread).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::local {

struct LaunchSpec {
  std::vector<std::string> argv;  // argv[0] is an absolute path or a name resolved via env PATH
  std::vector<std::string> env;   // "NAME=value"
  std::string cwd;
  std::string log_path;  // stdout+stderr appended here
  // cgroup.procs files the replica joins before it runs (local/cgroups.h); only under a
  // supervisor, which does the joining.
  std::vector<std::string> cgroup_procs;
  // Only under a supervisor: run to its end after the replica has ended, however it ended
  // (a container runtime's `rm --force`, so no container outlives its client).
  std::vector<std::string> after_argv;
  // Only under a supervisor: false when the replica's descendants are not the supervisor's to
  // kill (a container runtime's monitor process, which cleans up after the container).
  bool reap_descendants = true;
};

// How to supervise replicas: the program that understands `__supervise` (the trainctl binary)
// and the grace period between SIGTERM and SIGKILL when the caller dies.
struct Supervision {
  std::string program;
  Duration grace{5000};
};

class ProcessGroup {
 public:
  // Starts the process. On exec failure (e.g. the file is not executable) returns an error and
  // writes the reason to the log file too.
  // `supervision` null: the child is the command itself.
  static StatusOr<ProcessGroup> Spawn(const LaunchSpec& spec,
                                      const Supervision* supervision = nullptr);

  ProcessGroup(ProcessGroup&& other) noexcept;
  ProcessGroup& operator=(ProcessGroup&& other) noexcept;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  ~ProcessGroup();

  // The replica's pid, which is also its process group's id.
  pid_t pid() const { return group_; }
  // A descriptor that becomes readable when the child exits (pidfd), or -1 if unsupported.
  int wait_fd() const { return pidfd_; }

  // Sends `sig` to every process of the group. Safe after the leader exited (group members
  // that outlived it still get the signal).
  void Signal(int sig) const;
  // Non-blocking: the exit code once the leader has exited (128+signal when killed by one).
  std::optional<int> Poll();
  // True while any process of the group still exists (the leader or its descendants).
  bool GroupAlive() const;

 private:
  ProcessGroup(pid_t pid, pid_t group, int pidfd) : pid_(pid), group_(group), pidfd_(pidfd) {}
  // Without a child left to reap, whether it has exited (without reaping it).
  bool ChildExited() const;
  pid_t pid_ = -1;    // the child: the replica or its supervisor
  pid_t group_ = -1;  // the replica's process group
  int pidfd_ = -1;
  std::optional<int> exit_code_;
};

// The value of the last PATH=… entry of `env` ("" when there is none).
std::string PathFromEnv(const std::vector<std::string>& env);

// Finds an executable for `name`: paths with a '/' are taken relative to `cwd`; bare names are
// searched in `path_env` (a PATH value). Returns the absolute path, or NotFound.
StatusOr<std::string> ResolveExecutable(const std::string& name, const std::string& cwd,
                                        const std::string& path_env);

}  // namespace trainctl::local
