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

TEST(RealClockTest, MonotonicNeverGoesBack) {
  RealClock clock;
  MonoTime a = clock.Monotonic();
  MonoTime b = clock.Monotonic();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace trainctl
