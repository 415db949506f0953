// Observations from cached pods: type case, index parsing, phase, exit code, restarts.
#include "operator/observe.h"

#include <gtest/gtest.h>

#include "api/manifest.h"

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
  EXPECT_FALSE(o[0].exit_code.has_value());  // running again: the old exit is history
  EXPECT_EQ(o[1].type, "Worker");
  EXPECT_EQ(o[1].index, 1);
  EXPECT_EQ(o[1].phase, engine::Phase::kFailed);
  EXPECT_EQ(o[1].exit_code, 137);
  EXPECT_EQ(o[2].phase, engine::Phase::kPending);
}

}  // namespace
}  // namespace trainctl::op
