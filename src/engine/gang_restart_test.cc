// Unit tests for the gang restart (api/restart_scope.h, engine/failure_policy.h,
// engine/reconcile.cc): the failure decision for every restart policy × scope × backoff state,
// and the passes of a gang restart — every replica removed, the next attempt recorded first,
// no replica of the next attempt created while one of the previous attempt exists, one retry
// per gang restart whatever the number of failed replicas.
#include <gtest/gtest.h>

#include <algorithm>

#include "api/progress_policy.h"
#include "api/restart_scope.h"
#include "api/validation.h"
#include "engine/conditions.h"
#include "engine/failure_policy.h"
#include "engine/reconcile.h"
#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using std::chrono::seconds;
using namespace test;  // NOLINT: test helpers
using V = FailureVerdict;

api::Job GangJob(const std::string& policy, const std::string& run_policy = "", int workers = 2) {
  api::Job job =
      MakeJob("PyTorchJob", {{"Master", 1, policy}, {"Worker", workers, policy}}, "", run_policy);
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Gang";
  return job;
}

// What a substrate does with a plan's restart_attempt: it records it on the job first.
void RecordAttempt(api::Job* job, const Plan& plan) {
  if (plan.restart_attempt)
    job->metadata["annotations"][api::kRestartAttemptAnnotation] =
        std::to_string(*plan.restart_attempt);
}

ReplicaObservation At(ReplicaObservation r, int attempt, bool terminating = false) {
  r.attempt = attempt;
  r.terminating = terminating;
  return r;
}

struct Row {
  std::string scope;  // "" (Replica by default) | Replica | Gang
  std::string policy;
  std::vector<std::optional<int>> exits;  // Workers 0.. failed with these codes
  std::string backoff;
  int retries_before;
  std::vector<V> verdicts;
  int retries_after;
  bool restart_all;
  bool fatal;
};

TEST(GangDecision, EveryPolicyScopeAndBackoffState) {
  const Row rows[] = {
      // Replica scope: each retried failure is a retry of its own (upstream's behaviour).
      {"", "OnFailure", {1, 1}, "", 0, {V::kRestart, V::kRestart}, 2, false, false},
      {"Replica", "OnFailure", {1, 1}, "", 0, {V::kRestart, V::kRestart}, 2, false, false},
      // Gang: the retried failures of a pass are one restart of every replica, one retry.
      {"Gang", "OnFailure", {1}, "", 0, {V::kRestart}, 1, true, false},
      {"Gang", "OnFailure", {1, 137}, "", 3, {V::kRestart, V::kRestart}, 4, true, false},
      {"Gang", "Always", {0}, "", 0, {V::kRestart}, 1, true, false},
      {"Gang", "ExitCode", {137}, "", 0, {V::kRestart}, 1, true, false},
      {"Gang", "ExitCode", {std::nullopt}, "", 0, {V::kRestart}, 1, true, false},  // vanished
      {"Gang", "Never", {1}, "", 0, {V::kNone}, 0, false, false},
      // A permanent failure still fails the job, whatever else restarts.
      {"Gang", "ExitCode", {1}, "", 0, {V::kPermanent}, 0, false, true},
      {"Gang", "ExitCode", {137, 2}, "", 0, {V::kRestart, V::kPermanent}, 1, true, true},
      // backoffLimit: the gang restart past the limit fails the job, for every retried replica.
      {"Gang",
       "OnFailure",
       {1, 1},
       "{backoffLimit: 2}",
       1,
       {V::kRestart, V::kRestart},
       2,
       true,
       false},
      {"Gang",
       "OnFailure",
       {1, 1},
       "{backoffLimit: 2}",
       2,
       {V::kBackoffExceeded, V::kBackoffExceeded},
       2,
       false,
       true},
      {"Gang", "ExitCode", {128}, "{backoffLimit: 0}", 0, {V::kBackoffExceeded}, 0, false, true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE("scope " + row.scope + " " + row.policy + " " + std::to_string(row.exits.size()) +
                 " failed " + row.backoff + " retries " + std::to_string(row.retries_before));
    api::Job job =
        MakeJob("PyTorchJob", {{"Master", 1, "Never"}, {"Worker", 2, row.policy}}, "", row.backoff);
    if (!row.scope.empty()) job.metadata["annotations"][api::kRestartScopeAnnotation] = row.scope;
    std::vector<FailedReplica> failed;
    for (size_t i = 0; i < row.exits.size(); ++i)
      failed.push_back({"Worker", static_cast<int>(i), row.exits[i], true});
    FailureDecision d = DecideFailures(job, failed, row.retries_before);
    EXPECT_EQ(d.verdicts, row.verdicts);
    EXPECT_EQ(d.retries, row.retries_after);
    EXPECT_EQ(d.restart_all, row.restart_all);
    EXPECT_EQ(d.fatal.has_value(), row.fatal);
  }
}

TEST(GangRestart, EveryReplicaStopsAndTheNextAttemptStartsOnlyWhenAllAreGone) {
  api::Job job = GangJob("OnFailure");
  Plan first = Step(&job, {}, kT0);
  EXPECT_EQ(first.create.size(), 3u);
  EXPECT_FALSE(first.restart_attempt);
  std::vector<ReplicaObservation> running = All(job, Phase::kRunning);
  Step(&job, running, kT0 + seconds(1));
  ASSERT_EQ(Last(job.status), "Running");

  // Worker 1 fails: every replica is removed, attempt 1 is recorded, one retry counted.
  std::vector<ReplicaObservation> failed = running;
  failed[2] = Pod("Worker", 1, Phase::kFailed, 1);
  Plan restart = Step(&job, failed, kT0 + seconds(2));
  ASSERT_TRUE(restart.restart_attempt);
  EXPECT_EQ(*restart.restart_attempt, 1);
  EXPECT_EQ(restart.remove.size(), 3u);
  EXPECT_TRUE(restart.create.empty());
  EXPECT_EQ(std::count(restart.metrics.begin(), restart.metrics.end(), Metric::kJobRestarted), 1);
  const api::Condition& c = job.status.conditions.back();
  EXPECT_EQ(c.type, "Restarting");
  EXPECT_EQ(c.reason, kGangRestartReason);
  EXPECT_EQ(c.message,
            "job job is restarting every replica as attempt 1 because Worker replica 1 failed "
            "with exit code 1.\nFirst failure: job-worker-1 (Worker 1) exited with code 1.");
  int gang_events = 0, kind_restarts = 0;
  for (const Event& e : restart.events) {
    gang_events += e.reason == kGangRestartReason;
    kind_restarts += e.reason == "PyTorchJobRestarting";
  }
  EXPECT_EQ(gang_events, 1);
  EXPECT_EQ(kind_restarts, 0) << "the kind's rules do not restart a replica of a gang";
  RecordAttempt(&job, restart);

  // Attempt 0's replicas stop one by one: nothing is created while any of them exists.
  std::vector<ReplicaObservation> stopping;
  for (const ReplicaObservation& r : failed) stopping.push_back(At(r, 0, /*terminating=*/true));
  for (size_t left = stopping.size(); left >= 1; --left) {
    Plan p = Step(&job, std::vector<ReplicaObservation>(stopping.begin(), stopping.begin() + left),
                  kT0 + seconds(3));
    EXPECT_TRUE(p.create.empty()) << left << " left";
    EXPECT_FALSE(p.restart_attempt);
    EXPECT_EQ(Last(job.status), "Restarting");
    // The why says what the next attempt waits for, by name.
    const api::Condition* ready = nullptr;
    for (const api::Condition& c : p.status.conditions)
      if (c.type == "ReplicasReady") ready = &c;
    ASSERT_TRUE(ready) << left << " left";
    EXPECT_NE(ready->message.find("once every replica of the previous one is gone, still there: " +
                                  stopping[0].name),
              std::string::npos)
        << ready->message;
  }
  Plan recreate = Step(&job, {}, kT0 + seconds(4));
  EXPECT_EQ(recreate.create.size(), 3u);

  // Attempt 1 runs and succeeds; the job counted one retry.
  std::vector<ReplicaObservation> next;
  for (const ReplicaObservation& r : All(job, Phase::kRunning)) next.push_back(At(r, 1));
  Step(&job, next, kT0 + seconds(5));
  EXPECT_EQ(Last(job.status), "Running");
  for (ReplicaObservation& r : next) {
    r.phase = Phase::kSucceeded;
    r.exit_code = 0;
  }
  Step(&job, next, kT0 + seconds(6));
  EXPECT_EQ(Last(job.status), "Succeeded");
  EXPECT_EQ(api::RestartAttemptOf(job), 1);
}

TEST(GangRestart, FailuresInOnePassAreOneRetryAndTheLimitCountsAttempts) {
  api::Job job = GangJob("OnFailure", "{backoffLimit: 1}", 3);
  Step(&job, {}, kT0);
  std::vector<ReplicaObservation> pods = All(job, Phase::kRunning);
  pods[1] = Pod("Worker", 0, Phase::kFailed, 1);
  pods[3] = Pod("Worker", 2, Phase::kFailed, 139);
  Plan restart = Step(&job, pods, kT0 + seconds(1));
  ASSERT_TRUE(restart.restart_attempt);
  EXPECT_EQ(*restart.restart_attempt, 1);
  EXPECT_EQ(std::count(restart.metrics.begin(), restart.metrics.end(), Metric::kJobRestarted), 1);
  RecordAttempt(&job, restart);
  Step(&job, {}, kT0 + seconds(2));

  // Attempt 1 fails too: past backoffLimit 1 the job fails, and nothing restarts.
  std::vector<ReplicaObservation> next;
  for (const ReplicaObservation& r : All(job, Phase::kRunning)) next.push_back(At(r, 1));
  next[2] = At(Pod("Worker", 1, Phase::kFailed, 1), 1);
  Plan fail = Step(&job, next, kT0 + seconds(3));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_FALSE(fail.restart_attempt);
  EXPECT_TRUE(fail.create.empty());
  EXPECT_NE(job.status.conditions.back().message.find("backoff limit"), std::string::npos);
}

TEST(GangRestart, AttemptRecordedButReplicasNotYetStoppedIsFinishedWithoutASecondRetry) {
  // The substrate recorded attempt 1 and died before stopping attempt 0's replicas.
  api::Job job = GangJob("OnFailure", "{backoffLimit: 1}");
  Step(&job, {}, kT0);
  job.metadata["annotations"][api::kRestartAttemptAnnotation] = "1";
  std::vector<ReplicaObservation> old = All(job, Phase::kRunning);
  old[2] = Pod("Worker", 1, Phase::kFailed, 1);  // attempt 0's failure, already decided
  Plan p = Step(&job, old, kT0 + seconds(1));
  EXPECT_EQ(p.remove.size(), 3u);
  EXPECT_TRUE(p.create.empty());
  EXPECT_FALSE(p.restart_attempt);
  EXPECT_NE(Last(job.status), "Failed");  // retries are the attempt (1), within the limit
  EXPECT_EQ(Step(&job, {}, kT0 + seconds(2)).create.size(), 3u);
}

// A pod of the running attempt deleted from outside (kubectl delete pod, a drain's eviction):
// the engine never removes one alone, so its peers are left without it — a gang restart. Under
// restartPolicy Never it is replaced as upstream does (no retry to spend).
TEST(GangRestart, AReplicaDeletedFromOutsideRestartsTheGang) {
  api::Job job = GangJob("OnFailure");
  Step(&job, {}, kT0);
  std::vector<ReplicaObservation> pods = All(job, Phase::kRunning);
  Step(&job, pods, kT0 + seconds(1));
  pods[2].terminating = true;  // Worker 1
  Plan p = Step(&job, pods, kT0 + seconds(2));
  ASSERT_TRUE(p.restart_attempt);
  EXPECT_EQ(*p.restart_attempt, 1);
  EXPECT_EQ(p.remove.size(), 3u);  // the deleted one too: asking again is harmless
  EXPECT_NE(job.status.conditions.back().message.find("because Worker replica 1 was deleted"),
            std::string::npos)
      << job.status.conditions.back().message;

  api::Job never = GangJob("Never");
  Step(&never, {}, kT0);
  std::vector<ReplicaObservation> same = All(never, Phase::kRunning);
  Step(&never, same, kT0 + seconds(1));
  same[2].terminating = true;
  Plan q = Step(&never, same, kT0 + seconds(2));
  EXPECT_FALSE(q.restart_attempt);
  EXPECT_NE(Last(never.status), "Failed");
}

TEST(GangRestart, APermanentExitFailsTheJobWithoutARestart) {
  api::Job job = GangJob("ExitCode");
  Step(&job, {}, kT0);
  std::vector<ReplicaObservation> pods = All(job, Phase::kRunning);
  pods[1] = Pod("Worker", 0, Phase::kFailed, 2);
  Plan p = Step(&job, pods, kT0 + seconds(1));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_FALSE(p.restart_attempt);
}

TEST(GangRestart, TheProgressTimeoutsRestartPolicyRestartsTheGang) {
  api::Job job = GangJob("OnFailure");
  job.metadata["annotations"][api::kProgressTimeoutAnnotation] = "60";
  job.metadata["annotations"][api::kProgressPolicyAnnotation] = "Restart";
  Step(&job, {}, kT0);
  std::vector<ReplicaObservation> quiet = All(job, Phase::kRunning);
  for (ReplicaObservation& r : quiet) r.last_output = kT0;
  Step(&job, quiet, kT0 + seconds(1));
  Plan hung = Step(&job, quiet, kT0 + seconds(61));
  ASSERT_TRUE(hung.restart_attempt);
  EXPECT_EQ(*hung.restart_attempt, 1);
  EXPECT_EQ(hung.remove.size(), 3u);
  EXPECT_EQ(job.status.conditions.back().reason, kGangRestartReason);
  EXPECT_NE(job.status.conditions.back().message.find("it made no progress"), std::string::npos);
}

TEST(GangRestart, AnnotationsAreValidatedWithTheirFieldPath) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Everything";
  job.metadata["annotations"][api::kRestartAttemptAnnotation] = "-1";
  api::ValidationResult result = api::ValidateJob(job);
  std::vector<std::string> errors;
  for (const api::FieldError& e : result.errors) errors.push_back(e.ToString());
  EXPECT_EQ(errors,
            (std::vector<std::string>{
                "metadata.annotations[trainctl.dev/restart-scope]: Unsupported value: "
                "\"Everything\": supported values: \"Replica\", \"Gang\"",
                "metadata.annotations[trainctl.dev/restart-attempt]: Invalid value: "
                "\"-1\": expected a whole number from 0 to 1000000 (written by trainctl)"}));
}

TEST(GangRestart, ElasticJobsRefuseGang) {
  api::Job job = MakeJob("PyTorchJob", {{"Worker", 2, ""}},
                         "  elasticPolicy: {minReplicas: 1, maxReplicas: 2, rdzvBackend: c10d}\n");
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Gang";
  api::FieldErrorList errors;
  EXPECT_EQ(api::RestartScopeOf(job, &errors), api::RestartScope::kReplica);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "metadata.annotations[trainctl.dev/restart-scope]");
  EXPECT_NE(errors[0].ToString().find("elasticPolicy"), std::string::npos);
}

}  // namespace
}  // namespace trainctl::engine
