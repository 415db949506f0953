// TrainJobController::Sync over an in-memory API (kube::FakeApi) and a fake clock: the runtime's
// snapshot made once and kept over a runtime edit, the JobSet created once, suspend kept in
// step (and held for a checkpoint notice), the status written from the JobSet, a missing
// runtime said in an event, a deletion held by the notice's finalizer.
#include "operator/trainjob_controller.h"

#include <gtest/gtest.h>

#include "kube/fake_api.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

const char* kJobs = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs";
const char* kRuntimes = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainingruntimes";
const char* kJobSetsPath = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets";
const char* kConfigMapsPath = "/api/v1/namespaces/ns/configmaps";

json Runtime(int nodes) {
  return json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
    "metadata": {"name": "torch", "namespace": "ns"},
    "spec": {"mlPolicy": {"numNodes": )" +
                     std::to_string(nodes) +
                     R"(, "torch": {}}, "template": {"spec": {"replicatedJobs": [
      {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
       "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "i"}]}}}}}]}}}})");
}

json TrainJob(bool suspend = false, const std::string& runtime = "torch") {
  json tj = json::parse(R"({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "tj", "namespace": "ns"},
    "spec": {"runtimeRef": {"name": "", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
             "trainer": {"command": ["torchrun", "train.py"]}}})");
  tj["spec"]["runtimeRef"]["name"] = runtime;
  tj["spec"]["suspend"] = suspend;
  return tj;
}

// The TrainJob's condition of `type` (null when it has none).
json Cond(const json& tj, const std::string& type) {
  if (tj.contains("status") && tj["status"].contains("conditions"))
    for (const json& c : tj["status"]["conditions"])
      if (c.value("type", "") == type) return c;
  return nullptr;
}

// A pod of node `index` of TrainJob tj, as JobSet labels it.
json NodePod(int index) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "tj-node-0-" + std::to_string(index) + "-x"},
            {"namespace", "ns"},
            {"uid", "00000000-0000-0000-0000-00000000000" + std::to_string(index)},
            {"resourceVersion", "1"},
            {"labels",
             {{"jobset.sigs.k8s.io/jobset-name", "tj"},
              {"jobset.sigs.k8s.io/replicatedjob-name", "node"},
              {"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
          {"spec", {{"containers", json::array({{{"name", "node"}, {"image", "i"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

class TrainJobSyncTest : public ::testing::Test {
 protected:
  TrainJobSyncTest() : clock_(Time(std::chrono::seconds(1700000000))) {
    auto api = std::make_unique<kube::FakeApi>();
    api_ = api.get();
    kube::ClientOptions options;
    options.qps = -1;
    options.max_retries = 0;
    options.sleep = [](Duration) {};
    client_ = std::make_unique<kube::Client>(std::move(api), options, &clock_);
    recorder_ =
        std::make_unique<kube::EventRecorder>(client_.get(), &clock_, kube::CorrelatorOptions{});
    controller_ =
        std::make_unique<TrainJobController>(client_.get(), &clock_, "ns", 1, recorder_.get());
  }

  json Add(const json& trainjob) {
    json stored = api_->Seed(std::string(kJobs) + "/tj", trainjob);
    controller_->TrainJobCache()->Apply(kube::WatchEventType::kAdded, stored);
    return stored;
  }
  void CatchUp() {
    controller_->TrainJobCache()->Apply(kube::WatchEventType::kModified,
                                        *api_->Object(std::string(kJobs) + "/tj"));
    if (auto js = api_->Object(std::string(kJobSetsPath) + "/tj"))
      controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, *js);
  }

  // The JobSet's status becomes JobSet's Failed (one of its Jobs failed) at `at`.
  void FailJobSet(const std::string& at) {
    json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
    js["status"] = {
        {"conditions", json::array({{{"type", "Failed"},
                                     {"status", "True"},
                                     {"reason", "FailedJobs"},
                                     {"message", "jobset failed due to one or more job failures"},
                                     {"lastTransitionTime", at}}})}};
    controller_->JobSetCache()->Apply(kube::WatchEventType::kModified,
                                      api_->Seed(std::string(kJobSetsPath) + "/tj", js));
  }

  FakeClock clock_;
  kube::FakeApi* api_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<TrainJobController> controller_;
};

TEST_F(TrainJobSyncTest, MakesTheSnapshotAndTheJobSetOnceAndKeepsTheSnapshot) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(2));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  std::optional<json> snapshot =
      api_->Object(std::string(kConfigMapsPath) + "/tj-runtime-snapshot");
  ASSERT_TRUE(snapshot);
  EXPECT_EQ((*snapshot)["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  std::optional<json> js = api_->Object(std::string(kJobSetsPath) + "/tj");
  ASSERT_TRUE(js);
  EXPECT_EQ((*js)["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"], 2);
  // The runtime is edited: the job keeps what it was made from.
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(5));
  ASSERT_TRUE(client_->Delete(kJobSets, "ns", "tj").ok());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  js = api_->Object(std::string(kJobSetsPath) + "/tj");
  ASSERT_TRUE(js);
  EXPECT_EQ((*js)["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"], 2);
}

TEST_F(TrainJobSyncTest, SuspendIsKeptInStepAndTheStatusWritten) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob(/*suspend=*/true));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ((*api_->Object(std::string(kJobSetsPath) + "/tj"))["spec"]["suspend"], true);
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  ASSERT_TRUE(tj["status"]["conditions"].is_array());
  EXPECT_EQ(Cond(tj, "Suspended")["status"], "True");
  EXPECT_EQ(tj["status"]["conditions"].size(), 1u) << "upstream's Suspended says it all";
  CatchUp();
  json resumed = tj;
  resumed["spec"]["suspend"] = false;
  api_->Seed(std::string(kJobs) + "/tj", resumed);
  CatchUp();
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ((*api_->Object(std::string(kJobSetsPath) + "/tj"))["spec"]["suspend"], false);
  tj = *api_->Object(std::string(kJobs) + "/tj");
  EXPECT_EQ(Cond(tj, "Suspended")["reason"], "Resumed");
}

TEST_F(TrainJobSyncTest, AMissingRuntimeIsAWarningAndNoJobSet) {
  Add(TrainJob(false, "nope"));
  SyncResult r = controller_->Sync("ns/tj");
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.requeue_after.has_value());
  EXPECT_FALSE(api_->Object(std::string(kJobSetsPath) + "/tj"));
  ASSERT_TRUE(recorder_->Flush(Duration(5000)));
  bool warned = false;
  for (const json& e : api_->Objects("/api/v1/namespaces/ns/events"))
    warned = warned || (e.value("reason", "") == "TrainJobResourcesCreationFailed" &&
                        e.value("message", "").find("TrainingRuntime ns/nope not found") !=
                            std::string::npos);
  EXPECT_TRUE(warned);
}

TEST_F(TrainJobSyncTest, AJobManagedByMultiKueueIsLeftAlone) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  json tj = TrainJob();
  tj["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  Add(tj);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_FALSE(api_->Object(std::string(kJobSetsPath) + "/tj"));
  EXPECT_FALSE(api_->Object(std::string(kConfigMapsPath) + "/tj-runtime-snapshot"));
}

bool Warned(kube::EventRecorder* recorder, const kube::FakeApi& api, const std::string& reason) {
  EXPECT_TRUE(recorder->Flush(Duration(5000)));
  for (const json& e : api.Objects("/api/v1/namespaces/ns/events"))
    if (e.value("reason", "") == reason) return true;
  return false;
}

TEST_F(TrainJobSyncTest, APassedDeadlineFailsTheJobAndDeletesItsJobSet) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  json tj = TrainJob();
  tj["spec"]["activeDeadlineSeconds"] = 60;
  Add(tj);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  js["status"] = {{"replicatedJobsStatus", json::array({{{"name", "node"}, {"active", 1}}})}};
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified,
                                    api_->Seed(std::string(kJobSetsPath) + "/tj", js));
  controller_->TrainJobCache()->Apply(kube::WatchEventType::kModified,
                                      *api_->Object(std::string(kJobs) + "/tj"));
  SyncResult running = controller_->Sync("ns/tj");
  ASSERT_TRUE(running.status.ok());
  ASSERT_TRUE(running.requeue_after);
  EXPECT_EQ(*running.requeue_after, Duration(60000)) << "woken when the deadline passes";
  CatchUp();
  clock_.Advance(Duration(61000));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json failed = *api_->Object(std::string(kJobs) + "/tj");
  ASSERT_TRUE(failed["status"]["conditions"].is_array());
  json last = failed["status"]["conditions"].back();
  EXPECT_EQ(last["type"], "Failed");
  EXPECT_EQ(last["reason"], "DeadlineExceeded");
  EXPECT_EQ(last["message"], "TrainJob exceeded its active deadline");
  EXPECT_FALSE(api_->Object(std::string(kJobSetsPath) + "/tj")) << "the JobSet is deleted";
  // Its deletion is seen before the Failed status: the TrainJob read is the one from before.
  controller_->JobSetCache()->Apply(kube::WatchEventType::kDeleted, js);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_FALSE(api_->Object(std::string(kJobSetsPath) + "/tj")) << "and not made again";
}

TEST_F(TrainJobSyncTest, TheDeadlineCountsFromTheLastResume) {
  json tj = TrainJob();
  tj["metadata"]["creationTimestamp"] = "2023-11-14T22:00:00Z";
  tj["spec"]["activeDeadlineSeconds"] = 100;
  EXPECT_EQ(TrainJobDeadline(tj), ParseRfc3339("2023-11-14T22:01:40Z"));
  tj["status"]["conditions"] = json::array({{{"type", "Suspended"},
                                             {"status", "False"},
                                             {"reason", "Resumed"},
                                             {"lastTransitionTime", "2023-11-14T23:00:00Z"}}});
  EXPECT_EQ(TrainJobDeadline(tj), ParseRfc3339("2023-11-14T23:01:40Z"));
  tj["spec"]["suspend"] = true;
  EXPECT_FALSE(TrainJobDeadline(tj)) << "no deadline runs while suspended";
}

TEST_F(TrainJobSyncTest, AJobSetDeletedFromOutsideIsMadeAgainAndSaid) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  js["status"] = {{"replicatedJobsStatus", json::array({{{"name", "node"}, {"active", 1}}})}};
  js = api_->Seed(std::string(kJobSetsPath) + "/tj", js);
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, js);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());  // jobsStatus written
  CatchUp();
  ASSERT_TRUE(client_->Delete(kJobSets, "ns", "tj").ok());
  controller_->JobSetCache()->Apply(kube::WatchEventType::kDeleted, js);
  EXPECT_FALSE(Warned(recorder_.get(), *api_, "JobSetRecreated"));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_TRUE(api_->Object(std::string(kJobSetsPath) + "/tj"));
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "JobSetRecreated"));
}

TEST_F(TrainJobSyncTest, AJobSetNoControllerAnswersIsSaid) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob());
  SyncResult first = controller_->Sync("ns/tj");
  ASSERT_TRUE(first.requeue_after) << "looked at again once the grace has passed";
  CatchUp();
  EXPECT_FALSE(Warned(recorder_.get(), *api_, "JobSetNotReconciled"));
  clock_.Advance(Duration(31000));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "JobSetNotReconciled"));
}

TEST_F(TrainJobSyncTest, AWholeJobSetRestartIsSaidOnTheTrainJob) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  js["status"] = {{"restarts", 0}};
  controller_->JobSetCache()->Apply(kube::WatchEventType::kAdded, js);
  EXPECT_FALSE(Warned(recorder_.get(), *api_, "TrainJobRestarting"));
  js["status"]["restarts"] = 1;
  js["metadata"]["resourceVersion"] = "999";
  controller_->JobSetCache()->Apply(kube::WatchEventType::kModified, js);
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "TrainJobRestarting"));
}

TEST_F(TrainJobSyncTest, WhyItsNodesAreNotRunningIsSaidFromItsPods) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(2));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  CatchUp();
  json running = NodePod(0);
  running["status"] = {{"phase", "Running"}};
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, running);
  json stuck = NodePod(1);
  stuck["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"},
                    {"status", "False"},
                    {"reason", "Unschedulable"},
                    {"message", "0/3 nodes are available: 3 Insufficient cpu."}}});
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, stuck);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  json ready = Cond(tj, "ReplicasReady");
  ASSERT_TRUE(ready.is_object()) << tj.dump();
  EXPECT_EQ(ready["status"], "False");
  EXPECT_EQ(ready["reason"], "Unschedulable");
  EXPECT_NE(ready["message"].get<std::string>().find("Insufficient cpu"), std::string::npos)
      << ready.dump();
  EXPECT_FALSE(ready["lastTransitionTime"].get<std::string>().empty());
  EXPECT_EQ(tj["status"]["conditions"][0]["type"], "ReplicasReady") << "first, as for v1";
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "Unschedulable"));

  // Scheduled and running: nothing to tell, no condition (the SDK's Running), and it is said.
  CatchUp();
  stuck["status"] = {{"phase", "Running"}};
  stuck["metadata"]["resourceVersion"] = "2";
  controller_->PodCache()->Apply(kube::WatchEventType::kModified, stuck);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  tj = *api_->Object(std::string(kJobs) + "/tj");
  EXPECT_FALSE(Cond(tj, "ReplicasReady").is_object()) << tj.dump();
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "AllReplicasRunning"));
}

TEST_F(TrainJobSyncTest, TheFirstFailingNodeIsOnTheFailedConditionAndKept) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(2));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  CatchUp();
  json ok = NodePod(0);
  ok["status"] = {
      {"phase", "Failed"},
      {"containerStatuses", json::array({{{"name", "node"},
                                          {"restartCount", 0},
                                          {"state",
                                           {{"terminated",
                                             {{"exitCode", 137},
                                              {"reason", "Error"},
                                              {"finishedAt", "2023-11-14T22:20:00Z"}}}}}}})}};
  json bad = NodePod(1);
  bad["status"] = {
      {"phase", "Failed"},
      {"containerStatuses", json::array({{{"name", "node"},
                                          {"restartCount", 0},
                                          {"state",
                                           {{"terminated",
                                             {{"exitCode", 3},
                                              {"reason", "Error"},
                                              {"message", "ValueError: loss is nan"},
                                              {"finishedAt", "2023-11-14T22:13:20Z"}}}}}}})}};
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, ok);
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, bad);
  FailJobSet("2023-11-14T22:13:21Z");
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  const std::string message = Cond(tj, "Failed")["message"];
  EXPECT_EQ(message.rfind("jobset failed due to one or more job failures\nFirst failure: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("tj-node-0-1-x"), std::string::npos) << "the earlier end: " << message;
  EXPECT_NE(message.find("exited with code 3"), std::string::npos) << message;
  EXPECT_NE(message.find("loss is nan"), std::string::npos) << message;
  EXPECT_FALSE(Cond(tj, "ReplicasReady").is_object()) << "a finished job has no readiness";
  // Later passes (the JobSet's message recomputed each time) keep it.
  CatchUp();
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ((*api_->Object(std::string(kJobs) + "/tj"))["status"], tj["status"]);
}

namespace notice {

const char* kPodsPath = "/api/v1/namespaces/ns/pods";

json NoticeJob(bool suspend) {
  json tj = TrainJob(suspend);
  tj["metadata"]["annotations"] = {{"trainctl.dev/checkpoint-notice-seconds", "60"}};
  return tj;
}

bool HasFinalizer(const json& tj) {
  for (const json& f : tj["metadata"].value("finalizers", json::array()))
    if (f == "trainctl.dev/checkpoint-notice") return true;
  return false;
}

std::string Annotation(const json& object, const std::string& key) {
  const json& a = object["metadata"].value("annotations", json::object());
  return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

}  // namespace notice

// trainctl.dev/checkpoint-notice-seconds on a TrainJob: its pods see the notice volume, the
// TrainJob carries the finalizer, a suspend is held (the JobSet keeps running) until every
// node reported done, and the TrainJob and its pods carry the notice.
TEST_F(TrainJobSyncTest, ACheckpointNoticeHoldsTheSuspendUntilEveryNodeIsDone) {
  using namespace notice;
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(2));
  Add(NoticeJob(/*suspend=*/false));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  EXPECT_TRUE(HasFinalizer(tj)) << tj.dump();
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  const json& pod_spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  ASSERT_TRUE(pod_spec.contains("volumes")) << pod_spec.dump();
  EXPECT_EQ(pod_spec["volumes"].back()["name"], "trainctl-checkpoint-notice");
  CatchUp();
  std::vector<json> pods;
  for (int i = 0; i < 2; ++i) {
    json pod = NodePod(i);
    pod["status"] = {{"phase", "Running"}};
    pod =
        api_->Seed(std::string(kPodsPath) + "/" + pod["metadata"]["name"].get<std::string>(), pod);
    controller_->PodCache()->Apply(kube::WatchEventType::kAdded, pod);
    pods.push_back(pod);
  }

  tj["spec"]["suspend"] = true;
  api_->Seed(std::string(kJobs) + "/tj", tj);
  CatchUp();
  SyncResult held = controller_->Sync("ns/tj");
  ASSERT_TRUE(held.status.ok()) << held.status.message();
  EXPECT_EQ((*api_->Object(std::string(kJobSetsPath) + "/tj"))["spec"]["suspend"], false)
      << "held while the nodes checkpoint";
  ASSERT_TRUE(held.requeue_after);
  EXPECT_LE(*held.requeue_after, std::chrono::seconds(60));
  tj = *api_->Object(std::string(kJobs) + "/tj");
  const std::string text = Annotation(tj, "trainctl.dev/checkpoint-notice");
  ASSERT_NE(text.find("\"reason\":\"Suspended\""), std::string::npos) << tj.dump();
  for (json& pod : pods) {
    json told =
        *api_->Object(std::string(kPodsPath) + "/" + pod["metadata"]["name"].get<std::string>());
    EXPECT_EQ(Annotation(told, "trainctl.dev/checkpoint-notice"), text);
  }
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "CheckpointNotice"));

  // Both nodes report done: the suspend goes ahead.
  CatchUp();
  for (json& pod : pods) {
    pod["metadata"]["annotations"] = {{"trainctl.dev/checkpoint-notice", text},
                                      {"trainctl.dev/checkpoint-done", "true"}};
    pod["metadata"]["resourceVersion"] = "100";
    controller_->PodCache()->Apply(kube::WatchEventType::kModified, pod);
  }
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ((*api_->Object(std::string(kJobSetsPath) + "/tj"))["spec"]["suspend"], true);
}

// A TrainJob with a notice being deleted: its running nodes are told (Deleted) and its finalizer
// is released once they are done.
TEST_F(TrainJobSyncTest, ADeletedTrainJobWithANoticeKeepsItsFinalizerUntilItsNodesAreDone) {
  using namespace notice;
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(NoticeJob(/*suspend=*/false));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json pod = NodePod(0);
  pod["status"] = {{"phase", "Running"}};
  pod = api_->Seed(std::string(kPodsPath) + "/tj-node-0-0-x", pod);
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, pod);
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  ASSERT_TRUE(HasFinalizer(tj));
  tj["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z";
  api_->Seed(std::string(kJobs) + "/tj", tj);
  CatchUp();
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  tj = *api_->Object(std::string(kJobs) + "/tj");
  EXPECT_TRUE(HasFinalizer(tj)) << "held while the node checkpoints";
  const std::string text = Annotation(tj, "trainctl.dev/checkpoint-notice");
  ASSERT_NE(text.find("\"reason\":\"Deleted\""), std::string::npos) << tj.dump();
  EXPECT_EQ(Annotation(*api_->Object(std::string(kPodsPath) + "/tj-node-0-0-x"),
                       "trainctl.dev/checkpoint-notice"),
            text);
  CatchUp();
  pod["metadata"]["annotations"] = {{"trainctl.dev/checkpoint-notice", text},
                                    {"trainctl.dev/checkpoint-done", "true"}};
  pod["metadata"]["resourceVersion"] = "100";
  controller_->PodCache()->Apply(kube::WatchEventType::kModified, pod);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_FALSE(HasFinalizer(*api_->Object(std::string(kJobs) + "/tj"))) << "released";
}

// A runtime with podGroupPolicy: the PodGroup is made before the JobSet (its pods carry the
// pod-group label) and, while the TrainJob runs, left as made.
TEST_F(TrainJobSyncTest, ARuntimePodGroupPolicyMakesThePodGroupFirst) {
  json runtime = Runtime(2);
  runtime["spec"]["podGroupPolicy"] = {{"coscheduling", {{"scheduleTimeoutSeconds", 30}}}};
  api_->Seed(std::string(kRuntimes) + "/torch", runtime);
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  const std::string group_path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/tj";
  std::optional<json> group = api_->Object(group_path);
  ASSERT_TRUE(group);
  EXPECT_EQ((*group)["spec"]["minMember"], 2);
  EXPECT_EQ((*group)["spec"]["scheduleTimeoutSeconds"], 30);
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  EXPECT_EQ(js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"]
              ["scheduling.x-k8s.io/pod-group"],
            "tj");
  // Someone changes it while the job runs: a running TrainJob's PodGroup is not applied again.
  json edited = *group;
  edited["spec"]["minMember"] = 7;
  api_->Seed(group_path, edited);
  CatchUp();
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_EQ((*api_->Object(group_path))["spec"]["minMember"], 7);
}

// The cluster does not serve the PodGroup API: said on the TrainJob, and no JobSet whose pods
// would wait for a gang scheduler that is not there.
TEST_F(TrainJobSyncTest, APodGroupPolicyWithoutThePodGroupApiIsSaidAndMakesNoJobSet) {
  json runtime = Runtime(1);
  runtime["spec"]["podGroupPolicy"] = {{"volcano", json::object()}};
  api_->Seed(std::string(kRuntimes) + "/torch", runtime);
  Add(TrainJob());
  api_->Fail("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups", 404, "NotFound",
             "the server could not find the requested resource");
  SyncResult result = controller_->Sync("ns/tj");
  EXPECT_FALSE(result.status.ok());
  EXPECT_FALSE(api_->Object(std::string(kJobSetsPath) + "/tj"));
  EXPECT_TRUE(Warned(recorder_.get(), *api_, "TrainJobResourcesCreationFailed"));
  bool named = false;
  for (const json& e : api_->Objects("/api/v1/namespaces/ns/events"))
    named = named || e.value("message", "")
                             .find(
                                 "scheduling.volcano.sh/v1beta1 (Volcano), which "
                                 "this cluster does not serve") != std::string::npos;
  EXPECT_TRUE(named);
}

// An OnFailure node restarted in place until its Job's backoff ran out: the Job controller deleted
// its pod before the JobSet (and so the TrainJob) was Failed. Its failure, seen while it ran,
// is still the first failure.
TEST_F(TrainJobSyncTest, ANodeWhosePodWasDeletedBeforeTheFailureIsStillTheFirstFailure) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  CatchUp();
  json crashing = NodePod(0);
  crashing["status"] = {
      {"phase", "Running"},
      {"containerStatuses",
       json::array({{{"name", "node"},
                     {"restartCount", 2},
                     {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
                     {"lastState",
                      {{"terminated",
                        {{"exitCode", 5},
                         {"reason", "Error"},
                         {"message", "RuntimeError: CUDA error: device-side assert"},
                         {"finishedAt", "2023-11-14T22:13:20Z"}}}}}}})}};
  controller_->PodCache()->Apply(kube::WatchEventType::kAdded, crashing);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  CatchUp();
  controller_->PodCache()->Apply(kube::WatchEventType::kDeleted, crashing);
  FailJobSet("2023-11-14T22:13:30Z");
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  json tj = *api_->Object(std::string(kJobs) + "/tj");
  const std::string message = Cond(tj, "Failed")["message"];
  EXPECT_NE(message.find("First failure: tj-node-0-0-x"), std::string::npos) << message;
  EXPECT_NE(message.find("exited with code 5"), std::string::npos) << message;
  EXPECT_NE(message.find("device-side assert"), std::string::npos) << message;
}

TEST_F(TrainJobSyncTest, WithTheStatusEndpointTheTrainerGetsItsEnvAndTheCaComesFirst) {
  controller_->SetStatusServer({"https://op.sys.svc:10443", [] { return std::string("CA PEM"); }});
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(2));
  Add(TrainJob());
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  std::optional<json> ca = api_->Object(std::string(kConfigMapsPath) + "/tj-tls-config");
  ASSERT_TRUE(ca);
  EXPECT_EQ((*ca)["data"]["ca.crt"], "CA PEM");
  // Made before the JobSet: its pods mount it.
  size_t ca_at = 0, jobset_at = 0, i = 0;
  for (const kube::HttpRequest& r : api_->Requests()) {
    ++i;
    if (r.method != "POST") continue;
    if (r.path.rfind(kConfigMapsPath, 0) == 0 && r.body.find("tj-tls-config") != std::string::npos)
      ca_at = i;
    if (r.path.rfind(kJobSetsPath, 0) == 0) jobset_at = i;
  }
  EXPECT_GT(ca_at, 0u);
  EXPECT_LT(ca_at, jobset_at);
  json js = *api_->Object(std::string(kJobSetsPath) + "/tj");
  const json& node = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"];
  bool has_url = false;
  for (const json& e : node["containers"][0]["env"])
    has_url = has_url || (e["name"] == "KUBEFLOW_TRAINER_SERVER_URL" &&
                          e["value"] ==
                              "https://op.sys.svc:10443/apis/trainer.kubeflow.org/v1alpha1/"
                              "namespaces/ns/trainjobs/tj/status");
  EXPECT_TRUE(has_url) << node;
}

TEST_F(TrainJobSyncTest, TheReportedTrainerStatusIsNeverWrittenBackFromTheCache) {
  api_->Seed(std::string(kRuntimes) + "/torch", Runtime(1));
  Add(TrainJob(/*suspend=*/true));
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  CatchUp();
  // The endpoint writes a report; the controller's cache still has the TrainJob without it.
  json stale = *api_->Object(std::string(kJobs) + "/tj");
  json reported = stale;
  reported["status"]["trainerStatus"] = {{"progressPercentage", 50},
                                         {"lastUpdatedTime", "2026-11-30T00:00:00Z"}};
  api_->Seed(std::string(kJobs) + "/tj", reported);
  api_->ClearRequests();
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  EXPECT_TRUE(api_->Requests("PATCH", std::string(kJobs) + "/tj/status").empty());
  // The cache holds an older report and the job is resumed: the status written (Resumed)
  // carries no trainerStatus, so the newer one stored stays.
  stale["spec"]["suspend"] = false;
  stale["status"]["trainerStatus"] = {{"progressPercentage", 10},
                                      {"lastUpdatedTime", "2026-11-29T00:00:00Z"}};
  json resumed = reported;
  resumed["spec"]["suspend"] = false;
  api_->Seed(std::string(kJobs) + "/tj", resumed);
  controller_->TrainJobCache()->Apply(kube::WatchEventType::kModified, stale);
  ASSERT_TRUE(controller_->Sync("ns/tj").status.ok());
  std::vector<kube::HttpRequest> writes =
      api_->Requests("PATCH", std::string(kJobs) + "/tj/status");
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0].body.find("trainerStatus"), std::string::npos) << writes[0].body;
  json stored = *api_->Object(std::string(kJobs) + "/tj");
  EXPECT_EQ(Cond(stored, "Suspended")["reason"], "Resumed");
  EXPECT_EQ(stored["status"]["trainerStatus"]["progressPercentage"], 50);
}

}  // namespace
}  // namespace trainctl::op
