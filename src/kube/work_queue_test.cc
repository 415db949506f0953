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
