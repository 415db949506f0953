// Unit tests of the events a recorder holds over its budget: folding by object, type and
// reason, the folded message, the bound on what waits, and what is put aside for the spam
// filter.
#include "kube/event_queue.h"

#include <gtest/gtest.h>

namespace trainctl::kube {
namespace {

const Time kT0 = Time(std::chrono::seconds(1'800'000'000));

EventInput Created(const std::string& job, const std::string& pod, Time at = kT0) {
  EventInput e{{"kubeflow.org/v1", "PyTorchJob", "ns", job, "uid-" + job},
               "Normal",
               "SuccessfulCreatePod",
               "Created pod: " + pod};
  e.first = at;
  return e;
}

TEST(FoldMessagesTest, SharedPrefixIsWrittenOnce) {
  EXPECT_EQ(FoldMessages({"Created pod: a-0"}, 1), "Created pod: a-0");
  EXPECT_EQ(FoldMessages({"Created pod: a-0", "Created pod: a-1", "Created pod: a-2"}, 3),
            "Created pod: a-0, a-1, a-2");
  EXPECT_EQ(FoldMessages({"job-0 exited with code 1", "job-1 exited with code 2"}, 2),
            "job-0 exited with code 1; job-1 exited with code 2");
  // Different prefixes are not merged into the first one's.
  EXPECT_EQ(FoldMessages({"Error pod a: x", "Other: y"}, 2), "Error pod a: x; Other: y");
}

TEST(FoldMessagesTest, TheLastItemNeedsNoRoomForACount) {
  // 13 + 3 × 10 bytes, 2 bytes of separator each: 49 fit in 49 when nothing is left to count.
  std::vector<std::string> three = {"Created pod: aaaaaaaaaa", "Created pod: bbbbbbbbbb",
                                    "Created pod: cccccccccc"};
  EXPECT_EQ(FoldMessages(three, 3, 47), "Created pod: aaaaaaaaaa, bbbbbbbbbb, cccccccccc");
  EXPECT_EQ(FoldMessages(three, 4, 47), "Created pod: aaaaaaaaaa and 3 more");
}

TEST(FoldMessagesTest, WhatDoesNotFitIsCounted) {
  std::vector<std::string> many;
  for (int i = 0; i < 200; ++i) many.push_back("Created pod: job-worker-" + std::to_string(i));
  std::string folded = FoldMessages(many, 2000, 256);
  EXPECT_LE(folded.size(), 256u);
  EXPECT_EQ(folded.rfind("Created pod: job-worker-0, job-worker-1, ", 0), 0u);
  size_t kept = std::count(folded.begin(), folded.end(), ',') + 1;
  EXPECT_NE(folded.find(" and " + std::to_string(2000 - kept) + " more"), std::string::npos)
      << folded;
}

TEST(EventQueueTest, UnderBudgetEveryEventIsItsOwn) {
  EventQueue q;
  for (int i = 0; i < 3; ++i) q.Push(Created("j", "j-" + std::to_string(i)), /*fold=*/false);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Pop()->message, "Created pod: j-0");
  EXPECT_EQ(q.folded(), 0);
}

TEST(EventQueueTest, OverBudgetTheSameObjectAndReasonFoldInArrivalOrder) {
  EventQueue q;
  q.Push(Created("a", "a-0", kT0 + Duration(1000)), true);
  q.Push(Created("b", "b-0"), true);
  q.Push(Created("a", "a-1", kT0), true);
  q.Push(Created("a", "a-1"), true);  // a repeat: counted, its message once
  EventInput warning = Created("a", "a-2");
  warning.type = "Warning";
  q.Push(warning, true);  // another type: its own Event
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q.folded(), 2);
  std::optional<EventInput> a = q.Pop();
  EXPECT_EQ(a->object.name, "a");
  EXPECT_EQ(a->message, "Created pod: a-0, a-1");
  EXPECT_EQ(a->count, 3);
  EXPECT_EQ(a->first, kT0);  // the earliest of those folded
  EXPECT_EQ(q.Pop()->object.name, "b");
  EXPECT_EQ(q.Pop()->type, "Warning");
  EXPECT_FALSE(q.Pop().has_value());
  // Once popped, a new event of the same key waits on its own.
  q.Push(Created("a", "a-3"), true);
  EXPECT_EQ(q.Pop()->message, "Created pod: a-3");
}

TEST(EventQueueTest, APopAfterAWaitAbsorbsWhatQueuedBehindIt) {
  EventQueue q;
  for (int i = 0; i < 3; ++i) {  // queued under the budget: each on its own
    q.Push(Created("a", "a-" + std::to_string(i)), false);
    q.Push(Created("b", "b-" + std::to_string(i)), false);
  }
  std::optional<EventInput> a = q.Pop(/*absorb=*/true);
  EXPECT_EQ(a->message, "Created pod: a-0, a-1, a-2");
  EXPECT_EQ(a->count, 3);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.folded(), 2);
  EXPECT_EQ(q.Pop()->message, "Created pod: b-0");  // without absorbing: as queued
  // The key's index still points at b-2, the newest: a later fold lands there.
  q.Push(Created("b", "b-3"), true);
  EXPECT_EQ(q.Pop()->message, "Created pod: b-1");
  std::optional<EventInput> last = q.Pop();
  EXPECT_EQ(last->message, "Created pod: b-2, b-3");
  EXPECT_TRUE(q.empty());
  // After an absorbing pop, nothing of the key is indexed: a new event waits on its own.
  q.Push(Created("a", "a-9"), true);
  EXPECT_EQ(q.size(), 1u);
}

TEST(EventQueueTest, WhatWaitsIsBoundedOldestDroppedFirst) {
  EventQueue q(2);
  EXPECT_EQ(q.Push(Created("a", "a-0"), false), 0);
  EXPECT_EQ(q.Push(Created("b", "b-0"), false), 0);
  EXPECT_EQ(q.Push(Created("b", "b-1"), true), 0);  // folded: b carries 2
  EXPECT_EQ(q.Push(Created("c", "c-0"), true), 1);  // "a" dropped, 1 occurrence
  EXPECT_EQ(q.size(), 2u);
  // "a" was dropped: a later "a" event is not folded into anything; "b" goes with its 2.
  EXPECT_EQ(q.Push(Created("a", "a-1"), true), 2);
  EXPECT_EQ(q.Pop()->object.name, "c");
  EXPECT_EQ(q.Pop()->message, "Created pod: a-1");
}

TEST(EventQueueTest, WhatIsPutAsideFoldsKeepsEveryNameAndComesBackWhenDue) {
  const MonoTime m0 = MonoTime(std::chrono::seconds(100));
  EventQueue q;
  EXPECT_EQ(q.DeferFront(m0), 0);  // nothing waits
  for (int i = 0; i < 3; ++i) q.Push(Created("a", "a-" + std::to_string(i)), false);
  q.Push(Created("b", "b-0"), false);
  // The spam filter refuses "a" three times: one entry aside, carrying all three.
  EXPECT_EQ(q.DeferFront(m0 + std::chrono::seconds(5)), 1);
  EXPECT_EQ(q.DeferFront(m0 + std::chrono::seconds(4)), 1);
  EXPECT_EQ(q.DeferFront(m0 + std::chrono::seconds(6)), 1);
  EXPECT_EQ(q.size(), 1u);  // "b" alone waits
  EXPECT_EQ(q.deferred(), 1u);
  ASSERT_NE(q.Front(), nullptr);
  EXPECT_EQ(q.Front()->object.name, "b");
  EXPECT_EQ(q.ReleaseDue(m0 + std::chrono::seconds(5)), m0 + std::chrono::seconds(6));
  EXPECT_EQ(q.size(), 1u);  // not due: the latest time asked for
  // A newer "a" waits meanwhile; the one aside comes back into its place, its names first.
  q.Push(Created("a", "a-3"), false);
  EXPECT_EQ(q.ReleaseDue(m0 + std::chrono::seconds(6)), std::nullopt);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.deferred(), 0u);
  EXPECT_EQ(q.Pop()->object.name, "b");
  std::optional<EventInput> a = q.Pop();
  EXPECT_EQ(a->message, "Created pod: a-0, a-1, a-2, a-3");
  EXPECT_EQ(a->count, 4);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.Front(), nullptr);

  // Folded once already (over the budget), put aside and back: the names survive both moves.
  for (int i = 0; i < 30; ++i) q.Push(Created("c", "c-" + std::to_string(i)), true);
  q.DeferFront(m0);
  q.ReleaseDue(m0);
  std::optional<EventInput> c = q.Pop();
  EXPECT_EQ(c->count, 30);
  EXPECT_EQ(c->message.rfind("Created pod: c-0, c-1, c-2,", 0), 0u) << c->message;
  EXPECT_NE(c->message.find("c-29"), std::string::npos) << c->message;
}

TEST(EventQueueTest, WhatIsAsideCountsAgainstTheBound) {
  EventQueue q(2);
  q.Push(Created("a", "a-0"), false);
  q.DeferFront(MonoTime(std::chrono::seconds(9)));
  q.Push(Created("b", "b-0"), false);
  EXPECT_EQ(q.Push(Created("c", "c-0"), false), 1);  // full: the oldest waiting ("b") goes
  EXPECT_EQ(q.Pop()->object.name, "c");
  EXPECT_EQ(q.Push(Created("d", "d-0"), false), 0);
  EXPECT_EQ(q.Push(Created("e", "e-0"), false), 1);  // "d" goes
  q.Pop();
  q.Push(Created("f", "f-0"), false);
  q.DeferFront(MonoTime(std::chrono::seconds(9)));   // "f" aside too: two aside, none waiting
  EXPECT_EQ(q.Push(Created("g", "g-0"), false), 1);  // nothing waits: the oldest aside goes
  EXPECT_EQ(q.deferred(), 1u);
  q.ReleaseDue(MonoTime(std::chrono::seconds(9)));
  EXPECT_EQ(q.Pop()->object.name, "g");
  EXPECT_EQ(q.Pop()->object.name, "f");
}

}  // namespace
}  // namespace trainctl::kube
