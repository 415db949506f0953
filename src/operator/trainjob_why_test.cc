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

TEST(TrainJobWhyTest, ANewMessageUnderTheSameReasonWaitsForTheRefresh) {
  api::Job job = TwoNodes();
  TrainJobWhy first = DecideTrainJobWhy(nullptr, nullptr, job, {}, false, kNow, std::nullopt);
  ASSERT_TRUE(first.message_written);
  EXPECT_EQ(first.status["conditions"][0]["reason"], "Starting");
  const json before = first.status;
  // One node runs 2 s later: same reason, another message: not yet written.
  TrainJobWhy soon = DecideTrainJobWhy(before, before, job, {Node(0, engine::Phase::kRunning)},
                                       false, kNow + Duration(2000), kNow);
  EXPECT_FALSE(soon.message_written);
  EXPECT_EQ(soon.status, before);
  ASSERT_TRUE(soon.refresh_after);
  EXPECT_EQ(*soon.refresh_after, engine::kReadinessRefresh - Duration(2000));
  TrainJobWhy later = DecideTrainJobWhy(before, before, job, {Node(0, engine::Phase::kRunning)},
                                        false, kNow + engine::kReadinessRefresh, kNow);
  EXPECT_TRUE(later.message_written);
  EXPECT_NE(later.status["conditions"][0]["message"], before["conditions"][0]["message"]);
  EXPECT_EQ(later.status["conditions"][0]["lastTransitionTime"],
            before["conditions"][0]["lastTransitionTime"])
      << "the status did not change";
}

TEST(TrainJobWhyTest, SuspendedThenCompleteHasNoReadiness) {
  api::Job job = TwoNodes();
  TrainJobWhy suspended = DecideTrainJobWhy(nullptr, nullptr, job, {}, true, kNow, std::nullopt);
  EXPECT_EQ(suspended.status["conditions"][0]["reason"], "Suspended");
  EXPECT_TRUE(suspended.events.empty()) << "suspension has its own event";
  json done = suspended.status;
  done["conditions"].push_back({{"type", "Complete"}, {"status", "True"}, {"reason", "Completed"},
                                {"message", "jobset completed successfully"}});
  TrainJobWhy complete = DecideTrainJobWhy(suspended.status, done, job, {}, false, kNow, kNow);
  ASSERT_EQ(complete.status["conditions"].size(), 1u);
  EXPECT_EQ(complete.status["conditions"][0]["type"], "Complete");
}

}  // namespace
}  // namespace trainctl::op::trainjob_why_test
