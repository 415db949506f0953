// Unit tests of WorkQueue: de-duplication, one worker per key, delayed keys on a fake clock,
// rate-limited back-off.
#include "kube/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace trainctl::kube {
namespace {

Time T0() { return Time(std::chrono::seconds(1700000000)); }

TEST(WorkQueue, DeduplicatesAndNeverHandsOutAKeyTwice) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(q.stats().depth, 2u);
  auto first = q.Get();
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, "a");
  q.Add("a");  // while processing: queued again only after Done
  auto second = q.Get();
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, "b");
  EXPECT_EQ(q.stats().depth, 0u);
  q.Done("a");
  EXPECT_EQ(q.stats().depth, 1u);
  q.Done("b");
  auto third = q.Get();
  ASSERT_TRUE(third);
  EXPECT_EQ(*third, "a");
}

TEST(WorkQueue, DelayedKeysWaitForTheClock) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.AddAfter("later", Duration(10000));
  q.AddAfter("later", Duration(20000));  // the earlier wake-up wins
  EXPECT_EQ(q.stats().delayed, 1u);
  EXPECT_EQ(q.stats().depth, 0u);
  std::thread advance([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    clock.Advance(Duration(10000));
    q.Poke();
  });
  auto key = q.Get();
  advance.join();
  ASSERT_TRUE(key);
  EXPECT_EQ(*key, "later");
}

TEST(WorkQueue, RateLimitedBackoffDoublesAndForgetResets) {
  FakeClock clock(T0());
  WorkQueue q(&clock, {Duration(100), Duration(350)});
  q.AddRateLimited("k");  // 100 ms
  EXPECT_EQ(q.NumRequeues("k"), 1);
  clock.Advance(Duration(99));
  q.Poke();
  EXPECT_EQ(q.stats().delayed, 1u);
  clock.Advance(Duration(1));
  auto k = q.Get();
  ASSERT_TRUE(k);
  q.Done("k");
  q.AddRateLimited("k");  // 200 ms
  q.AddRateLimited("k");  // 400 → capped at 350, but the 200 ms wake-up is earlier
  clock.Advance(Duration(199));
  q.Poke();
  EXPECT_EQ(q.stats().depth, 0u);
  q.Forget("k");
  EXPECT_EQ(q.NumRequeues("k"), 0);
}

// Takes the next key and marks it done.
std::string Next(WorkQueue& q) {
  std::optional<std::string> key = q.Get();
  if (!key) return "";
  q.Done(*key);
  return *key;
}

TEST(WorkQueue, UrgentKeysAreServedFirstInTheirOwnOrder) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("b");
  q.AddUrgent("x");
  q.AddUrgent("y");
  q.Add("c");
  EXPECT_EQ(q.stats().depth, 5u);
  EXPECT_EQ(Next(q), "x");
  EXPECT_EQ(Next(q), "y");
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "b");
  EXPECT_EQ(Next(q), "c");
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueue, AnUrgentAddMovesAQueuedKeyAheadOnce) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("b");
  q.Add("c");
  q.AddUrgent("c");
  q.AddUrgent("c");
  q.Add("c");  // an ordinary add leaves it urgent
  EXPECT_EQ(q.stats().depth, 3u);
  EXPECT_EQ(Next(q), "c");
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "b");
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueue, AKeyMadeUrgentWhileProcessedIsQueuedUrgentlyByDone) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("busy");
  std::optional<std::string> busy = q.Get();
  ASSERT_TRUE(busy);
  q.Add("a");
  q.AddUrgent("busy");  // not handed out twice while processed
  EXPECT_EQ(q.stats().depth, 1u);
  q.Done("busy");
  EXPECT_EQ(Next(q), "busy");
  EXPECT_EQ(Next(q), "a");
  // Queued again (ordinary) while processed, then made urgent: still once, urgent.
  q.Add("busy");
  busy = q.Get();
  q.Add("b");
  q.Add("busy");
  q.AddUrgent("busy");
  q.Done("busy");
  EXPECT_EQ(Next(q), "busy");
  EXPECT_EQ(Next(q), "b");
  EXPECT_EQ(q.stats().depth, 0u);
}

TEST(WorkQueue, UrgentKeysCannotStarveOrdinaryOnes) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("routine");
  for (int i = 0; i < 2 * kUrgentStreak; ++i) q.AddUrgent("u" + std::to_string(i));
  for (int i = 0; i < kUrgentStreak; ++i) EXPECT_EQ(Next(q), "u" + std::to_string(i));
  EXPECT_EQ(Next(q), "routine");
  EXPECT_EQ(Next(q), "u" + std::to_string(kUrgentStreak));
}

TEST(WorkQueue, TheStreakCountsOnlyWhileOrdinaryKeysWait) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  for (int i = 0; i < 2 * kUrgentStreak; ++i) q.AddUrgent("u" + std::to_string(i));
  for (int i = 0; i < kUrgentStreak; ++i) EXPECT_EQ(Next(q), "u" + std::to_string(i));
  q.Add("routine");  // nothing was waiting until now: the urgent lane still goes first
  EXPECT_EQ(Next(q), "u" + std::to_string(kUrgentStreak));
}

TEST(WorkQueue, PromptKeysGoAfterUrgentOnesAndBeforeRoutineOnes) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.AddPrompt("p1");
  q.Add("b");
  q.AddUrgent("u");
  q.AddPrompt("p2");
  EXPECT_EQ(q.stats().depth, 5u);
  EXPECT_EQ(Next(q), "u");
  EXPECT_EQ(Next(q), "p1");
  EXPECT_EQ(Next(q), "p2");
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "b");
}

TEST(WorkQueue, AKeyMovesUpALaneButNeverDown) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("r");
  q.AddPrompt("r");  // routine → prompt
  q.AddPrompt("u");
  q.AddUrgent("u");  // prompt → urgent
  q.AddPrompt("u");  // stays urgent
  q.Add("r");        // stays prompt
  EXPECT_EQ(q.stats().depth, 3u);
  EXPECT_EQ(Next(q), "u");
  EXPECT_EQ(Next(q), "r");
  EXPECT_EQ(Next(q), "a");
  // Made prompt while processed: Done() queues it in the prompt lane.
  q.Add("busy");
  std::optional<std::string> busy = q.Get();
  ASSERT_TRUE(busy);
  q.Add("b");
  q.AddPrompt("busy");
  EXPECT_EQ(q.stats().depth, 1u);
  q.Done("busy");
  EXPECT_EQ(Next(q), "busy");
  EXPECT_EQ(Next(q), "b");
}

TEST(WorkQueue, PromptKeysCountInTheStreak) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("routine");
  for (int i = 0; i < kUrgentStreak; ++i) q.AddPrompt("p" + std::to_string(i));
  q.AddUrgent("u");
  EXPECT_EQ(Next(q), "u");
  for (int i = 0; i < kUrgentStreak - 1; ++i) EXPECT_EQ(Next(q), "p" + std::to_string(i));
  EXPECT_EQ(Next(q), "routine");
  EXPECT_EQ(Next(q), "p" + std::to_string(kUrgentStreak - 1));
}

TEST(WorkQueue, ADelayedPromptAddMovesAQueuedKeyUpWhenDue) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("a");
  q.Add("b");
  q.AddAfter("b", Duration(1000), Lane::kPrompt);  // queued routine now, prompt in 1 s
  q.AddAfter("c", Duration(1000), Lane::kPrompt);
  q.Add("c");  // a routine add now keeps the pending move up
  q.Add("d");
  EXPECT_EQ(q.stats().delayed, 2u);
  clock.Advance(Duration(1000));
  q.Poke();
  EXPECT_EQ(q.stats().delayed, 0u);
  EXPECT_EQ(Next(q), "b");
  EXPECT_EQ(Next(q), "c");
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "d");
}

TEST(WorkQueue, AKeyHandedOutDropsItsPendingMoveUpAndOneAddAKeyIsPending) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.Add("k");
  q.AddAfter("k", Duration(1000), Lane::kPrompt);
  EXPECT_EQ(Next(q), "k");  // this sync sees the change: nothing is left to move up
  EXPECT_EQ(q.stats().delayed, 0u);
  q.Add("t");
  q.AddAfter("t", Duration(1000));  // queued already: moot, as before
  EXPECT_EQ(q.stats().delayed, 0u);
  EXPECT_EQ(Next(q), "t");
  q.AddAfter("t", Duration(1000));  // a timed requeue after the sync
  EXPECT_EQ(q.stats().depth, 0u);
  EXPECT_EQ(q.stats().delayed, 1u);
  clock.Advance(Duration(1000));
  q.Poke();
  EXPECT_EQ(Next(q), "t");
  // One pending add a key: the earliest time and the first lane.
  q.AddAfter("m", Duration(5000));
  q.AddAfter("m", Duration(1000), Lane::kPrompt);
  q.AddAfter("m", Duration(3000), Lane::kUrgent);
  q.Add("r");
  EXPECT_EQ(q.stats().delayed, 1u);
  clock.Advance(Duration(1000));
  q.Poke();
  EXPECT_EQ(Next(q), "m");
  EXPECT_EQ(Next(q), "r");
  EXPECT_EQ(q.stats().delayed, 0u);
}

TEST(WorkQueue, AnUrgentAddTakesADelayedKeyNow) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  q.AddAfter("later", Duration(10000));
  q.AddUrgent("later");
  EXPECT_EQ(q.stats().delayed, 0u);
  EXPECT_EQ(Next(q), "later");
}

TEST(WorkQueue, ShutdownWakesGet) {
  FakeClock clock(T0());
  WorkQueue q(&clock);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.Shutdown();
  });
  EXPECT_FALSE(q.Get());
  stopper.join();
}

}  // namespace
}  // namespace trainctl::kube
