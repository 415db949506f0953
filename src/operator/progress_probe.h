// Hang detection on the cluster (docs/status-machine.md, "Hangs"): for a job with a progress
// timeout, a cheap probe of its pods' logs tells the decision core when a replica last wrote.
//
// A probe is GET pods/<pod>/log?container=<default>&sinceSeconds=<since the last probe>&
// limitBytes=1 on the job's running replicas in rank order (master/launcher first), stopping at
// the first pod that wrote: one request per job while it is healthy, at most kMaxPodsPerProbe
// while it is silent. A job is probed at most every max(timeout / 4, 10 s); every job together,
// with the failed-rank probes, within one ProbeBudget (operator/probe_budget.h): a probe that
// would exceed it reserves the next free slot and the job comes back at that slot, so jobs take
// turns instead of all retrying at once.
// Silence counts only when every planned pod was asked.
//
// The time reported as a replica's last output is shifted by the time since the last probe, so
// that the decision core sees exactly the silence the probes have covered: a late probe delays a
// verdict but never makes one up.
//
// Split read → decide → write: PlanProbe (pure) decides whether a job is due and which pods to
// ask; ProgressProber does the requests and keeps the per-job state. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/progress_policy.h"
#include "common/clock.h"
#include "engine/plan.h"
#include "kube/client.h"
#include "operator/metrics.h"
#include "operator/probe_budget.h"

namespace trainctl::op {

inline constexpr size_t kMaxPodsPerProbe = 4;

// What the prober remembers of one job.
struct ProbeState {
  std::optional<Time> last_probe;
  std::optional<Time> last_output;  // a probe saw output (or a lower bound when none was seen)
  std::optional<Time> slot;         // a reserved turn in the budget
};

struct ProbePlan {
  bool due = false;
  long long since_seconds = 0;    // the window the probe covers
  std::vector<std::string> pods;  // to ask, in order
  Duration next{0};               // when the job is due (again)
};

// Pure: whether `state` is due for a probe at `now` under `policy`, and of which pods.
ProbePlan PlanProbe(const api::Job& job, const api::ProgressPolicy& policy,
                    const std::vector<engine::ReplicaObservation>& observed,
                    const ProbeState& state, Time now);

class ProgressProber {
 public:
  // `budget` (shared with the other log probes) outlives the prober.
  ProgressProber(kube::Client* client, Metrics* metrics, ProbeBudget* budget);

  // For a job with a progress policy: probes when due and budget allows, then fills
  // `last_output` of the running observations. Returns when to look again (nullopt: no policy or
  // nothing running).
  std::optional<Duration> Observe(const api::Job& job, const std::string& uid,
                                  std::vector<engine::ReplicaObservation>* observed, Time now);
  void Forget(const std::string& uid);

 private:
  kube::Client* client_;
  Metrics* metrics_;
  ProbeBudget* budget_;
  std::mutex mu_;
  std::map<std::string, ProbeState> jobs_;  // by uid; guarded by mu_
};

}  // namespace trainctl::op
