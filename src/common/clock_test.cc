#include "common/clock.h"

#include <gtest/gtest.h>

namespace trainctl {
namespace {

TEST(FakeClockTest, MonotonicMovesWithAdvanceButNotWithAWallClockJump) {
  FakeClock clock(Time(std::chrono::seconds(1700000000)));
  MonoTime start = clock.Monotonic();
  clock.Advance(Duration(1500));
  EXPECT_EQ(clock.Monotonic() - start, Duration(1500));
  clock.Set(Time(std::chrono::seconds(1600000000)));  // the wall clock goes back a long way
  EXPECT_EQ(clock.Monotonic() - start, Duration(1500));
  EXPECT_EQ(clock.Now(), Time(std::chrono::seconds(1600000000)));
}

TEST(FakeClockTest, SleepingMovesBothTimesWithoutWaiting) {
  const Clock* clock = new FakeClock(Time(std::chrono::seconds(1700000000)));
  MonoTime start = clock->Monotonic();
  auto real_start = std::chrono::steady_clock::now();
  clock->SleepFor(Duration(3600 * 1000));
  EXPECT_EQ(clock->Monotonic() - start, Duration(3600 * 1000));
  EXPECT_EQ(clock->Now(), Time(std::chrono::seconds(1700000000 + 3600)));
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(1));
  clock->SleepFor(Duration(-5));  // nothing
  EXPECT_EQ(clock->Monotonic() - start, Duration(3600 * 1000));
  delete clock;
}

TEST(RealClockTest, SleepForWaitsAtLeastThatLong) {
  RealClock clock;
  MonoTime a = clock.Monotonic();
  clock.SleepFor(Duration(20));
  EXPECT_GE(clock.Monotonic() - a, Duration(20));
}

TEST(RealClockTest, MonotonicNeverGoesBack) {
  RealClock clock;
  MonoTime a = clock.Monotonic();
  MonoTime b = clock.Monotonic();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace trainctl
