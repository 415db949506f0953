// Unit tests of the leader-election rule and the lease's time format.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

namespace trainctl::kube {
namespace {

const Time kT0 = Time(std::chrono::seconds(1'800'000'000));
const Duration kLease(15000);

LeaseView Held(const std::string& holder, Time observed_at) {
  LeaseRecord r;
  r.holder = holder;
  r.lease_duration_seconds = 15;
  return {r, observed_at};
}

TEST(DecideLeaseTest, FreeOrMissingOrOurs) {
  EXPECT_EQ(DecideLease({std::nullopt, kT0}, "me", kT0, kLease), LeaseAction::kCreate);
  EXPECT_EQ(DecideLease(Held("", kT0), "me", kT0, kLease), LeaseAction::kTakeOver);
  EXPECT_EQ(DecideLease(Held("me", kT0), "me", kT0 + Duration(60000), kLease), LeaseAction::kRenew);
}

TEST(DecideLeaseTest, AnotherHolderIsJudgedByOurOwnObservationClock) {
  // However old the holder's renewTime claims to be, we wait a full lease duration from when
  // we first saw the record unchanged.
  LeaseView view = Held("other", kT0);
  EXPECT_EQ(DecideLease(view, "me", kT0 + Duration(14999), kLease), LeaseAction::kWait);
  EXPECT_EQ(DecideLease(view, "me", kT0 + Duration(15000), kLease), LeaseAction::kTakeOver);
}

TEST(MicroTimeTest, MicrosecondsInUtc) {
  EXPECT_EQ(FormatMicroTime(kT0 + std::chrono::microseconds(123456)),
            "2027-01-15T08:00:00.123456Z");
  EXPECT_EQ(FormatMicroTime(kT0), "2027-01-15T08:00:00.000000Z");
}

}  // namespace
}  // namespace trainctl::kube
