// Observations from cached pods: type case, index parsing, phase, exit code, restarts.
#include "operator/observe.h"

#include <gtest/gtest.h>

#include "api/manifest.h"
#include "engine/diagnosis.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

api::Job Job() {
  auto loaded = api::LoadJobsFromText(R"yaml(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: t}
spec:
  tfReplicaSpecs:
    PS: {replicas: 1, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: tensorflow, image: i}]}}}
)yaml",
                                      "t.yaml");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return (*loaded)[0].job;
}

kube::PodSummary Pod(const std::string& name, const std::string& type, const std::string& index,
                     const std::string& phase, json container_status) {
  json pod = {{"metadata",
               {{"name", name},
                {"labels",
                 {{"training.kubeflow.org/job-name", "t"},
                  {"training.kubeflow.org/replica-type", type},
                  {"training.kubeflow.org/replica-index", index}}}}},
              {"status", {{"phase", phase}}}};
  if (!container_status.is_null())
    pod["status"]["containerStatuses"] = json::array({container_status});
  return *kube::ProjectPod(pod, ObservedLabels());
}

TEST(ObserveTest, MapsPodsToReplicas) {
  json failed = {{"name", "tensorflow"},
                 {"restartCount", 0},
                 {"state", {{"terminated", {{"exitCode", 137}}}}}};
  json restarted = {{"name", "tensorflow"},
                    {"restartCount", 3},
                    {"state", {{"running", json::object()}}},
                    {"lastState", {{"terminated", {{"exitCode", 1}}}}}};
  std::vector<engine::ReplicaObservation> o = ObserveReplicas(
      Job(), {Pod("t-ps-0", "ps", "0", "Running", restarted),
              Pod("t-worker-1", "worker", "1", "Failed", failed),
              Pod("t-worker-x", "worker", "x", "Running", nullptr),  // bad index: ignored
              Pod("t-chief-0", "chief", "0", "Running", nullptr),    // unknown type: ignored
              Pod("t-worker-0", "worker", "0", "Pending", nullptr)});
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].type, "PS");
  EXPECT_EQ(o[0].phase, engine::Phase::kRunning);
  EXPECT_EQ(o[0].restarts, 3);
  // Running again after 3 restarts: its last exit (the kubelet's lastState) is still known, so
  // a crash loop between two back-offs is told apart from a recovery.
  EXPECT_EQ(o[0].exit_code, 1);
  EXPECT_EQ(o[1].type, "Worker");
  EXPECT_EQ(o[1].index, 1);
  EXPECT_EQ(o[1].phase, engine::Phase::kFailed);
  EXPECT_EQ(o[1].exit_code, 137);
  EXPECT_EQ(o[2].phase, engine::Phase::kPending);
}

TEST(ObserveTest, AGangPodsAttemptComesFromItsLabel) {
  json pod = {{"metadata",
               {{"name", "t-worker-0"},
                {"labels",
                 {{"training.kubeflow.org/job-name", "t"},
                  {"training.kubeflow.org/replica-type", "worker"},
                  {"training.kubeflow.org/replica-index", "0"},
                  {"trainctl.dev/restart-attempt", "2"}}}}},
              {"status", {{"phase", "Running"}}}};
  json unlabelled = pod;
  unlabelled["metadata"]["name"] = "t-worker-1";
  unlabelled["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "1";
  unlabelled["metadata"]["labels"].erase("trainctl.dev/restart-attempt");
  json garbled = unlabelled;
  garbled["metadata"]["name"] = "t-ps-0";
  garbled["metadata"]["labels"]["training.kubeflow.org/replica-type"] = "ps";
  garbled["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "0";
  garbled["metadata"]["labels"]["trainctl.dev/restart-attempt"] = "two";
  std::vector<engine::ReplicaObservation> o =
      ObserveReplicas(Job(), {*kube::ProjectPod(pod, ObservedLabels()),
                              *kube::ProjectPod(unlabelled, ObservedLabels()),
                              *kube::ProjectPod(garbled, ObservedLabels())});
  ASSERT_EQ(o.size(), 3u);
  EXPECT_EQ(o[0].attempt, 2);
  EXPECT_EQ(o[1].attempt, 0);
  EXPECT_EQ(o[2].attempt, 0);  // not a number: the first attempt's
}

// One pod with a full status document (spec and status given as JSON).
engine::ReplicaObservation ObserveOne(const std::string& phase, json spec, json status) {
  json pod = {{"metadata",
               {{"name", "t-worker-0"},
                {"labels",
                 {{"training.kubeflow.org/job-name", "t"},
                  {"training.kubeflow.org/replica-type", "worker"},
                  {"training.kubeflow.org/replica-index", "0"}}}}},
              {"spec", spec},
              {"status", status}};
  pod["status"]["phase"] = phase;
  std::vector<engine::ReplicaObservation> o =
      ObserveReplicas(Job(), {*kube::ProjectPod(pod, ObservedLabels())});
  EXPECT_EQ(o.size(), 1u);
  return o.empty() ? engine::ReplicaObservation{} : o[0];
}

TEST(ObserveWhyTest, UnschedulableCarriesTheSchedulersMessage) {
  engine::ReplicaObservation o =
      ObserveOne("Pending", json::object(),
                 {{"conditions",
                   {{{"type", "PodScheduled"},
                     {"status", "False"},
                     {"reason", "Unschedulable"},
                     {"message", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}}}});
  EXPECT_EQ(o.waiting_reason, "Unschedulable");
  EXPECT_EQ(o.waiting_message, "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.");
}

TEST(ObserveWhyTest, WaitingContainerAndRunningInitContainer) {
  engine::ReplicaObservation pull = ObserveOne(
      "Pending", {{"nodeName", "n"}},
      {{"containerStatuses",
        {{{"name", "tensorflow"},
          {"state",
           {{"waiting",
             {{"reason", "ImagePullBackOff"}, {"message", "Back-off pulling image \"x\""}}}}}}}}});
  EXPECT_EQ(pull.waiting_reason, "ImagePullBackOff");
  EXPECT_EQ(pull.waiting_message, "Back-off pulling image \"x\"");
  engine::ReplicaObservation init = ObserveOne(
      "Pending", {{"nodeName", "n"}},
      {{"initContainerStatuses",
        {{{"name", "init-pytorch"}, {"state", {{"running", json::object()}}}}}},
       {"containerStatuses",
        {{{"name", "tensorflow"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}}}});
  EXPECT_EQ(init.waiting_reason, "PodInitializing");
  EXPECT_EQ(init.waiting_message, "init container init-pytorch is running");
}

TEST(ObserveWhyTest, AGangSchedulerThatNeverLookedIsNamed) {
  engine::ReplicaObservation o =
      ObserveOne("Pending", {{"schedulerName", "volcano"}}, json::object());
  EXPECT_EQ(o.waiting_reason, "WaitingForScheduler");
  EXPECT_NE(o.waiting_message.find("\"volcano\""), std::string::npos);
  engine::ReplicaObservation plain =
      ObserveOne("Pending", {{"schedulerName", "default-scheduler"}}, json::object());
  EXPECT_EQ(plain.waiting_reason, "");
}

TEST(ObserveWhyTest, HowItEndedComesFromTheDefaultContainerAndThePod) {
  engine::ReplicaObservation o =
      ObserveOne("Failed", {{"nodeName", "n"}},
                 {{"containerStatuses",
                   {{{"name", "sidecar"},
                     {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}},
                    {{"name", "tensorflow"},
                     {"state",
                      {{"terminated",
                        {{"exitCode", 137},
                         {"reason", "OOMKilled"},
                         {"message", "step 9\nCUDA out of memory"},
                         {"finishedAt", "2026-11-23T10:00:05Z"}}}}}}}}});
  EXPECT_EQ(o.exit_code, 137);
  EXPECT_EQ(o.end_reason, "OOMKilled");
  EXPECT_EQ(o.end_message, "step 9\nCUDA out of memory");
  ASSERT_TRUE(o.finished_at);
  EXPECT_EQ(FormatRfc3339(*o.finished_at), "2026-11-23T10:00:05Z");
  engine::ReplicaObservation evicted =
      ObserveOne("Failed", {{"nodeName", "n"}},
                 {{"reason", "Evicted"}, {"message", "The node was low on resource: memory."}});
  EXPECT_EQ(evicted.end_reason, "Evicted");
  EXPECT_EQ(evicted.end_message, "The node was low on resource: memory.");
}

TEST(ObserveWhyTest, AHealthyRunningPodKeepsNoDetail) {
  json pod = {
      {"metadata", {{"name", "p"}}},
      {"spec", {{"nodeName", "n"}}},
      {"status",
       {{"phase", "Running"},
        {"containerStatuses", {{{"name", "c"}, {"state", {{"running", json::object()}}}}}}}}};
  EXPECT_EQ(kube::ProjectPod(pod, {})->detail, nullptr);
  // Restarted after a success (Always): nothing to explain.
  pod["status"]["containerStatuses"][0]["restartCount"] = 1;
  pod["status"]["containerStatuses"][0]["lastState"] = {{"terminated", {{"exitCode", 0}}}};
  EXPECT_EQ(kube::ProjectPod(pod, {})->detail, nullptr);
  // Running again after a failure: in its crash loop between two back-offs, so its last end
  // (exit code, time, termination message) is kept for the reason's message.
  pod["status"]["containerStatuses"][0]["lastState"] = {{"terminated",
                                                         {{"exitCode", 2},
                                                          {"reason", "Error"},
                                                          {"message", "can't open file"},
                                                          {"finishedAt", "2026-11-25T10:00:05Z"}}}};
  pod["status"]["containerStatuses"][0]["state"] = {
      {"running", {{"startedAt", "2026-11-25T10:00:15Z"}}}};
  std::optional<kube::PodSummary> looping = kube::ProjectPod(pod, {});
  ASSERT_NE(looping->detail, nullptr);
  ASSERT_EQ(looping->detail->ends.size(), 1u);
  EXPECT_EQ(looping->detail->ends[0].message, "can't open file");
  EXPECT_EQ(looping->containers[0].running_since, 1795600815);
  pod["status"]["containerStatuses"][0]["state"] = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
  ASSERT_NE(kube::ProjectPod(pod, {})->detail, nullptr);
  EXPECT_EQ(kube::ProjectPod(pod, {})->detail->waiting_reason, "CrashLoopBackOff");
  // Ended again, waiting out the back-off as a real kubelet reports it: `terminated`.
  pod["status"]["containerStatuses"][0]["state"] = {{"terminated",
                                                     {{"exitCode", 2},
                                                      {"reason", "Error"},
                                                      {"message", "can't open file again"},
                                                      {"finishedAt", "2026-11-25T10:00:16Z"}}}};
  std::optional<kube::PodSummary> backing_off = kube::ProjectPod(pod, {});
  ASSERT_NE(backing_off->detail, nullptr);
  ASSERT_EQ(backing_off->detail->ends.size(), 1u);
  EXPECT_EQ(backing_off->detail->ends[0].message, "can't open file again");
}

TEST(ObserveTest, AContainerEndedInARunningPodAwaitsItsRestart) {
  json ended = {
      {"name", "tensorflow"},
      {"restartCount", 3},
      {"state",
       {{"terminated",
         {{"exitCode", 2}, {"reason", "Error"}, {"finishedAt", "2026-11-25T10:00:16Z"}}}}},
      {"lastState", {{"terminated", {{"exitCode", 2}}}}}};
  ReplicaObserver observer(Job());
  std::optional<engine::ReplicaObservation> o =
      observer.Observe(Pod("t-worker-0", "worker", "0", "Running", ended));
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->awaiting_restart);
  EXPECT_EQ(o->exit_code, 2);
  EXPECT_EQ(o->restarts, 3);
  ASSERT_TRUE(o->finished_at);
  EXPECT_TRUE(engine::InCrashLoop(*o, *o->finished_at + std::chrono::hours(1)))
      << "in its loop for as long as it waits, however long the back-off";
  // A failed pod's container ended for good.
  o = observer.Observe(Pod("t-worker-0", "worker", "0", "Failed", ended));
  EXPECT_FALSE(o->awaiting_restart);
  ended["state"] = {{"running", {{"startedAt", "2026-11-25T10:00:40Z"}}}};
  o = observer.Observe(Pod("t-worker-0", "worker", "0", "Running", ended));
  EXPECT_FALSE(o->awaiting_restart);
}

}  // namespace
}  // namespace trainctl::op
