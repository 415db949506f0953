// TrainJob (Trainer v2) through the loader: decoding, upstream's checks with field paths, the
// runtime found and resolved into replica groups (overrides, initializers, runtimePatches,
// dependsOn, successPolicy), and each trainer node's env per mlPolicy.
#include <gtest/gtest.h>

#include "api/kind_plugin.h"
#include "api/manifest.h"
#include "api/trainjob_resolve.h"

namespace trainctl::kinds::trainjob_test {
namespace {

const char* kTorchRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-distributed, labels: {trainer.kubeflow.org/framework: torch}}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: torch-img}
)";

const char* kInitRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: with-init, namespace: team}
spec:
  mlPolicy: {numNodes: 2, jax: {}}
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}}
          spec:
            template:
              spec:
                containers:
                - {name: dataset-initializer, image: init, env: [{name: STORAGE_URI, value: old}]}
                - {name: sidecar, image: side}
      - name: node
        dependsOn: [{name: dataset-initializer, status: Complete}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                restartPolicy: Never
                containers:
                - {name: node, image: jax-img}
)";

std::string TrainJob(const std::string& spec, const std::string& meta = "name: tj") {
  return "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {" + meta +
         "}\nspec:\n" + spec;
}

StatusOr<std::vector<api::LoadedJob>> Load(const std::string& yaml) {
  api::ManifestExtras extras;
  return api::LoadJobsFromText(yaml, "tj.yaml", &extras);
}

api::Job LoadOk(const std::string& yaml) {
  auto jobs = Load(yaml);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() ? (*jobs)[0].job : api::Job{};
}

std::string LoadError(const std::string& yaml) {
  auto jobs = Load(yaml);
  return jobs.ok() ? "<loaded>" : jobs.status().message();
}

class HostEndpoints : public api::Endpoints {
 public:
  std::string Host(const std::string& type, int index) const override {
    return type + "-" + std::to_string(index);
  }
  std::string ServiceHost(const std::string& t, int i) const override { return Host(t, i); }
  int Port(const std::string&, int, int declared) const override { return declared + 1; }
};

std::map<std::string, std::string> EnvOf(const api::Job& job, const std::string& type, int i) {
  StatusOr<api::ReplicaEnv> env = api::PluginFor(job.kind).EnvFor(job, type, i, HostEndpoints());
  EXPECT_TRUE(env.ok()) << env.status().ToString();
  std::map<std::string, std::string> out;
  if (env.ok())
    for (const api::EnvVar& e : env->env) out[e.name] = e.value;
  return out;
}

const nlohmann::json& NodeContainer(const api::Job& job, const std::string& group) {
  return job.replica_specs.at(group).pod_template["spec"]["containers"][0];
}

TEST(TrainJobTest, TorchRuntimeBecomesTheNodeGroupWithTheTrainersOverrides) {
  api::Job job = LoadOk(std::string(kTorchRuntime) + TrainJob(R"(
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 2
    image: mine
    command: [torchrun, train.py]
    env: [{name: EPOCHS, value: "3"}]
)"));
  EXPECT_EQ(job.kind, api::Kind::kTrainJob);
  EXPECT_EQ(job.train_job->runtime_ref.kind, "ClusterTrainingRuntime");  // schema default
  EXPECT_EQ(job.run_policy.managed_by, api::kManagedByTrainer);
  ASSERT_EQ(job.group_order, std::vector<std::string>{"node"});
  EXPECT_EQ(job.trainer_group, "node");
  EXPECT_EQ(job.replica_specs["node"].replicas, 2);
  EXPECT_EQ(job.replica_specs["node"].restart_policy, "OnFailure");  // JobSet's default
  EXPECT_EQ(job.run_policy.backoff_limit, 6);                        // a batch Job's
  const nlohmann::json& c = NodeContainer(job, "node");
  EXPECT_EQ(c["image"], "mine");
  EXPECT_EQ(c["command"], nlohmann::json({"torchrun", "train.py"}));
  EXPECT_EQ(c["env"][0]["name"], "EPOCHS");
  auto env = EnvOf(job, "node", 1);
  EXPECT_EQ(env["PET_NNODES"], "2");
  EXPECT_EQ(env["PET_NPROC_PER_NODE"], "1");  // no GPU, no CPU request
  EXPECT_EQ(env["PET_NODE_RANK"], "1");
  EXPECT_EQ(env["PET_MASTER_ADDR"], "node-0");
  EXPECT_EQ(env["PET_MASTER_PORT"], "29501");
  EXPECT_TRUE(api::PluginFor(job.kind).IsMasterRole(job, "node", 0));
}

class JobSetLikeEndpoints : public HostEndpoints {
 public:
  bool IndexFromPod() const override { return true; }
};

TEST(TrainJobTest, OneTemplateForEveryNodeReadsItsRankInThePod) {
  api::Job job =
      LoadOk(std::string(kTorchRuntime) +
             TrainJob("  runtimeRef: {name: torch-distributed}\n  trainer: {numNodes: 2}\n"));
  StatusOr<api::ReplicaEnv> env =
      api::PluginFor(job.kind).EnvFor(job, "node", 1, JobSetLikeEndpoints());
  ASSERT_TRUE(env.ok());
  bool found = false;
  for (const api::EnvVar& e : env->env) {
    if (e.name != "PET_NODE_RANK") continue;
    found = true;
    EXPECT_EQ(e.value, "");
    EXPECT_EQ(e.value_from["fieldRef"]["fieldPath"],
              "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  }
  EXPECT_TRUE(found);
}

TEST(TrainJobTest, ProcsPerNodeFollowUpstreamsRule) {
  auto procs = [](const std::string& trainer) {
    api::Job job =
        LoadOk(std::string(kTorchRuntime) +
               TrainJob("  runtimeRef: {name: torch-distributed}\n  trainer:\n" + trainer));
    return EnvOf(job, "node", 0)["PET_NPROC_PER_NODE"];
  };
  EXPECT_EQ(procs("    numProcPerNode: 4\n"), "4");
  EXPECT_EQ(procs("    resourcesPerNode: {requests: {cpu: '2500m'}}\n"), "3");
  EXPECT_EQ(procs("    resourcesPerNode: {limits: {cpu: 2}}\n"), "2");
  EXPECT_EQ(procs("    resourcesPerNode: {limits: {nvidia.com/gpu: 1}}\n"), "auto");
}

TEST(TrainJobTest, ResourcesPerNodeMergeIntoTheRuntimesAsUpstream) {
  std::string rt = kTorchRuntime;
  rt.replace(rt.find("{name: node, image: torch-img}"), 30,
             "{name: node, image: torch-img, resources: {limits: {memory: 1Gi, cpu: 1}}}");
  api::Job job = LoadOk(rt + TrainJob(R"(
  runtimeRef: {name: torch-distributed}
  trainer: {resourcesPerNode: {limits: {cpu: 4}, requests: {cpu: 2}}}
)"));
  const nlohmann::json& res = NodeContainer(job, "node")["resources"];
  EXPECT_EQ(res["limits"]["memory"], "1Gi") << "a runtime limit the TrainJob does not name stays";
  EXPECT_EQ(res["limits"]["cpu"], 4);
  EXPECT_EQ(res["requests"]["cpu"], 2);
}

TEST(TrainJobTest, WithoutATrainerSectionNoPolicyGetsEnvAsUpstream) {
  std::string jax = kTorchRuntime;
  jax.replace(jax.find("torch: {}"), 9, "jax: {}");
  api::Job job = LoadOk(jax + TrainJob("  runtimeRef: {name: torch-distributed}\n"));
  EXPECT_TRUE(EnvOf(job, "node", 0).empty());
}

TEST(TrainJobTest, WithoutATrainerSectionTorchGetsNoPetEnvAsUpstream) {
  api::Job job =
      LoadOk(std::string(kTorchRuntime) + TrainJob("  runtimeRef: {name: torch-distributed}\n"));
  EXPECT_EQ(job.replica_specs["node"].replicas, 1);  // mlPolicy.numNodes
  EXPECT_TRUE(EnvOf(job, "node", 0).empty());
}

TEST(TrainJobTest, InitializerRunsFirstWithItsStorageUri) {
  api::Job job = LoadOk(std::string(kInitRuntime) + TrainJob(R"(
  runtimeRef: {name: with-init, kind: TrainingRuntime}
  initializer:
    dataset: {storageUri: "hf://tatsu-lab/alpaca", secretRef: {name: hf-token}}
  trainer: {}
)",
                                                             "name: tj, namespace: team"));
  ASSERT_EQ(job.group_order, (std::vector<std::string>{"dataset-initializer", "node"}));
  EXPECT_EQ(job.replica_specs["dataset-initializer"].replicas, 1);
  EXPECT_EQ(job.replica_specs["node"].replicas, 2);
  EXPECT_EQ(job.replica_specs["node"].restart_policy, "Never");
  ASSERT_EQ(job.replica_specs["node"].depends_on.size(), 1u);
  EXPECT_EQ(job.replica_specs["node"].depends_on[0].type, "dataset-initializer");
  EXPECT_EQ(job.replica_specs["node"].depends_on[0].until, api::GroupDependency::Until::kComplete);
  const nlohmann::json& init = NodeContainer(job, "dataset-initializer");
  EXPECT_EQ(init["env"],
            nlohmann::json::parse(R"([{"name":"STORAGE_URI","value":"hf://tatsu-lab/alpaca"}])"));
  EXPECT_EQ(init["envFrom"][0]["secretRef"]["name"], "hf-token");
  auto env = EnvOf(job, "node", 1);
  EXPECT_EQ(env["JAX_NUM_PROCESSES"], "2");
  EXPECT_EQ(env["JAX_PROCESS_ID"], "1");
  EXPECT_EQ(env["JAX_COORDINATOR_ADDRESS"], "node-0:29501");
  EXPECT_TRUE(EnvOf(job, "dataset-initializer", 0).empty());
}

TEST(TrainJobTest, RuntimePatchesApplyInOrder) {
  api::Job job = LoadOk(std::string(kInitRuntime) + TrainJob(R"(
  runtimeRef: {name: with-init, kind: TrainingRuntime}
  runtimePatches:
  - manager: example.com/tool
    trainingRuntimeSpec:
      template:
        spec:
          replicatedJobs:
          - name: dataset-initializer
            template:
              spec:
                template:
                  metadata: {labels: {team: a}}
                  spec:
                    nodeSelector: {disk: ssd}
                    containers:
                    - {name: sidecar, env: [{name: MODE, value: fast}]}
)",
                                                             "name: tj, namespace: team"));
  const nlohmann::json& tmpl = job.replica_specs["dataset-initializer"].pod_template;
  EXPECT_EQ(tmpl["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(tmpl["spec"]["nodeSelector"]["disk"], "ssd");
  EXPECT_EQ(tmpl["spec"]["containers"][1]["env"][0]["value"], "fast");
}

TEST(TrainJobTest, XGBoostEnvCountsWorkersPerGpu) {
  std::string rt = kTorchRuntime;
  rt.replace(rt.find("torch: {}"), 9, "xgboost: {}");
  api::Job job = LoadOk(rt + TrainJob(R"(
  runtimeRef: {name: torch-distributed}
  trainer: {numNodes: 3, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}
)"));
  auto env = EnvOf(job, "node", 2);
  EXPECT_EQ(env["DMLC_TRACKER_URI"], "node-0");
  EXPECT_EQ(env["DMLC_TRACKER_PORT"], "29501");
  EXPECT_EQ(env["DMLC_TASK_ID"], "2");
  EXPECT_EQ(env["DMLC_NUM_WORKER"], "6");
}

TEST(TrainJobTest, AMissingRuntimeIsNamedWithWhereItWasSought) {
  std::string err =
      LoadError(std::string(kTorchRuntime) + TrainJob("  runtimeRef: {name: torch-distributd}\n"));
  EXPECT_NE(err.find("tj.yaml (document 2)"), std::string::npos) << err;
  EXPECT_NE(err.find("spec.runtimeRef.name: Not found: \"torch-distributd\""), std::string::npos)
      << err;
  EXPECT_NE(err.find("among the ClusterTrainingRuntimes"), std::string::npos) << err;
  EXPECT_NE(err.find("found: ClusterTrainingRuntime torch-distributed"), std::string::npos) << err;
}

TEST(TrainJobTest, ATrainingRuntimeOfAnotherNamespaceIsNotFound) {
  std::string err = LoadError(std::string(kInitRuntime) +
                              TrainJob("  runtimeRef: {name: with-init, kind: TrainingRuntime}\n"));
  EXPECT_NE(err.find("the TrainingRuntimes of namespace default"), std::string::npos) << err;
  EXPECT_NE(err.find("TrainingRuntime team/with-init"), std::string::npos) << err;
}

TEST(TrainJobTest, BadTrainJobsAreRefusedWithUpstreamsMessages) {
  const std::string rt = kTorchRuntime;
  auto err = [&](const std::string& spec, const std::string& meta = "name: tj") {
    return LoadError(rt + TrainJob("  runtimeRef: {name: torch-distributed}\n" + spec, meta));
  };
  EXPECT_NE(err("  trainer: {numNodes: 0}\n").find("spec.trainer.numNodes: Invalid value: 0"),
            std::string::npos);
  EXPECT_NE(err("", "name: Bad_Name").find("metadata.name must match RFC 1035 DNS label format"),
            std::string::npos);
  EXPECT_NE(err("  managedBy: me/ctl\n")
                .find("ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                      "kueue.x-k8s.io/multikueue if set"),
            std::string::npos);
  EXPECT_NE(err("  initializer: {model: {storageUri: 'not a uri'}}\n")
                .find("spec.initializer.model.storageUri: Invalid value: \"not a uri\": "
                      "storageUri may be empty"),
            std::string::npos);
  EXPECT_NE(err("  initializer: {model: {storageUri: 'hf://m'}}\n")
                .find("must have model-initializer job when trainJob is configured with input "
                      "modelConfig"),
            std::string::npos);
  EXPECT_NE(err("  trainer: {env: [{name: PET_NNODES, value: '9'}]}\n")
                .find("must not have reserved envs, invalid envs configured: [PET_NNODES]"),
            std::string::npos);
  EXPECT_NE(
      err("  trainer: {numNodes: two}\n")
          .find(
              "spec.trainer.numNodes: Invalid value: \"two\": must be of type integer, got string"),
      std::string::npos);
  EXPECT_NE(err("  runtimePatches: [{manager: example.com/x, trainingRuntimeSpec: {template: "
                "{spec: {replicatedJobs: [{name: launcher}]}}}}]\n")
                .find("must not have replicated job that doesn't exist in the runtime job "
                      "template"),
            std::string::npos);
  EXPECT_NE(err("  runtimePatches: [{manager: nodomain}]\n")
                .find("spec.runtimePatches[0].manager: Invalid value: \"nodomain\""),
            std::string::npos);
}

TEST(TrainJobTest, NumProcPerNodeIsRefusedWhereThePolicyStartsOneProcess) {
  std::string rt = kTorchRuntime;
  rt.replace(rt.find("torch: {}"), 9, "jax: {}");
  std::string err = LoadError(
      rt + TrainJob("  runtimeRef: {name: torch-distributed}\n  trainer: {numProcPerNode: 2}\n"));
  EXPECT_NE(err.find("spec.trainer.numProcPerNode: Forbidden: the runtime torch-distributed "
                     "(mlPolicy jax) starts one process per node"),
            std::string::npos)
      << err;
}

TEST(TrainJobTest, BadRuntimesAreRefusedWithFieldPaths) {
  auto err = [](std::string rt) { return LoadError(rt + TrainJob("  runtimeRef: {name: x}\n")); };
  std::string two = kTorchRuntime;
  two.replace(two.find("torch: {}"), 9, "torch: {}, jax: {}");
  EXPECT_NE(err(two).find("spec.mlPolicy: Invalid value"), std::string::npos);
  EXPECT_NE(err(two).find("Only one of the policy can be configured"), std::string::npos);
  std::string replicas = kTorchRuntime;
  replicas.replace(replicas.find("- name: node"), 12, "- name: node\n        replicas: 2");
  EXPECT_NE(err(replicas).find("spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: "
                               "always must be 1"),
            std::string::npos)
      << err(replicas);
  std::string no_trainer = kTorchRuntime;
  no_trainer.replace(no_trainer.find("trainjob-ancestor-step: trainer"), 31,
                     "trainjob-ancestor-step: other");
  EXPECT_NE(err(no_trainer).find("so a TrainJob has no step to train in"), std::string::npos)
      << err(no_trainer);
  std::string no_node = kTorchRuntime;
  no_node.replace(no_node.find("{name: node, image"), 11, "{name: main");
  EXPECT_NE(err(no_node).find("must contain the required container for the ancestor: trainer"),
            std::string::npos)
      << err(no_node);
}

TEST(TrainJobTest, EncodesAsATrainJobAndDecodesBack) {
  api::Job job = LoadOk(std::string(kTorchRuntime) + TrainJob(R"(
  runtimeRef: {name: torch-distributed}
  activeDeadlineSeconds: 60
  suspend: true
)"));
  nlohmann::json doc = api::EncodeJob(job);
  EXPECT_EQ(doc["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_FALSE(doc["spec"].contains("runPolicy"));
  EXPECT_EQ(doc["spec"]["suspend"], true);
  EXPECT_EQ(doc["spec"]["activeDeadlineSeconds"], 60);
  EXPECT_EQ(doc["spec"]["runtimeRef"]["apiGroup"], "trainer.kubeflow.org");
  StatusOr<api::Job> back = api::DecodeJob(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run_policy.suspend, true);
  EXPECT_EQ(back->train_job->runtime_ref.name, "torch-distributed");
}

}  // namespace
}  // namespace trainctl::kinds::trainjob_test
