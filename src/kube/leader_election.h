// Lease-based leader election (coordination.k8s.io/v1 Lease), for running several operator
// replicas of which one works.
//
// A candidate takes the lease when it is free, or when the holder's record has stayed
// unchanged for leaseDuration *as measured by this candidate's own clock* since it first saw
// that record (so clock skew between machines cannot make two leaders). Every write is an
// update carrying the resourceVersion, so of two candidates racing only one wins (409 for the
// other). The leader renews every retry period and steps down when no renewal succeeded within
// the renew deadline. On a clean stop it can release the lease (empty holder) so a successor
// need not wait.
//
// DecideLease is the pure rule; LeaderElector does the I/O. Run() blocks its calling thread;
// Stop() and IsLeader() may be called from any thread; callbacks run on Run()'s thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "kube/client.h"

namespace trainctl::kube {

struct LeaderElectionConfig {
  std::string namespace_;
  std::string name;      // the Lease's name
  std::string identity;  // this candidate, e.g. "<hostname>_<pid>"
  Duration lease_duration{15000};
  Duration renew_deadline{10000};
  Duration retry_period{2000};
  bool release_on_stop = true;
};

struct LeaseRecord {
  std::string holder;
  int lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime text as stored
  std::string renew_time;
  int transitions = 0;
  bool operator==(const LeaseRecord&) const = default;
};

// What a candidate knows when it decides.
struct LeaseView {
  std::optional<LeaseRecord> record;  // nullopt: no Lease object yet
  Time observed_at;                   // when this candidate first saw `record` as it is now
};

enum class LeaseAction { kCreate, kTakeOver, kRenew, kWait };

// The rule: free or ours → create/renew; another holder → wait until its record has been
// unchanged for leaseDuration by our clock, then take over.
LeaseAction DecideLease(const LeaseView& view, const std::string& identity, Time now,
                        Duration lease_duration);

// RFC 3339 with microseconds, as metav1.MicroTime: 2026-11-22T09:00:00.123456Z.
std::string FormatMicroTime(Time t);

class LeaderElector {
 public:
  struct Callbacks {
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string&)> on_new_leader;  // another identity holds the lease
  };
  LeaderElector(Client* client, const Clock* clock, LeaderElectionConfig config,
                Callbacks callbacks);

  // Campaigns until leading, leads until the lease is lost or Stop() is called, then returns.
  void Run();
  void Stop();
  bool IsLeader() const { return leading_.load(); }

 private:
  // One acquire-or-renew attempt; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  void Release();
  void SleepFor(Duration d);

  Client* client_;
  const Clock* clock_;
  LeaderElectionConfig config_;
  Callbacks callbacks_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<LeaseRecord> observed_;
  std::string observed_resource_version_;
  Time observed_at_;
  std::string last_leader_;
};

}  // namespace trainctl::kube
