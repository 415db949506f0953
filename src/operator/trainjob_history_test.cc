// The TrainJob controller feeds the operator's job history (--history): a TrainJob that finishes
// is recorded once, as a TrainJob, with a row per node from its pods, its events and the log
// tails of node 0 and the failed node; one that had finished before the operator started is
// resolved from its runtime snapshot once (no snapshot made, no runtime read when it has one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "kube/fake_api.h"
#include "operator/trainjob_controller.h"
#include "recording/history_recorder.h"

namespace trainctl::op::trainjob_history_test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char* kTrainJobsPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs";
const char* kRuntimesPath = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainingruntimes";
const char* kJobSetsAt = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets";
const char* kSnapshotPath = "/api/v1/namespaces/ns/configmaps/tj-runtime-snapshot";
const char* kPodsPath = "/api/v1/namespaces/ns/pods/";

json TorchRuntime() {
  return json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
    "metadata": {"name": "torch", "namespace": "ns"},
    "spec": {"mlPolicy": {"numNodes": 2, "torch": {}}, "template": {"spec": {"replicatedJobs": [
      {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
       "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}]}}}})");
}

json ATrainJob() {
  return json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "tj", "namespace": "ns", "uid": "11111111-2222-3333-4444-555555555555"},
    "spec": {"runtimeRef": {"name": "torch", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
             "trainer": {"command": ["torchrun", "train.py"]}}})");
}

// Node `index`'s pod, ended with `exit_code`, on node kwok-<index>.
json EndedNode(int index, int exit_code) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "tj-node-0-" + std::to_string(index) + "-x"},
        {"namespace", "ns"},
        {"uid", "00000000-0000-0000-0000-00000000000" + std::to_string(index)},
        {"resourceVersion", "5"},
        {"labels",
         {{"jobset.sigs.k8s.io/jobset-name", "tj"},
          {"jobset.sigs.k8s.io/replicatedjob-name", "node"},
          {"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
      {"spec",
       {{"nodeName", "kwok-" + std::to_string(index)},
        {"containers", json::array({{{"name", "node"}, {"image", "i"}}})}}},
      {"status",
       {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
        {"containerStatuses",
         json::array(
             {{{"name", "node"},
               {"restartCount", 0},
               {"state",
                {{"terminated",
                  {{"exitCode", exit_code},
                   {"reason", exit_code == 0 ? "Completed" : "Error"},
                   {"finishedAt", "2023-11-14T22:13:2" + std::to_string(index) + "Z"}}}}}}})}}}};
}

json JobSetEnded(json jobset, const std::string& type) {
  jobset["status"] = {
      {"conditions", json::array({{{"type", type},
                                   {"status", "True"},
                                   {"reason", type == "Failed" ? "FailedJobs" : "AllJobsCompleted"},
                                   {"message", "jobset " + type},
                                   {"lastTransitionTime", "2023-11-14T22:13:30Z"}}})}};
  jobset["metadata"]["resourceVersion"] = "900";
  return jobset;
}

class TrainJobHistoryTest : public ::testing::Test {
 protected:
  TrainJobHistoryTest()
      : clock_(Time(std::chrono::seconds(1700000000))),
        dir_(fs::temp_directory_path() / ("trainctl-tj-history-" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto api = std::make_unique<kube::FakeApi>();
    api_ = api.get();
    api_->ServeLists(true);  // the events of a job the operator did not see from its start
    kube::ClientOptions options;
    options.qps = -1;
    options.max_retries = 0;
    options.sleep = [](Duration) {};
    client_ = std::make_unique<kube::Client>(std::move(api), options, &clock_);
    history_ = std::make_unique<recording::HistoryRecorder>(
        history::HistoryStore::Open((dir_ / "h.db").string()).value(), client_.get(),
        history::Limits{}, &clock_, nullptr);
    recorder_ =
        std::make_unique<kube::EventRecorder>(client_.get(), &clock_, kube::CorrelatorOptions{});
    recorder_->SetTap([this](const kube::EventInput& e) { history_->events().Add(e); });
    controller_ =
        std::make_unique<TrainJobController>(client_.get(), &clock_, "ns", 1, recorder_.get());
    controller_->SetHistory(history_.get());
    history_->Start();
  }
  ~TrainJobHistoryTest() override {
    controller_.reset();
    recorder_.reset();
    history_.reset();
    fs::remove_all(dir_);
  }

  void Cache(const json& trainjob) {
    controller_->TrainJobCache()->Apply(kube::WatchEventType::kModified, trainjob);
  }
  json Stored() { return *api_->Object(std::string(kTrainJobsPath) + "/tj"); }
  // Waits (real time: the recorder's threads) for `n` records.
  bool WaitForRecords(size_t n, int tries = 500) {
    for (int i = 0; i < tries && history_->written() < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return history_->written() == n;
  }
  json Record() {
    std::unique_ptr<history::HistoryStore> store =
        history::HistoryStore::Open((dir_ / "h.db").string()).value();
    std::optional<json> record = store->Get("11111111-2222-3333-4444-555555555555").value();
    return record ? *record : json();
  }
  size_t Reads(const std::string& path) { return api_->Requests("GET", path).size(); }

  FakeClock clock_;
  fs::path dir_;
  kube::FakeApi* api_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<recording::HistoryRecorder> history_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<TrainJobController> controller_;
};

TEST_F(TrainJobHistoryTest, AFailedTrainJobIsRecordedOnceWithItsNodesEventsAndTails) {
  api_->Seed(std::string(kRuntimesPath) + "/torch", TorchRuntime());
  Cache(api_->Seed(std::string(kTrainJobsPath) + "/tj", ATrainJob()));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());  // the JobSet; the events opened
  Cache(Stored());
  json js = *api_->Object(std::string(kJobSetsAt) + "/tj");
  js["status"] = {{"restarts", 0}};
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, js);
  js["status"]["restarts"] = 1;  // a whole restart: a TrainJobRestarting event on the TrainJob
  js["metadata"]["resourceVersion"] = "800";
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, js);
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, EndedNode(0, 0));
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, EndedNode(1, 3));
  api_->SetLog(std::string(kPodsPath) + "tj-node-0-0-x", "step=1 loss=0.5\n");
  api_->SetLog(std::string(kPodsPath) + "tj-node-0-1-x", "ValueError: loss is nan\n");
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, JobSetEnded(js, "Failed"));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());  // Failed stored, and recorded
  ASSERT_TRUE(WaitForRecords(1));
  // Later syncs of the finished job add nothing and read nothing for the history.
  Cache(Stored());
  const size_t snapshot_reads = Reads(kSnapshotPath);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ(Reads(kSnapshotPath), snapshot_reads);
  EXPECT_FALSE(WaitForRecords(2, 50));

  json record = Record();
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(record["kind"], "TrainJob");
  EXPECT_EQ(record["source"], "kubernetes");
  EXPECT_EQ(record["job"]["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(record["job"]["status"]["conditions"].back()["type"], "Failed");
  ASSERT_EQ(record["replicas"].size(), 2u);
  EXPECT_EQ(record["replicas"][1]["type"], "node");
  EXPECT_EQ(record["replicas"][1]["node"], "kwok-1");
  EXPECT_EQ(record["failure"]["name"], "tj-node-0-1-x");
  EXPECT_EQ(record["failure"]["exitCode"], 3);
  EXPECT_EQ(record["logs"]["node-0-0-x"]["tail"], "step=1 loss=0.5\n");
  EXPECT_EQ(record["logs"]["node-0-1-x"]["tail"], "ValueError: loss is nan\n");
  ASSERT_EQ(record["events"].size(), 1u) << record["events"].dump();
  EXPECT_EQ(record["events"][0]["object"], "TrainJob/tj");
  EXPECT_EQ(record["events"][0]["reason"], "TrainJobRestarting");
  EXPECT_EQ(api_->Requests("GET", "/api/v1/namespaces/ns/events").size(), 0u)
      << "seen from its start: its events are not listed";
}

TEST_F(TrainJobHistoryTest, OneThatFinishedBeforeTheOperatorStartedIsResolvedFromItsSnapshot) {
  // The runtime is gone; its snapshot is what the job ran on.
  json runtime = TorchRuntime();
  json snapshot = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", "tj-runtime-snapshot"},
        {"namespace", "ns"},
        {"ownerReferences", json::array({{{"kind", "TrainJob"},
                                          {"name", "tj"},
                                          {"controller", true},
                                          {"uid", "11111111-2222-3333-4444-555555555555"}}})}}},
      {"data", {{"runtime", runtime.dump()}}}};
  api_->Seed(kSnapshotPath, snapshot);
  json done = ATrainJob();
  done["status"] = {
      {"conditions", json::array({{{"type", "Complete"},
                                   {"status", "True"},
                                   {"reason", "AllJobsCompleted"},
                                   {"message", "jobset completed successfully"},
                                   {"lastTransitionTime", "2023-11-14T22:13:30Z"}}})}};
  Cache(api_->Seed(std::string(kTrainJobsPath) + "/tj", done));
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, EndedNode(0, 0));
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, EndedNode(1, 0));
  api_->SetLog(std::string(kPodsPath) + "tj-node-0-0-x", "done\n");
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());  // queued or recorded: not read again
  ASSERT_TRUE(WaitForRecords(1));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ(Reads(kSnapshotPath), 1u) << "one read of its snapshot";
  EXPECT_EQ(Reads(kRuntimesPath), 0u);
  EXPECT_TRUE(api_->Requests("POST", "").empty()) << "nothing made for a finished job";
  EXPECT_FALSE(WaitForRecords(2, 50));

  json record = Record();
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(jobs::RecordRow(record).state, "Complete");
  ASSERT_EQ(record["replicas"].size(), 2u);
  EXPECT_EQ(record["replicas"][0]["name"], "tj-node-0-0-x");
  EXPECT_EQ(record["replicas"][0]["state"], "Succeeded");
  EXPECT_EQ(record["logs"]["node-0-0-x"]["tail"], "done\n") << "node 0's tail, always";
  EXPECT_FALSE(record["logs"].contains("node-0-1-x")) << "a node that did not fail: not read";
  EXPECT_TRUE(record["failure"].is_null());
}

}  // namespace
}  // namespace trainctl::op::trainjob_history_test
