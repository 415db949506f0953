// Unit tests for the checkpoint notice (api/checkpoint_notice.h, engine/checkpoint_notice.h):
// before a suspend, a gang restart or the active deadline stops the replicas, the notice is
// recorded on the job once, every replica alive is told, and the stop waits until the notice's
// stopAt or until every replica reported done; the deadline never moves.
#include "api/checkpoint_notice.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/restart_scope.h"
#include "api/validation.h"
#include "engine/checkpoint_notice.h"
#include "engine/conditions.h"
#include "engine/reconcile.h"
#include "engine/test_jobs.h"

namespace trainctl::engine {
namespace {

using std::chrono::seconds;
using namespace test;  // NOLINT: test helpers

api::Job NoticeJob(const std::string& run_policy = "", const std::string& seconds = "30") {
  api::Job job = MakeJob("PyTorchJob", {{"Master", 1, "OnFailure"}, {"Worker", 2, "OnFailure"}}, "",
                         run_policy);
  if (!seconds.empty()) job.metadata["annotations"][api::kNoticeSecondsAnnotation] = seconds;
  return job;
}

// What a substrate does with a plan's notice: records it on the job first, then tells the
// replicas listed (their told notice becomes the job's).
Plan Pass(api::Job* job, std::vector<ReplicaObservation>* observed, Time now) {
  Plan plan = Step(job, *observed, now);
  if (plan.restart_attempt)
    job->metadata["annotations"][api::kRestartAttemptAnnotation] =
        std::to_string(*plan.restart_attempt);
  if (plan.notice_record) {
    if (plan.notice_record->empty())
      job->metadata["annotations"].erase(api::kNoticeAnnotation);
    else
      job->metadata["annotations"][api::kNoticeAnnotation] = *plan.notice_record;
  }
  for (const ReplicaRef& ref : plan.notify)
    for (ReplicaObservation& r : *observed)
      if (r.name == ref.name) {
        r.notice = api::RecordedNoticeText(*job);
        r.notice_done = false;
      }
  return plan;
}

int Count(const Plan& plan, const std::string& reason) {
  return static_cast<int>(std::count_if(plan.events.begin(), plan.events.end(),
                                        [&](const Event& e) { return e.reason == reason; }));
}

std::vector<ReplicaObservation> Running(api::Job* job) {
  std::vector<ReplicaObservation> running = All(*job, Phase::kRunning);
  Step(job, {}, kT0);
  Step(job, running, kT0);
  EXPECT_EQ(Last(job->status), "Running");
  return running;
}

TEST(CheckpointNotice, SuspendTellsEveryReplicaAndStopsThemAtStopAt) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;

  Plan told = Pass(&job, &pods, kT0 + seconds(10));
  EXPECT_TRUE(told.remove.empty()) << "held for the notice";
  ASSERT_TRUE(told.notice_record);
  std::optional<api::Notice> notice = api::DecodeNotice(*told.notice_record);
  ASSERT_TRUE(notice);
  EXPECT_EQ(notice->reason, "Suspended");
  EXPECT_EQ(notice->stop_at, kT0 + seconds(40));
  EXPECT_EQ(notice->seconds, 30);
  EXPECT_EQ(told.notify.size(), 3u);
  EXPECT_EQ(Count(told, kCheckpointNoticeReason), 1);
  ASSERT_TRUE(told.requeue_after);
  EXPECT_LE(*told.requeue_after, seconds(30));
  EXPECT_TRUE(HasCondition(job.status, kSuspended));
  EXPECT_EQ(job.status.replica_statuses["Worker"].active, 2) << "still running, still counted";

  // Meanwhile: nothing is told twice, nothing recorded again, nothing removed.
  Plan waiting = Pass(&job, &pods, kT0 + seconds(39));
  EXPECT_TRUE(waiting.remove.empty());
  EXPECT_FALSE(waiting.notice_record);
  EXPECT_TRUE(waiting.notify.empty());
  EXPECT_EQ(Count(waiting, kCheckpointNoticeReason), 0);

  Plan stop = Pass(&job, &pods, kT0 + seconds(40));
  EXPECT_EQ(stop.remove.size(), 3u);
  EXPECT_EQ(job.status.replica_statuses["Worker"].active, 0);
}

TEST(CheckpointNotice, TheStopComesSoonerOnceEveryReplicaIsDone) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;
  Pass(&job, &pods, kT0 + seconds(10));
  pods[0].notice_done = pods[1].notice_done = true;
  EXPECT_TRUE(Pass(&job, &pods, kT0 + seconds(12)).remove.empty()) << "one is not done yet";
  pods[2].notice_done = true;
  EXPECT_EQ(Pass(&job, &pods, kT0 + seconds(13)).remove.size(), 3u);
}

TEST(CheckpointNotice, ADoneReportForAnotherNoticeDoesNotCount) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;
  Pass(&job, &pods, kT0 + seconds(10));
  for (ReplicaObservation& r : pods) {
    r.notice_done = true;
    r.notice = "{}";  // told something else (a stale pod annotation)
  }
  Plan p = Pass(&job, &pods, kT0 + seconds(11));
  EXPECT_TRUE(p.remove.empty());
  EXPECT_EQ(p.notify.size(), 3u) << "told the job's notice again";
}

TEST(CheckpointNotice, ResumeTakesTheNoticeBack) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;
  Pass(&job, &pods, kT0 + seconds(10));
  job.run_policy.suspend = false;
  Plan resumed = Pass(&job, &pods, kT0 + seconds(12));
  ASSERT_TRUE(resumed.notice_record);
  EXPECT_EQ(*resumed.notice_record, "");
  EXPECT_EQ(resumed.notify.size(), 3u) << "each replica is told that the notice is over";
  EXPECT_TRUE(resumed.remove.empty());
  for (const ReplicaObservation& r : pods) EXPECT_EQ(r.notice, "");
  // A second suspend gives a new notice with its own stopAt.
  job.run_policy.suspend = true;
  Plan again = Pass(&job, &pods, kT0 + seconds(100));
  ASSERT_TRUE(again.notice_record);
  EXPECT_EQ(api::DecodeNotice(*again.notice_record)->stop_at, kT0 + seconds(130));
  EXPECT_TRUE(again.remove.empty());
}

TEST(CheckpointNotice, ReplicasThatNeverRanAreStoppedAtOnce) {
  api::Job job = NoticeJob();
  Step(&job, {}, kT0);
  std::vector<ReplicaObservation> pending = All(job, Phase::kPending);
  Step(&job, pending, kT0);
  job.run_policy.suspend = true;  // e.g. Kueue preempts a job still waiting for its nodes
  Plan p = Pass(&job, &pending, kT0 + seconds(10));
  EXPECT_EQ(p.remove.size(), 3u);
  EXPECT_FALSE(p.notice_record);
  EXPECT_TRUE(p.notify.empty());
}

TEST(CheckpointNotice, WithoutAPolicyTheStopIsImmediateAndNobodyIsTold) {
  api::Job job = NoticeJob("", /*seconds=*/"");
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;
  Plan p = Pass(&job, &pods, kT0 + seconds(10));
  EXPECT_EQ(p.remove.size(), 3u);
  EXPECT_FALSE(p.notice_record);
  EXPECT_TRUE(p.notify.empty());
}

TEST(CheckpointNotice, TheDeadlineNoticeComesItsSecondsBeforeAndTheDeadlineDoesNotMove) {
  api::Job job = NoticeJob("{activeDeadlineSeconds: 100, cleanPodPolicy: All}");
  std::vector<ReplicaObservation> pods = Running(&job);  // started at kT0

  Plan early = Pass(&job, &pods, kT0 + seconds(60));
  EXPECT_FALSE(early.notice_record);
  ASSERT_TRUE(early.requeue_after);
  EXPECT_EQ(*early.requeue_after, seconds(10)) << "woken at the notice time";

  Plan told = Pass(&job, &pods, kT0 + seconds(70));
  ASSERT_TRUE(told.notice_record);
  std::optional<api::Notice> notice = api::DecodeNotice(*told.notice_record);
  EXPECT_EQ(notice->reason, "ActiveDeadline");
  EXPECT_EQ(notice->stop_at, kT0 + seconds(100));
  EXPECT_EQ(told.notify.size(), 3u);
  EXPECT_TRUE(told.remove.empty());
  EXPECT_EQ(Count(told, kCheckpointNoticeReason), 1);

  for (ReplicaObservation& r : pods) r.notice_done = true;
  Plan done = Pass(&job, &pods, kT0 + seconds(80));
  EXPECT_TRUE(done.remove.empty()) << "done reports do not bring the deadline forward";
  EXPECT_FALSE(done.notice_record);
  EXPECT_FALSE(IsFinished(job.status));

  Plan deadline = Pass(&job, &pods, kT0 + seconds(100));
  EXPECT_TRUE(HasCondition(job.status, kFailed));
  EXPECT_EQ(deadline.remove.size(), 3u);
}

TEST(CheckpointNotice, AGangRestartWaitsForItsNoticeAndIsDecidedOnce) {
  api::Job job = NoticeJob();
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Gang";
  std::vector<ReplicaObservation> pods = Running(&job);
  pods[2] = Pod("Worker", 1, Phase::kFailed, 1);

  Plan told = Pass(&job, &pods, kT0 + seconds(5));
  EXPECT_FALSE(told.restart_attempt);
  EXPECT_TRUE(told.remove.empty());
  EXPECT_TRUE(told.create.empty());
  ASSERT_TRUE(told.notice_record);
  EXPECT_EQ(api::DecodeNotice(*told.notice_record)->reason, "GangRestart");
  EXPECT_EQ(told.notify.size(), 2u) << "the replicas still alive";
  EXPECT_FALSE(IsFinished(job.status));
  EXPECT_FALSE(HasCondition(job.status, kRestarting));

  for (int t = 6; t < 35; t += 7) {
    Plan held = Pass(&job, &pods, kT0 + seconds(t));
    EXPECT_FALSE(held.restart_attempt) << t;
    EXPECT_FALSE(held.notice_record) << t;
    EXPECT_TRUE(held.remove.empty()) << t;
    EXPECT_TRUE(held.create.empty()) << t;
    EXPECT_EQ(Count(held, kCheckpointNoticeReason), 0);
  }
  Plan restart = Pass(&job, &pods, kT0 + seconds(35));
  ASSERT_TRUE(restart.restart_attempt);
  EXPECT_EQ(*restart.restart_attempt, 1);
  EXPECT_EQ(restart.remove.size(), 3u);
  ASSERT_TRUE(restart.notice_record);
  EXPECT_EQ(*restart.notice_record, "") << "attempt 1 starts without a notice";
  EXPECT_TRUE(restart.notify.empty()) << "replicas being removed are not told";
  EXPECT_EQ(api::RestartAttemptOf(job), 1);
  EXPECT_EQ(Count(restart, kGangRestartReason), 1);
}

TEST(CheckpointNotice, ANoticeJobCarriesTheFinalizerAndItsDeletionWaitsForTheNotice) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = All(job, Phase::kRunning);
  Plan first = Step(&job, {}, kT0);
  ASSERT_TRUE(first.notice_finalizer);
  EXPECT_TRUE(*first.notice_finalizer);
  job.metadata["finalizers"] = api::FinalizersWithNotice(job.metadata, true);
  EXPECT_FALSE(Step(&job, pods, kT0).notice_finalizer) << "carried: nothing to change";

  job.metadata["deletionTimestamp"] = "2023-11-14T22:13:30Z";
  api::JobStatus before = job.status;
  Plan told = Pass(&job, &pods, kT0 + seconds(10));
  EXPECT_FALSE(told.notice_finalizer) << "held";
  ASSERT_TRUE(told.notice_record);
  EXPECT_EQ(api::DecodeNotice(*told.notice_record)->reason, "Deleted");
  EXPECT_EQ(told.notify.size(), 3u);
  EXPECT_TRUE(told.remove.empty() && told.create.empty()) << "the garbage collector deletes";
  EXPECT_FALSE(told.status_changed);
  EXPECT_EQ(job.status, before);
  EXPECT_FALSE(Pass(&job, &pods, kT0 + seconds(20)).notice_finalizer);
  for (ReplicaObservation& r : pods) r.notice_done = true;
  Plan released = Pass(&job, &pods, kT0 + seconds(21));
  ASSERT_TRUE(released.notice_finalizer);
  EXPECT_FALSE(*released.notice_finalizer);

  // Without a notice policy any more, the finalizer goes at once.
  job.metadata["annotations"].erase(api::kNoticeSecondsAnnotation);
  for (ReplicaObservation& r : pods) r.notice_done = false;
  Plan dropped = Pass(&job, &pods, kT0 + seconds(22));
  ASSERT_TRUE(dropped.notice_finalizer);
  EXPECT_FALSE(*dropped.notice_finalizer);
  // Others' finalizers are kept.
  job.metadata["finalizers"] = nlohmann::json::array({"a", api::kNoticeFinalizer, "b"});
  EXPECT_EQ(api::FinalizersWithNotice(job.metadata, false), nlohmann::json::array({"a", "b"}));
}

TEST(CheckpointNotice, AnAnnouncedGangRestartGoesAheadWhenTheFailedPodIsGoneMeanwhile) {
  api::Job job = NoticeJob();
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Gang";
  std::vector<ReplicaObservation> pods = Running(&job);
  pods[2] = Pod("Worker", 1, Phase::kFailed, 1);
  Pass(&job, &pods, kT0 + seconds(5));
  pods.pop_back();  // its pod deleted while the notice runs
  Plan held = Pass(&job, &pods, kT0 + seconds(10));
  EXPECT_TRUE(held.create.empty()) << "nothing refills the slot of an announced restart";
  EXPECT_FALSE(held.restart_attempt);
  EXPECT_FALSE(held.notice_record);
  Plan restart = Pass(&job, &pods, kT0 + seconds(35));
  ASSERT_TRUE(restart.restart_attempt);
  EXPECT_EQ(*restart.restart_attempt, 1);
  EXPECT_EQ(restart.remove.size(), 2u);
}

TEST(CheckpointNotice, NoStopIsAnnouncedAfterTheDeadlineOrAStopAlreadyTold) {
  api::Job job = NoticeJob("{activeDeadlineSeconds: 100}");
  job.metadata["annotations"][api::kRestartScopeAnnotation] = "Gang";
  std::vector<ReplicaObservation> pods = Running(&job);
  Pass(&job, &pods, kT0 + seconds(80));  // the deadline's notice: stop at 100
  pods[2] = Pod("Worker", 1, Phase::kFailed, 1);
  Plan gang = Pass(&job, &pods, kT0 + seconds(85));
  ASSERT_TRUE(gang.notice_record);
  std::optional<api::Notice> notice = api::DecodeNotice(*gang.notice_record);
  EXPECT_EQ(notice->reason, "GangRestart");
  EXPECT_EQ(notice->stop_at, kT0 + seconds(100)) << "not 85 + 30: the deadline never moves";
  EXPECT_FALSE(Pass(&job, &pods, kT0 + seconds(90)).notice_record) << "no flip-flop";
  Pass(&job, &pods, kT0 + seconds(100));
  EXPECT_TRUE(HasCondition(job.status, kFailed));
}

TEST(CheckpointNotice, ARecordedStopAtBeyondThePolicyIsIgnored) {
  api::Job job = NoticeJob();
  std::vector<ReplicaObservation> pods = Running(&job);
  job.run_policy.suspend = true;
  job.metadata["annotations"][api::kNoticeAnnotation] =
      R"({"reason":"Suspended","stopAt":"9999-12-31T00:00:00Z","attempt":0,"seconds":30})";
  Plan p = Pass(&job, &pods, kT0 + seconds(10));
  ASSERT_TRUE(p.notice_record);
  EXPECT_EQ(api::DecodeNotice(*p.notice_record)->stop_at, kT0 + seconds(40));
  EXPECT_EQ(Pass(&job, &pods, kT0 + seconds(40)).remove.size(), 3u);
}

TEST(CheckpointNotice, ADeadlineNoticeForAnotherDeadlineIsTakenBack) {
  api::Job job = NoticeJob("{activeDeadlineSeconds: 100}");
  std::vector<ReplicaObservation> pods = Running(&job);
  Pass(&job, &pods, kT0 + seconds(75));
  ASSERT_FALSE(api::RecordedNoticeText(job).empty());
  job.run_policy.active_deadline_seconds = 1000;  // raised
  Plan p = Pass(&job, &pods, kT0 + seconds(80));
  ASSERT_TRUE(p.notice_record);
  EXPECT_EQ(*p.notice_record, "");
  EXPECT_EQ(p.notify.size(), 3u);
  for (const ReplicaObservation& r : pods) EXPECT_EQ(r.notice, "");
}

TEST(CheckpointNotice, AnnotationsAreValidatedWithTheirFieldPath) {
  struct Case {
    std::string seconds, signal, error;
  };
  const Case cases[] = {
      {"0", "",
       "metadata.annotations[trainctl.dev/checkpoint-notice-seconds]: Invalid value: \"0\": "
       "expected a whole number of seconds from 1 to 86400"},
      {"12s", "", "expected a whole number of seconds from 1 to 86400"},
      {" 30", "", "expected a whole number of seconds from 1 to 86400"},
      {"30 ", "", "expected a whole number of seconds from 1 to 86400"},
      {"+30", "", "expected a whole number of seconds from 1 to 86400"},
      {"99999999999999999999", "", "expected a whole number of seconds from 1 to 86400"},
      {"86401", "", "expected a whole number of seconds from 1 to 86400"},
      {"30", "SIGKILL",
       "metadata.annotations[trainctl.dev/checkpoint-signal]: Unsupported value: \"SIGKILL\": "
       "supported values: \"SIGUSR1\", \"SIGUSR2\", \"SIGHUP\", \"SIGINT\""},
      {"", "SIGUSR1",
       "metadata.annotations[trainctl.dev/checkpoint-notice-seconds]: Required value: a "
       "checkpoint signal needs the notice's length in seconds"},
  };
  for (const Case& c : cases) {
    api::Job job = NoticeJob("", c.seconds);
    if (!c.signal.empty()) job.metadata["annotations"][api::kNoticeSignalAnnotation] = c.signal;
    api::ValidationResult result = api::ValidateJob(job);
    ASSERT_EQ(result.errors.size(), 1u) << c.seconds << " " << c.signal;
    EXPECT_NE(result.errors[0].ToString().find(c.error), std::string::npos)
        << result.errors[0].ToString();
  }
  api::Job good = NoticeJob("", "30");
  good.metadata["annotations"][api::kNoticeSignalAnnotation] = "SIGUSR1";
  EXPECT_TRUE(api::ValidateJob(good).errors.empty());
  std::optional<api::NoticePolicy> policy = api::NoticePolicyOf(good);
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->seconds, 30);
  EXPECT_EQ(policy->signal_name, "SIGUSR1");
}

TEST(CheckpointNotice, EncodedNoticesRoundTripAndGarbageIsNone) {
  api::Notice n{"Suspended", kT0 + seconds(30), 2, 30};
  EXPECT_EQ(api::DecodeNotice(api::EncodeNotice(n)), n);
  for (const char* bad : {"", "{", "[]", "{\"reason\":\"x\"}", "{\"reason\":1,\"stopAt\":\"x\"}",
                          "{\"reason\":\"x\",\"stopAt\":\"yesterday\"}"})
    EXPECT_FALSE(api::DecodeNotice(bad)) << bad;
}

}  // namespace
}  // namespace trainctl::engine
