// Unit tests for the CLI's pure helpers: duration parsing and text rendering.
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/exit_status.h"
#include "cli/format.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

TEST(ExitStatusTest, OneMappingForBothBackends) {
  EXPECT_EQ(ExitFor(Status::Ok()), 0);
  EXPECT_EQ(ExitFor(InvalidError("spec.x: bad")), 2);
  EXPECT_EQ(ExitFor(AlreadyExistsError("job exists")), 2);
  EXPECT_EQ(ExitFor(NotFoundError("no job")), 1);
  EXPECT_EQ(ExitFor(Status(StatusCode::kForbidden, "rbac")), 1);
  EXPECT_EQ(ExitFor(IoError("disk full")), 1);
}

TEST(ParseDurationTest, AcceptsGoStyleDurations) {
  EXPECT_EQ(ParseDurationMs("90s"), 90000);
  EXPECT_EQ(ParseDurationMs("5m"), 300000);
  EXPECT_EQ(ParseDurationMs("1h30m"), 5400000);
  EXPECT_EQ(ParseDurationMs("2.5s"), 2500);
  EXPECT_EQ(ParseDurationMs("250ms"), 250);
}

TEST(ParseDurationTest, RejectsGarbage) {
  for (const char* bad : {"", "10", "s", "5 m", "-3s", "1x", "1.2.3s", ".s", "."})
    EXPECT_FALSE(ParseDurationMs(bad).has_value()) << bad;
}

json JobWith(std::vector<std::string> condition_types) {
  json job = {{"kind", "TFJob"}, {"metadata", {{"name", "mnist"}, {"namespace", "ml"}}}};
  json conditions = json::array();
  for (const std::string& t : condition_types)
    conditions.push_back({{"type", t}, {"status", "True"}, {"message", t + " message"}});
  job["status"]["conditions"] = conditions;
  return job;
}

TEST(FormatTest, StateIsTheLastCondition) {
  EXPECT_EQ(JobState(JobWith({"Created", "Running", "Succeeded"})), "Succeeded");
  EXPECT_EQ(JobState(JobWith({})), "");
  EXPECT_EQ(JobState(json{{"kind", "TFJob"}}), "");
}

TEST(FormatTest, TableColumnsAlignLikeKubectl) {
  EXPECT_EQ(FormatTable({{"NAME", "STATE"}, {"a-long-name", "Running"}}),
            "NAME          STATE\n"
            "a-long-name   Running\n");
}

TEST(FormatTest, FinalLineCarriesStateTimeAndMessage) {
  EXPECT_EQ(FormatFinalLine(JobWith({"Created", "Failed"}), Duration(12345)),
            "TFJob ml/mnist Failed in 12.3s: Failed message");
  EXPECT_EQ(FormatFinalLine(JobWith({}), Duration(0)), "TFJob ml/mnist Unknown in 0.0s");
}

}  // namespace
}  // namespace trainctl::cli
