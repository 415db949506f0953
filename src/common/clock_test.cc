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
TEST(Rfc3339Test, ParsesKubernetesFormsAndClampsTimesTheClockCannotHold) {
  std::optional<Time> t = ParseRfc3339("2026-11-23T10:01:00Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-23T10:01:00Z");
  EXPECT_EQ(ParseRfc3339("2026-11-23T12:01:00.123+02:00"), t);
  EXPECT_FALSE(ParseRfc3339("2026-11-23 10:01:00Z"));
  EXPECT_FALSE(ParseRfc3339("2026-13-23T10:01:00Z"));
  // Found by fuzzing (watch_fuzz, exec_credential_fuzz): converting these overflowed.
  EXPECT_EQ(ParseRfc3339("9999-12-31T23:59:59Z"), Time::max());
  EXPECT_EQ(ParseRfc3339("4052-12-31T00:00:00Z"), Time::max());
  EXPECT_EQ(ParseRfc3339("0001-01-01T00:00:00Z"), Time::min());
}

}  // namespace trainctl
