// A TrainJob's history record on a cluster: its snapshot says what its kind's facts cannot (its
// apiVersion, each group's container, the trainer's node 0), a TrainJob's Complete is finished,
// its events are kept, and the record reads the log tails of node 0 and of the failed nodes from
// their own containers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/kinds.h"
#include "engine/plan.h"
#include "jobs/history_capture.h"
#include "kube/fake_api.h"
#include "recording/history_snapshot.h"
#include "recording/job_event_log.h"

namespace trainctl::recording::trainjob_history_test {
namespace {

using nlohmann::json;

Time Start() { return Time(std::chrono::seconds(1700000000)); }

engine::ReplicaObservation Node(const std::string& name, const std::string& type, int index,
                                engine::Phase phase, std::optional<int> exit_code) {
  engine::ReplicaObservation o;
  o.name = name;
  o.type = type;
  o.index = index;
  o.phase = phase;
  o.exit_code = exit_code;
  return o;
}

json FailedTrainJob() {
  return {{"metadata", {{"name", "tj"}, {"namespace", "ns"}, {"uid", "uid-tj"}}},
          {"spec", {{"runtimeRef", {{"name", "torch"}}}}},
          {"status",
           {{"conditions",
             json::array({{{"type", "Failed"},
                           {"status", "True"},
                           {"reason", "FailedJobs"},
                           {"message",
                            "jobset failed due to one or more job failures\nFirst failure: "
                            "tj-node-0-1-b (node 1) exited with code 3"}}})}}}};
}

// The nodes of a failed TrainJob: an initializer that succeeded, node 0 that succeeded, node 1
// that failed with code 3.
std::vector<engine::ReplicaObservation> FailedNodes() {
  return {
      Node("tj-dataset-initializer-0-0-d", "dataset-initializer", 0, engine::Phase::kSucceeded, 0),
      Node("tj-node-0-1-b", "node", 1, engine::Phase::kFailed, 3),
      Node("tj-node-0-0-a", "node", 0, engine::Phase::kSucceeded, 0)};
}

SnapshotLayout TorchLayout() {
  SnapshotLayout layout;
  layout.containers = {{"node", "node"}, {"dataset-initializer", "dataset-initializer"}};
  layout.resolved = true;
  layout.metrics = api::MetricsPolicy{"node", 0};
  return layout;
}

TEST(TrainJobSnapshotTest, SaysItsApiVersionEachGroupsContainerAndItsNodeZero) {
  jobs::ClusterSnapshot s = MakeSnapshot(FailedTrainJob(), api::Kind::kTrainJob, FailedNodes(),
                                         {{"tj-node-0-1-b", "kwok-1"}}, TorchLayout());
  EXPECT_EQ(s.job["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(s.job["kind"], "TrainJob");
  ASSERT_EQ(s.replicas.size(), 3u);
  EXPECT_EQ(s.replicas[1]["name"], "tj-node-0-0-a") << "by group, then index";
  EXPECT_EQ(s.replicas[2]["type"], "node");
  EXPECT_EQ(s.replicas[2]["index"], 1);
  EXPECT_EQ(s.replicas[2]["node"], "kwok-1");
  ASSERT_EQ(s.targets.size(), 3u);
  EXPECT_EQ(s.targets[0].short_name, "dataset-initializer-0-0-d");
  EXPECT_EQ(s.targets[0].container, "dataset-initializer") << "its own container, not `node`";
  EXPECT_EQ(s.targets[1].container, "node");
  EXPECT_EQ(s.metrics_replica, std::optional<std::string>("node-0-0-a"));

  SnapshotLayout off = TorchLayout();
  off.metrics.reset();
  EXPECT_EQ(
      MakeSnapshot(FailedTrainJob(), api::Kind::kTrainJob, FailedNodes(), {}, off).metrics_replica,
      std::optional<std::string>(""))
      << "metrics off: none";
  // A v1 job's record still reads its own annotations, in kubeflow.org/v1.
  jobs::ClusterSnapshot v1 =
      MakeSnapshot({{"metadata", {{"name", "pt"}}}}, api::Kind::kPyTorchJob, {}, {});
  EXPECT_EQ(v1.job["apiVersion"], "kubeflow.org/v1");
  EXPECT_FALSE(v1.metrics_replica.has_value());
}

TEST(TrainJobSnapshotTest, ATrainJobsCompleteIsFinished) {
  json tj = {
      {"status", {{"conditions", json::array({{{"type", "Complete"}, {"status", "True"}}})}}}};
  EXPECT_TRUE(jobs::IsFinishedJob(tj));
  tj["status"]["conditions"][0]["type"] = "Suspended";
  EXPECT_FALSE(jobs::IsFinishedJob(tj));
  EXPECT_TRUE(jobs::IsFinishedJob(FailedTrainJob()));
}

TEST(TrainJobSnapshotTest, ItsEventsAreKept) {
  FakeClock clock(Start());
  JobEventLog log(&clock);
  log.Open("uid-tj");
  kube::EventInput e;
  e.object = {"trainer.kubeflow.org/v1alpha1", "TrainJob", "ns", "tj", "uid-tj"};
  e.type = "Warning";
  e.reason = "TrainJobRestarting";
  e.message = "restart 1 of 1";
  log.Add(e);
  JobEventLog::Seen seen = log.Rows("uid-tj");
  EXPECT_TRUE(seen.complete);
  ASSERT_EQ(seen.rows.size(), 1u);
  EXPECT_EQ(seen.rows[0]["object"], "TrainJob/tj");
  EXPECT_EQ(seen.rows[0]["reason"], "TrainJobRestarting");
}

TEST(TrainJobSnapshotTest, TheRecordKeepsNodeZerosAndTheFailedNodesTailsFromTheirContainers) {
  FakeClock clock(Start());
  auto api = std::make_unique<kube::FakeApi>();
  kube::FakeApi* fake = api.get();
  kube::ClientOptions options;
  options.qps = -1;
  options.max_retries = 0;
  options.sleep = [](Duration) {};
  kube::Client client(std::move(api), options, &clock);
  const std::string pods = "/api/v1/namespaces/ns/pods/";
  fake->SetLog(pods + "tj-node-0-0-a", "step=1 loss=0.5\nnode 0 done\n");
  fake->SetLog(pods + "tj-node-0-1-b", "ValueError: loss is nan\n");
  fake->SetLog(pods + "tj-dataset-initializer-0-0-d", "downloaded\n");
  jobs::ClusterSnapshot s =
      MakeSnapshot(FailedTrainJob(), api::Kind::kTrainJob, FailedNodes(), {}, TorchLayout());
  s.events_complete = true;

  StatusOr<json> record = jobs::SnapshotRecord(client, s, clock);
  ASSERT_TRUE(record.ok()) << record.status().message();
  EXPECT_EQ((*record)["kind"], "TrainJob");
  EXPECT_EQ((*record)["job"]["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ((*record)["failure"]["name"], "tj-node-0-1-b");
  EXPECT_EQ((*record)["failure"]["exitCode"], 3);
  EXPECT_EQ((*record)["failure"]["lastLogLines"], json::array({"ValueError: loss is nan"}));
  EXPECT_EQ((*record)["why"]["firstFailure"],
            "First failure: tj-node-0-1-b (node 1) exited with code 3");
  EXPECT_EQ((*record)["logs"]["node-0-0-a"]["tail"], "step=1 loss=0.5\nnode 0 done\n");
  EXPECT_EQ((*record)["logs"]["node-0-1-b"]["tail"], "ValueError: loss is nan\n");
  EXPECT_FALSE((*record)["logs"].contains("dataset-initializer-0-0-d"))
      << "neither node 0 nor failed: not read";
  ASSERT_TRUE((*record)["metrics"].is_object()) << "node 0's log gives the series";
  std::vector<kube::HttpRequest> reads = fake->Requests("GET", "");
  ASSERT_EQ(reads.size(), 2u);
  for (const kube::HttpRequest& r : reads)
    EXPECT_NE(r.path.find("container=node"), std::string::npos) << r.path;
  EXPECT_EQ(jobs::RecordRow(*record).state, "Failed");
}

}  // namespace
}  // namespace trainctl::recording::trainjob_history_test
