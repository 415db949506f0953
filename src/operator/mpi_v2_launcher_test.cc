// An MPIJob v2beta1's launcher seen through its batch Job (Complete, Failed with upstream's
// reason, a retry under way), its pods told apart by their job-role label, and the launcher
// Job created at once or after the workers as launcherCreationPolicy says.
#include "operator/mpi_v2_launcher.h"

#include <gtest/gtest.h>

#include "engine/conditions.h"
#include "engine/diagnosis.h"
#include "engine/reconcile.h"
#include "operator/decide.h"
#include "operator/mpi_v2_test_job.h"
#include "operator/observe.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

constexpr const char* kJobUid = "6f1c4a8e-0000-4000-8000-000000000001";
constexpr const char* kMpiUid = "6f1c4a8e-0000-4000-8000-0000000000aa";

api::Job LoadV2(const std::string& spec_extra) { return LoadMpiV2TestJob(spec_extra); }

json BatchJob(const json& status, bool suspend = false) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "pi-launcher"},
            {"namespace", "ns"},
            {"uid", kJobUid},
            {"ownerReferences",
             json::array({{{"kind", "MPIJob"}, {"uid", kMpiUid}, {"controller", true}}})}}},
          {"spec", {{"suspend", suspend}}},
          {"status", status}};
}

engine::ReplicaObservation Pod(const std::string& name, engine::Phase phase,
                               const std::string& reason = "", const std::string& message = "") {
  engine::ReplicaObservation o;
  o.name = name;
  o.type = "Launcher";
  o.phase = phase;
  o.end_reason = reason;
  o.end_message = message;
  return o;
}

TEST(MpiV2LauncherTest, ProjectsTheJobsOwnerSuspensionAndHowItEnded) {
  std::optional<LauncherJobSummary> running = ProjectLauncherJob(BatchJob({{"active", 1}}, true));
  ASSERT_TRUE(running);
  EXPECT_EQ(running->name, "pi-launcher");
  EXPECT_EQ(kube::FormatUid(running->owner_uid), kMpiUid);
  EXPECT_EQ(kube::FormatUid(running->uid), kJobUid);
  EXPECT_TRUE(running->suspended);
  EXPECT_FALSE(running->complete || running->failed);

  std::optional<LauncherJobSummary> failed = ProjectLauncherJob(BatchJob(
      {{"conditions", json::array({{{"type", "Complete"}, {"status", "False"}},
                                   {{"type", "Failed"},
                                    {"status", "True"},
                                    {"reason", "DeadlineExceeded"},
                                    {"message", "Job was active longer than specified"}}})}}));
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->complete);
  EXPECT_TRUE(failed->failed);
  EXPECT_EQ(failed->failed_reason, "DeadlineExceeded");

  EXPECT_FALSE(ProjectLauncherJob(json{{"metadata", {{"name", "x"}}}}));  // no uid
  EXPECT_FALSE(ProjectLauncherJob(json::array()));
}

TEST(MpiV2LauncherTest, NoJobMeansNoLauncherAndACompleteJobASucceededOne) {
  api::Job job = LoadV2("");
  EXPECT_FALSE(ObserveMpiV2Launcher(job, nullptr, {}));

  LauncherJobSummary complete;
  complete.complete = true;
  std::optional<engine::ReplicaObservation> gone = ObserveMpiV2Launcher(job, &complete, {});
  ASSERT_TRUE(gone);  // its pod deleted already (TTL, a clean-up): the Job still says it succeeded
  EXPECT_EQ(gone->name, "pi-launcher");
  EXPECT_EQ(gone->phase, engine::Phase::kSucceeded);

  std::optional<engine::ReplicaObservation> kept =
      ObserveMpiV2Launcher(job, &complete,
                           {Pod("pi-launcher-a", engine::Phase::kFailed),
                            Pod("pi-launcher-b", engine::Phase::kSucceeded)});
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->name, "pi-launcher-b");
  EXPECT_EQ(kept->phase, engine::Phase::kSucceeded);
}

TEST(MpiV2LauncherTest, AFailedPodWhileTheJobRetriesIsNotTheJobsFailure) {
  api::Job job = LoadV2("");
  LauncherJobSummary active;
  std::optional<engine::ReplicaObservation> between = ObserveMpiV2Launcher(
      job, &active, {Pod("pi-launcher-a", engine::Phase::kFailed, "Error", "mpirun exited 1")});
  ASSERT_TRUE(between);
  EXPECT_EQ(between->phase, engine::Phase::kPending);
  EXPECT_EQ(between->end_reason, "Error");  // how the last try ended, for the why

  std::optional<engine::ReplicaObservation> retry =
      ObserveMpiV2Launcher(job, &active,
                           {Pod("pi-launcher-a", engine::Phase::kFailed),
                            Pod("pi-launcher-b", engine::Phase::kRunning)});
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->name, "pi-launcher-b");
  EXPECT_EQ(retry->phase, engine::Phase::kRunning);
}

// Found by the side-by-side benchmark: between the pod's success and the Job's Complete, the
// launcher was read as pending, and every job wrote a "not running yet" status just before
// Succeeded.
TEST(MpiV2LauncherTest, ASucceededPodOfAJobNotYetCompleteIsStillAtWork) {
  api::Job job = LoadV2("");
  LauncherJobSummary finishing;
  std::optional<engine::ReplicaObservation> o =
      ObserveMpiV2Launcher(job, &finishing, {Pod("pi-launcher-a", engine::Phase::kSucceeded)});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->name, "pi-launcher-a");
  EXPECT_EQ(o->phase, engine::Phase::kRunning);
  engine::ReplicaObservation worker;
  worker.name = "pi-worker-0";
  worker.type = "Worker";
  worker.phase = engine::Phase::kRunning;
  job.replica_specs["Worker"].replicas = 1;
  engine::Readiness r = engine::AssessReplicas(job, {*o, worker}, Time(std::chrono::seconds(1)));
  EXPECT_NE(r.reason, "Starting") << r.message;
}

TEST(MpiV2LauncherTest, AFailedJobFailsTheLauncherWithUpstreamsReasonAndMessage) {
  api::Job job = LoadV2("");
  LauncherJobSummary failed;
  failed.failed = true;
  failed.failed_reason = "BackoffLimitExceeded";
  failed.failed_message = "Job has reached the specified backoff limit";
  std::optional<engine::ReplicaObservation> o =
      ObserveMpiV2Launcher(job, &failed,
                           {Pod("pi-launcher-a", engine::Phase::kFailed, "Error", "first"),
                            Pod("pi-launcher-b", engine::Phase::kFailed, "OOMKilled", "second")});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->name, "pi-launcher-b");
  EXPECT_EQ(o->phase, engine::Phase::kFailed);
  EXPECT_EQ(o->end_reason, "BackoffLimitExceeded/OOMKilled");
  EXPECT_EQ(o->end_message, "Job has reached the specified backoff limit: second");

  LauncherJobSummary bare;
  bare.failed = true;
  LauncherFailure why = DescribeLauncherFailure(job, bare, nullptr);
  EXPECT_EQ(why.reason, "MPIJobFailed");
  EXPECT_EQ(why.message, "MPIJob ns/pi has failed");
}

TEST(MpiV2LauncherTest, TheEngineJudgesTheLauncherAsNeverRestartedAndTakesTheJobsReason) {
  api::Job job = LoadV2("");
  EXPECT_EQ(job.replica_specs.at("Launcher").restart_policy, "OnFailure");  // upstream's default
  EXPECT_EQ(MpiV2EngineView(job).replica_specs.at("Launcher").restart_policy, "Never");
  EXPECT_EQ(MpiV2EngineView(job).replica_specs.at("Worker").restart_policy,
            job.replica_specs.at("Worker").restart_policy);

  engine::Plan plan;
  plan.status.conditions.push_back(
      {engine::kFailed, "True", "MPIJobFailed", "1 Launcher replica(s) failed", {}, {}});
  plan.events.push_back({"Normal", "MPIJobFailed", "1 Launcher replica(s) failed"});
  ApplyLauncherFailure({"DeadlineExceeded", "Job was active longer than specified"}, &plan);
  EXPECT_EQ(plan.status.conditions[0].reason, "DeadlineExceeded");
  EXPECT_EQ(plan.status.conditions[0].message, "Job was active longer than specified");
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0],
            (engine::Event{"Warning", "DeadlineExceeded", "Job was active longer than specified"}));
}

kube::PodSummary V2Pod(const std::string& name, const std::string& role, const std::string& index) {
  json labels = {{"training.kubeflow.org/job-name", "pi"},
                 {"training.kubeflow.org/job-role", role},
                 {"training.kubeflow.org/operator-name", "mpi-operator"}};
  if (!index.empty()) labels["training.kubeflow.org/replica-index"] = index;
  json pod = {{"metadata",
               {{"name", name},
                {"namespace", "ns"},
                {"uid", "6f1c4a8e-0000-4000-8000-0000000000b" + std::to_string(name.size() % 10)},
                {"labels", labels}}},
              {"status", {{"phase", "Running"}}}};
  std::optional<kube::PodSummary> summary = kube::ProjectPod(pod, ObservedLabels());
  EXPECT_TRUE(summary);
  return *summary;
}

TEST(MpiV2LauncherTest,
     PodsAreToldApartByTheirRoleAndTheWorkersCountFromOneBesideAWorkingLauncher) {
  api::Job job = LoadV2("");
  ReplicaObserver observer(job);
  std::optional<engine::ReplicaObservation> worker =
      observer.Observe(V2Pod("pi-worker-1", "worker", "1"));
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->type, "Worker");
  EXPECT_EQ(worker->index, 1);
  std::optional<engine::ReplicaObservation> launcher =
      observer.Observe(V2Pod("pi-launcher-x7k2p", "launcher", ""));
  ASSERT_TRUE(launcher);
  EXPECT_EQ(launcher->type, "Launcher");
  EXPECT_EQ(launcher->index, 0);
  EXPECT_FALSE(observer.Observe(V2Pod("pi-other", "sidecar", "0")));

  api::Job working = LoadV2("  runLauncherAsWorker: true\n");
  ReplicaObserver observer2(working);
  std::optional<engine::ReplicaObservation> first =
      observer2.Observe(V2Pod("pi-worker-0", "worker", "1"));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->index, 0);
  EXPECT_FALSE(observer2.Observe(V2Pod("pi-worker-x", "worker", "0")));  // 0 is the launcher's
  std::optional<engine::ReplicaObservation> launcher2 =
      observer2.Observe(V2Pod("pi-launcher-x7k2p", "launcher", "0"));
  ASSERT_TRUE(launcher2);
  EXPECT_EQ(launcher2->index, 0);

  // A v1 MPIJob's pods are still told apart by replica-type only.
  api::Job v1 = LoadV2("");
  v1.api_version = api::kApiVersion;
  EXPECT_FALSE(ReplicaObserver(v1).Observe(V2Pod("pi-worker-1", "worker", "1")));
}

engine::ReplicaObservation Worker(int index, engine::Phase phase) {
  engine::ReplicaObservation o;
  o.name = "pi-worker-" + std::to_string(index);
  o.type = "Worker";
  o.index = index;
  o.phase = phase;
  return o;
}

TEST(MpiV2LauncherTest, TheLauncherJobWaitsForTheWorkersOnlyWhenAskedAndIsNeverAPod) {
  engine::Plan plan;
  plan.create = {{"Launcher", 0, ""}, {"Worker", 1, ""}};
  plan.remove = {{"Launcher", 0, "pi-launcher-x7k2p"}};
  std::vector<engine::ReplicaObservation> one_up = {Worker(0, engine::Phase::kRunning)};

  api::Job at_startup = LoadV2("");
  EXPECT_EQ(at_startup.launcher_creation_policy, "AtStartup");
  ChildActions now = PlanChildren(at_startup, plan, {}, one_up);
  EXPECT_TRUE(now.create_launcher_job);
  EXPECT_FALSE(now.launcher_held);
  ASSERT_EQ(now.create_pods.size(), 1u);
  EXPECT_EQ(now.create_pods[0].name, "pi-worker-1");
  EXPECT_TRUE(now.delete_pods.empty());  // the Job's pod is the Job's
  EXPECT_TRUE(now.create_services.empty());

  // Under WaitForWorkersReady the engine plans the launcher only once every worker runs
  // (engine/groups.h); planned, its Job is made.
  api::Job waits = LoadV2("  launcherCreationPolicy: WaitForWorkersReady\n");
  std::vector<engine::ReplicaObservation> pods = {Worker(0, engine::Phase::kRunning),
                                                  Worker(1, engine::Phase::kPending)};
  ChildActions held = PlanChildren(
      waits, engine::Reconcile(waits, pods, Time(std::chrono::seconds(1700000000))), {}, pods);
  EXPECT_FALSE(held.create_launcher_job);
  pods[1].phase = engine::Phase::kRunning;
  EXPECT_TRUE(PlanChildren(waits,
                           engine::Reconcile(waits, pods, Time(std::chrono::seconds(1700000000))),
                           {}, pods)
                  .create_launcher_job);
}

}  // namespace
}  // namespace trainctl::op
