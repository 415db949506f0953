// A resolved TrainJob → the JobSet upstream's trainjob-controller applies (the example on the
// built-in torch-distributed runtime; initializers, patches, jax, xgboost, envInjection, MPI's
// keys, hostfile and launcher env; flux refused), and the TrainJob status read back from a JobSet.
#include "operator/trainjob_jobset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/manifest.h"
#include "operator/trainjob_mpi.h"

namespace trainctl::op {
namespace {

using nlohmann::json;

std::string RepoFileText(const std::string& rel) {
  std::filesystem::path root = std::filesystem::path(__FILE__).parent_path().parent_path() / "..";
  std::ifstream in(root / rel);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << rel;
  return s.str();
}

// Loads `yaml` (TrainJob and runtimes) with the built-in torch-distributed runtime available.
api::Job LoadTrainJob(const std::string& yaml) {
  api::ManifestExtras extras;
  auto runtimes =
      api::LoadRuntimesFromText(RepoFileText("runtimes/torch-distributed.yaml"), "built-in");
  EXPECT_TRUE(runtimes.ok()) << runtimes.status().ToString();
  if (runtimes.ok())
    for (auto& rt : *runtimes) extras.runtimes.Add(rt);
  auto jobs = api::LoadJobsFromText(yaml, "tj.yaml", &extras);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return jobs.ok() && !jobs->empty() ? (*jobs)[0].job : api::Job{};
}

json BuildFrom(const std::string& yaml) {
  StatusOr<json> js = BuildJobSet(LoadTrainJob(yaml), "uid-1");
  EXPECT_TRUE(js.ok()) << js.status().ToString();
  return js.ok() ? *js : json::object();
}

const json& ReplicatedJob(const json& jobset, const std::string& name) {
  static const json kNone = json::object();
  for (const json& rj : jobset["spec"]["replicatedJobs"])
    if (rj["name"] == name) return rj;
  ADD_FAILURE() << "no replicated job " << name;
  return kNone;
}

const json& ContainerOf(const json& rj, const std::string& name) {
  static const json kNone = json::object();
  for (const json& c : rj["template"]["spec"]["template"]["spec"]["containers"])
    if (c["name"] == name) return c;
  ADD_FAILURE() << "no container " << name;
  return kNone;
}

// name → value, or the valueFrom's dump.
std::map<std::string, std::string> EnvOf(const json& container) {
  std::map<std::string, std::string> out;
  for (const json& e : container.value("env", json::array()))
    out[e["name"]] = e.contains("valueFrom") ? e["valueFrom"].dump() : e.value("value", "");
  return out;
}

const std::string kRankRef =
    R"({"fieldRef":{"fieldPath":"metadata.annotations['batch.kubernetes.io/job-completion-index']"}})";

TEST(TrainJobJobSetTest, TheTorchExampleOnTheBuiltInRuntime) {
  const std::string example = RepoFileText("examples/pytorch/trainjob.yaml");
  json js = BuildFrom(example);
  EXPECT_EQ(js["apiVersion"], "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(js["kind"], "JobSet");
  EXPECT_EQ(js["metadata"]["name"], "torch-digits");
  EXPECT_EQ(js["metadata"]["namespace"], "default");
  EXPECT_FALSE(js["metadata"].contains("labels"));  // the runtime's template has none
  EXPECT_EQ(js["metadata"]["ownerReferences"],
            json::parse(R"([{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "name": "torch-digits", "uid": "uid-1", "controller": true,
                "blockOwnerDeletion": true}])"));
  EXPECT_EQ(js["spec"]["suspend"], false);
  ASSERT_EQ(js["spec"]["replicatedJobs"].size(), 1u);
  const json& node = ReplicatedJob(js, "node");
  EXPECT_EQ(node["replicas"], 1);
  EXPECT_EQ(node["template"]["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"],
            "trainer");
  EXPECT_EQ(node["template"]["spec"]["parallelism"], 2);
  EXPECT_EQ(node["template"]["spec"]["completions"], 2);
  EXPECT_EQ(node["template"]["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
  const json& c = ContainerOf(node, "node");
  EXPECT_EQ(c["image"], "docker.io/pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime");
  EXPECT_EQ(c["command"], json({"torchrun", "train_ddp.py"}));
  EXPECT_EQ(c["ports"], json::parse(R"([{"containerPort": 29500}])"));
  std::map<std::string, std::string> want = {
      {"PET_REDIRECTS", "9:1"},    {"PET_TEE", "9:1"},
      {"PET_NNODES", "2"},         {"PET_NPROC_PER_NODE", "2"},
      {"PET_NODE_RANK", kRankRef}, {"PET_MASTER_ADDR", "torch-digits-node-0-0.torch-digits"},
      {"PET_MASTER_PORT", "29500"}};
  EXPECT_EQ(EnvOf(c), want);
  EXPECT_EQ(c["env"][0]["name"], "PET_REDIRECTS");  // the runtime's env first, kept in place

  json suspended = BuildFrom(example + "  suspend: true\n");
  EXPECT_EQ(suspended["spec"]["suspend"], true);
}

const char* kInitJaxRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: with-init, namespace: team}
spec:
  mlPolicy: {numNodes: 2, jax: {}}
  template:
    metadata:
      labels: {team: vision, tier: runtime}
      annotations: {note: from-runtime}
    spec:
      network: {enableDNSHostnames: true, publishNotReadyAddresses: true}
      successPolicy: {operator: All, targetReplicatedJobs: [node]}
      failurePolicy: {maxRestarts: 3}
      startupPolicy: {startupPolicyOrder: AnyOrder}
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
            backoffLimit: 2
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: node
                  image: jax-img
                  ports: [{name: metrics, containerPort: 9090}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: jx, namespace: team}
spec:
  runtimeRef: {name: with-init, kind: TrainingRuntime}
  initializer:
    dataset: {storageUri: "hf://tatsu-lab/alpaca"}
)";

TEST(TrainJobJobSetTest, AnInitializerRuntimeKeepsEveryJobSetFieldAndDependsOn) {
  json js = BuildFrom(std::string(kInitJaxRuntime) + "  trainer: {numNodes: 3}\n");
  EXPECT_EQ(js["metadata"]["namespace"], "team");
  EXPECT_EQ(js["metadata"]["labels"], json::parse(R"({"team": "vision", "tier": "runtime"})"));
  EXPECT_EQ(js["metadata"]["annotations"], json::parse(R"({"note": "from-runtime"})"));
  for (const char* field : {"network", "successPolicy", "failurePolicy", "startupPolicy"})
    EXPECT_TRUE(js["spec"].contains(field)) << field;
  EXPECT_EQ(js["spec"]["failurePolicy"]["maxRestarts"], 3);
  ASSERT_EQ(js["spec"]["replicatedJobs"].size(), 2u);
  EXPECT_EQ(js["spec"]["replicatedJobs"][0]["name"], "dataset-initializer");  // runtime's order

  const json& init = ReplicatedJob(js, "dataset-initializer");
  EXPECT_EQ(init["replicas"], 1);
  EXPECT_EQ(init["template"]["spec"]["parallelism"], 1);
  EXPECT_EQ(init["template"]["spec"]["completions"], 1);
  EXPECT_EQ(EnvOf(ContainerOf(init, "dataset-initializer"))["STORAGE_URI"],
            "hf://tatsu-lab/alpaca");
  EXPECT_FALSE(ContainerOf(init, "sidecar").contains("env"));

  const json& node = ReplicatedJob(js, "node");
  EXPECT_EQ(node["dependsOn"], json::parse(R"([{"name": "dataset-initializer",
                                               "status": "Complete"}])"));
  EXPECT_EQ(node["template"]["spec"]["backoffLimit"], 2);
  EXPECT_EQ(node["template"]["spec"]["parallelism"], 3);
  EXPECT_EQ(node["template"]["spec"]["template"]["spec"]["restartPolicy"], "Never");
  const json& c = ContainerOf(node, "node");
  std::map<std::string, std::string> want = {{"JAX_NUM_PROCESSES", "3"},
                                             {"JAX_PROCESS_ID", kRankRef},
                                             {"JAX_COORDINATOR_ADDRESS", "jx-node-0-0.jx:29500"}};
  EXPECT_EQ(EnvOf(c), want);
  // A named port of another number stays; 29500 is added.
  EXPECT_EQ(c["ports"], json::parse(R"([{"name": "metrics", "containerPort": 9090},
                                        {"containerPort": 29500}])"));
}

TEST(TrainJobJobSetTest, WithoutATrainerSectionNoPolicyEnvAndNoPortAsUpstream) {
  json js = BuildFrom(kInitJaxRuntime);
  const json& c = ContainerOf(ReplicatedJob(js, "node"), "node");
  EXPECT_FALSE(c.contains("env")) << c.dump();
  EXPECT_EQ(c["ports"].size(), 1u);
  EXPECT_EQ(ReplicatedJob(js, "node")["template"]["spec"]["parallelism"], 2);  // mlPolicy.numNodes
}

TEST(TrainJobJobSetTest, RuntimePatchesLabelsLandOnTheJobSetTheJobAndThePods) {
  json js = BuildFrom(std::string(kInitJaxRuntime) + R"(  trainer: {}
  runtimePatches:
  - manager: kueue.x-k8s.io/manager
    trainingRuntimeSpec:
      template:
        metadata:
          labels: {tier: patched, kueue.x-k8s.io/queue-name: q}
          annotations: {patched: "yes"}
        spec:
          replicatedJobs:
          - name: node
            template:
              metadata: {labels: {job-label: j}}
              spec:
                template:
                  metadata: {labels: {pod-label: p}}
                  spec: {nodeSelector: {pool: gpu}}
)");
  EXPECT_EQ(
      js["metadata"]["labels"],
      json::parse(R"({"team": "vision", "tier": "patched", "kueue.x-k8s.io/queue-name": "q"})"));
  EXPECT_EQ(js["metadata"]["annotations"],
            json::parse(R"({"note": "from-runtime", "patched": "yes"})"));
  const json& node = ReplicatedJob(js, "node");
  EXPECT_EQ(node["template"]["metadata"]["labels"]["job-label"], "j");
  EXPECT_EQ(node["template"]["metadata"]["labels"]["trainer.kubeflow.org/trainjob-ancestor-step"],
            "trainer");
  EXPECT_EQ(node["template"]["spec"]["template"]["metadata"]["labels"]["pod-label"], "p");
  EXPECT_EQ(node["template"]["spec"]["template"]["spec"]["nodeSelector"]["pool"], "gpu");
  EXPECT_FALSE(ReplicatedJob(js, "dataset-initializer")["template"]["metadata"]["labels"].contains(
      "job-label"));
}

TEST(TrainJobJobSetTest, XGBoostEnvOnTheNodeContainer) {
  json js = BuildFrom(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: xgb}
spec:
  mlPolicy: {numNodes: 1, xgboost: {}}
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
                - {name: node, image: xgb-img, ports: [{containerPort: 8080}]}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: xg}
spec:
  runtimeRef: {name: xgb}
  trainer:
    numNodes: 2
    resourcesPerNode: {limits: {nvidia.com/gpu: 2}}
)");
  const json& c = ContainerOf(ReplicatedJob(js, "node"), "node");
  std::map<std::string, std::string> want = {{"DMLC_TRACKER_URI", "xg-node-0-0.xg"},
                                             {"DMLC_TRACKER_PORT", "29500"},
                                             {"DMLC_TASK_ID", kRankRef},
                                             {"DMLC_NUM_WORKER", "4"}};
  EXPECT_EQ(EnvOf(c), want);
  // Upstream's upsert matches a port without a name: 8080 is replaced by 29500.
  EXPECT_EQ(c["ports"], json::parse(R"([{"containerPort": 29500}])"));
}

TEST(TrainJobJobSetTest, TorchEnvInjectionTargetsGetTheTorchEnv) {
  json js = BuildFrom(R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch-inj}
spec:
  mlPolicy:
    numNodes: 2
    torch:
      envInjection:
        targets: [{jobName: node, containerNames: [preflight]}]
  template:
    spec:
      replicatedJobs:
      - name: node
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                initContainers: [{name: preflight, image: check}]
                containers: [{name: node, image: torch-img}]
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: inj}
spec:
  runtimeRef: {name: torch-inj}
)");
  const json& pod = ReplicatedJob(js, "node")["template"]["spec"]["template"]["spec"];
  std::map<std::string, std::string> env = EnvOf(pod["initContainers"][0]);
  EXPECT_EQ(env["PET_MASTER_ADDR"], "inj-node-0-0.inj");
  EXPECT_EQ(env["PET_NNODES"], "2");
  EXPECT_EQ(env["PET_NODE_RANK"], kRankRef);
  EXPECT_FALSE(pod["containers"][0].contains("env"));  // no trainer section: the node gets none
}

TEST(TrainJobJobSetTest, AGangTrainJobRestartsThroughJobSetsFailurePolicy) {
  std::string gang = RepoFileText("examples/pytorch/trainjob.yaml");
  gang.replace(gang.find("  name: torch-digits"), 20,
               "  name: torch-digits\n  annotations: {trainctl.dev/restart-scope: Gang}");
  json js = BuildFrom(gang);
  EXPECT_EQ(js["spec"]["failurePolicy"]["maxRestarts"], 6) << "the trainer Job's backoffLimit";
  const json& node = ReplicatedJob(js, "node");
  EXPECT_EQ(node["template"]["spec"]["backoffLimit"], 0);
  EXPECT_EQ(node["template"]["spec"]["template"]["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(
      EnvOf(ContainerOf(node, "node"))["TRAINCTL_RESTART_ATTEMPT"],
      R"({"fieldRef":{"fieldPath":"metadata.labels['jobset.sigs.k8s.io/restart-attempt']"}})");
  json plain = BuildFrom(RepoFileText("examples/pytorch/trainjob.yaml"));
  EXPECT_FALSE(plain["spec"].contains("failurePolicy"));
  EXPECT_FALSE(ReplicatedJob(plain, "node")["template"]["spec"].contains("backoffLimit"));
}

// Upstream's deepspeed-distributed shape: MPI, OpenMPI, mpiuser's keys, the launcher a node.
const char* kDeepSpeedRuntime = R"(
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: ds}
spec:
  mlPolicy:
    numNodes: 1
    mpi: {numProcPerNode: 1, sshAuthMountPath: /home/mpiuser/.ssh, runLauncherAsNode: true}
  template:
    spec:
      network: {publishNotReadyAddresses: true}
      successPolicy: {operator: All, targetReplicatedJobs: [launcher]}
      replicatedJobs:
      - name: node
        template:
          spec:
            template:
              spec:
                containers:
                - {name: node, image: ds, command: [/usr/sbin/sshd], args: [-De]}
      - name: launcher
        dependsOn: [{name: node, status: Ready}]
        template:
          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
          spec:
            template:
              spec:
                containers:
                - {name: node, image: ds}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tj, namespace: team}
spec:
  runtimeRef: {name: ds}
)";

const json* Named(const json& list, const std::string& name) {
  if (!list.is_array()) return nullptr;
  for (const json& e : list)
    if (e.value("name", "") == name) return &e;
  return nullptr;
}

TEST(TrainJobJobSetTest, AnMpiTrainJobGetsUpstreamsKeysHostfileAndLauncherEnv) {
  api::Job job = LoadTrainJob(std::string(kDeepSpeedRuntime) +
                              "  trainer: {numNodes: 3, numProcPerNode: 2, command: [mpirun]}\n");
  ASSERT_TRUE(job.IsMpiTrainJob());
  // The launcher is the trainer step, one pod; the `node` job takes the other two nodes.
  EXPECT_EQ(job.MpiLauncherGroup(), "launcher");
  EXPECT_EQ(job.ReplicasOf("launcher"), 1);
  EXPECT_EQ(job.ReplicasOf("node"), 2);
  EXPECT_EQ(job.slots_per_worker, 2);
  StatusOr<json> built = BuildJobSet(job, "uid-1");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const json& node = ReplicatedJob(*built, "node");
  const json& launcher = ReplicatedJob(*built, "launcher");
  EXPECT_EQ(node["template"]["spec"]["parallelism"], 2);
  EXPECT_EQ(launcher["template"]["spec"]["parallelism"], 1);
  EXPECT_EQ(ContainerOf(launcher, "node")["command"], json::array({"mpirun"}));
  EXPECT_EQ(ContainerOf(node, "node")["command"], json::array({"/usr/sbin/sshd"}));

  std::map<std::string, std::string> env = EnvOf(ContainerOf(launcher, "node"));
  EXPECT_EQ(env["OMPI_MCA_orte_default_hostfile"], "/etc/mpi/hostfile");
  EXPECT_EQ(env["OMPI_MCA_orte_keep_fqdn_hostnames"], "true");
  EXPECT_EQ(env["OMPI_MCA_orte_set_default_slots"], "2");
  EXPECT_EQ(env["OMPI_MCA_plm_rsh_args"], "-o ConnectionAttempts=10");
  EXPECT_TRUE(EnvOf(ContainerOf(node, "node")).count("OMPI_MCA_orte_default_hostfile") == 0);
  EXPECT_FALSE(ContainerOf(launcher, "node").contains("ports")) << "MPI opens no torch port";

  // The key Secret on both jobs at sshAuthMountPath; the hostfile at /etc/mpi on the launcher.
  for (const json* rj : {&node, &launcher}) {
    const json& pod = (*rj)["template"]["spec"]["template"]["spec"];
    const json* ssh = Named(pod["volumes"], "mpi-ssh-auth");
    ASSERT_NE(ssh, nullptr) << (*rj)["name"];
    EXPECT_EQ((*ssh)["secret"]["secretName"], "tj-mpi-ssh-auth");
    EXPECT_EQ((*ssh)["secret"]["defaultMode"], 0640);
    EXPECT_EQ((*ssh)["secret"]["items"].size(), 3u);
    const json* mount = Named(ContainerOf(*rj, "node")["volumeMounts"], "mpi-ssh-auth");
    ASSERT_NE(mount, nullptr);
    EXPECT_EQ((*mount)["mountPath"], "/home/mpiuser/.ssh");
    EXPECT_EQ(Named(pod["volumes"], "mpi-hostfile") != nullptr, rj == &launcher);
  }
  const json* hostfile = Named(ContainerOf(launcher, "node")["volumeMounts"], "mpi-hostfile");
  ASSERT_NE(hostfile, nullptr);
  EXPECT_EQ((*hostfile)["mountPath"], "/etc/mpi");

  // One line per host, in the runtime's job order, the launcher listed as it runs ranks too.
  EXPECT_EQ(TrainJobMpiHostfile(job, ""),
            "tj-node-0-0.tj slots=2\ntj-node-0-1.tj slots=2\ntj-launcher-0-0.tj slots=2\n");
  EXPECT_EQ(TrainJobMpiHostfile(job, "net"),
            "tj-node-0-0.net slots=2\ntj-node-0-1.net slots=2\ntj-launcher-0-0.net slots=2\n");
  json cm = TrainJobMpiHostfileConfigMap(job, "uid-1", "");
  EXPECT_EQ(cm["metadata"]["name"], "tj-mpi-hostfile");
  EXPECT_EQ(cm["metadata"]["namespace"], "team");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["controller"], true);
  json secret = TrainJobMpiSecret(job, "uid-1", SshKeyPair{"PRIVATE", "ssh-ecdsa PUB\n"});
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_EQ(secret["immutable"], true);
  EXPECT_EQ(secret["metadata"]["name"], "tj-mpi-ssh-auth");
  EXPECT_EQ(secret["data"]["ssh-privatekey"], "UFJJVkFURQ==");
}

TEST(TrainJobJobSetTest, MpiSlotsFollowTheRuntimeOrTheGpusAndNodesWithoutALauncherNode) {
  std::string runtime = kDeepSpeedRuntime;
  // No trainer section: the launcher env all the same (upstream's MPI plugin), one slot.
  api::Job plain = LoadTrainJob(runtime);
  StatusOr<json> built = BuildJobSet(plain, "u");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_EQ(EnvOf(ContainerOf(ReplicatedJob(*built, "launcher"),
                              "node"))["OMPI_MCA_orte_set_default_slots"],
            "1");
  EXPECT_EQ(plain.ReplicasOf("node"), 1) << "one node at least beside the launcher";
  // Two GPUs per node and the runtime's one slot: a slot per GPU.
  api::Job gpus = LoadTrainJob(
      runtime + "  trainer: {numNodes: 2, resourcesPerNode: {limits: {nvidia.com/gpu: 2}}}\n");
  EXPECT_EQ(gpus.slots_per_worker, 2);
  // Without runLauncherAsNode every node is a `node` pod and the hostfile leaves the launcher
  // out.
  std::string apart = runtime;
  apart.replace(apart.find("runLauncherAsNode: true"), 23, "runLauncherAsNode: false");
  api::Job separate = LoadTrainJob(apart + "  trainer: {numNodes: 2}\n");
  EXPECT_EQ(separate.ReplicasOf("node"), 2);
  EXPECT_EQ(TrainJobMpiHostfile(separate, ""), "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\n");
}

TEST(TrainJobJobSetTest, FluxAndUnresolvedJobsAreRefused) {
  api::Job job = LoadTrainJob(std::string(kInitJaxRuntime) + "  trainer: {}\n");
  ASSERT_TRUE(job.runtime);
  job.runtime->policy = api::MlPolicy::kFlux;
  StatusOr<json> flux = BuildJobSet(job, "u");
  ASSERT_FALSE(flux.ok());
  EXPECT_EQ(flux.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(flux.status().message().find("mlPolicy flux is not served on a cluster yet"),
            std::string::npos)
      << flux.status().message();
  job.runtime.reset();
  EXPECT_EQ(BuildJobSet(job, "u").status().code(), StatusCode::kFailedPrecondition);
}

TEST(TrainJobJobSetTest, EndpointsArePodHostnamesUnderTheJobSetSubdomain) {
  JobSetEndpoints e("tj");
  EXPECT_EQ(e.Host("node", 0), "tj-node-0-0.tj");
  EXPECT_EQ(e.Host("node", 3), "tj-node-0-3.tj");
  EXPECT_EQ(e.Port("node", 1, 29500), 29500);
  EXPECT_TRUE(e.IndexFromPod());
}

// ---- status ----

const Time kStatusNow = *ParseRfc3339("2026-09-01T10:00:00Z");
constexpr const char* kStatusNowText = "2026-09-01T10:00:00Z";

json TrainJobWithStatus(bool suspend, const std::string& status_json = "") {
  json tj = {{"metadata", {{"name", "tj"}, {"namespace", "default"}}},
             {"spec", {{"suspend", suspend}}}};
  if (!status_json.empty()) tj["status"] = json::parse(status_json);
  return tj;
}

json JobSetWithStatus(const std::string& status_json) {
  return {{"metadata", {{"name", "tj"}}}, {"status", json::parse(status_json)}};
}

struct StatusFromCase {
  const char* name;
  json trainjob;
  std::optional<json> jobset;
  json want;  // the whole status; null: nothing to write
};

TEST(TrainJobStatusTest, Table) {
  const std::vector<StatusFromCase> cases = {
      {"completed is copied as Complete, jobsStatus field for field", TrainJobWithStatus(false),
       JobSetWithStatus(R"({"conditions": [
           {"type": "StartupPolicyCompleted", "status": "True", "reason": "AllJobsReady",
            "message": "x", "lastTransitionTime": "2026-09-01T09:00:00Z"},
           {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": "2026-09-01T09:30:00Z"}],
           "replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0,
                                     "active": 0, "suspended": 0, "jobRestarts": [0]}]})"),
       json::parse(R"({"conditions": [
           {"type": "Complete", "status": "True", "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": "2026-09-01T09:30:00Z"}],
           "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0,
                           "active": 0, "suspended": 0}]})")},
      {"failed with the JobSet's reason and message", TrainJobWithStatus(false),
       JobSetWithStatus(R"({"conditions": [
           {"type": "Failed", "status": "True", "reason": "FailedJobs",
            "message": "jobset failed due to reaching max restarts",
            "lastTransitionTime": "2026-09-01T09:40:00Z", "observedGeneration": 2}],
           "replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 1,
                                     "active": 0, "suspended": 0}]})"),
       json::parse(R"({"conditions": [
           {"type": "Failed", "status": "True", "reason": "FailedJobs",
            "message": "jobset failed due to reaching max restarts",
            "lastTransitionTime": "2026-09-01T09:40:00Z", "observedGeneration": 2}],
           "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 1,
                           "active": 0, "suspended": 0}]})")},
      {"a JobSet condition that is not True is not copied; running: jobsStatus only",
       TrainJobWithStatus(false),
       JobSetWithStatus(R"({"conditions": [{"type": "Completed", "status": "False", "reason": "r",
                                  "message": "m", "lastTransitionTime": "2026-09-01T09:00:00Z"}],
                  "replicatedJobsStatus": [{"name": "node", "ready": 1, "succeeded": 0,
                                            "failed": 0, "active": 1, "suspended": 0}]})"),
       json::parse(R"({"jobsStatus": [{"name": "node", "ready": 1, "succeeded": 0, "failed": 0,
                                       "active": 1, "suspended": 0}]})")},
      {"suspended: True now", TrainJobWithStatus(true), JobSetWithStatus(R"({})"),
       json::parse(std::string(R"({"conditions": [{"type": "Suspended", "status": "True",
           "reason": "Suspended", "message": "TrainJob is suspended", "lastTransitionTime": ")") +
                   kStatusNowText + R"("}]})")},
      {"still suspended: nothing changes, lastTransitionTime kept",
       TrainJobWithStatus(true, R"({"conditions": [{"type": "Suspended", "status": "True",
           "reason": "Suspended", "message": "TrainJob is suspended",
           "lastTransitionTime": "2026-09-01T08:00:00Z"}]})"),
       std::nullopt, json::parse(R"({"conditions": [{"type": "Suspended", "status": "True",
           "reason": "Suspended", "message": "TrainJob is suspended",
           "lastTransitionTime": "2026-09-01T08:00:00Z"}]})")},
      {"resumed: False, Resumed, now",
       TrainJobWithStatus(false, R"({"conditions": [{"type": "Suspended", "status": "True",
           "reason": "Suspended", "message": "TrainJob is suspended",
           "lastTransitionTime": "2026-09-01T08:00:00Z"}]})"),
       JobSetWithStatus(R"({})"),
       json::parse(std::string(R"({"conditions": [{"type": "Suspended", "status": "False",
           "reason": "Resumed", "message": "TrainJob is resumed", "lastTransitionTime": ")") +
                   kStatusNowText + R"("}]})")},
      {"resumed long ago: nothing changes",
       TrainJobWithStatus(false, R"({"conditions": [{"type": "Suspended", "status": "False",
           "reason": "Resumed", "message": "TrainJob is resumed",
           "lastTransitionTime": "2026-09-01T08:00:00Z"}]})"),
       std::nullopt, json::parse(R"({"conditions": [{"type": "Suspended", "status": "False",
           "reason": "Resumed", "message": "TrainJob is resumed",
           "lastTransitionTime": "2026-09-01T08:00:00Z"}]})")},
      {"complete again: its lastTransitionTime does not move",
       TrainJobWithStatus(false, R"({"conditions": [{"type": "Complete", "status": "True",
           "reason": "AllJobsCompleted", "message": "done",
           "lastTransitionTime": "2026-09-01T07:00:00Z"}]})"),
       JobSetWithStatus(R"({"conditions": [{"type": "Completed", "status": "True",
           "reason": "AllJobsCompleted", "message": "done",
           "lastTransitionTime": "2026-09-01T09:30:00Z"}]})"),
       json::parse(R"({"conditions": [{"type": "Complete", "status": "True",
           "reason": "AllJobsCompleted", "message": "done",
           "lastTransitionTime": "2026-09-01T07:00:00Z"}]})")},
      {"finished and its JobSet gone: the status is kept",
       TrainJobWithStatus(false, R"({"conditions": [{"type": "Failed", "status": "True",
           "reason": "FailedJobs", "message": "m", "lastTransitionTime": "2026-09-01T07:00:00Z"}],
           "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 1,
                           "active": 0, "suspended": 0}]})"),
       std::nullopt, json::parse(R"({"conditions": [{"type": "Failed", "status": "True",
           "reason": "FailedJobs", "message": "m", "lastTransitionTime": "2026-09-01T07:00:00Z"}],
           "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 0, "failed": 1,
                           "active": 0, "suspended": 0}]})")},
      {"nothing to say: null", TrainJobWithStatus(false), std::nullopt, json()},
  };
  for (const StatusFromCase& c : cases) {
    json got = TrainJobStatusFrom(c.trainjob, c.jobset ? &*c.jobset : nullptr, kStatusNow);
    EXPECT_EQ(got, c.want) << c.name << "\n got " << got.dump();
  }
}

TEST(TrainJobStatusTest, AtMostEightConditionsTheOldestOthersGoFirst) {
  json tj = TrainJobWithStatus(true);
  json conds = json::array();
  for (int i = 0; i < 8; ++i)
    conds.push_back({{"type", "Other" + std::to_string(i)},
                     {"status", "True"},
                     {"reason", "R"},
                     {"message", ""},
                     {"lastTransitionTime", "2026-09-01T07:00:00Z"}});
  tj["status"]["conditions"] = conds;
  json js =
      JobSetWithStatus(R"({"conditions": [{"type": "Completed", "status": "True", "reason": "R",
      "message": "m", "lastTransitionTime": "2026-09-01T09:30:00Z"}]})");
  json got = TrainJobStatusFrom(tj, &js, kStatusNow);
  ASSERT_EQ(got["conditions"].size(), 8u);
  EXPECT_EQ(got["conditions"][0]["type"], "Other2");
  EXPECT_EQ(got["conditions"][6]["type"], "Suspended");
  EXPECT_EQ(got["conditions"][7]["type"], "Complete");
}

}  // namespace
}  // namespace trainctl::op
