// Unit tests for local/job_view.h: what a reader makes of a job whose runner is gone, and which
// replica failed first.
#include "local/job_view.h"

#include <gtest/gtest.h>

#include "api/job.h"
#include "api/manifest.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

json StoredJob(const std::string& last_condition) {
  auto loaded = api::LoadJobsFromText(R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: demo, namespace: team}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: x, command: ["true"]}]}}
)yaml",
                                      "test.yaml");
  EXPECT_TRUE(loaded.ok());
  json job = api::EncodeJob((*loaded)[0].job);
  job["status"]["conditions"] =
      json::array({{{"type", "Created"}, {"status", "True"}, {"reason", "PyTorchJobCreated"}}});
  if (!last_condition.empty())
    job["status"]["conditions"].push_back(
        {{"type", last_condition}, {"status", "True"}, {"reason", "x"}});
  return job;
}

TEST(DecideLostRunnerTest, UnfinishedJobBecomesFailedWithRunnerLost) {
  json replicas = json::array({{{"name", "demo-master-0"}, {"phase", "Running"}, {"pid", 42}},
                               {{"name", "demo-worker-0"}, {"phase", "Succeeded"}}});
  Time now = *ParseRfc3339("2026-11-23T10:00:00Z");
  std::optional<LostRunnerUpdate> update =
      DecideLostRunner(StoredJob("Running"), replicas, 4242, now);
  ASSERT_TRUE(update);
  const json& last = update->job["status"]["conditions"].back();
  EXPECT_EQ(last["type"], "Failed");
  EXPECT_EQ(last["status"], "True");
  EXPECT_EQ(last["reason"], kRunnerLostReason);
  EXPECT_NE(last["message"].get<std::string>().find("pid 4242"), std::string::npos);
  EXPECT_EQ(update->replicas[0]["phase"], "Unknown");
  EXPECT_EQ(update->replicas[0]["state"], "Lost");
  EXPECT_FALSE(update->replicas[0].contains("pid"));
  EXPECT_EQ(update->replicas[1]["phase"], "Succeeded");  // finished replicas stay as they were
}

TEST(DecideLostRunnerTest, FinishedOrUndecodableJobsAreLeftAlone) {
  Time now = *ParseRfc3339("2026-11-23T10:00:00Z");
  EXPECT_FALSE(DecideLostRunner(StoredJob("Succeeded"), json::array(), 1, now));
  EXPECT_FALSE(DecideLostRunner(StoredJob("Failed"), json::array(), 1, now));
  EXPECT_FALSE(DecideLostRunner(json{{"kind", "Nope"}}, json::array(), 1, now));
}

TEST(FirstFailedReplicaTest, EarliestFailedByExitOrder) {
  json replicas = json::array({{{"name", "a"},
                                {"phase", "Failed"},
                                {"exitCode", 1},
                                {"finishTime", "2026-11-23T10:00:05Z"},
                                {"exitSeq", 3}},
                               {{"name", "b"},
                                {"phase", "Failed"},
                                {"exitCode", 137},
                                {"finishTime", "2026-11-23T10:00:05Z"},
                                {"exitSeq", 2}},
                               {{"name", "c"}, {"phase", "Succeeded"}, {"exitCode", 0}}});
  std::optional<json> first = FirstFailedReplica(replicas);
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)["name"], "b");  // same second, exited before a
}

TEST(FirstFailedReplicaTest, ARestartedReplicaCountsByItsLastEndAsTheEngineJudgesIt) {
  json replicas = json::array({{{"name", "a"},
                                {"phase", "Running"},
                                {"restarts", 1},
                                {"lastExitCode", 3},
                                {"lastFinishTime", "2026-11-23T10:00:01Z"}},
                               {{"name", "b"}, {"phase", "Running"}},
                               {{"name", "c"},
                                {"phase", "Failed"},
                                {"exitCode", 1},
                                {"finishTime", "2026-11-23T10:00:09Z"}}});
  ASSERT_TRUE(FirstFailedReplica(replicas));
  EXPECT_EQ((*FirstFailedReplica(replicas))["name"], "a")
      << "it failed first, though it runs again: the same rule as the Failed condition's text";
  // The same records as the engine sees them name the same replica in its text.
  json failed_only = json::array({replicas[2], replicas[1]});
  EXPECT_EQ((*FirstFailedReplica(failed_only))["name"], "c");
  EXPECT_FALSE(FirstFailedReplica(json::array({{{"name", "b"}, {"phase", "Succeeded"}}})));
  EXPECT_FALSE(FirstFailedReplica(json::object()));
}

}  // namespace
}  // namespace trainctl::local
