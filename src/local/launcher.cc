#include "local/launcher.h"

#include <poll.h>

namespace trainctl::local {
namespace {

class OsProcess final : public ReplicaProcess {
 public:
  explicit OsProcess(ProcessGroup group) : group_(std::move(group)) {}
  pid_t pid() const override { return group_.pid(); }
  void Signal(int sig) override { group_.Signal(sig); }
  std::optional<int> Poll() override { return group_.Poll(); }
  bool GroupAlive() const override { return group_.GroupAlive(); }
  int wait_fd() const { return group_.wait_fd(); }

 private:
  ProcessGroup group_;
};

}  // namespace

StatusOr<std::unique_ptr<ReplicaProcess>> OsProcessLauncher::Spawn(const LaunchSpec& spec) {
  StatusOr<ProcessGroup> group =
      ProcessGroup::Spawn(spec, supervision_.program.empty() ? nullptr : &supervision_);
  if (!group.ok()) return group.status();
  return std::unique_ptr<ReplicaProcess>(std::make_unique<OsProcess>(std::move(group).value()));
}

void OsProcessLauncher::WaitForActivity(const std::vector<ReplicaProcess*>& running, int wake_fd,
                                        Duration timeout) {
  std::vector<pollfd> fds;
  if (wake_fd >= 0) fds.push_back({wake_fd, POLLIN, 0});
  for (ReplicaProcess* p : running) {
    // Every process this launcher started is an OsProcess.
    int fd = static_cast<OsProcess*>(p)->wait_fd();
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  }
  poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, timeout.count())));
}

}  // namespace trainctl::local
