#include "wake_probe.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace trainctl::bench {
namespace {

int AllowedCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  return sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
}

TEST(TimeWakeRoundTrips, TimesRoundTripsAcrossTwoCpusOrSaysItNeedsTwo) {
  StatusOr<double> t = TimeWakeRoundTrips(200, 2);
  if (AllowedCpus() >= 2) {
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_GT(*t, 0);
  } else {
    ASSERT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(t.status().message().find("needs two CPUs"), std::string::npos);
  }
}

TEST(TimeWakeRoundTrips, LeavesTheCallersThreadFreeToRunAnywhere) {
  const int before = AllowedCpus();
  StatusOr<double> t = TimeWakeRoundTrips(50, 1);
  if (before >= 2) {
    ASSERT_TRUE(t.ok()) << t.status().message();
  }
  EXPECT_EQ(AllowedCpus(), before);
}

TEST(TimeWakeRoundTrips, RefusesNoRoundTrips) {
  StatusOr<double> t = TimeWakeRoundTrips(0);
  ASSERT_EQ(t.status().code(), StatusCode::kInvalid);
  EXPECT_NE(t.status().message().find("expected at least 1"), std::string::npos);
}

}  // namespace
}  // namespace trainctl::bench
