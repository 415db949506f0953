// Pins the pods and services the operator creates to upstream's shape (reference §3.1–§3.4).
#include "operator/pod_builder.h"

#include <gtest/gtest.h>

#include "api/manifest.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

api::Job Load(const std::string& text) {
  auto loaded = api::LoadJobsFromText(text, "test.yaml");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  api::Job job = (*loaded)[0].job;
  job.metadata["uid"] = "0a1b2c3d-0000-4000-8000-000000000001";
  return job;
}

const char* kPyTorch = R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: ExitCode
      template:
        metadata:
          labels: {app: mnist, training.kubeflow.org/replica-type: overridden}
          annotations: {team: vision}
        spec:
          containers:
          - name: pytorch
            image: trainer:1
            env: [{name: USER_VAR, value: "1"}]
          - name: sidecar
            image: log:1
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        metadata:
          finalizers: [example.com/keep]
        spec:
          restartPolicy: Always
          containers:
          - name: pytorch
            image: trainer:1
)yaml";

std::vector<std::string> EnvNames(const json& container) {
  std::vector<std::string> names;
  for (const json& e : container.value("env", json::array())) names.push_back(e["name"]);
  return names;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array()))
    if (e["name"] == name) return e.value("value", "");
  return "<unset>";
}

TEST(PodBuilderTest, PyTorchMasterPod) {
  api::Job job = Load(kPyTorch);
  frameworks::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Master", 0, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& pod = built->pod;
  EXPECT_EQ(pod["metadata"]["name"], "mnist-master-0");
  EXPECT_EQ(pod["metadata"]["namespace"], "ml");
  EXPECT_EQ(pod["metadata"]["labels"],
            (json{{"app", "mnist"},
                  {"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                  {"training.kubeflow.org/job-name", "mnist"},
                  {"training.kubeflow.org/replica-type", "master"},
                  {"training.kubeflow.org/replica-index", "0"},
                  {"training.kubeflow.org/job-role", "master"}}));
  EXPECT_EQ(pod["metadata"]["annotations"], (json{{"team", "vision"}}));
  EXPECT_EQ(pod["metadata"]["ownerReferences"],
            json::array({{{"apiVersion", "kubeflow.org/v1"},
                          {"kind", "PyTorchJob"},
                          {"name", "mnist"},
                          {"uid", "0a1b2c3d-0000-4000-8000-000000000001"},
                          {"controller", true},
                          {"blockOwnerDeletion", true}}}));
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");  // ExitCode → Never
  EXPECT_TRUE(built->events.empty());
  EXPECT_FALSE(pod["spec"].contains("initContainers"));
  // The user's env first, then the framework's, on every container (PyTorch does all).
  const json& main = pod["spec"]["containers"][0];
  std::vector<std::string> names = EnvNames(main);
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "USER_VAR");
  EXPECT_EQ(names[1], "PYTHONUNBUFFERED");
  EXPECT_EQ(EnvValue(main, "MASTER_ADDR"), "mnist-master-0");
  EXPECT_EQ(EnvValue(main, "MASTER_PORT"), "23456");
  EXPECT_EQ(EnvValue(main, "WORLD_SIZE"), "3");
  EXPECT_EQ(EnvValue(main, "RANK"), "0");
  EXPECT_EQ(EnvValue(pod["spec"]["containers"][1], "RANK"), "0");
}

TEST(PodBuilderTest, PyTorchWorkerPodWaitsForTheMaster) {
  api::Job job = Load(kPyTorch);
  frameworks::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 1, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& pod = built->pod;
  EXPECT_EQ(pod["metadata"]["name"], "mnist-worker-1");
  EXPECT_FALSE(pod["metadata"]["labels"].contains("training.kubeflow.org/job-role"));
  EXPECT_EQ(pod["metadata"]["finalizers"], json::array({"example.com/keep"}));
  EXPECT_EQ(EnvValue(pod["spec"]["containers"][0], "RANK"), "2");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "OnFailure");
  ASSERT_EQ(built->events.size(), 1u);
  EXPECT_EQ(built->events[0].reason, "SetPodTemplateRestartPolicy");
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 1u);
  const json& init = pod["spec"]["initContainers"][0];
  EXPECT_EQ(init["name"], "init-pytorch");
  EXPECT_EQ(init["image"], "alpine:3.10");
  EXPECT_NE(init["command"][2].get<std::string>().find("nslookup mnist-master-0"),
            std::string::npos);
  EXPECT_NE(init["command"][2].get<std::string>().find("seq 100"), std::string::npos);
}

TEST(PodBuilderTest, HeadlessServicePerReplica) {
  api::Job job = Load(kPyTorch);
  StatusOr<json> service = BuildService(job, "Worker", 0);
  ASSERT_TRUE(service.ok()) << service.status().message();
  json selector = {{"training.kubeflow.org/operator-name", "pytorchjob-controller"},
                   {"training.kubeflow.org/job-name", "mnist"},
                   {"training.kubeflow.org/replica-type", "worker"},
                   {"training.kubeflow.org/replica-index", "0"}};
  EXPECT_EQ((*service)["metadata"]["name"], "mnist-worker-0");
  EXPECT_EQ((*service)["metadata"]["labels"], selector);
  EXPECT_EQ((*service)["spec"]["selector"], selector);
  EXPECT_EQ((*service)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*service)["spec"]["ports"],
            json::array({{{"name", "pytorchjob-port"}, {"port", 23456}}}));
  EXPECT_EQ((*service)["metadata"]["ownerReferences"][0]["kind"], "PyTorchJob");
}

TEST(PodBuilderTest, TfConfigOnlyOnTheTensorflowContainer) {
  api::Job job = Load(R"yaml(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dist, namespace: ml}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: tf:2}
          - {name: sidecar, image: s:1}
)yaml");
  frameworks::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 1, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& containers = built->pod["spec"]["containers"];
  EXPECT_NE(EnvValue(containers[0], "TF_CONFIG"), "<unset>");
  EXPECT_EQ(EnvNames(containers[1]).size(), 0u);
  EXPECT_EQ(built->pod["metadata"]["labels"]["training.kubeflow.org/operator-name"],
            "tfjob-controller");
}

TEST(PodBuilderTest, MpiIsRefusedForNow) {
  api::Job job = Load(R"yaml(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: m}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: mpi, image: m:1}]}}
)yaml");
  frameworks::ServiceEndpoints endpoints(job.name, job.namespace_);
  EXPECT_EQ(BuildPod(job, "Launcher", 0, endpoints, {}).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace trainctl::op
