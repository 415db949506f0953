// DecideTrainJobNotice: a suspend held for the notice until every pod is done or stopAt, the
// deadline's notice, a deletion's finalizer, a resume taking the notice back, and nothing for a
// TrainJob without a policy.
#include "operator/trainjob_notice.h"

#include <gtest/gtest.h>

#include "api/checkpoint_notice.h"

namespace trainctl::op::trainjob_notice_test {
namespace {

using nlohmann::json;

const Time kNow{std::chrono::seconds(1700000000)};

api::Job TwoNodes(int notice_seconds, bool suspend = false) {
  api::Job job;
  job.kind = api::Kind::kTrainJob;
  job.name = "tj";
  job.namespace_ = "ns";
  job.replica_specs["node"].replicas = 2;
  job.metadata = {{"name", "tj"}, {"namespace", "ns"}};
  if (notice_seconds)
    job.metadata["annotations"] = {{api::kNoticeSecondsAnnotation, std::to_string(notice_seconds)}};
  job.run_policy.suspend = suspend;
  return job;
}

engine::ReplicaObservation Running(int index, const std::string& notice = "", bool done = false) {
  engine::ReplicaObservation o;
  o.name = "tj-node-0-" + std::to_string(index) + "-abcde";
  o.type = "node";
  o.index = index;
  o.phase = engine::Phase::kRunning;
  o.notice = notice;
  o.notice_done = done;
  return o;
}

void Recorded(api::Job* job, const std::string& text) {
  job->metadata["annotations"][api::kNoticeAnnotation] = text;
  job->metadata["finalizers"] = json::array({api::kNoticeFinalizer});
}

TEST(TrainJobNoticeTest, WithoutAPolicyNothingIsHeldOrWritten) {
  api::Job job = TwoNodes(0, /*suspend=*/true);
  TrainJobNotice n =
      DecideTrainJobNotice(job, true, {Running(0), Running(1)}, std::nullopt, false, kNow);
  EXPECT_FALSE(n.hold_suspend);
  EXPECT_FALSE(n.plan.notice_record);
  EXPECT_FALSE(n.plan.notice_finalizer);
  EXPECT_TRUE(n.plan.notify.empty());
}

TEST(TrainJobNoticeTest, APolicyCarriesTheFinalizer) {
  TrainJobNotice n =
      DecideTrainJobNotice(TwoNodes(30), true, {Running(0)}, std::nullopt, false, kNow);
  ASSERT_TRUE(n.plan.notice_finalizer);
  EXPECT_TRUE(*n.plan.notice_finalizer);
  EXPECT_FALSE(n.hold_suspend);
  EXPECT_FALSE(n.plan.notice_record) << "no stop, no notice";
}

TEST(TrainJobNoticeTest, ASuspendIsHeldUntilEveryPodIsDone) {
  api::Job job = TwoNodes(30, /*suspend=*/true);
  TrainJobNotice first =
      DecideTrainJobNotice(job, true, {Running(0), Running(1)}, std::nullopt, false, kNow);
  EXPECT_TRUE(first.hold_suspend);
  ASSERT_TRUE(first.plan.notice_record);
  std::optional<api::Notice> notice = api::DecodeNotice(*first.plan.notice_record);
  ASSERT_TRUE(notice);
  EXPECT_EQ(notice->reason, api::kNoticeForSuspend);
  EXPECT_EQ(notice->stop_at, kNow + std::chrono::seconds(30));
  EXPECT_EQ(first.plan.notify.size(), 2u) << "both pods are told";
  EXPECT_EQ(first.plan.notify[0].name, "tj-node-0-0-abcde");
  ASSERT_TRUE(first.plan.requeue_after);
  EXPECT_EQ(*first.plan.requeue_after, std::chrono::seconds(30));
  ASSERT_FALSE(first.plan.events.empty());
  EXPECT_EQ(first.plan.events[0].reason, "CheckpointNotice");

  const std::string text = *first.plan.notice_record;
  Recorded(&job, text);
  const Time later = kNow + std::chrono::seconds(5);
  TrainJobNotice one_done = DecideTrainJobNotice(
      job, true, {Running(0, text, true), Running(1, text)}, std::nullopt, false, later);
  EXPECT_TRUE(one_done.hold_suspend);
  EXPECT_FALSE(one_done.plan.notice_record) << "the same notice, not recorded again";
  EXPECT_TRUE(one_done.plan.notify.empty()) << "both were told";
  TrainJobNotice all_done = DecideTrainJobNotice(
      job, true, {Running(0, text, true), Running(1, text, true)}, std::nullopt, false, later);
  EXPECT_FALSE(all_done.hold_suspend);
}

TEST(TrainJobNoticeTest, ASuspendGoesAheadAtStopAt) {
  api::Job job = TwoNodes(30, /*suspend=*/true);
  std::string text =
      api::EncodeNotice({api::kNoticeForSuspend, kNow + std::chrono::seconds(30), 0, 30});
  Recorded(&job, text);
  TrainJobNotice before =
      DecideTrainJobNotice(job, true, {Running(0, text), Running(1, text)}, std::nullopt, false,
                           kNow + std::chrono::seconds(29));
  EXPECT_TRUE(before.hold_suspend);
  TrainJobNotice at = DecideTrainJobNotice(job, true, {Running(0, text), Running(1, text)},
                                           std::nullopt, false, kNow + std::chrono::seconds(30));
  EXPECT_FALSE(at.hold_suspend);
}

TEST(TrainJobNoticeTest, ASuspendWithNoPodRunningOrAJobSetSuspendedHoldsNothing) {
  api::Job job = TwoNodes(30, /*suspend=*/true);
  engine::ReplicaObservation pending = Running(0);
  pending.phase = engine::Phase::kPending;
  EXPECT_FALSE(DecideTrainJobNotice(job, true, {pending}, std::nullopt, false, kNow).hold_suspend);
  TrainJobNotice stopped =
      DecideTrainJobNotice(job, /*jobset_running=*/false, {Running(0)}, std::nullopt, false, kNow);
  EXPECT_FALSE(stopped.hold_suspend);
  EXPECT_FALSE(stopped.plan.notice_record);
}

TEST(TrainJobNoticeTest, AResumeTakesTheSuspendNoticeBack) {
  api::Job job = TwoNodes(30, /*suspend=*/false);
  Recorded(&job, api::EncodeNotice({api::kNoticeForSuspend, kNow, 0, 30}));
  TrainJobNotice n = DecideTrainJobNotice(job, true, {}, std::nullopt, false, kNow);
  ASSERT_TRUE(n.plan.notice_record);
  EXPECT_EQ(*n.plan.notice_record, "");
}

TEST(TrainJobNoticeTest, TheDeadlineIsAnnouncedItsSecondsBeforeAndNeverMoves) {
  api::Job job = TwoNodes(30);
  job.run_policy.active_deadline_seconds = 600;
  const Time deadline = kNow + std::chrono::seconds(100);
  TrainJobNotice early =
      DecideTrainJobNotice(job, true, {Running(0), Running(1)}, deadline, false, kNow);
  EXPECT_FALSE(early.plan.notice_record);
  ASSERT_TRUE(early.plan.requeue_after);
  EXPECT_EQ(*early.plan.requeue_after, std::chrono::seconds(70)) << "woken at deadline - 30 s";
  TrainJobNotice due = DecideTrainJobNotice(job, true, {Running(0), Running(1)}, deadline, false,
                                            kNow + std::chrono::seconds(75));
  ASSERT_TRUE(due.plan.notice_record);
  std::optional<api::Notice> notice = api::DecodeNotice(*due.plan.notice_record);
  ASSERT_TRUE(notice);
  EXPECT_EQ(notice->reason, api::kNoticeForDeadline);
  EXPECT_EQ(notice->stop_at, deadline);
  EXPECT_EQ(due.plan.notify.size(), 2u);
  EXPECT_FALSE(due.hold_suspend);
}

TEST(TrainJobNoticeTest, ADeletionHoldsTheFinalizerUntilThePodsAreDone) {
  api::Job job = TwoNodes(30);
  job.metadata["finalizers"] = json::array({api::kNoticeFinalizer});
  TrainJobNotice told =
      DecideTrainJobNotice(job, true, {Running(0), Running(1)}, std::nullopt, true, kNow);
  ASSERT_TRUE(told.plan.notice_record);
  EXPECT_EQ(api::DecodeNotice(*told.plan.notice_record)->reason, api::kNoticeForDelete);
  EXPECT_FALSE(told.plan.notice_finalizer) << "kept while the pods checkpoint";
  EXPECT_EQ(told.plan.notify.size(), 2u);
  Recorded(&job, *told.plan.notice_record);
  const std::string text = *told.plan.notice_record;
  TrainJobNotice done =
      DecideTrainJobNotice(job, true, {Running(0, text, true), Running(1, text, true)},
                           std::nullopt, true, kNow + std::chrono::seconds(3));
  ASSERT_TRUE(done.plan.notice_finalizer);
  EXPECT_FALSE(*done.plan.notice_finalizer) << "released";
  TrainJobNotice none = DecideTrainJobNotice(job, true, {}, std::nullopt, true, kNow);
  ASSERT_TRUE(none.plan.notice_finalizer);
  EXPECT_FALSE(*none.plan.notice_finalizer) << "no pod alive: nothing to wait for";
}

}  // namespace
}  // namespace trainctl::op::trainjob_notice_test
