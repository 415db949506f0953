// Unit tests of Controller::Sync's decisions (operator/sync_plan.h): the gang, MPI and HPA
// steps, what a PodGroup write's answer means, and which status gets written after the child
// writes. Pure: no API server, a fixed time.
#include "operator/sync_plan.h"

#include <gtest/gtest.h>

#include <limits>

#include "engine/conditions.h"
#include "engine/diagnosis.h"
#include "operator/test_jobs.h"

namespace trainctl::op {
namespace {

Time T0() { return Time(std::chrono::seconds(1700000000)); }

using testing::LoadJob;

const char* kPyTorch = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ns}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: x}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, image: x}]}}}
)";

using testing::kMpiJob;

engine::ReplicaObservation Obs(const std::string& name, const std::string& type, int index,
                               engine::Phase phase, bool terminating = false) {
  engine::ReplicaObservation o;
  o.name = name;
  o.type = type;
  o.index = index;
  o.phase = phase;
  o.terminating = terminating;
  return o;
}

SyncInput Input(api::Job job) {
  SyncInput in;
  in.job = std::move(job);
  in.stored = in.job.status;
  in.now = T0();
  return in;
}

Status ForbiddenLike() {
  return Status(StatusCode::kForbidden, "pods \"pt-worker-0\" is forbidden: exceeded quota");
}

SyncOptions WithPodGroups(bool on) {
  SyncOptions o;
  o.pod_groups = on;
  return o;
}

TEST(DecideSync, NewJobCreatesEveryReplicaEnsuresTheGangAndTheHpa) {
  SyncPlan p = DecideSync(Input(LoadJob(kPyTorch)), WithPodGroups(true));
  EXPECT_FALSE(p.plan.skip);
  EXPECT_EQ(p.actions.create_pods.size(), 3u);
  EXPECT_EQ(p.actions.create_pods[0].name, "pt-master-0");
  EXPECT_EQ(p.gang, GangStep::kEnsure);
  EXPECT_TRUE(p.sync_hpa);
  EXPECT_FALSE(p.ensure_mpi);
  EXPECT_EQ(DecideSync(Input(LoadJob(kPyTorch)), WithPodGroups(false)).gang, GangStep::kNone);
}

TEST(DecideSync, AFinishedJobKeepsItsPodsAndItsTtlWaitsForItsHistoryRecord) {
  api::Job done = LoadJob(kPyTorch);
  done.run_policy.ttl_seconds_after_finished = 0;
  done.run_policy.clean_pod_policy = "All";
  engine::SetCondition(&done.status, engine::kSucceeded, "True", "PyTorchJobSucceeded", "done",
                       T0());
  done.status.completion_time = T0();
  std::vector<engine::ReplicaObservation> pods = {
      Obs("pt-master-0", "Master", 0, engine::Phase::kSucceeded),
      Obs("pt-worker-0", "Worker", 0, engine::Phase::kSucceeded),
      Obs("pt-worker-1", "Worker", 1, engine::Phase::kSucceeded)};
  SyncInput in = Input(done);
  in.observed = pods;
  SyncPlan without = DecideSync(in, {});
  ASSERT_TRUE(without.plan.delete_job) << "no history: the TTL of 0 deletes at once";
  ASSERT_FALSE(without.actions.delete_pods.empty()) << "and cleanPodPolicy All removes the pods";
  EXPECT_FALSE(without.record);

  in.hold_for_history = true;
  SyncPlan held = DecideSync(in, {});
  EXPECT_FALSE(held.plan.delete_job);
  EXPECT_TRUE(held.actions.delete_pods.empty());
  for (const engine::Event& e : held.plan.events) EXPECT_NE(e.reason, engine::kDeletedJobReason);
  EXPECT_EQ(held.plan.requeue_after, kHistoryRecheck);
  EXPECT_TRUE(held.record) << "the stored status is final: record it now";
  EXPECT_TRUE(held.held);
  in.stored = api::JobStatus{};  // the final status is not written yet
  EXPECT_FALSE(DecideSync(in, {}).record);

  in.stored = done.status;
  in.now = T0() + kHistoryHold;  // waited long enough: go ahead without a record
  SyncPlan late = DecideSync(in, {});
  EXPECT_TRUE(late.plan.delete_job);
  EXPECT_FALSE(late.actions.delete_pods.empty());

  // Nothing to delete (cleanPodPolicy None, no TTL): nothing held, no look again.
  in.now = T0();
  in.job.run_policy.ttl_seconds_after_finished.reset();
  in.job.run_policy.clean_pod_policy = "None";
  SyncPlan keeps = DecideSync(in, {});
  EXPECT_TRUE(keeps.record) << "still recorded";
  EXPECT_FALSE(keeps.plan.requeue_after) << "no recheck every 10 s";
  EXPECT_FALSE(keeps.held) << "and no sync again once recorded";
}

TEST(DecideSync, SuspendedOrFinishedJobRemovesItsPodGroupAndStopsTheHpa) {
  api::Job suspended = LoadJob(kPyTorch);
  suspended.run_policy.suspend = true;
  SyncPlan p = DecideSync(Input(suspended), WithPodGroups(true));
  EXPECT_EQ(p.gang, GangStep::kRemove);
  EXPECT_TRUE(p.actions.create_pods.empty());

  api::Job done = LoadJob(kPyTorch);
  engine::SetCondition(&done.status, engine::kSucceeded, "True", "PyTorchJobSucceeded", "done",
                       T0());
  p = DecideSync(Input(done), WithPodGroups(true));
  EXPECT_EQ(p.gang, GangStep::kRemove);
  EXPECT_FALSE(p.sync_hpa);
}

TEST(DecideSync, MpiStepGetsOnlyRunningWorkersThatStay) {
  SyncInput in = Input(LoadJob(kMpiJob));
  in.observed = {Obs("mpi-worker-0", "Worker", 0, engine::Phase::kRunning),
                 Obs("mpi-worker-1", "Worker", 1, engine::Phase::kPending),
                 Obs("mpi-worker-2", "Worker", 2, engine::Phase::kRunning, /*terminating=*/true)};
  SyncPlan p = DecideSync(in, {});
  EXPECT_TRUE(p.ensure_mpi);
  EXPECT_EQ(p.mpi_running_workers, std::vector<std::string>{"mpi-worker-0"});
  EXPECT_FALSE(p.sync_hpa);
  EXPECT_TRUE(p.actions.launcher_held);  // worker-1 is still Pending

  api::Job suspended = LoadJob(kMpiJob);
  suspended.run_policy.suspend = true;
  EXPECT_FALSE(DecideSync(Input(suspended), {}).ensure_mpi);
}

TEST(DecideSync, JobOfAnotherControllerIsSkippedWithNothingToWrite) {
  api::Job job = LoadJob(kPyTorch);
  job.run_policy.managed_by = "kueue.x-k8s.io/multikueue";
  SyncPlan p = DecideSync(Input(job), WithPodGroups(true));
  EXPECT_TRUE(p.plan.skip);
  EXPECT_TRUE(p.actions.create_pods.empty());
  EXPECT_EQ(p.gang, GangStep::kNone);
  EXPECT_FALSE(p.sync_hpa);
}

TEST(HoldForGang, HeldOrFailedPodGroupHoldsEveryCreation) {
  ChildActions admitted;
  admitted.create_pods = {{"Worker", 0, "pt-worker-0"}};
  admitted.create_services = {{"Worker", 0, "pt-worker-0"}};
  ChildActions held = admitted, failed = admitted;
  std::optional<Duration> requeue;

  EXPECT_TRUE(HoldForGang(StatusOr<GangHold>(GangHold{false, ""}), &admitted, &requeue).ok());
  EXPECT_EQ(admitted.create_pods.size(), 1u);
  EXPECT_FALSE(requeue);

  EXPECT_TRUE(HoldForGang(StatusOr<GangHold>(GangHold{true, "held"}), &held, &requeue).ok());
  EXPECT_TRUE(held.create_pods.empty());
  EXPECT_TRUE(held.create_services.empty());
  EXPECT_EQ(requeue, Duration(1000));

  requeue.reset();
  Status st =
      HoldForGang(StatusOr<GangHold>(UnavailableError("podgroups: 503")), &failed, &requeue);
  EXPECT_EQ(st.message(), "podgroups: 503");
  EXPECT_TRUE(failed.create_pods.empty());
  EXPECT_FALSE(requeue);
}

TEST(DecideStatus, WritesOnlyAChangeAndMarksAFailedChildWrite) {
  api::Job job = LoadJob(kPyTorch);
  api::JobStatus stored = job.status;
  StatusDecision same = DecideStatus(job, stored, stored, Status::Ok(), Status::Ok(), T0());
  EXPECT_FALSE(same.write);
  EXPECT_TRUE(same.error.ok());

  api::JobStatus planned = stored;
  engine::SetCondition(&planned, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  StatusDecision changed = DecideStatus(job, planned, stored, Status::Ok(), Status::Ok(), T0());
  ASSERT_TRUE(changed.write);
  EXPECT_TRUE(changed.write->last_reconcile_time);

  StatusDecision failed = DecideStatus(job, planned, stored, ForbiddenLike(), Status::Ok(), T0());
  ASSERT_TRUE(failed.write);
  EXPECT_EQ(failed.error.message(), ForbiddenLike().message());
  ASSERT_FALSE(failed.write->conditions.empty());
  EXPECT_EQ(failed.write->conditions.back().reason, "FailedCreatePod");
  EXPECT_EQ(failed.write->conditions.back().status, "False");

  StatusDecision service =
      DecideStatus(job, planned, stored, Status::Ok(), InvalidError("service name too long"), T0());
  ASSERT_TRUE(service.write);
  EXPECT_EQ(service.write->conditions.back().reason, "FailedCreateService");
}

TEST(DecideStatus, AHeldGangIsTheReasonAndAnUnchangedReasonIsNoWrite) {
  api::Job job = LoadJob(kPyTorch);
  api::JobStatus stored = job.status;
  engine::SetCondition(&stored, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  StatusDecision held = DecideStatus(job, stored, stored, Status::Ok(), Status::Ok(), T0(),
                                     "PodGroup pt is Pending in Volcano");
  ASSERT_TRUE(held.write);
  EXPECT_EQ(held.write->conditions[0].type, engine::kReplicasReady);
  EXPECT_EQ(held.write->conditions[0].reason, "GangNotAdmitted");
  EXPECT_EQ(held.write->conditions[0].message, "PodGroup pt is Pending in Volcano");
  ASSERT_EQ(held.events.size(), 1u);
  EXPECT_EQ(held.events[0].type, "Normal");
  // The engine plans "Starting" on the next pass; the hold still wins, nothing is written.
  api::JobStatus planned = *held.write;
  engine::ApplyReadiness({false, "Starting", "1/1 replicas not running yet", false},
                         T0() + std::chrono::seconds(5), &planned, nullptr, nullptr);
  StatusDecision again =
      DecideStatus(job, planned, *held.write, Status::Ok(), Status::Ok(),
                   T0() + std::chrono::seconds(5), "PodGroup pt is Pending in Volcano");
  EXPECT_FALSE(again.write);
  EXPECT_TRUE(again.events.empty());
}

TEST(CountWindowFor, GrowsWithTheJobByHundredsOfReplicasUpToAMinute) {
  using std::chrono::milliseconds;
  const milliseconds base(1000);
  EXPECT_EQ(CountWindowFor(base, 1), base);
  EXPECT_EQ(CountWindowFor(base, 8), base);
  EXPECT_EQ(CountWindowFor(base, 100), base);
  EXPECT_EQ(CountWindowFor(base, 101), milliseconds(2000));
  EXPECT_EQ(CountWindowFor(base, 2000), milliseconds(20000));
  EXPECT_EQ(CountWindowFor(base, 100000), kMaxCountWindow);
  EXPECT_EQ(CountWindowFor(base, INT32_MAX), kMaxCountWindow);        // no overflow
  EXPECT_EQ(CountWindowFor(base, 0), base);                           // never below the base
  EXPECT_EQ(CountWindowFor(base, -5), base);                          // unvalidated counts
  EXPECT_EQ(CountWindowFor(milliseconds(0), 2000), milliseconds(0));  // 0 still holds nothing
  EXPECT_EQ(CountWindowFor(milliseconds(60000), 2000), milliseconds(60000));
}

TEST(NotReadyCountWindowFor, ThirtyBasesUpToAMinuteAndNeverBelowTheJobsWindow) {
  using std::chrono::milliseconds;
  const milliseconds base(1000);
  EXPECT_EQ(NotReadyCountWindowFor(base, 8), milliseconds(30000));
  EXPECT_EQ(NotReadyCountWindowFor(base, 2000), milliseconds(30000));  // its window is 20 s
  EXPECT_EQ(NotReadyCountWindowFor(base, 5000), milliseconds(50000));  // its window is 50 s
  EXPECT_EQ(NotReadyCountWindowFor(milliseconds(3000), 8), kMaxCountWindow);
  EXPECT_EQ(NotReadyCountWindowFor(milliseconds(0), 8), milliseconds(0));  // 0 holds nothing
  const milliseconds huge(std::numeric_limits<int64_t>::max() / 2);
  EXPECT_EQ(NotReadyCountWindowFor(huge, 8), huge);  // no overflow; the flag's own value
}

// The replicas of a job not all running for one reason (ReplicasReady False: Starting here,
// then Unschedulable): more of them running, and the condition's message saying so, wait the
// not-ready window; another reason or condition does not.
TEST(DecideStatus, WhileNotAllRunningHoldsCountsAndTheReasonsDetailsForTheLongerWindow) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  api::Job job = LoadJob(kPyTorch);
  api::JobStatus stored = job.status;
  engine::SetCondition(&stored, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  engine::ApplyReadiness({false, "Starting", "2/2 replicas not running yet", false}, T0(), &stored,
                         nullptr, nullptr);
  stored.replica_statuses["Master"] = {};
  stored.replica_statuses["Worker"] = {};
  const CountCoalescing windows{
      .window = milliseconds(1000), .not_ready_window = seconds(30), .held_since = {}};

  api::JobStatus one = stored;
  one.replica_statuses["Worker"].active = 1;
  engine::ApplyReadiness({false, "Starting", "1/2 replicas not running yet", false},
                         T0() + seconds(20), &one, nullptr, nullptr);
  ASSERT_NE(engine::FindCondition(one, engine::kReplicasReady)->message,
            engine::FindCondition(stored, engine::kReplicasReady)->message);
  StatusDecision held =
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(20), "", windows);
  EXPECT_FALSE(held.write);
  EXPECT_EQ(held.held_since, T0() + seconds(20));
  EXPECT_EQ(held.requeue_after, seconds(30));

  CountCoalescing since = windows;
  since.held_since = T0() + seconds(20);
  EXPECT_FALSE(
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(49), "", since)
          .write);
  StatusDecision due =
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(50), "", since);
  ASSERT_TRUE(due.write);
  EXPECT_EQ(engine::FindCondition(*due.write, engine::kReplicasReady)->message,
            "1/2 replicas not running yet");

  // Running turning True while the others still start: at once, with the held counts.
  api::JobStatus master_running = one;
  engine::SetCondition(&master_running, engine::kRunning, "True", "PyTorchJobRunning", "running",
                       T0() + seconds(21));
  StatusDecision running = DecideStatus(job, master_running, stored, Status::Ok(), Status::Ok(),
                                        T0() + seconds(21), "", since);
  ASSERT_TRUE(running.write);
  EXPECT_EQ(running.write->replica_statuses["Worker"].active, 1);
  EXPECT_FALSE(running.held_since);

  // A problem is another reason: written at once.
  api::JobStatus pull = one;
  engine::ApplyReadiness({false, "Unschedulable", "2/2 replicas cannot be scheduled", true},
                         T0() + seconds(21), &pull, nullptr, nullptr);
  StatusDecision problem =
      DecideStatus(job, pull, stored, Status::Ok(), Status::Ok(), T0() + seconds(21), "", since);
  ASSERT_TRUE(problem.write);

  // Then, the same reason with one of them running: held like the start.
  api::JobStatus fewer = pull;
  fewer.replica_statuses["Worker"].active = 2;
  engine::ApplyReadiness({false, "Unschedulable", "1/2 replicas cannot be scheduled", true},
                         T0() + seconds(40), &fewer, nullptr, nullptr);
  StatusDecision same = DecideStatus(job, fewer, *problem.write, Status::Ok(), Status::Ok(),
                                     T0() + seconds(40), "", windows);
  EXPECT_FALSE(same.write);
  EXPECT_EQ(same.requeue_after, seconds(40));  // not ready since T0: held as long as it waited

  // A suspended job's replicas stopping (a checkpoint notice let them run on) wait the plain
  // window: Kueue hands the quota on once every count is 0.
  api::JobStatus suspended = stored;
  engine::ApplyReadiness({false, "Suspended", "PyTorchJob pt is suspended", false}, T0(),
                         &suspended, nullptr, nullptr);
  suspended.replica_statuses["Worker"].active = 2;
  api::JobStatus stopped = suspended;
  stopped.replica_statuses["Worker"].active = 0;
  StatusDecision stopping = DecideStatus(job, stopped, suspended, Status::Ok(), Status::Ok(),
                                         T0() + seconds(20), "", windows);
  EXPECT_FALSE(stopping.write);
  EXPECT_EQ(stopping.requeue_after, milliseconds(1000));

  // Counts alone of a job whose replicas all run wait the plain window.
  api::JobStatus ready = stored;
  engine::ApplyReadiness({true, "AllReplicasRunning", "all running", false}, T0(), &ready, nullptr,
                         nullptr);
  api::JobStatus ready_later = ready;
  ready_later.replica_statuses["Worker"].succeeded = 1;
  StatusDecision plain = DecideStatus(job, ready_later, ready, Status::Ok(), Status::Ok(),
                                      T0() + seconds(20), "", windows);
  EXPECT_FALSE(plain.write);
  EXPECT_EQ(plain.requeue_after, milliseconds(1000));
}

TEST(NotReadyHoldFor, AsLongAsTheJobHadWaitedUpToTwoMinutesNeverBelowTheWindow) {
  using std::chrono::seconds;
  api::JobStatus waiting;
  engine::ApplyReadiness({false, "Unschedulable", "8/8 replicas are unschedulable", true}, T0(),
                         &waiting, nullptr, nullptr);
  EXPECT_EQ(NotReadyHoldFor(seconds(30), waiting, T0() + seconds(10)), seconds(30));
  EXPECT_EQ(NotReadyHoldFor(seconds(30), waiting, T0() + seconds(45)), seconds(45));
  EXPECT_EQ(NotReadyHoldFor(seconds(30), waiting, T0() + seconds(600)), kMaxNotReadyHold);
  EXPECT_EQ(NotReadyHoldFor(seconds(300), waiting, T0() + seconds(600)), seconds(300));
  EXPECT_EQ(NotReadyHoldFor(seconds(0), waiting, T0() + seconds(600)), seconds(0));  // 0: none
  EXPECT_EQ(NotReadyHoldFor(seconds(30), waiting, T0() - seconds(5)), seconds(30));  // skew
  api::JobStatus ready;
  engine::ApplyReadiness({true, "AllReplicasRunning", "all running", false}, T0(), &ready, nullptr,
                         nullptr);
  EXPECT_EQ(NotReadyHoldFor(seconds(30), ready, T0() + seconds(600)), seconds(30));
  EXPECT_EQ(NotReadyHoldFor(seconds(30), api::JobStatus{}, T0() + seconds(600)), seconds(30));
}

// A job that has waited 100 s when more of its replicas start has that change held 100 s, not
// 30: a long wait costs a write at waits of about 30 s, 1, 2, 4, … minutes.
TEST(DecideStatus, TheLongerAJobHasWaitedTheLongerItsNotReadyDetailsAreHeld) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  api::Job job = LoadJob(kPyTorch);
  api::JobStatus stored = job.status;
  engine::SetCondition(&stored, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  engine::ApplyReadiness({false, "Unschedulable", "2/2 replicas are unschedulable", true}, T0(),
                         &stored, nullptr, nullptr);
  stored.replica_statuses["Master"] = {};
  stored.replica_statuses["Worker"] = {};
  const CountCoalescing windows{
      .window = milliseconds(1000), .not_ready_window = seconds(30), .held_since = {}};
  api::JobStatus one = stored;
  one.replica_statuses["Master"].active = 1;
  engine::ApplyReadiness({false, "Unschedulable", "1/2 replicas are unschedulable", true},
                         T0() + seconds(100), &one, nullptr, nullptr);
  StatusDecision held =
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(100), "", windows);
  EXPECT_FALSE(held.write);
  EXPECT_EQ(held.held_since, T0() + seconds(100));
  EXPECT_EQ(held.requeue_after, seconds(100));
  CountCoalescing since = windows;
  since.held_since = T0() + seconds(100);
  EXPECT_FALSE(
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(199), "", since)
          .write);
  EXPECT_TRUE(
      DecideStatus(job, one, stored, Status::Ok(), Status::Ok(), T0() + seconds(200), "", since)
          .write);
  // A new reason is not a detail: the scheduler placed them, written at once.
  api::JobStatus placed = one;
  engine::ApplyReadiness({false, "Starting", "1/2 replicas not running yet", false},
                         T0() + seconds(101), &placed, nullptr, nullptr);
  EXPECT_TRUE(
      DecideStatus(job, placed, stored, Status::Ok(), Status::Ok(), T0() + seconds(101), "", since)
          .write);
}

TEST(DecideStatus, HoldsReplicaCountsAloneForTheWindowButNeverAConditionOrARestart) {
  using std::chrono::milliseconds;
  api::Job job = LoadJob(kPyTorch);
  api::JobStatus stored = job.status;
  engine::SetCondition(&stored, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  stored.replica_statuses["Master"] = {};
  stored.replica_statuses["Worker"] = {};
  const CountCoalescing window{
      .window = milliseconds(1000), .not_ready_window = {}, .held_since = {}};

  api::JobStatus one_running = stored;
  one_running.replica_statuses["Worker"].active = 1;
  StatusDecision first =
      DecideStatus(job, one_running, stored, Status::Ok(), Status::Ok(), T0(), "", window);
  EXPECT_FALSE(first.write);
  EXPECT_EQ(first.held_since, T0());
  EXPECT_EQ(first.requeue_after, milliseconds(1000));

  // A later count change inside the window keeps the first time; the wait shrinks.
  api::JobStatus two_running = one_running;
  two_running.replica_statuses["Master"].active = 1;
  StatusDecision later =
      DecideStatus(job, two_running, stored, Status::Ok(), Status::Ok(), T0() + milliseconds(600),
                   "", {.window = milliseconds(1000), .held_since = T0()});
  EXPECT_FALSE(later.write);
  EXPECT_EQ(later.held_since, T0());
  EXPECT_EQ(later.requeue_after, milliseconds(400));

  // Due: written with everything counted so far.
  StatusDecision due =
      DecideStatus(job, two_running, stored, Status::Ok(), Status::Ok(), T0() + milliseconds(1000),
                   "", {.window = milliseconds(1000), .held_since = T0()});
  ASSERT_TRUE(due.write);
  EXPECT_EQ(due.write->replica_statuses["Master"].active, 1);
  EXPECT_EQ(due.write->replica_statuses["Worker"].active, 1);
  EXPECT_FALSE(due.held_since);

  // A condition change goes out at once, counts included.
  api::JobStatus running = two_running;
  engine::SetCondition(&running, engine::kRunning, "True", "PyTorchJobRunning", "running",
                       T0() + milliseconds(100));
  StatusDecision condition =
      DecideStatus(job, running, stored, Status::Ok(), Status::Ok(), T0() + milliseconds(100), "",
                   {.window = milliseconds(1000), .held_since = T0()});
  ASSERT_TRUE(condition.write);
  EXPECT_EQ(condition.write->replica_statuses["Worker"].active, 1);
  EXPECT_FALSE(condition.held_since);

  // So does a restart (backoffLimit's ledger) and a failed child write.
  api::JobStatus restarted = one_running;
  restarted.replica_statuses["Worker"].restarts = 1;
  EXPECT_TRUE(
      DecideStatus(job, restarted, stored, Status::Ok(), Status::Ok(), T0(), "", window).write);
  EXPECT_TRUE(
      DecideStatus(job, one_running, stored, ForbiddenLike(), Status::Ok(), T0(), "", window)
          .write);

  // Without a window every change is written.
  EXPECT_TRUE(DecideStatus(job, one_running, stored, Status::Ok(), Status::Ok(), T0()).write);
}

// What the engine plans for a job synced for the first time at `at`: Created, the start time,
// the replicas starting; and, when `running`, the master Running already.
api::JobStatus FirstStatus(Time at, bool running = false) {
  api::JobStatus s;
  engine::SetCondition(&s, engine::kCreated, "True", "PyTorchJobCreated", "created", at);
  engine::ApplyReadiness({false, "Starting", "3/3 replicas not running yet", false}, at, &s,
                         nullptr, nullptr);
  s.start_time = at;
  s.replica_statuses["Master"] = {};
  s.replica_statuses["Worker"] = {};
  if (running) {
    s.replica_statuses["Master"].active = 1;
    engine::SetCondition(&s, engine::kRunning, "True", "PyTorchJobRunning", "running", at);
  }
  return s;
}

// A job created suspended: its first status (Created, Suspended) is held as any first status,
// and written when due; a failure beside it is not held.
TEST(DecideStatus, HoldsTheFirstStatusOfAJobCreatedSuspended) {
  using std::chrono::milliseconds;
  api::Job job = LoadJob(kPyTorch);
  const api::JobStatus stored = job.status;
  const CountCoalescing settle{.window = milliseconds(1000),
                               .not_ready_window = milliseconds(1000),
                               .held_since = {},
                               .first_status_window = milliseconds(1000)};
  api::JobStatus suspended;
  engine::SetCondition(&suspended, engine::kCreated, "True", "PyTorchJobCreated", "created", T0());
  engine::ApplyReadiness({false, "Suspended", "PyTorchJob job is suspended", false}, T0(),
                         &suspended, nullptr, nullptr);
  engine::SetCondition(&suspended, engine::kSuspended, "True", "PyTorchJobSuspended", "suspended",
                       T0());
  StatusDecision held =
      DecideStatus(job, suspended, stored, Status::Ok(), Status::Ok(), T0(), "", settle);
  EXPECT_FALSE(held.write);
  EXPECT_TRUE(held.first_status_held);
  CountCoalescing since = settle;
  since.held_since = T0();
  StatusDecision due = DecideStatus(job, suspended, stored, Status::Ok(), Status::Ok(),
                                    T0() + milliseconds(1000), "", since);
  ASSERT_TRUE(due.write);
  EXPECT_TRUE(engine::FindCondition(*due.write, engine::kSuspended));

  api::JobStatus failed = suspended;
  engine::SetCondition(&failed, engine::kFailed, "True", "PyTorchJobFailed", "failed", T0());
  EXPECT_TRUE(
      DecideStatus(job, failed, stored, Status::Ok(), Status::Ok(), T0(), "", settle).write);
}

// A new job's first status waits up to first_status_window for its pods' first states, then
// goes out with them, Created and the start time keeping the time first decided; anything else
// new goes out at once.
TEST(DecideStatus, HoldsANewJobsFirstStatusForItsPodsFirstStatesKeepingItsTimes) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  api::Job job = LoadJob(kPyTorch);
  const api::JobStatus stored = job.status;  // nothing yet
  const CountCoalescing settle{.window = milliseconds(1000),
                               .not_ready_window = seconds(30),
                               .held_since = {},
                               .first_status_window = milliseconds(1000)};

  StatusDecision held =
      DecideStatus(job, FirstStatus(T0()), stored, Status::Ok(), Status::Ok(), T0(), "", settle);
  EXPECT_FALSE(held.write);
  EXPECT_TRUE(held.first_status_held);
  EXPECT_EQ(held.held_since, T0());
  EXPECT_EQ(held.requeue_after, milliseconds(1000));

  CountCoalescing since = settle;
  since.held_since = T0();
  const Time later = T0() + milliseconds(1000);
  // The master started meanwhile: one write with everything, Created and the start time at T0.
  StatusDecision running = DecideStatus(job, FirstStatus(later, true), stored, Status::Ok(),
                                        Status::Ok(), T0() + milliseconds(600), "", since);
  ASSERT_TRUE(running.write);
  EXPECT_FALSE(running.first_status_held);
  EXPECT_FALSE(running.held_since);
  EXPECT_EQ(engine::FindCondition(*running.write, engine::kCreated)->last_transition_time, T0());
  EXPECT_EQ(engine::FindCondition(*running.write, engine::kRunning)->last_transition_time, later);
  EXPECT_EQ(running.write->start_time, T0());

  // Nothing started within the window: written when it is due, with the times first decided.
  EXPECT_FALSE(DecideStatus(job, FirstStatus(later), stored, Status::Ok(), Status::Ok(),
                            T0() + milliseconds(999), "", since)
                   .write);
  StatusDecision due =
      DecideStatus(job, FirstStatus(later), stored, Status::Ok(), Status::Ok(), later, "", since);
  ASSERT_TRUE(due.write);
  EXPECT_FALSE(due.first_status_held);
  EXPECT_EQ(engine::FindCondition(*due.write, engine::kCreated)->last_transition_time, T0());
  EXPECT_EQ(due.write->start_time, T0());

  // Not held: a failed pod create, a held gang, a problem with an event of its own, a job whose
  // status is not its first, and no window (a job created suspended is held: the test below).
  EXPECT_TRUE(
      DecideStatus(job, FirstStatus(T0()), stored, ForbiddenLike(), Status::Ok(), T0(), "", settle)
          .write);
  EXPECT_TRUE(DecideStatus(job, FirstStatus(T0()), stored, Status::Ok(), Status::Ok(), T0(),
                           "PodGroup pt is Pending in Volcano", settle)
                  .write);
  api::JobStatus unschedulable = FirstStatus(T0());
  engine::ApplyReadiness({false, "Unschedulable", "3/3 replicas cannot be scheduled", true}, T0(),
                         &unschedulable, nullptr, nullptr);
  EXPECT_TRUE(
      DecideStatus(job, unschedulable, stored, Status::Ok(), Status::Ok(), T0(), "", settle).write);
  api::JobStatus counted = FirstStatus(T0());  // stored: its first status was written
  counted.replica_statuses["Worker"].active = 1;
  StatusDecision counts =
      DecideStatus(job, counted, FirstStatus(T0()), Status::Ok(), Status::Ok(), later, "", settle);
  EXPECT_FALSE(counts.first_status_held);
  EXPECT_EQ(counts.held_since, later);  // held as counts, for the not-ready window
  EXPECT_EQ(counts.requeue_after, seconds(30));
  CountCoalescing none = settle;
  none.first_status_window = milliseconds(0);
  EXPECT_TRUE(
      DecideStatus(job, FirstStatus(T0()), stored, Status::Ok(), Status::Ok(), T0(), "", none)
          .write);
}

TEST(GangHoldOf, NamesThePhaseTheQueueAndVolcanosWord) {
  GangConfig volcano = GangFromFlag("volcano");
  GangHold hold = GangHoldOf(
      volcano,
      {{"metadata", {{"name", "pt"}}},
       {"spec", {{"queue", "research"}}},
       {"status",
        {{"phase", "Pending"},
         {"conditions",
          {{{"type", "Unschedulable"}, {"message", "3/3 tasks in gang unschedulable"}}}}}}});
  EXPECT_TRUE(hold.held);
  EXPECT_EQ(hold.message,
            "PodGroup pt is Pending in Volcano (queue \"research\"): the pods are created once "
            "Volcano admits the whole gang: 3/3 tasks in gang unschedulable");
  EXPECT_FALSE(GangHoldOf(volcano, {{"status", {{"phase", "Running"}}}}).held);
}

}  // namespace
}  // namespace trainctl::op
