// TrainJobPodGroup: a runtime's podGroupPolicy → the PodGroup upstream's coscheduling and
// volcano plugins make (minMember over every replicated job, initializers included; minResources
// from requests the way the scheduler counts them; the timeout's default; Volcano's queue,
// priority class and network topology) and the pods' label or annotation in the JobSet.
#include "operator/trainjob_pod_group.h"

#include <gtest/gtest.h>

#include "api/manifest.h"
#include "operator/trainjob_jobset.h"

namespace trainctl::op::trainjob_pod_group_test {
namespace {

using nlohmann::json;

// A runtime with a dataset initializer (1 pod: 1 CPU, plus an init container of 3 CPUs and a
// sidecar of 500m) and a trainer step (2 CPUs, 1Gi each), under `policy`.
std::string Runtime(const std::string& policy) {
  return R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: grouped, namespace: team}
spec:
  mlPolicy: {numNodes: 2, torch: {}}
)" + policy +
         R"(
  template:
    metadata:
      annotations: {scheduling.volcano.sh/queue-name: research}
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
          spec:
            template:
              spec:
                initContainers:
                - {name: sidecar, image: s, restartPolicy: Always, resources: {requests: {cpu: 500m}}}
                - {name: fetch, image: f, resources: {requests: {cpu: "3"}}}
                containers:
                - {name: dataset-initializer, image: init, resources: {requests: {cpu: "1"}}}
      - name: node
        dependsOn: [{name: dataset-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                priorityClassName: high
                containers:
                - {name: node, image: torch, resources: {requests: {cpu: "2", memory: 1Gi}, limits: {nvidia.com/gpu: "1"}}}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: grouped-job, namespace: team}
spec:
  runtimeRef: {name: grouped, kind: TrainingRuntime}
  initializer:
    dataset: {storageUri: "hf://tatsu-lab/alpaca"}
  trainer: {numNodes: 3}
)";
}

api::Job Load(const std::string& yaml) {
  api::ManifestExtras extras;
  auto jobs = api::LoadJobsFromText(yaml, "tj.yaml", &extras);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() && !jobs->empty() ? (*jobs)[0].job : api::Job{};
}

struct Built {
  json jobset;
  std::optional<json> pod_group;
};

Built Build(const std::string& policy) {
  api::Job job = Load(Runtime(policy));
  StatusOr<json> js = BuildJobSet(job, "uid-7");
  EXPECT_TRUE(js.ok()) << js.status().ToString();
  if (!js.ok()) return {};
  StatusOr<std::optional<json>> group = TrainJobPodGroup(job, *js, "uid-7");
  EXPECT_TRUE(group.ok()) << group.status().ToString();
  return {*js, group.ok() ? *group : std::nullopt};
}

// The pod template metadata of replicated job `i` ({} when it has none).
json PodMetadata(const json& jobset, size_t i) {
  const json& pod = jobset["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
  return pod.value("metadata", json::object());
}

TEST(TrainJobPodGroupTest, CoschedulingCountsEveryPodAndItsRequests) {
  Built b = Build("  podGroupPolicy: {coscheduling: {}}");
  ASSERT_TRUE(b.pod_group);
  const json& pg = *b.pod_group;
  EXPECT_EQ(pg["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(pg["kind"], "PodGroup");
  EXPECT_EQ(pg["metadata"]["name"], "grouped-job");
  EXPECT_EQ(pg["metadata"]["namespace"], "team");
  EXPECT_EQ(pg["metadata"]["ownerReferences"][0]["uid"], "uid-7");
  EXPECT_EQ(pg["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  EXPECT_EQ(pg["spec"]["minMember"], 4) << "1 initializer + 3 nodes";
  // The initializer: max(3 + 0.5 while `fetch` runs, 1 + 0.5) = 3.5 CPUs; the nodes 3 × 2 CPUs.
  EXPECT_EQ(pg["spec"]["minResources"]["cpu"], "9500m");
  EXPECT_EQ(pg["spec"]["minResources"]["memory"], "3Gi");
  EXPECT_FALSE(pg["spec"]["minResources"].contains("nvidia.com/gpu")) << "requests only";
  EXPECT_EQ(pg["spec"]["scheduleTimeoutSeconds"], 60);
  EXPECT_FALSE(pg["spec"].contains("queue"));
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(PodMetadata(b.jobset, i)["labels"]["scheduling.x-k8s.io/pod-group"], "grouped-job");
}

TEST(TrainJobPodGroupTest, CoschedulingKeepsItsTimeout) {
  Built b = Build("  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 120}}");
  ASSERT_TRUE(b.pod_group);
  EXPECT_EQ((*b.pod_group)["spec"]["scheduleTimeoutSeconds"], 120);
}

TEST(TrainJobPodGroupTest, VolcanoTakesTheQueuePriorityAndTopology) {
  Built b =
      Build("  podGroupPolicy: {volcano: {networkTopology: {mode: soft, highestTierAllowed: 2}}}");
  ASSERT_TRUE(b.pod_group);
  const json& pg = *b.pod_group;
  EXPECT_EQ(pg["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(pg["spec"]["minMember"], 4);
  EXPECT_EQ(pg["spec"]["queue"], "research");
  EXPECT_EQ(pg["spec"]["priorityClassName"], "high");
  EXPECT_EQ(pg["spec"]["networkTopology"],
            json::parse(R"({"mode": "soft", "highestTierAllowed": 2})"));
  EXPECT_FALSE(pg["spec"].contains("scheduleTimeoutSeconds"));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(PodMetadata(b.jobset, i)["annotations"]["scheduling.k8s.io/group-name"],
              "grouped-job");
    EXPECT_FALSE(PodMetadata(b.jobset, i)["labels"].contains("scheduling.x-k8s.io/pod-group"));
  }
}

TEST(TrainJobPodGroupTest, NoPolicyNoPodGroupAndNoMark) {
  Built b = Build("");
  EXPECT_FALSE(b.pod_group);
  ASSERT_TRUE(b.jobset.is_object()) << b.jobset.dump();
  const json metadata = PodMetadata(b.jobset, 1);
  EXPECT_FALSE(metadata.value("labels", json::object()).contains("scheduling.x-k8s.io/pod-group"))
      << metadata.dump();
  EXPECT_FALSE(
      metadata.value("annotations", json::object()).contains("scheduling.k8s.io/group-name"));
}

TEST(TrainJobPodGroupTest, ABadQuantityNamesItsPlace) {
  std::string yaml = Runtime("  podGroupPolicy: {coscheduling: {}}");
  yaml.replace(yaml.find("memory: 1Gi"), 11, "memory: lots");
  api::Job job = Load(yaml);
  StatusOr<json> js = BuildJobSet(job, "uid-7");
  if (!js.ok()) {  // refused while loading or building: the quantity is named there
    EXPECT_NE(js.status().message().find("lots"), std::string::npos) << js.status().message();
    return;
  }
  StatusOr<std::optional<json>> group = TrainJobPodGroup(job, *js, "uid-7");
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("replicatedJobs[node] container node resource memory"),
            std::string::npos)
      << group.status().message();
}

}  // namespace
}  // namespace trainctl::op::trainjob_pod_group_test
