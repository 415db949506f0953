#include "engine/reconcile.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/conditions.h"
#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using std::chrono::seconds;
using namespace test;  // NOLINT: test helpers

// ---- §4.7, one row per case ----------------------------------------------------------------

struct KindRow {
  std::string name;
  std::string kind;
  std::vector<TypeSpec> types;
  std::string extra_spec;
  std::vector<ReplicaObservation> observed;
  std::string want_last;  // type of the last condition after the pass
  std::string want_reason;
};
void PrintTo(const KindRow& row, std::ostream* os) { *os << row.name; }

class KindRulesTest : public testing::TestWithParam<KindRow> {};

TEST_P(KindRulesTest, LastConditionAndReason) {
  const KindRow& row = GetParam();
  api::Job job = MakeJob(row.kind, row.types, row.extra_spec);
  Step(&job, {}, kT0);  // Created; replicas created
  Plan plan = Step(&job, row.observed, kT0 + seconds(5));
  EXPECT_EQ(Last(plan.status), row.want_last) << Summary(plan.status);
  EXPECT_EQ(plan.status.conditions.back().reason, row.want_reason);
}

const std::vector<KindRow> kKindRows = {
    {"PyTorchMasterRunning",
     "PyTorchJob",
     {{"Master", 1, ""}, {"Worker", 2, ""}},
     "",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kPending)},
     "Running",
     "PyTorchJobRunning"},
    {"PyTorchMasterSucceededWorkersStillRunning",
     "PyTorchJob",
     {{"Master", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning)},
     "Succeeded",
     "PyTorchJobSucceeded"},
    {"PyTorchWorkerFailedNever",
     "PyTorchJob",
     {{"Master", 1, "Never"}, {"Worker", 1, "Never"}},
     "",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 1)},
     "Failed",
     "PyTorchJobFailed"},
    {"PyTorchWorkerFailedOnFailureRestarts",
     "PyTorchJob",
     {{"Master", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 1)},
     "Restarting",
     "PyTorchJobRestarting"},
    {"PyTorchNoMasterAllWorkersSucceeded",
     "PyTorchJob",
     {{"Worker", 2, ""}},
     "",
     {Pod("Worker", 0, Phase::kSucceeded, 0), Pod("Worker", 1, Phase::kSucceeded, 0)},
     "Succeeded",
     "PyTorchJobSucceeded"},
    {"PyTorchNoMasterOneWorkerSucceededNotDone",
     "PyTorchJob",
     {{"Worker", 2, ""}},
     "",
     {Pod("Worker", 0, Phase::kSucceeded, 0), Pod("Worker", 1, Phase::kRunning)},
     "Running",
     "PyTorchJobRunning"},
    {"PyTorchElasticAnyWorkerSucceeded",
     "PyTorchJob",
     {{"Worker", 2, ""}},
     "  elasticPolicy: {minReplicas: 1, maxReplicas: 2}\n",
     {Pod("Worker", 0, Phase::kSucceeded, 0), Pod("Worker", 1, Phase::kRunning)},
     "Succeeded",
     "PyTorchJobSucceeded"},
    {"TFChiefSucceeded",
     "TFJob",
     {{"Chief", 1, ""}, {"Worker", 2, ""}},
     "",
     {Pod("Chief", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning),
      Pod("Worker", 1, Phase::kRunning)},
     "Succeeded",
     "TFJobSucceeded"},
    {"TFWorkerZeroSucceededDefaultPolicy",
     "TFJob",
     {{"PS", 1, ""}, {"Worker", 2, ""}},
     "",
     {Pod("PS", 0, Phase::kRunning), Pod("Worker", 0, Phase::kSucceeded, 0),
      Pod("Worker", 1, Phase::kRunning)},
     "Succeeded",
     "TFJobSucceeded"},
    {"TFWorkerZeroSucceededAllWorkersPolicy",
     "TFJob",
     {{"PS", 1, ""}, {"Worker", 2, ""}},
     "  successPolicy: AllWorkers\n",
     {Pod("PS", 0, Phase::kRunning), Pod("Worker", 0, Phase::kSucceeded, 0),
      Pod("Worker", 1, Phase::kRunning)},
     "Running",
     "TFJobRunning"},
    {"TFPSFailed",
     "TFJob",
     {{"PS", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("PS", 0, Phase::kFailed, 1), Pod("Worker", 0, Phase::kRunning)},
     "Failed",
     "TFJobFailed"},
    {"TFDynamicWorkerFailureIgnored",
     "TFJob",
     {{"PS", 1, ""}, {"Worker", 2, ""}},
     "  enableDynamicWorker: true\n",
     {Pod("PS", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
      Pod("Worker", 1, Phase::kFailed, 1)},
     "Running",
     "TFJobRunning"},
    {"XGBoostMasterSucceeded",
     "XGBoostJob",
     {{"Master", 1, ""}, {"Worker", 2, ""}},
     "",
     {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kSucceeded, 0),
      Pod("Worker", 1, Phase::kRunning)},
     "Succeeded",
     "XGBoostJobSucceeded"},
    {"XGBoostWorkerFailedNever",
     "XGBoostJob",
     {{"Master", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 1)},
     "Failed",
     "XGBoostJobFailed"},
    {"XGBoostWorkerFailedExitCodeRetryable",
     "XGBoostJob",
     {{"Master", 1, "ExitCode"}, {"Worker", 1, "ExitCode"}},
     "",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 137)},
     "Restarting",
     "XGBoostJobRestarting"},
    {"PaddleMasterSucceeded",
     "PaddleJob",
     {{"Master", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning)},
     "Succeeded",
     "PaddleJobSucceeded"},
    {"PaddleCollectiveWorkersSucceeded",
     "PaddleJob",
     {{"Worker", 2, ""}},
     "",
     {Pod("Worker", 0, Phase::kSucceeded, 0), Pod("Worker", 1, Phase::kSucceeded, 0)},
     "Succeeded",
     "PaddleJobSucceeded"},
    {"JAXAllWorkersSucceeded",
     "JAXJob",
     {{"Worker", 2, ""}},
     "",
     {Pod("Worker", 0, Phase::kSucceeded, 0), Pod("Worker", 1, Phase::kSucceeded, 0)},
     "Succeeded",
     "JAXJobSucceeded"},
    {"JAXWorkerFailed",
     "JAXJob",
     {{"Worker", 2, ""}},
     "",
     {Pod("Worker", 0, Phase::kRunning), Pod("Worker", 1, Phase::kFailed, 2)},
     "Failed",
     "JAXJobFailed"},
    {"MPILauncherRunning",
     "MPIJob",
     {{"Launcher", 1, ""}, {"Worker", 2, ""}},
     "",
     {Pod("Launcher", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
      Pod("Worker", 1, Phase::kRunning)},
     "Running",
     "MPIJobRunning"},
    {"MPILauncherSucceeded",
     "MPIJob",
     {{"Launcher", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Launcher", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning)},
     "Succeeded",
     "MPIJobSucceeded"},
    {"MPILauncherFailedReasonHasNoDoublePrefix",
     "MPIJob",
     {{"Launcher", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Launcher", 0, Phase::kFailed, 1), Pod("Worker", 0, Phase::kRunning)},
     "Failed",
     "MPIJobFailed"},
    {"MXSchedulerSucceeded",
     "MXJob",
     {{"Scheduler", 1, ""}, {"Server", 1, ""}, {"Worker", 1, ""}},
     "",
     {Pod("Scheduler", 0, Phase::kSucceeded, 0), Pod("Server", 0, Phase::kRunning),
      Pod("Worker", 0, Phase::kRunning)},
     "Succeeded",
     "MXJobSucceeded"},
};

INSTANTIATE_TEST_SUITE_P(Section47, KindRulesTest, testing::ValuesIn(kKindRows),
                         [](const testing::TestParamInfo<KindRow>& info) {
                           return info.param.name;
                         });

// ---- condition sequences (§4.6, §4.13) ------------------------------------------------------

TEST(ReconcileTest, AnEvictedWorkerFailsAnMpiV2JobAsMpiOperatorDoes) {
  api::Job job = MakeJob("MPIJob", {{"Launcher", 1, ""}, {"Worker", 2, ""}});
  job.api_version = api::kApiVersionMpiV2;
  Step(&job, {}, kT0);
  ReplicaObservation evicted = Pod("Worker", 1, Phase::kFailed);
  evicted.end_reason = "Evicted";
  std::vector<ReplicaObservation> observed = {Pod("Launcher", 0, Phase::kRunning),
                                              Pod("Worker", 0, Phase::kRunning), evicted};
  Plan plan = Step(&job, observed, kT0 + seconds(5));
  const api::Condition* failed = FindCondition(plan.status, kFailed);
  ASSERT_NE(failed, nullptr) << Summary(plan.status);
  EXPECT_EQ(failed->reason, "MPIJobEvicted");
  EXPECT_EQ(failed->message.substr(0, failed->message.find('\n')), "1/2 workers are evicted");
  EXPECT_TRUE(plan.status.completion_time);
  EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [](const auto& e) {
    return e.type == "Warning" && e.reason == "MPIJobEvicted";
  }));

  // A v1 MPIJob's evicted worker is judged by its restart policy, as the v1 operator does.
  api::Job v1 = MakeJob("MPIJob", {{"Launcher", 1, ""}, {"Worker", 2, ""}});
  Step(&v1, {}, kT0);
  Plan v1_plan = Step(&v1, observed, kT0 + seconds(5));
  const api::Condition* v1_failed = FindCondition(v1_plan.status, kFailed);
  EXPECT_TRUE(v1_failed == nullptr || v1_failed->reason != "MPIJobEvicted");
}

TEST(ReconcileTest, CreatesEveryReplicaOnFirstPass) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 2, ""}});
  Plan plan = Step(&job, {}, kT0);
  EXPECT_EQ(plan.create.size(), 3u);
  EXPECT_EQ(Summary(plan.status), "ReplicasReady=False Created=True");
  EXPECT_EQ(plan.status.conditions[0].reason, "Starting");
  EXPECT_EQ(plan.status.conditions[0].message,
            "3/3 replicas not running yet (Master 0; Worker 0, 1): 3 not created yet");
  EXPECT_EQ(plan.status.conditions[1].reason, "PyTorchJobCreated");
  EXPECT_EQ(plan.status.conditions[1].message, "PyTorchJob job is created.");
  ASSERT_TRUE(plan.status.start_time);
  EXPECT_EQ(plan.status.replica_statuses["Worker"].selector,
            "training.kubeflow.org/job-name=job,training.kubeflow.org/operator-name="
            "pytorchjob-controller,training.kubeflow.org/replica-type=worker");
  EXPECT_EQ(plan.metrics, std::vector<Metric>{Metric::kJobCreated});
}

TEST(ReconcileTest, SuccessSequenceAndMetricsOncePerTransition) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  Step(&job, {}, kT0);
  Step(&job, All(job, Phase::kRunning), kT0 + seconds(1));
  EXPECT_EQ(Summary(job.status), "ReplicasReady=True Created=True Running=True");
  Plan done = Step(&job, All(job, Phase::kSucceeded), kT0 + seconds(9));
  EXPECT_EQ(Summary(job.status), "Created=True Running=False Succeeded=True");
  EXPECT_EQ(job.status.completion_time, kT0 + seconds(9));
  EXPECT_EQ(std::count(done.metrics.begin(), done.metrics.end(), Metric::kJobSucceeded), 1);
  Plan again = Step(&job, All(job, Phase::kSucceeded), kT0 + seconds(10));
  EXPECT_TRUE(again.metrics.empty());
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.status_changed);
  EXPECT_TRUE(again.create.empty());
}

TEST(ReconcileTest, SuspendedAtCreation) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}}, "", "{suspend: true}");
  Plan plan = Step(&job, {}, kT0);
  EXPECT_EQ(Summary(job.status), "ReplicasReady=False Created=True Suspended=True");
  EXPECT_EQ(job.status.conditions[0].reason, "Suspended");
  EXPECT_EQ(job.status.conditions[2].reason, "PyTorchJobSuspended");
  EXPECT_FALSE(job.status.start_time);
  EXPECT_TRUE(plan.create.empty());
}

TEST(ReconcileTest, SuspendWhileRunningThenResume) {
  api::Job job = MakeJob("TFJob", {{"Worker", 2, ""}});
  Step(&job, {}, kT0);
  Step(&job, All(job, Phase::kRunning), kT0 + seconds(1));
  job.run_policy.suspend = true;
  Plan suspended = Step(&job, All(job, Phase::kRunning), kT0 + seconds(2));
  EXPECT_EQ(Summary(job.status), "ReplicasReady=False Created=True Running=False Suspended=True");
  EXPECT_EQ(job.status.conditions[3].reason, "TFJobSuspended");
  EXPECT_EQ(suspended.remove.size(), 2u);
  EXPECT_EQ(job.status.replica_statuses["Worker"].active, 0);
  Time first_start = *job.status.start_time;
  job.run_policy.suspend = false;
  Plan resumed = Step(&job, {}, kT0 + seconds(30));
  EXPECT_EQ(resumed.create.size(), 2u);
  EXPECT_EQ(Summary(job.status), "ReplicasReady=False Created=True Running=False Suspended=False");
  EXPECT_EQ(FindCondition(job.status, "Suspended")->reason, "TFJobResumed");
  EXPECT_EQ(resumed.events.back().reason, "TFJobResumed");
  EXPECT_NE(*job.status.start_time, first_start);
  Step(&job, All(job, Phase::kRunning), kT0 + seconds(31));
  EXPECT_EQ(Summary(job.status), "ReplicasReady=True Created=True Suspended=False Running=True");
}

TEST(ReconcileTest, ManagedByAnotherControllerIsSkipped) {
  api::Job job =
      MakeJob("PyTorchJob", {{"Master", 1, ""}}, "", "{managedBy: kueue.x-k8s.io/multikueue}");
  Plan plan = Reconcile(job, {}, kT0);
  EXPECT_TRUE(plan.skip);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_FALSE(plan.status_changed);
}

// ---- restart policies and backoffLimit ------------------------------------------------------

TEST(ReconcileTest, ExitCodeRetryableRestartsThenSucceeds) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "ExitCode"}});
  Step(&job, {}, kT0);
  Plan restart = Step(&job, {Pod("Master", 0, Phase::kFailed, 137)}, kT0 + seconds(1));
  ASSERT_EQ(restart.remove.size(), 1u);
  EXPECT_EQ(Last(job.status), "Restarting");
  EXPECT_EQ(std::count(restart.metrics.begin(), restart.metrics.end(), Metric::kJobRestarted), 1);
  EXPECT_EQ(job.status.replica_statuses["Master"].restarts, 1);
  Plan recreate = Step(&job, {}, kT0 + seconds(2));
  EXPECT_EQ(recreate.create.size(), 1u);
  Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(3));
  EXPECT_EQ(Summary(job.status), "ReplicasReady=True Created=True Running=True");
  Step(&job, {Pod("Master", 0, Phase::kSucceeded, 0)}, kT0 + seconds(4));
  EXPECT_EQ(Summary(job.status), "Created=True Running=False Succeeded=True");
}

TEST(ReconcileTest, ExitCodeNonRetryableFailsAndStaysFailed) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "ExitCode"}, {"Worker", 1, "ExitCode"}});
  Step(&job, {}, kT0);
  Plan plan = Step(&job, {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 1)},
                   kT0 + seconds(1));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_EQ(job.status.conditions.back().message,
            "job \"job\" is failing because \"Worker\" replica(s) failed.\n"
            "First failure: job-worker-0 (Worker 0) exited with code 1.");
  EXPECT_TRUE(plan.create.empty());
  EXPECT_FALSE(HasCondition(job.status, "Restarting"));
  // Later passes never leave Failed.
  Plan later = Step(&job, {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 1)},
                    kT0 + seconds(2));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_TRUE(later.create.empty());
}

TEST(ReconcileTest, BackoffLimitStopsRecreationRetries) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "ExitCode"}}, "", "{backoffLimit: 2}");
  Step(&job, {}, kT0);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    Plan p = Step(&job, {Pod("Master", 0, Phase::kFailed, 137)}, kT0 + seconds(attempt * 10));
    EXPECT_EQ(Last(job.status), "Restarting") << attempt;
    Step(&job, {}, kT0 + seconds(attempt * 10 + 1));
  }
  Plan final_pass = Step(&job, {Pod("Master", 0, Phase::kFailed, 137)}, kT0 + seconds(40));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_EQ(job.status.conditions.back().message,
            "Job job has failed because it has reached the specified backoff limit\n"
            "First failure: job-master-0 (Master 0) was killed by SIGKILL (exit code 137).");
  EXPECT_TRUE(final_pass.create.empty());
  EXPECT_EQ(job.status.replica_statuses["Master"].restarts, 2);
}

TEST(ReconcileTest, BackoffLimitCountsInPlaceRestarts) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "OnFailure"}}, "", "{backoffLimit: 1}");
  Step(&job, {}, kT0);
  Step(&job, {Pod("Master", 0, Phase::kRunning, std::nullopt, 1)}, kT0 + seconds(1));
  EXPECT_EQ(Last(job.status), "Running");
  Step(&job, {Pod("Master", 0, Phase::kRunning, std::nullopt, 2)}, kT0 + seconds(2));
  EXPECT_EQ(Last(job.status), "Failed");
}

// One restart count: status.replicaStatuses[T].restarts is every retry of the type, in-place
// restarts of the replicas there now included, so describe's "Replica Statuses" and the
// replica table agree; a replaced replica's retries stay counted once (pastRestarts), also
// while it terminates and after the status goes through its JSON form.
TEST(ReconcileTest, ReplicaStatusRestartsCountInPlaceRestartsOnce) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "OnFailure"}, {"Worker", 1, "OnFailure"}});
  Step(&job, {}, kT0);
  Step(&job, {Pod("Master", 0, Phase::kRunning, 2, 4), Pod("Worker", 0, Phase::kRunning, 2, 4)},
       kT0 + seconds(1));
  EXPECT_EQ(job.status.replica_statuses["Master"].restarts, 4);
  EXPECT_EQ(job.status.replica_statuses["Worker"].restarts, 4);
  EXPECT_EQ(job.status.replica_statuses["Worker"].past_restarts, 0);
  // The Worker's pod is lost (phase Failed) and replaced: its 4 restarts + the recreation.
  Step(&job, {Pod("Master", 0, Phase::kRunning, 2, 5), Pod("Worker", 0, Phase::kFailed, 137, 4)},
       kT0 + seconds(2));
  EXPECT_EQ(job.status.replica_statuses["Worker"].restarts, 5);
  EXPECT_EQ(job.status.replica_statuses["Worker"].past_restarts, 5);
  EXPECT_EQ(job.status.replica_statuses["Master"].restarts, 5);
  ReplicaObservation going = Pod("Worker", 0, Phase::kFailed, 137, 4);
  going.terminating = true;
  Step(&job, {Pod("Master", 0, Phase::kRunning, 2, 5), going}, kT0 + seconds(3));
  EXPECT_EQ(job.status.replica_statuses["Worker"].restarts, 5) << "not counted twice";
  // Through the status's JSON (what the API server or the state folder holds) and back.
  auto decoded = api::DecodeJob(api::EncodeJob(job));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  job = std::move(decoded).value();
  Step(&job, {Pod("Master", 0, Phase::kRunning, 2, 5), Pod("Worker", 0, Phase::kRunning, 1, 1)},
       kT0 + seconds(4));
  EXPECT_EQ(job.status.replica_statuses["Worker"].restarts, 6);
  EXPECT_EQ(job.status.replica_statuses["Worker"].past_restarts, 5);
}

TEST(ReconcileTest, BackoffLimitZeroFailsOnFirstRetryableFailure) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "OnFailure"}}, "", "{backoffLimit: 0}");
  Step(&job, {}, kT0);
  Plan p = Step(&job, {Pod("Master", 0, Phase::kFailed, 3)}, kT0 + seconds(1));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_TRUE(p.create.empty());
}

// ---- deadline, TTL, cleanPodPolicy ----------------------------------------------------------

TEST(ReconcileTest, ActiveDeadlineRequeuesThenFails) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}}, "", "{activeDeadlineSeconds: 60}");
  Step(&job, {}, kT0);
  Plan running = Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(20));
  ASSERT_TRUE(running.requeue_after);
  EXPECT_EQ(*running.requeue_after, seconds(40));
  Plan late = Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(60));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_EQ(job.status.conditions.back().message,
            "Job job has failed because it was active longer than specified deadline");
  EXPECT_EQ(job.status.conditions.back().reason, "PyTorchJobFailed");
  EXPECT_TRUE(late.remove.empty());  // cleanPodPolicy None keeps pods
}

TEST(ReconcileTest, TtlRequeuesThenDeletesJob) {
  api::Job job = MakeJob("XGBoostJob", {{"Master", 1, ""}}, "", "{ttlSecondsAfterFinished: 30}");
  Step(&job, {}, kT0);
  Plan done = Step(&job, {Pod("Master", 0, Phase::kSucceeded, 0)}, kT0 + seconds(10));
  EXPECT_EQ(Last(job.status), "Succeeded");
  ASSERT_TRUE(done.requeue_after);
  EXPECT_EQ(*done.requeue_after, seconds(30));
  EXPECT_FALSE(done.delete_job);
  Plan expired = Step(&job, {Pod("Master", 0, Phase::kSucceeded, 0)}, kT0 + seconds(40));
  EXPECT_TRUE(expired.delete_job);
}

struct CleanRow {
  std::string policy;
  size_t want_removed;
};
void PrintTo(const CleanRow& row, std::ostream* os) { *os << row.policy; }

class CleanPodPolicyTest : public testing::TestWithParam<CleanRow> {};

TEST_P(CleanPodPolicyTest, RemovesPerPolicyWhenFinished) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 3, ""}}, "",
                         "{cleanPodPolicy: " + GetParam().policy + "}");
  Step(&job, {}, kT0);
  Plan plan = Step(&job,
                   {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning),
                    Pod("Worker", 1, Phase::kPending), Pod("Worker", 2, Phase::kSucceeded, 0)},
                   kT0 + seconds(5));
  EXPECT_EQ(Last(job.status), "Succeeded");
  EXPECT_EQ(plan.remove.size(), GetParam().want_removed);
}

INSTANTIATE_TEST_SUITE_P(Policies, CleanPodPolicyTest,
                         testing::Values(CleanRow{"All", 4}, CleanRow{"Running", 2},
                                         CleanRow{"None", 0}),
                         [](const testing::TestParamInfo<CleanRow>& i) { return i.param.policy; });

// ---- replicas --------------------------------------------------------------------------------

TEST(ReconcileTest, TerminatingPodIsNotAFailureAndIsNotReplacedEarly) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "Never"}, {"Worker", 1, "Never"}});
  Step(&job, {}, kT0);
  ReplicaObservation leaving = Pod("Worker", 0, Phase::kRunning);
  leaving.terminating = true;
  Plan plan = Step(&job, {Pod("Master", 0, Phase::kRunning), leaving}, kT0 + seconds(1));
  EXPECT_EQ(Last(job.status), "Running");
  EXPECT_EQ(job.status.replica_statuses["Worker"].failed, 0);
  EXPECT_TRUE(plan.create.empty());
}

TEST(ReconcileTest, ScaleDownRemovesHighIndexes) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  Step(&job, {}, kT0);
  Plan plan = Step(&job,
                   {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
                    Pod("Worker", 1, Phase::kRunning)},
                   kT0 + seconds(1));
  ASSERT_EQ(plan.remove.size(), 1u);
  EXPECT_EQ(plan.remove[0].name, "job-worker-1");
}

TEST(ConditionsTest, SameStatusAndReasonIsNoChange) {
  api::JobStatus s;
  EXPECT_TRUE(SetCondition(&s, "Running", "True", "R", "m1", kT0));
  EXPECT_FALSE(SetCondition(&s, "Running", "True", "R", "m2", kT0 + seconds(5)));
  EXPECT_EQ(s.conditions[0].message, "m1");
  EXPECT_TRUE(SetCondition(&s, "Running", "True", "R2", "m3", kT0 + seconds(6)));
  EXPECT_EQ(s.conditions[0].last_transition_time, kT0);
  EXPECT_EQ(s.conditions[0].last_update_time, kT0 + seconds(6));
  EXPECT_TRUE(SetCondition(&s, "Failed", "True", "F", "m", kT0));
  EXPECT_FALSE(SetCondition(&s, "Succeeded", "True", "S", "m", kT0));
  EXPECT_EQ(Summary(s), "Running=False Failed=True");
}

}  // namespace
}  // namespace trainctl::engine
