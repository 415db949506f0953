// Expectations: what this operator has just asked the API server to create or delete for a job,
// and has not yet seen in its pod cache.
//
// A watch lags behind the writes; reconciling from a cache that does not show a pod created a
// moment ago would create it again, and one that still shows a failed pod deleted a moment ago
// would restart it twice. Instead of skipping the reconcile until the cache catches up (upstream
// blocks, and a deleted-then-recreated job can stall, kubeflow/trainer#1306), Overlay() folds
// the pending writes into the observations: a pending create appears as a Pending replica, a
// pending delete as terminating. An expectation ends when the cache shows the outcome (the
// created name present; the deleted one absent or terminating) or after `ttl`.
//
// Services get the same treatment (ExpectService / OverlayServices): a service created a moment
// ago counts as existing, so a lagging service cache does not cost one AlreadyExists request per
// service and sync.
//
// Thread-safe. Keys are job keys ("<kind>/<ns>/<name>").
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/plan.h"

namespace trainctl::op {

class Expectations {
 public:
  explicit Expectations(Duration ttl = Duration(300000)) : ttl_(ttl) {}

  // `attempt`: the job's attempt the pod is created for (gang restart), so that a pod not yet in
  // the cache is never taken for one of an earlier attempt.
  void ExpectCreate(const std::string& job, const engine::ReplicaRef& replica, Time now,
                    int attempt = 0);
  void ExpectDelete(const std::string& job, const std::string& pod_name, Time now);
  // The create or delete of `pod_name` failed: nothing to wait for.
  void Cancel(const std::string& job, const std::string& pod_name);
  // Folds pending writes into `observed` (and drops the expectations the cache now satisfies).
  std::vector<engine::ReplicaObservation> Overlay(const std::string& job,
                                                  std::vector<engine::ReplicaObservation> observed,
                                                  Time now);
  // The same for the job's services: `names` are those the cache shows.
  void ExpectService(const std::string& job, const std::string& service_name, Time now);
  void CancelService(const std::string& job, const std::string& service_name);
  std::vector<std::string> OverlayServices(const std::string& job, std::vector<std::string> names,
                                           Time now);
  void Forget(const std::string& job);
  size_t Pending(const std::string& job) const;

 private:
  struct Write {
    bool create = true;
    engine::ReplicaRef replica;
    Time since;
    int attempt = 0;
  };
  const Duration ttl_;
  mutable std::mutex mu_;
  std::map<std::string, std::map<std::string, Write>> jobs_;     // job → pod name → pending
  std::map<std::string, std::map<std::string, Time>> services_;  // job → service → since
};

}  // namespace trainctl::op
