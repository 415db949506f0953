#include "common/status.h"

#include <gtest/gtest.h>

#include <string>

namespace trainctl {
namespace {

StatusOr<int> Parse(const std::string& text) {
  if (text.empty()) return InvalidError("empty");
  return static_cast<int>(text.size());
}

StatusOr<int> Doubled(const std::string& text) {
  TRAINCTL_ASSIGN_OR_RETURN(int n, Parse(text));
  return 2 * n;
}

TEST(StatusOrTest, AssignOrReturnPassesValuesAndErrorsThrough) {
  ASSERT_TRUE(Doubled("abc").ok());
  EXPECT_EQ(*Doubled("abc"), 6);
  StatusOr<int> failed = Doubled("");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(failed.status().message(), "empty");
}

TEST(StatusOrTest, MadeFromAnOkStatusHoldsAnInternalError) {
  StatusOr<int> odd(Status::Ok());
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), StatusCode::kInternal);
}

TEST(StatusOrDeathTest, ReadingTheValueOfAnErrorAbortsInEveryBuild) {
  StatusOr<std::string> failed = NotFoundError("no such job");
  EXPECT_DEATH((void)failed.value(), "StatusOr value read while it holds an error: "
                                     "NotFound: no such job");
  EXPECT_DEATH((void)failed->size(), "no such job");
}

}  // namespace
}  // namespace trainctl
