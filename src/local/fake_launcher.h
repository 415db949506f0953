// FakeLauncher: a scripted ProcessLauncher for unit tests of the local runner's loop. Nothing is
// started: each replica (named by its log file, "<job>-<type>-<index>") follows a script per
// attempt — run for a while, then exit with a code — and time is a FakeClock that waiting
// advances (to the next scripted exit, the end of the timeout, or the SIGTERM grace). SIGTERM
// ends a process at once with 143 unless the script ignores it; SIGKILL always ends it (137).
// It records every spawn (spec and time) and every signal. Test-only; single-threaded.
#pragma once

#include <signal.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "local/launcher.h"

namespace trainctl::local {

struct FakeScript {
  Duration runs_for{1000};
  int exit_code = 0;
  bool ignores_sigterm = false;
  bool fails_to_start = false;  // Spawn returns an error
  bool throws = false;          // Spawn throws (a bug somewhere below the runner)
};

class FakeLauncher final : public ProcessLauncher {
 public:
  struct Spawned {
    std::string replica;
    LaunchSpec spec;
    MonoTime at;
  };
  struct Signalled {
    std::string replica;
    int sig;
    MonoTime at;
  };

  explicit FakeLauncher(FakeClock* clock) : clock_(clock) {}

  // The scripts of `replica`'s attempts, in order; the last one repeats. Unscripted replicas
  // run for 1 s and exit 0.
  void Script(const std::string& replica, std::vector<FakeScript> attempts) {
    scripts_[replica] = std::move(attempts);
  }
  // Called once when the fake time first reaches `at` (relative to the first spawn).
  void At(Duration at, std::function<void()> action) { timed_.push_back({at, std::move(action)}); }

  const std::vector<Spawned>& spawned() const { return spawned_; }
  const std::vector<Signalled>& signalled() const { return signalled_; }
  int Attempts(const std::string& replica) const {
    return static_cast<int>(std::count_if(spawned_.begin(), spawned_.end(),
                                          [&](const Spawned& s) { return s.replica == replica; }));
  }
  // Fake time since the first spawn.
  Duration Elapsed() const {
    return std::chrono::duration_cast<Duration>(clock_->Monotonic() - origin_);
  }

  StatusOr<std::unique_ptr<ReplicaProcess>> Spawn(const LaunchSpec& spec) override {
    std::string file = spec.log_path.substr(spec.log_path.rfind('/') + 1);
    std::string replica = file.substr(0, file.rfind(".log"));
    if (spawned_.empty()) origin_ = clock_->Monotonic();
    FakeScript script;
    auto it = scripts_.find(replica);
    if (it != scripts_.end() && !it->second.empty()) {
      size_t attempt = static_cast<size_t>(Attempts(replica));
      script = it->second[std::min(attempt, it->second.size() - 1)];
    }
    spawned_.push_back({replica, spec, clock_->Monotonic()});
    if (script.throws) throw std::runtime_error("scripted failure spawning " + replica);
    if (script.fails_to_start) return FailedPreconditionError("exec " + spec.argv[0] + ": failed");
    return std::unique_ptr<ReplicaProcess>(
        std::make_unique<Process>(this, replica, script, clock_->Monotonic()));
  }

  // Advances the fake clock to the earliest of: a scripted exit of a running process, a timed
  // action, the end of `timeout`. Runs the actions that came due.
  void WaitForActivity(const std::vector<ReplicaProcess*>& running, int wake_fd,
                       Duration timeout) override {
    MonoTime now = clock_->Monotonic();
    MonoTime until = now + timeout;
    for (ReplicaProcess* p : running) {
      auto* fake = static_cast<Process*>(p);
      if (!fake->exit_code_) until = std::min(until, fake->exit_at_);
    }
    for (const Timed& t : timed_)
      if (!t.done) until = std::min(until, origin_ + t.at);
    if (until > now) clock_->Advance(std::chrono::duration_cast<Duration>(until - now));
    for (Timed& t : timed_) {
      if (!t.done && clock_->Monotonic() >= origin_ + t.at) {
        t.done = true;
        t.action();
      }
    }
  }

 private:
  class Process final : public ReplicaProcess {
   public:
    Process(FakeLauncher* launcher, std::string replica, FakeScript script, MonoTime started)
        : launcher_(launcher),
          replica_(std::move(replica)),
          script_(script),
          exit_at_(started + script.runs_for) {}
    pid_t pid() const override { return 100000 + static_cast<pid_t>(launcher_->spawned_.size()); }
    void Signal(int sig) override {
      launcher_->signalled_.push_back({replica_, sig, launcher_->clock_->Monotonic()});
      if (Poll()) return;
      if (sig == SIGKILL || (sig == SIGTERM && !script_.ignores_sigterm)) {
        exit_code_ = 128 + sig;
        exit_at_ = launcher_->clock_->Monotonic();
      }
    }
    std::optional<int> Poll() override {
      if (!exit_code_ && launcher_->clock_->Monotonic() >= exit_at_) exit_code_ = script_.exit_code;
      return exit_code_;
    }
    bool GroupAlive() const override { return !const_cast<Process*>(this)->Poll(); }

   private:
    friend class FakeLauncher;
    FakeLauncher* launcher_;
    std::string replica_;
    FakeScript script_;
    MonoTime exit_at_;
    std::optional<int> exit_code_;
  };
  struct Timed {
    Duration at;
    std::function<void()> action;
    bool done = false;
  };

  FakeClock* clock_;
  MonoTime origin_{};
  std::map<std::string, std::vector<FakeScript>> scripts_;
  std::vector<Timed> timed_;
  std::vector<Spawned> spawned_;
  std::vector<Signalled> signalled_;
};

}  // namespace trainctl::local
