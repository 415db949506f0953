// ProcessLauncher: how the local runner starts replica processes and waits for something to
// happen to them — the runner's only contact with the operating system's processes, so its loop
// can be tested with a scripted launcher and a fake clock (local/fake_launcher.h).
//
// OsProcessLauncher starts process groups (local/process.h), each under a supervisor when given
// one, and waits with poll(2) on their pidfds and the runner's wake-up descriptor (signals).
// Not thread-safe: one runner thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "local/process.h"

namespace trainctl::local {

// One started replica: its process group.
class ReplicaProcess {
 public:
  virtual ~ReplicaProcess() = default;
  virtual pid_t pid() const = 0;
  // Sends `sig` to the whole group.
  virtual void Signal(int sig) = 0;
  // Non-blocking: the exit code once the leader has exited (128+signal when killed by one).
  virtual std::optional<int> Poll() = 0;
  // True while any process of the group still exists.
  virtual bool GroupAlive() const = 0;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts `spec` (log_path already set); an error means it could not start at all.
  virtual StatusOr<std::unique_ptr<ReplicaProcess>> Spawn(const LaunchSpec& spec) = 0;
  // Returns when one of `running` may have exited, `wake_fd` (-1: none) became readable, or
  // `timeout` passed — whichever comes first. Spurious returns are allowed.
  virtual void WaitForActivity(const std::vector<ReplicaProcess*>& running, int wake_fd,
                               Duration timeout) = 0;
};

class OsProcessLauncher final : public ProcessLauncher {
 public:
  // `supervision.program` empty: replicas are started without a supervisor.
  explicit OsProcessLauncher(Supervision supervision = {}) : supervision_(std::move(supervision)) {}
  StatusOr<std::unique_ptr<ReplicaProcess>> Spawn(const LaunchSpec& spec) override;
  void WaitForActivity(const std::vector<ReplicaProcess*>& running, int wake_fd,
                       Duration timeout) override;

 private:
  Supervision supervision_;
};

}  // namespace trainctl::local
