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

json JobWithConditions(json conditions) {
  return {{"kind", "PyTorchJob"},
          {"metadata",
           {{"name", "pt"}, {"namespace", "ns"}, {"creationTimestamp", "2026-11-23T10:00:00Z"}}},
          {"status", {{"conditions", conditions}}}};
}

TEST(FormatTest, ProgressAndEtaComeFromTheTrainersReportAndCountDown) {
  json running = JobWithConditions(
      {{{"type", "Running"}, {"status", "True"}, {"reason", "PyTorchJobRunning"}}});
  running["status"]["trainerStatus"] = {
      {"progressPercentage", 42},
      {"estimatedRemainingSeconds", 300},
      {"metrics", json::array({{{"name", "loss"}, {"value", "0.5"}}})},
      {"lastUpdatedTime", "2026-11-23T10:00:00Z"}};
  json quiet = JobWithConditions({{{"type", "Created"}, {"status", "True"}}});
  const Time now = *ParseRfc3339("2026-11-23T10:02:00Z");
  // Reported two minutes ago with five left: three left now.
  std::string table = FormatJobTable({running, quiet}, false, false, now, false);
  EXPECT_NE(table.find("PROGRESS"), std::string::npos) << table;
  EXPECT_NE(table.find("42%"), std::string::npos) << table;
  EXPECT_NE(table.find("3m0s"), std::string::npos) << table;
  std::string described = FormatDescribe(running, json::array(), {}, now);
  EXPECT_NE(described.find("42%, about 3m0s left (reported 2m0s ago)"), std::string::npos) << described;
  EXPECT_NE(described.find("loss=0.5"), std::string::npos) << described;
  // No job reported: the columns are not there.
  EXPECT_EQ(FormatJobTable({quiet}, false, false, now, false).find("PROGRESS"), std::string::npos);
}

TEST(FormatTest, WhyComesFromReplicasReadyAndTheFirstFailure) {
  json pending = JobWithConditions(
      {{{"type", "ReplicasReady"},
        {"status", "False"},
        {"reason", "Unschedulable"},
        {"message", "2/3 replicas are unschedulable (Worker 0, 1): 0/4 nodes are available"},
        {"lastTransitionTime", "2026-11-23T10:00:01Z"}},
       {{"type", "Created"}, {"status", "True"}, {"reason", "PyTorchJobCreated"}}});
  EXPECT_EQ(JobWhyLine(pending),
            "Unschedulable: 2/3 replicas are unschedulable (Worker 0, 1): 0/4 nodes are available");
  EXPECT_EQ(JobWhyLine(pending, 20), "Unschedulable: 2/3 r…");
  std::string table =
      FormatJobTable({pending}, false, false, *ParseRfc3339("2026-11-23T10:01:00Z"), /*wide=*/true);
  EXPECT_NE(table.find("REASON"), std::string::npos) << table;
  EXPECT_NE(table.find("Unschedulable: 2/3"), std::string::npos) << table;
  EXPECT_EQ(JobState(pending), "Created");  // ReplicasReady is first, never the state

  json failed = JobWithConditions(
      {{{"type", "Created"}, {"status", "True"}},
       {{"type", "Failed"},
        {"status", "True"},
        {"reason", "PyTorchJobFailed"},
        {"message",
         "PyTorchJob pt is failed because 1 Worker replica(s) failed.\nFirst failure: "
         "pt-worker-1 (Worker 1) exited with code 3.\nLast output:\nboom"}}});
  json why = JobWhy(failed);
  EXPECT_TRUE(why["reason"].is_null());
  EXPECT_EQ(why["firstFailure"],
            "First failure: pt-worker-1 (Worker 1) exited with code 3.\nLast output:\nboom");
  EXPECT_EQ(JobWhyLine(failed), "First failure: pt-worker-1 (Worker 1) exited with code 3.");
  std::string described =
      FormatDescribe(failed, json::array(), {}, *ParseRfc3339("2026-11-23T10:01:00Z"));
  EXPECT_NE(described.find("Why:\n  First failure: pt-worker-1 (Worker 1) exited with code 3.\n"
                           "    Last output:\n    boom\n"),
            std::string::npos)
      << described;
  // The conditions table keeps one line per condition.
  EXPECT_NE(described.find("PyTorchJob pt is failed because 1 Worker replica(s) failed.\n"),
            std::string::npos);
  // A replica's exit says its reason when the reason says more than the code.
  json replicas = json::array(
      {{{"name", "pt-worker-0"}, {"state", "Failed"}, {"exitCode", 137}, {"reason", "OOMKilled"}},
       {{"name", "pt-worker-1"}, {"state", "Failed"}, {"exitCode", 3}, {"reason", "Error"}}});
  described = FormatDescribe(failed, replicas, {}, *ParseRfc3339("2026-11-23T10:01:00Z"));
  EXPECT_NE(described.find("137 (OOMKilled)"), std::string::npos) << described;
  EXPECT_EQ(described.find("(Error)"), std::string::npos) << described;
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
