// Manager: runs the operator's parts, each a Runnable added by the composition root
// (operator/compose.h), in the order they were added. Run() starts the parts every replica runs
// (webhooks, probes, metrics, the event recorder, the dashboard); with leader election it then
// waits to lead the Lease and starts the leader's parts (`leader_only`: the controllers). It
// blocks until `*stop` becomes true (a signal) or the lease is lost, then stops every part that
// started, in reverse order: the leader's parts first, then the lease is released, then the
// rest. A part that cannot start stops the ones started before it.
//
// Exit status of Run: 0 stopped, 1 lost the lease, 2 a part could not start (its name and the
// reason are logged). Not copyable; one Manager per process. Does no I/O of its own besides the
// election's and the log.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "kube/client.h"
#include "kube/leader_election.h"

namespace trainctl::op {

struct Runnable {
  std::string name;               // for the log
  std::function<Status()> start;  // returns once started; an error stops the Manager (exit 2)
  std::function<void()> stop;     // returns once stopped; only after a start that succeeded
  bool leader_only = false;       // started once this replica leads
};

struct ElectionSettings {
  kube::Client* client = nullptr;  // the Lease's; outlives the Manager
  kube::LeaderElectionConfig config;
};

class Manager {
 public:
  // No election (nullopt): this replica leads from the start.
  Manager(const Clock* clock, std::optional<ElectionSettings> election)
      : clock_(clock), election_(std::move(election)), leading_(!election_) {}
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  void Add(Runnable runnable) { runnables_.push_back(std::move(runnable)); }

  // Whether this replica leads (for /readyz: a standby is ready, a leader once synced).
  bool leading() const { return leading_; }

  int Run(std::atomic<bool>* stop);

 private:
  // Starts the runnables whose leader_only is `leader_only`, in order, onto `started_`; false
  // when one failed (logged).
  bool StartAll(bool leader_only);
  // Stops the started runnables whose leader_only is `leader_only`, last started first.
  void StopAll(bool leader_only);

  const Clock* clock_;
  std::optional<ElectionSettings> election_;
  std::atomic<bool> leading_;
  std::vector<Runnable> runnables_;
  std::vector<const Runnable*> started_;
};

}  // namespace trainctl::op
