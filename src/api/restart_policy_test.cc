#include "api/restart_policy.h"

#include <gtest/gtest.h>

namespace trainctl::api {
namespace {

TEST(RestartPolicyTest, ParsesTheFourNamesAndNothingElse) {
  EXPECT_EQ(ParseRestartPolicy(""), RestartPolicy::kUnset);
  EXPECT_EQ(ParseRestartPolicy("Always"), RestartPolicy::kAlways);
  EXPECT_EQ(ParseRestartPolicy("OnFailure"), RestartPolicy::kOnFailure);
  EXPECT_EQ(ParseRestartPolicy("Never"), RestartPolicy::kNever);
  EXPECT_EQ(ParseRestartPolicy("ExitCode"), RestartPolicy::kExitCode);
  EXPECT_EQ(ParseRestartPolicy("never"), RestartPolicy::kUnknown);
  for (const char* name : {"Always", "OnFailure", "Never", "ExitCode"})
    EXPECT_STREQ(RestartPolicyName(ParseRestartPolicy(name)), name);
  EXPECT_STREQ(RestartPolicyName(RestartPolicy::kUnset), "");
}

TEST(RestartPolicyTest, PodPolicyAndInPlaceRestartsAsTheKubelet) {
  EXPECT_EQ(PodRestartPolicy(RestartPolicy::kExitCode), RestartPolicy::kNever);
  EXPECT_EQ(PodRestartPolicy(RestartPolicy::kOnFailure), RestartPolicy::kOnFailure);
  EXPECT_EQ(PodRestartPolicy(RestartPolicy::kAlways), RestartPolicy::kAlways);
  EXPECT_EQ(PodRestartPolicy(RestartPolicy::kUnset), RestartPolicy::kUnset);
  EXPECT_TRUE(RestartsInPlace(RestartPolicy::kAlways, 0));
  EXPECT_TRUE(RestartsInPlace(RestartPolicy::kOnFailure, 1));
  EXPECT_FALSE(RestartsInPlace(RestartPolicy::kOnFailure, 0));
  EXPECT_FALSE(RestartsInPlace(RestartPolicy::kNever, 137));
  EXPECT_FALSE(RestartsInPlace(RestartPolicy::kUnset, 1));
}

TEST(RestartPolicyTest, RetriedFailuresCountAgainstBackoffLimit) {
  EXPECT_TRUE(RetriesFailures(RestartPolicy::kAlways));
  EXPECT_TRUE(RetriesFailures(RestartPolicy::kOnFailure));
  EXPECT_TRUE(RetriesFailures(RestartPolicy::kExitCode));
  EXPECT_FALSE(RetriesFailures(RestartPolicy::kNever));
  EXPECT_FALSE(RetriesFailures(RestartPolicy::kUnset));
}

}  // namespace
}  // namespace trainctl::api
