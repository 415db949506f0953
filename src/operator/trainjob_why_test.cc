// DecideTrainJobWhy: ReplicasReady's message spacing under one reason, a suspended TrainJob,
// and no readiness once it is Complete.
#include "operator/trainjob_why.h"

#include <gtest/gtest.h>

#include "engine/diagnosis.h"

namespace trainctl::op::trainjob_why_test {
namespace {

using nlohmann::json;

api::Job TwoNodes() {
  api::Job job;
  job.kind = api::Kind::kTrainJob;
  job.name = "tj";
  job.replica_specs["node"].replicas = 2;
  return job;
}

engine::ReplicaObservation Node(int index, engine::Phase phase) {
  engine::ReplicaObservation o;
  o.name = "tj-node-0-" + std::to_string(index);
  o.type = "node";
  o.index = index;
  o.phase = phase;
  return o;
}

const Time kNow{std::chrono::seconds(1700000000)};

engine::ReplicaObservation Unschedulable(int index) {
  engine::ReplicaObservation o = Node(index, engine::Phase::kPending);
  o.waiting_reason = "Unschedulable";
  o.waiting_message = "0/3 nodes are available: 3 Insufficient cpu.";
  return o;
}

TEST(TrainJobWhyTest, NothingToTellIsNoCondition) {
  api::Job job = TwoNodes();
  TrainJobWhy starting = DecideTrainJobWhy(nullptr, nullptr, job, {}, false, kNow, std::nullopt);
  EXPECT_FALSE(starting.status.contains("conditions") && !starting.status["conditions"].empty())
      << starting.status.dump();
  TrainJobWhy running = DecideTrainJobWhy(
      nullptr, nullptr, job, {Node(0, engine::Phase::kRunning), Node(1, engine::Phase::kRunning)},
      false, kNow, std::nullopt);
  EXPECT_FALSE(running.status.contains("conditions") && !running.status["conditions"].empty());
  EXPECT_TRUE(running.events.empty()) << "the first all-running is quiet";
}

TEST(TrainJobWhyTest, ANewMessageUnderTheSameReasonWaitsForTheRefresh) {
  api::Job job = TwoNodes();
  TrainJobWhy first =
      DecideTrainJobWhy(nullptr, nullptr, job, {Unschedulable(0)}, false, kNow, std::nullopt);
  ASSERT_TRUE(first.message_written);
  EXPECT_EQ(first.status["conditions"][0]["reason"], "Unschedulable");
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].type, "Warning");
  const json before = first.status;
  // Both nodes are unschedulable 2 s later: same reason, another message: not yet written.
  TrainJobWhy soon = DecideTrainJobWhy(before, before, job, {Unschedulable(0), Unschedulable(1)},
                                       false, kNow + Duration(2000), kNow);
  EXPECT_FALSE(soon.message_written);
  EXPECT_EQ(soon.status, before);
  ASSERT_TRUE(soon.refresh_after);
  EXPECT_EQ(*soon.refresh_after, engine::kReadinessRefresh - Duration(2000));
  TrainJobWhy later = DecideTrainJobWhy(before, before, job, {Unschedulable(0), Unschedulable(1)},
                                        false, kNow + engine::kReadinessRefresh, kNow);
  EXPECT_TRUE(later.message_written);
  EXPECT_NE(later.status["conditions"][0]["message"], before["conditions"][0]["message"]);
  EXPECT_EQ(later.status["conditions"][0]["lastTransitionTime"],
            before["conditions"][0]["lastTransitionTime"])
      << "the status did not change";
}

TEST(TrainJobWhyTest, AFinishedJobHasNoReadiness) {
  api::Job job = TwoNodes();
  TrainJobWhy stuck =
      DecideTrainJobWhy(nullptr, nullptr, job, {Unschedulable(0)}, false, kNow, std::nullopt);
  json done = stuck.status;
  done["conditions"].push_back({{"type", "Complete"},
                                {"status", "True"},
                                {"reason", "Completed"},
                                {"message", "jobset completed successfully"}});
  TrainJobWhy complete = DecideTrainJobWhy(stuck.status, done, job, {}, false, kNow, kNow);
  ASSERT_EQ(complete.status["conditions"].size(), 1u);
  EXPECT_EQ(complete.status["conditions"][0]["type"], "Complete");
}

TEST(TrainJobWhyTest, WaitingForKueueIsTold) {
  api::Job job = TwoNodes();
  job.metadata = {{"labels", {{"kueue.x-k8s.io/queue-name", "team-a"}}}};
  TrainJobWhy queued = DecideTrainJobWhy(nullptr, nullptr, job, {}, true, kNow, std::nullopt);
  ASSERT_TRUE(queued.status["conditions"].is_array());
  EXPECT_EQ(queued.status["conditions"][0]["reason"], "WaitingForAdmission");
}

}  // namespace
}  // namespace trainctl::op::trainjob_why_test
