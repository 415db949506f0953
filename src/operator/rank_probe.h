// Failed ranks on the cluster (docs/status-machine.md, "A failed rank"): a replica that runs
// torchrun keeps running after one of its worker processes failed (the agent waits at its exit
// barrier), so its pod says nothing. Its log does: the agent's report
// (api/torchrun_report.h). For a job whose replicas run torchrun (and do not restart their
// workers), the operator reads the end of each running replica's log (GET pods/<pod>/log?
// container=<default>&tailLines=50&limitBytes=256 KiB) at most every kRankProbePeriod, at most
// kMaxPodsPerRankProbe pods a probe (in turn), within the ProbeBudget it shares with the
// progress probes (a job over the budget comes back at its reserved turn); a failure found is
// kept for that pod (by uid) and put on its observation (ReplicaObservation::process_failure)
// from then on, so the decision core names the rank in ReplicasReady and in the Succeeded
// message.
//
// Split read → decide → write: PlanRankProbe (pure) says whether a job is due and which pods
// to ask; ReadRankFailure (pure) reads an answer; RankProber does the requests and keeps the
// per-job state. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "common/clock.h"
#include "engine/plan.h"
#include "kube/client.h"
#include "operator/probe_budget.h"

namespace trainctl::op {

class Metrics;

inline constexpr Duration kRankProbePeriod{10000};
inline constexpr size_t kMaxPodsPerRankProbe = 4;
inline constexpr long long kRankProbeTailLines = 50;
// A window's bytes are counted from its start: room for 50 long lines (a bar, a traceback).
inline constexpr long long kRankProbeLimitBytes = 262144;

// True when the default container of `type` runs torchrun (its command or args name
// `torchrun` or `torch.distributed.run`) and its agent does not restart the worker group after
// a failure (api::TorchrunMayRestartWorkers over its env and command line).
bool RunsTorchrun(const api::Job& job, const std::string& type);

struct RankProbeState {
  std::optional<Time> last_probe;
  size_t turn = 0;           // where the next probe starts among the job's pods to ask
  std::optional<Time> slot;  // a turn reserved in the budget
  // Failures found, by pod uid (a pod's failure stays with it; a new pod starts clean).
  std::map<std::string, engine::ReplicaObservation::ProcessExit> failures;
};

struct RankProbePlan {
  bool due = false;
  std::vector<size_t> pods;  // indexes into the observations, to ask in order
  Duration next{0};          // when the job is due (again); zero: never (no torchrun pod)
};

// Pure: whether `state` is due at `now`, and which running torchrun pods without a known
// failure to ask.
RankProbePlan PlanRankProbe(const api::Job& job,
                            const std::vector<engine::ReplicaObservation>& observed,
                            const RankProbeState& state, Time now);

// Pure: the failure the end of `replica`'s log reports, seen at `now` (its rank from the
// replica's env as the operator injects it and the template sets it); nullopt when none.
std::optional<engine::ReplicaObservation::ProcessExit> ReadRankFailure(
    const api::Job& job, const engine::ReplicaObservation& replica, const std::string& log_end,
    Time now);

class RankProber {
 public:
  // `budget` (shared with the other log probes) outlives the prober.
  RankProber(kube::Client* client, Metrics* metrics, ProbeBudget* budget);

  // Probes when due and the budget allows, then fills `process_failure` of the observations
  // whose pods reported one. Returns when to look again (nullopt: no torchrun pod runs).
  std::optional<Duration> Observe(const api::Job& job, const std::string& uid,
                                  std::vector<engine::ReplicaObservation>* observed, Time now);
  void Forget(const std::string& uid);

 private:
  kube::Client* client_;
  Metrics* metrics_;
  ProbeBudget* budget_;
  std::mutex mu_;
  std::map<std::string, RankProbeState> jobs_;  // by job uid; guarded by mu_
};

}  // namespace trainctl::op
