#include "engine/diagnosis.h"

#include <gtest/gtest.h>

#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using std::chrono::seconds;
using namespace test;  // NOLINT: test helpers

ReplicaObservation Waiting(const std::string& type, int index, Phase phase,
                           const std::string& reason, const std::string& message = "") {
  ReplicaObservation r = Pod(type, index, phase);
  r.waiting_reason = reason;
  r.waiting_message = message;
  return r;
}

ReplicaObservation Terminating(ReplicaObservation r) {
  r.terminating = true;
  return r;
}

ReplicaObservation Ended(ReplicaObservation r, Time at, const std::string& reason,
                         const std::string& message) {
  r.finished_at = at;
  r.end_reason = reason;
  r.end_message = message;
  return r;
}

// ---- the aggregation rules, one row per case --------------------------------------------------

struct ReadinessRow {
  std::string name;
  std::vector<ReplicaObservation> observed;  // for a PyTorchJob with 1 Master and 3 Workers
  bool ready;
  std::string reason;
  std::string message;
  bool warning;
};

void PrintTo(const ReadinessRow& row, std::ostream* os) { *os << row.name; }

class AssessTest : public ::testing::TestWithParam<ReadinessRow> {};

TEST_P(AssessTest, ReasonAndMessage) {
  const ReadinessRow& row = GetParam();
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 3, ""}});
  Readiness r = AssessReplicas(job, row.observed, kT0);
  EXPECT_EQ(r.ready, row.ready);
  EXPECT_EQ(r.reason, row.reason);
  EXPECT_EQ(r.message, row.message);
  EXPECT_EQ(r.warning, row.warning);
}

const std::string kNoGpu = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.";

const ReadinessRow kReadinessRows[] = {
    {"AllRunning",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
      Pod("Worker", 1, Phase::kRunning), Pod("Worker", 2, Phase::kRunning)},
     true,
     "AllReplicasRunning",
     "Every replica is running (or has completed).",
     false},
    {"SucceededCountsAsDone",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kSucceeded, 0),
      Pod("Worker", 1, Phase::kRunning), Pod("Worker", 2, Phase::kRunning)},
     true,
     "AllReplicasRunning",
     "Every replica is running (or has completed).",
     false},
    {"NothingCreatedYet",
     {},
     false,
     "Starting",
     "4/4 replicas not running yet (Master 0; Worker 0, 1, 2): 4 not created yet",
     false},
    {"BenignStatesFoldIntoStarting",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kPending),
      Waiting("Worker", 1, Phase::kPending, "PodInitializing", "init container init-pytorch")},
     false,
     "Starting",
     "3/4 replicas not running yet (Worker 0, 1, 2): 1 not created yet, 1 pending, 1 "
     "PodInitializing; init container init-pytorch",
     false},
    {"UnschedulableWinsOverStarting",
     {Pod("Master", 0, Phase::kRunning),
      Waiting("Worker", 0, Phase::kPending, "Unschedulable", kNoGpu),
      Waiting("Worker", 1, Phase::kPending, "Unschedulable", kNoGpu),
      Pod("Worker", 2, Phase::kPending)},
     false,
     "Unschedulable",
     "2/4 replicas are unschedulable (Worker 0, 1): " + kNoGpu + " (1 more not running)",
     true},
    {"ImagePullWinsOverUnschedulable",
     {Waiting("Master", 0, Phase::kPending, "Unschedulable", kNoGpu),
      Waiting("Worker", 0, Phase::kPending, "ImagePullBackOff", "Back-off pulling image \"bad:1\""),
      Pod("Worker", 1, Phase::kRunning), Pod("Worker", 2, Phase::kRunning)},
     false,
     "ImagePullBackOff",
     "1/4 replicas cannot pull their image (Worker 0): Back-off pulling image \"bad:1\" (1 more "
     "not running)",
     true},
    {"CrashLoopOnARunningPod",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
      Waiting("Worker", 1, Phase::kRunning, "CrashLoopBackOff", "back-off 40s restarting"),
      Pod("Worker", 2, Phase::kRunning)},
     false,
     "CrashLoopBackOff",
     "1/4 replicas keep crashing and restarting (Worker 1). Last exit: job-worker-1 failed; "
     "back-off 40s restarting.",
     true},
    {"MissingConfigMap",
     {Waiting("Master", 0, Phase::kPending, "CreateContainerConfigError",
              "configmap \"cfg\" not found"),
      Pod("Worker", 0, Phase::kRunning), Pod("Worker", 1, Phase::kRunning),
      Pod("Worker", 2, Phase::kRunning)},
     false,
     "CreateContainerConfigError",
     "1/4 replicas cannot create their container (Master 0): configmap \"cfg\" not found",
     true},
    {"FailedReplicaNamesItsExit",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kFailed, 137),
      Pod("Worker", 1, Phase::kRunning), Pod("Worker", 2, Phase::kRunning)},
     false,
     "ReplicaFailed",
     "1/4 replicas failed (Worker 0): exit code 137",
     true},
    {"TerminatingReplicaIsBeingReplaced",
     {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning),
      Pod("Worker", 1, Phase::kRunning), Terminating(Pod("Worker", 2, Phase::kFailed, 1))},
     false,
     "Starting",
     "1/4 replicas not running yet (Worker 2): 1 being replaced",
     false},
};

INSTANTIATE_TEST_SUITE_P(Why, AssessTest, ::testing::ValuesIn(kReadinessRows),
                         [](const ::testing::TestParamInfo<ReadinessRow>& info) {
                           return info.param.name;
                         });

TEST(AssessTest, ManyReplicasAreListedUpToALimit) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 11, ""}});
  std::vector<ReplicaObservation> observed = {Pod("Master", 0, Phase::kRunning)};
  for (int i = 0; i < 11; ++i)
    observed.push_back(Waiting("Worker", i, Phase::kPending, "Unschedulable", "no room"));
  Readiness r = AssessReplicas(job, observed, kT0);
  EXPECT_EQ(r.message,
            "11/12 replicas are unschedulable (Worker 0, 1, 2, 3, 4, 5, 6, 7 and 3 more): no room");
}

TEST(AssessTest, AHeldMpiV2LauncherSaysWhichWorkersItWaitsFor) {
  api::Job job = MakeJob("MPIJob", {{"Launcher", 1, ""}, {"Worker", 3, ""}});
  job.api_version = api::kApiVersionMpiV2;
  // What DefaultMpiV2 sets for launcherCreationPolicy WaitForWorkersReady.
  job.replica_specs["Launcher"].depends_on = {{"Worker", api::GroupDependency::Until::kReady,
                                               "launcherCreationPolicy WaitForWorkersReady"}};
  std::vector<ReplicaObservation> observed = {Pod("Worker", 0, Phase::kRunning),
                                              Pod("Worker", 1, Phase::kPending),
                                              Pod("Worker", 2, Phase::kPending)};
  Readiness r = AssessReplicas(job, observed, kT0);
  EXPECT_EQ(r.reason, "Starting");
  EXPECT_EQ(r.message,
            "3/4 replicas not running yet (Launcher 0; Worker 1, 2): 1 not created yet, 2 pending; "
            "the Launcher is made once every Worker runs (launcherCreationPolicy "
            "WaitForWorkersReady), still waiting for Worker 1, 2");

  job.replica_specs["Launcher"].depends_on.clear();  // AtStartup: on its way, nothing to add
  EXPECT_EQ(AssessReplicas(job, observed, kT0).message,
            "3/4 replicas not running yet (Launcher 0; Worker 1, 2): 1 not created yet, 2 pending");
}

TEST(AssessTest, MessagesAreBounded) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  Readiness r = AssessReplicas(
      job, {Waiting("Master", 0, Phase::kPending, "ErrImagePull", std::string(5000, 'x'))}, kT0);
  EXPECT_LE(r.message.size(), 1024u + 3);
  EXPECT_EQ(r.reason, "ErrImagePull");
}

// ---- crash loops: every replica in one, the last exit and its output, one report -------------

// A replica that failed and runs again after an in-place restart: its last end and its new start.
ReplicaObservation Restarted(const std::string& type, int index, int restarts, int code, Time ended,
                             Time started, const std::string& output) {
  ReplicaObservation r =
      Ended(Pod(type, index, Phase::kRunning, code, restarts), ended, "Error", output);
  r.started_at = started;
  return r;
}

TEST(CrashLoopTest, CountsEveryReplicaInTheLoopAndShowsTheLastExitsOutput) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  const std::string output =
      "python3: can't open file '/opt/pytorch-mnist/mnist.py': [Errno 2] No such file or "
      "directory\n";
  ReplicaObservation master =
      Ended(Pod("Master", 0, Phase::kRunning, 2, 4), kT0 + seconds(10), "Error", output);
  master.waiting_reason = "CrashLoopBackOff";
  master.waiting_message = "back-off 8 s before restarting job-master-0";
  // The Worker is between two crashes: running again for 2 s after its last failure.
  ReplicaObservation worker =
      Restarted("Worker", 0, 4, 2, kT0 + seconds(11), kT0 + seconds(12), output);
  Readiness r = AssessReplicas(job, {master, worker}, kT0 + seconds(14));
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(r.warning);
  EXPECT_EQ(r.reason, "CrashLoopBackOff");
  EXPECT_EQ(r.message,
            "2/2 replicas keep crashing and restarting (Master 0; Worker 0). Last exit: "
            "job-worker-0 exited with code 2 at " +
                FormatRfc3339(kT0 + seconds(11)) +
                ", 4 restarts so far.\nLast output:\npython3: can't open file "
                "'/opt/pytorch-mnist/mnist.py': [Errno 2] No such file or directory");
  // Once its new run has lasted kCrashLoopSettle, a restarted replica has recovered.
  ReplicaObservation settled =
      Restarted("Worker", 0, 4, 2, kT0 + seconds(11), kT0 + seconds(12), output);
  Readiness later = AssessReplicas(job, {settled, Pod("Master", 0, Phase::kRunning)},
                                   kT0 + seconds(12) + kCrashLoopSettle);
  EXPECT_TRUE(later.ready) << later.message;
  // A restart after a success (Always) is no crash loop.
  ReplicaObservation fine = Restarted("Worker", 0, 1, 0, kT0, kT0 + seconds(1), "");
  EXPECT_FALSE(InCrashLoop(fine, kT0 + seconds(2)));
}

TEST(CrashLoopTest, TheLastOutputIsBoundedAndValidUtf8) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  std::string output;
  for (int i = 0; i < 400; ++i) output += "ligne \xC3\xA9 " + std::to_string(i) + "\n";
  output += "\xFF broken\n";
  ReplicaObservation master = Ended(Pod("Master", 0, Phase::kRunning, 1, 2), kT0, "Error", output);
  master.waiting_reason = "CrashLoopBackOff";
  Readiness r = AssessReplicas(job, {master}, kT0 + seconds(1));
  EXPECT_LE(r.message.size(), kMaxAttributionBytes + 3);
  EXPECT_NE(r.message.find("ligne \xC3\xA9 399\n\xEF\xBF\xBD broken"), std::string::npos)
      << r.message;
  EXPECT_EQ(r.message.find("ligne \xC3\xA9 0\n"), std::string::npos) << "the tail is kept";
}

int CountReason(const std::vector<Event>& events, const std::string& reason) {
  int n = 0;
  for (const Event& e : events) n += e.reason == reason;
  return n;
}

// A loop of crashes is reported once (one Warning event), not as "all running" between two
// crashes; its message follows the loop at most every kReadinessRefresh.
TEST(CrashLoopTest, ALoopIsReportedOnceNotOnEveryCycle) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  Step(&job, {}, kT0);
  Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(1));
  std::vector<Event> events;
  Time t = kT0 + seconds(2);
  for (int restart = 1; restart <= 5; ++restart) {
    ReplicaObservation waiting =
        Ended(Pod("Master", 0, Phase::kRunning, 2, restart), t, "Error", "boom\n");
    waiting.waiting_reason = "CrashLoopBackOff";
    Plan p = Step(&job, {waiting}, t + seconds(1));
    events.insert(events.end(), p.events.begin(), p.events.end());
    Time started = t + seconds(1 << restart);
    p = Step(&job, {Restarted("Master", 0, restart, 2, t, started, "boom\n")},
             started + seconds(1));
    events.insert(events.end(), p.events.begin(), p.events.end());
    t = started + seconds(2);
  }
  EXPECT_EQ(CountReason(events, "CrashLoopBackOff"), 1);
  EXPECT_EQ(CountReason(events, "AllReplicasRunning"), 0);
  const api::Condition* ready = FindCondition(job.status, kReplicasReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->reason, "CrashLoopBackOff");
  EXPECT_NE(ready->message.find("5 restarts so far"), std::string::npos) << ready->message;
  // It recovers: one Normal event says so.
  Plan p = Step(&job, {Restarted("Master", 0, 5, 2, t, t + seconds(1), "boom\n")},
                t + seconds(1) + kCrashLoopSettle);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "AllReplicasRunning");
}

// As a real kubelet reports a loop: the container `terminated` for most of each back-off,
// `waiting: CrashLoopBackOff` only around the restart, then running for a moment. Back-offs
// grow past kCrashLoopSettle; the loop is still one Warning and never "all running".
TEST(CrashLoopTest, AKubeletsTerminatedStateDuringTheBackOffStaysInTheLoop) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  Step(&job, {}, kT0);
  Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(1));
  std::vector<Event> events;
  Time t = kT0 + seconds(2);
  for (int restart = 1; restart <= 5; ++restart) {
    ReplicaObservation ended =
        Ended(Pod("Master", 0, Phase::kRunning, 2, restart), t, "Error", "boom\n");
    ended.awaiting_restart = true;
    Time backoff_over = t + seconds(10 << restart);  // 20 s … 320 s
    for (Time now : {t + seconds(1), backoff_over - seconds(1)}) {
      Plan p = Step(&job, {ended}, now);
      events.insert(events.end(), p.events.begin(), p.events.end());
    }
    Plan p =
        Step(&job, {Restarted("Master", 0, restart, 2, t, backoff_over, "boom\n")}, backoff_over);
    events.insert(events.end(), p.events.begin(), p.events.end());
    t = backoff_over + seconds(1);
  }
  EXPECT_EQ(CountReason(events, "CrashLoopBackOff"), 1);
  EXPECT_EQ(CountReason(events, "AllReplicasRunning"), 0);
  // Without the flag (a replica whose run ended long ago, not restarted in place), the settle
  // time applies as before.
  ReplicaObservation old = Ended(Pod("Master", 0, Phase::kRunning, 2, 1), kT0, "Error", "");
  EXPECT_FALSE(InCrashLoop(old, kT0 + kCrashLoopSettle + seconds(1)));
  old.awaiting_restart = true;
  EXPECT_TRUE(InCrashLoop(old, kT0 + kCrashLoopSettle + seconds(1)));
  old.exit_code = 0;  // ended well (Always): no loop
  EXPECT_FALSE(InCrashLoop(old, kT0 + seconds(1)));
}

// ---- the condition: first in the list, rate-limited, events on problems ------------------------

TEST(ReadinessConditionTest, IsFirstNeverLastAndGoneWhenTheJobFinishes) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  Step(&job, {}, kT0);
  EXPECT_EQ(Summary(job.status), "ReplicasReady=False Created=True");
  Step(&job, {Pod("Master", 0, Phase::kRunning), Pod("Worker", 0, Phase::kRunning)},
       kT0 + seconds(1));
  EXPECT_EQ(Summary(job.status), "ReplicasReady=True Created=True Running=True");
  EXPECT_EQ(Last(job.status), "Running");
  Step(&job, {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning)},
       kT0 + seconds(2));
  EXPECT_EQ(Summary(job.status), "Created=True Running=False Succeeded=True");
}

TEST(ReadinessConditionTest, ProblemIsAWarningEventAndItsEndANormalOne) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  Plan first = Step(&job, {}, kT0);
  for (const Event& e : first.events) EXPECT_NE(e.reason, "Starting");  // benign: quiet
  Plan stuck = Step(&job, {Waiting("Master", 0, Phase::kPending, "Unschedulable", "full")},
                    kT0 + seconds(1));
  ASSERT_FALSE(stuck.events.empty());
  EXPECT_EQ(stuck.events.back(),
            (Event{"Warning", "Unschedulable", "1/1 replicas are unschedulable (Master 0): full"}));
  Plan again = Step(&job, {Waiting("Master", 0, Phase::kPending, "Unschedulable", "full")},
                    kT0 + seconds(2));
  EXPECT_TRUE(again.events.empty());
  EXPECT_FALSE(again.status_changed);
  Plan running = Step(&job, {Pod("Master", 0, Phase::kRunning)}, kT0 + seconds(3));
  bool cleared = false;
  for (const Event& e : running.events)
    if (e.reason == "AllReplicasRunning" && e.type == "Normal") cleared = true;
  EXPECT_TRUE(cleared);
}

TEST(ReadinessConditionTest, SameReasonNewMessageWaitsForTheRefreshInterval) {
  api::Job job = MakeJob("PyTorchJob", {{"Worker", 2, ""}});
  Step(&job,
       {Waiting("Worker", 0, Phase::kPending, "Unschedulable", "full"),
        Waiting("Worker", 1, Phase::kPending, "Unschedulable", "full")},
       kT0);
  const std::string two = FindCondition(job.status, kReplicasReady)->message;
  std::vector<ReplicaObservation> one = {
      Pod("Worker", 0, Phase::kRunning),
      Waiting("Worker", 1, Phase::kPending, "Unschedulable", "full")};
  Plan early = Step(&job, one, kT0 + seconds(4));
  EXPECT_EQ(FindCondition(job.status, kReplicasReady)->message, two);
  ASSERT_TRUE(early.requeue_after);
  EXPECT_EQ(*early.requeue_after, seconds(6));
  Step(&job, one, kT0 + seconds(10));
  const api::Condition* c = FindCondition(job.status, kReplicasReady);
  EXPECT_EQ(c->message, "1/2 replicas are unschedulable (Worker 1): full");
  EXPECT_EQ(c->last_transition_time, kT0);
  EXPECT_EQ(c->last_update_time, kT0 + seconds(10));
}

TEST(ReadinessConditionTest, SuspendedByKueueWaitsForAdmission) {
  api::Job job = MakeJob("PyTorchJob", {{"Worker", 1, ""}}, "", "{suspend: true}");
  job.metadata["labels"]["kueue.x-k8s.io/queue-name"] = "team-a";
  Step(&job, {}, kT0);
  const api::Condition* c = FindCondition(job.status, kReplicasReady);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "WaitingForAdmission");
  EXPECT_NE(c->message.find("LocalQueue \"team-a\""), std::string::npos) << c->message;
  EXPECT_EQ(Last(job.status), "Suspended");
}

// ---- who failed first ---------------------------------------------------------------------------

TEST(FirstFailureTest, TheEarliestEndWinsWithItsReasonAndLastLines) {
  std::vector<ReplicaObservation> observed = {
      Ended(Pod("Worker", 1, Phase::kFailed, 1), kT0 + seconds(9), "Error",
            "worker 1 saw rank 0 go"),
      Ended(Pod("Worker", 0, Phase::kFailed, 137), kT0 + seconds(3), "OOMKilled",
            "step 10\nstep 11\nCUDA out of memory\n"),
      Pod("Master", 0, Phase::kRunning)};
  std::optional<std::string> text = FirstFailure(observed);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text,
            "First failure: job-worker-0 (Worker 0) was killed by SIGKILL (exit code 137), reason "
            "OOMKilled, at 2023-11-14T22:13:23Z.\nLast output:\nstep 10\nstep 11\nCUDA out of "
            "memory");
}

TEST(FirstFailureTest, TheSameInstantIsOrderedByTheSubstratesExitOrderThenByName) {
  Time t = *ParseRfc3339("2026-11-23T10:00:05Z");
  ReplicaObservation a = Pod("Worker", 0, Phase::kFailed, 1);
  ReplicaObservation b = Pod("Worker", 1, Phase::kFailed, 137);
  a.finished_at = b.finished_at = t;
  a.exit_seq = 3;
  b.exit_seq = 2;
  EXPECT_EQ(FirstFailedIndex({a, b}), 1u) << "b exited first within the second";
  a.exit_seq = b.exit_seq = 0;
  EXPECT_EQ(FirstFailedIndex({b, a}), 1u) << "no exit order: by name (…-worker-0 first)";
  ReplicaObservation unknown = Pod("Master", 0, Phase::kFailed, 2);
  EXPECT_EQ(FirstFailedIndex({unknown, b}), 1u) << "a known end comes before an unknown one";
  EXPECT_FALSE(FirstFailedIndex({Pod("Master", 0, Phase::kSucceeded, 0)}));
}

TEST(FirstFailureTest, NoFailureNoText) {
  EXPECT_FALSE(
      FirstFailure({Pod("Worker", 0, Phase::kRunning), Pod("Master", 0, Phase::kSucceeded, 0)}));
}

TEST(FirstFailureTest, LongOutputKeepsItsTailWithinTheBound) {
  std::string log;
  for (int i = 0; i < 400; ++i) log += "line " + std::to_string(i) + "\n";
  std::optional<std::string> text =
      FirstFailure({Ended(Pod("Worker", 0, Phase::kFailed, 2), kT0, "Error", log)});
  ASSERT_TRUE(text);
  EXPECT_LE(text->size(), kMaxAttributionBytes);
  EXPECT_NE(text->find("line 399"), std::string::npos);
  EXPECT_EQ(text->find("line 0\n"), std::string::npos);
}

TEST(FirstFailureTest, BinaryOutputBecomesValidUtf8) {
  std::string log = "caf\xC3\xA9 ok\n\xFF\xFE binary \xE2\x82 cut\n";
  std::optional<std::string> text =
      FirstFailure({Ended(Pod("Worker", 0, Phase::kFailed, 1), kT0, "Error", log)});
  ASSERT_TRUE(text);
  EXPECT_NE(
      text->find("caf\xC3\xA9 ok\n\xEF\xBF\xBD\xEF\xBF\xBD binary \xEF\xBF\xBD\xEF\xBF\xBD cut"),
      std::string::npos)
      << *text;
  api::JobStatus status;
  status.conditions.push_back({"Failed", "True", "x", *text, kT0, kT0});
  EXPECT_NO_THROW(api::EncodeStatus(status).dump());
}

TEST(FirstFailureTest, FailedConditionAndEventNameTheFirstReplica) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "ExitCode"}, {"Worker", 2, "ExitCode"}});
  Step(&job, {}, kT0);
  Plan failed =
      Step(&job,
           {Pod("Master", 0, Phase::kRunning),
            Ended(Pod("Worker", 0, Phase::kFailed, 1), kT0 + seconds(5), "Error", "boom"),
            Ended(Pod("Worker", 1, Phase::kFailed, 2), kT0 + seconds(4), "Error", "bang")},
           kT0 + seconds(6));
  ASSERT_EQ(Last(job.status), "Failed");
  const std::string& message = job.status.conditions.back().message;
  EXPECT_NE(message.find("First failure: job-worker-1 (Worker 1) exited with code 2"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Last output:\nbang"), std::string::npos) << message;
  bool event = false;
  for (const Event& e : failed.events)
    if (e.reason == "PyTorchJobFailed" && e.message == message) event = true;
  EXPECT_TRUE(event);
  EXPECT_EQ(FindCondition(job.status, kReplicasReady), nullptr);
}

// ---- hangs --------------------------------------------------------------------------------------

ReplicaObservation Writing(ReplicaObservation r, Time last_output) {
  r.last_output = last_output;
  return r;
}

api::Job HangJob(const std::string& policy, const std::string& run_policy = "") {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}}, "", run_policy);
  job.metadata["annotations"][api::kProgressTimeoutAnnotation] = "60";
  if (!policy.empty()) job.metadata["annotations"][api::kProgressPolicyAnnotation] = policy;
  return job;
}

TEST(ProgressTest, QuietForTheTimeoutIsAWarningAndOutputClearsIt) {
  api::Job job = HangJob("");
  Step(&job, {}, kT0);
  Plan up = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0)}, kT0 + seconds(1));
  ASSERT_TRUE(up.requeue_after);
  EXPECT_EQ(*up.requeue_after, seconds(60));
  Plan quiet = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(30))},
                    kT0 + seconds(89));
  EXPECT_EQ(*quiet.requeue_after, seconds(1));
  Plan hung = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(30))},
                   kT0 + seconds(90));
  const api::Condition* c = FindCondition(job.status, kReplicasReady);
  EXPECT_EQ(c->reason, "ProgressTimeout");
  EXPECT_EQ(c->message,
            "No replica has written output for 60 s (progress timeout; last output at "
            "2023-11-14T22:13:50Z from job-master-0).");
  ASSERT_FALSE(hung.events.empty());
  EXPECT_EQ(hung.events.back().type, "Warning");
  EXPECT_EQ(Last(job.status), "Running");  // Warn only
  Plan still = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(30))},
                    kT0 + seconds(200));
  EXPECT_FALSE(still.status_changed);
  EXPECT_TRUE(still.events.empty());
  Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(201))}, kT0 + seconds(202));
  EXPECT_EQ(FindCondition(job.status, kReplicasReady)->reason, "AllReplicasRunning");
}

TEST(ProgressTest, FailPolicyFailsTheJob) {
  api::Job job = HangJob("Fail");
  Step(&job, {}, kT0);
  Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0)}, kT0 + seconds(1));
  Plan plan = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0)}, kT0 + seconds(61));
  ASSERT_EQ(Last(job.status), "Failed");
  EXPECT_NE(job.status.conditions.back().message.find("made no progress"), std::string::npos);
  EXPECT_EQ(plan.remove.size(), 0u);  // cleanPodPolicy None (the default) keeps the pods
}

TEST(ProgressTest, RestartPolicyRestartsThroughTheBackoffLimit) {
  api::Job job = HangJob("Restart", "{backoffLimit: 1}");
  Step(&job, {}, kT0);
  Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0)}, kT0 + seconds(1));
  Plan restart = Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0)}, kT0 + seconds(61));
  EXPECT_EQ(Last(job.status), "Restarting");
  ASSERT_EQ(restart.remove.size(), 1u);
  EXPECT_TRUE(restart.create.empty());
  Step(&job, {}, kT0 + seconds(62));  // recreated
  Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(63))}, kT0 + seconds(63));
  EXPECT_EQ(Last(job.status), "Running");
  Step(&job, {Writing(Pod("Master", 0, Phase::kRunning), kT0 + seconds(63))}, kT0 + seconds(200));
  EXPECT_EQ(Last(job.status), "Failed");
  EXPECT_NE(job.status.conditions.back().message.find("backoff limit"), std::string::npos);
}

TEST(ProgressTest, AnnotationsAreValidatedWithTheirFieldPath) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}});
  job.metadata["annotations"][api::kProgressTimeoutAnnotation] = "ten";
  job.metadata["annotations"][api::kProgressPolicyAnnotation] = "Reboot";
  api::FieldErrorList errors;
  EXPECT_FALSE(api::ProgressPolicyOf(job, &errors));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].ToString(),
            "metadata.annotations[trainctl.dev/progress-timeout-seconds]: Invalid value: \"ten\": "
            "expected a whole number of seconds from 1 to 604800");
  EXPECT_EQ(errors[1].path, "metadata.annotations[trainctl.dev/progress-timeout-policy]");
}

// ---- a failed rank under torchrun: known while its replica waits at the exit barrier --------

ReplicaObservation WithFailedRank(ReplicaObservation r, std::optional<int> rank, int code, Time at,
                                  const std::string& output) {
  r.process_failure = ReplicaObservation::ProcessExit{rank, 0, code, at, output};
  return r;
}

TEST(RankFailedTest, AFailedRankIsTheReasonWhileItsReplicaStillRuns) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  ReplicaObservation worker =
      WithFailedRank(Pod("Worker", 0, Phase::kRunning), 1, 7, kT0 + seconds(3),
                     "rank 1 about to fail\nValueError: bad batch\n");
  Readiness r = AssessReplicas(job, {Pod("Master", 0, Phase::kRunning), worker}, kT0 + seconds(4));
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(r.warning);
  EXPECT_EQ(r.reason, "RankFailed");
  EXPECT_EQ(r.message,
            "1/2 replicas run on after one of their processes failed (Worker 0). job-worker-0 "
            "(Worker 0): rank 1 (local_rank 0) exited with code 7 at " +
                FormatRfc3339(kT0 + seconds(3)) +
                "; torchrun keeps the replica running at its exit barrier until every node's "
                "agent is done (up to 300 s).\nLast output:\nrank 1 about to fail\nValueError: "
                "bad batch");
  // Without a known rank (an elastic rendezvous), the local rank is named.
  ReplicaObservation elastic =
      WithFailedRank(Pod("Worker", 0, Phase::kRunning), std::nullopt, -9, kT0, "");
  EXPECT_EQ(ProcessFailureText(elastic),
            "job-worker-0 (Worker 0): local_rank 0 was killed by SIGKILL at " + FormatRfc3339(kT0));
}

TEST(RankFailedTest, TheMastersSuccessSaysWhichRankFailed) {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, ""}, {"Worker", 1, ""}});
  ReplicaObservation worker =
      WithFailedRank(Pod("Worker", 0, Phase::kRunning), 1, 7, kT0 + seconds(3), "boom\n");
  Plan plan = Reconcile(job, {Pod("Master", 0, Phase::kSucceeded, 0), worker}, kT0 + seconds(9));
  const api::Condition* done = FindCondition(plan.status, kSucceeded);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->message,
            "PyTorchJob job is successfully completed. While it ran, a process failed: "
            "job-worker-0 (Worker 0): rank 1 (local_rank 0) exited with code 7 at " +
                FormatRfc3339(kT0 + seconds(3)) + ".");
  bool evented = false;
  for (const Event& e : plan.events) evented = evented || e.message == done->message;
  EXPECT_TRUE(evented) << "the Succeeded event carries the same text";
  // No failed rank: upstream's message, unchanged.
  Plan clean =
      Reconcile(job, {Pod("Master", 0, Phase::kSucceeded, 0), Pod("Worker", 0, Phase::kRunning)},
                kT0 + seconds(9));
  ASSERT_NE(FindCondition(clean.status, kSucceeded), nullptr);
  EXPECT_EQ(FindCondition(clean.status, kSucceeded)->message,
            "PyTorchJob job is successfully completed.");
}

}  // namespace
}  // namespace trainctl::engine
