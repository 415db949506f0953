// Unit tests of event correlation: dedupe into count patches, aggregation of similar events,
// the per-object spam filter, bounded memory.
#include "kube/event_correlator.h"

#include <gtest/gtest.h>

namespace trainctl::kube {
namespace {

const Time kT0 = Time(std::chrono::seconds(1'800'000'000));

EventInput Input(const std::string& name, const std::string& reason, const std::string& message) {
  return {{"kubeflow.org/v1", "PyTorchJob", "ns", name, "uid-" + name}, "Normal", reason, message};
}

TEST(EventCorrelatorTest, IdenticalEventsBecomeCountPatches) {
  EventCorrelator c({});
  EventWrite first = c.Correlate(Input("j", "SuccessfulCreatePod", "Created pod: j-0"), kT0);
  ASSERT_EQ(first.kind, EventWrite::Kind::kCreate);
  EXPECT_EQ(first.event["involvedObject"]["kind"], "PyTorchJob");
  EXPECT_EQ(first.event["count"], 1);
  EXPECT_EQ(first.event["source"]["component"], "trainctl-operator");
  EXPECT_EQ(first.name.rfind("j.", 0), 0u);
  EventWrite second =
      c.Correlate(Input("j", "SuccessfulCreatePod", "Created pod: j-0"), kT0 + Duration(5000));
  ASSERT_EQ(second.kind, EventWrite::Kind::kPatch);
  EXPECT_EQ(second.name, first.name);
  EXPECT_EQ(second.event["count"], 2);
  EXPECT_EQ(second.event["lastTimestamp"], "2027-01-15T08:00:05Z");
  // Another message is another Event.
  EXPECT_EQ(c.Correlate(Input("j", "SuccessfulCreatePod", "Created pod: j-1"), kT0).kind,
            EventWrite::Kind::kCreate);
}

TEST(EventCorrelatorTest, ManySimilarMessagesAreCombined) {
  EventCorrelator c({});
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(c.Correlate(Input("j", "Exited", "pod " + std::to_string(i)), kT0).kind,
              EventWrite::Kind::kCreate);
  EventWrite combined = c.Correlate(Input("j", "Exited", "pod 10"), kT0);
  ASSERT_EQ(combined.kind, EventWrite::Kind::kCreate);
  EXPECT_EQ(combined.event["message"], "(combined from similar events): pod 10");
  EventWrite more = c.Correlate(Input("j", "Exited", "pod 11"), kT0);
  ASSERT_EQ(more.kind, EventWrite::Kind::kPatch);
  EXPECT_EQ(more.name, combined.name);
  EXPECT_EQ(more.event["message"], "(combined from similar events): pod 11");
}

TEST(EventCorrelatorTest, SpamFilterPerObject) {
  CorrelatorOptions o;
  o.spam_burst = 3;
  o.spam_refill = Duration(10000);
  EventCorrelator c(o);
  for (int i = 0; i < 3; ++i)
    EXPECT_NE(c.Correlate(Input("j", "R", "m"), kT0).kind, EventWrite::Kind::kRefused);
  const ObjectReference j = Input("j", "R", "m").object;
  EXPECT_EQ(c.SpamWait(j, kT0), Duration(10000));  // asking takes nothing
  EXPECT_EQ(c.SpamWait(j, kT0), Duration(10000));
  EXPECT_EQ(c.SpamWait(Input("new", "R", "m").object, kT0), Duration(0));
  EventWrite refused = c.Correlate(Input("j", "R", "m"), kT0);
  EXPECT_EQ(refused.kind, EventWrite::Kind::kRefused);
  EXPECT_EQ(refused.wait, Duration(10000));  // one token per 10 s, none left
  EXPECT_EQ(c.SpamWait(j, kT0 - Duration(60000)), Duration(10000));  // a clock stepped back
  EXPECT_EQ(c.Correlate(Input("j", "R", "m"), kT0 + Duration(2500)).wait, Duration(7500));
  EXPECT_NE(c.Correlate(Input("other", "R", "m"), kT0).kind, EventWrite::Kind::kRefused);
  // Without the filter (a recorder's last writes at shutdown) nothing is refused, and no token
  // is taken.
  EXPECT_NE(c.Correlate(Input("j", "R", "m"), kT0 + Duration(2500), false).kind,
            EventWrite::Kind::kRefused);
  EXPECT_NE(c.Correlate(Input("j", "R", "m"), kT0 + Duration(10000)).kind,
            EventWrite::Kind::kRefused);
}

TEST(EventCorrelatorTest, ForgottenEventIsCreatedAgain) {
  EventCorrelator c({});
  EventWrite first = c.Correlate(Input("j", "R", "m"), kT0);
  c.Forget(first.name);
  EXPECT_EQ(c.Correlate(Input("j", "R", "m"), kT0).kind, EventWrite::Kind::kCreate);
}

TEST(EventCorrelatorTest, MemoryIsBounded) {
  CorrelatorOptions o;
  o.max_entries = 8;
  EventCorrelator c(o);
  for (int i = 0; i < 100; ++i) c.Correlate(Input("j" + std::to_string(i), "R", "m"), kT0);
  // The first object was forgotten: its next event is a create again, not a patch.
  EXPECT_EQ(c.Correlate(Input("j0", "R", "m"), kT0).kind, EventWrite::Kind::kCreate);
}

}  // namespace
}  // namespace trainctl::kube
