// Pins the pods and services the operator creates to upstream's shape (reference §3.1–§3.4).
#include "operator/pod_builder.h"

#include <gtest/gtest.h>

#include "api/manifest.h"
#include "api/quantity.h"
#include "operator/decide.h"
#include "operator/gang.h"
#include "operator/hpa.h"
#include "operator/mpi_children.h"

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
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
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

TEST(PodBuilderTest, WithTheStatusEndpointEveryContainerIsGivenTheJobsEndpoint) {
  api::Job job = Load(kPyTorch);
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  PodSettings settings;
  EXPECT_EQ(EnvValue(BuildPod(job, "Worker", 0, endpoints, settings)->pod["spec"]["containers"][0],
                     "KUBEFLOW_TRAINER_SERVER_URL"),
            "<unset>");  // off unless the operator serves it
  settings.status_server_url = "https://op.sys.svc:10443";
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 0, endpoints, settings);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& spec = built->pod["spec"];
  const std::string path =
      "kubeflow.org/v1/namespaces/" + job.namespace_ + "/pytorchjobs/" + job.name + "/status";
  EXPECT_EQ(EnvValue(spec["containers"][0], "KUBEFLOW_TRAINER_SERVER_URL"),
            "https://op.sys.svc:10443/apis/" + path);
  EXPECT_EQ(EnvValue(spec["containers"][0], "KUBEFLOW_TRAINER_SERVER_TOKEN"),
            "/var/run/secrets/kubeflow/trainer/token");
  const json& volume = spec["volumes"].back();
  EXPECT_EQ(volume["name"], "kubeflow-trainer-token");
  EXPECT_EQ(volume["projected"]["sources"][0]["serviceAccountToken"]["audience"], path);
  EXPECT_EQ(volume["projected"]["sources"][1]["configMap"]["name"], "trainctl-trainer-status-ca");
  // Not given to the init container that waits for the master.
  for (const json& c : spec["initContainers"])
    EXPECT_EQ(EnvValue(c, "KUBEFLOW_TRAINER_SERVER_URL"), "<unset>");
}

TEST(PodBuilderTest, PyTorchWorkerPodWaitsForTheMaster) {
  api::Job job = Load(kPyTorch);
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
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

// Gang restart (issue #38): every pod of a Gang job has restartPolicy Never (the engine, not the
// kubelet, restarts a gang), its attempt as a label and in every container's env.
TEST(PodBuilderTest, GangJobPodsCarryTheirAttemptAndNeverRestartInPlace) {
  api::Job job = Load(kPyTorch);
  job.metadata["annotations"] = {{"trainctl.dev/restart-scope", "Gang"},
                                 {"trainctl.dev/restart-attempt", "3"}};
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 1, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& pod = built->pod;
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");  // OnFailure in the replica spec
  EXPECT_EQ(pod["metadata"]["labels"]["trainctl.dev/restart-attempt"], "3");
  EXPECT_EQ(EnvValue(pod["spec"]["containers"][0], "TRAINCTL_RESTART_ATTEMPT"), "3");
  // Without the annotation: upstream's pod, nothing added.
  StatusOr<BuiltPod> plain = BuildPod(Load(kPyTorch), "Worker", 1, endpoints, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->pod["spec"]["restartPolicy"], "OnFailure");
  EXPECT_FALSE(plain->pod["metadata"]["labels"].contains("trainctl.dev/restart-attempt"));
  EXPECT_EQ(EnvValue(plain->pod["spec"]["containers"][0], "TRAINCTL_RESTART_ATTEMPT"), "<unset>");
}

TEST(PodBuilderTest, InitContainerTemplateFileReplacesTheBuiltInOne) {
  api::Job job = Load(kPyTorch);
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  PodSettings settings;
  settings.pytorch_init_image = "busybox:1.36";
  settings.pytorch_init_max_tries = 7;
  settings.pytorch_init_template_source = "/etc/config/initContainer.yaml";
  settings.pytorch_init_template = R"yaml(
- name: wait-for-master
  image: {{.InitContainerImage}}
  command: [sh, -c, "until nslookup {{ .MasterAddr }}; do sleep 1; done # {{.MaxTries}}"]
- name: second
  image: {{.InitContainerImage}}
)yaml";
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 0, endpoints, settings);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& init = built->pod["spec"]["initContainers"];
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0]["name"], "wait-for-master");
  EXPECT_EQ(init[0]["image"], "busybox:1.36");
  EXPECT_EQ(init[0]["command"][2], "until nslookup mnist-master-0; do sleep 1; done # 7");
  EXPECT_EQ(init[1]["name"], "second");
}

TEST(PodBuilderTest, InitContainerTemplateErrorsNameTheFile) {
  auto error = [](const std::string& text) {
    StatusOr<json> r = RenderInitContainerTemplate(text, "/t.yaml", "m-master-0", "img", 3);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_EQ(error("- name: a\n  image: {{.InitContainerImage}}\n"), "ok");
  EXPECT_NE(
      error("- name: a\n  image: {{.Image}}\n").find("/t.yaml:2: unsupported template action"),
      std::string::npos);
  EXPECT_NE(error("- name: {{.MasterAddr").find("unclosed"), std::string::npos);
  EXPECT_NE(error("name: a\n").find("expected a YAML list of containers"), std::string::npos);
  EXPECT_NE(error("- image: x\n").find("item 0 is not a container with a name"), std::string::npos);
  EXPECT_NE(error("- [unclosed\n").find("/t.yaml"), std::string::npos);
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
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 1, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& containers = built->pod["spec"]["containers"];
  EXPECT_NE(EnvValue(containers[0], "TF_CONFIG"), "<unset>");
  EXPECT_EQ(EnvNames(containers[1]).size(), 0u);
  EXPECT_EQ(built->pod["metadata"]["labels"]["training.kubeflow.org/operator-name"],
            "tfjob-controller");
}

const char* kMpi = R"yaml(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: m, namespace: hpc}
spec:
  slotsPerWorker: 2
  mainContainer: mpi
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata: {labels: {team: hpc}}
        spec:
          containers:
          - name: mpi
            image: m:1
            command: [mpirun, python3, train.py]
            env: [{name: I_MPI_HYDRA_BOOTSTRAP, value: ssh}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: mpi, image: m:1}]
)yaml";

TEST(MpiChildrenTest, LauncherAsUpstream) {
  api::Job job = Load(kMpi);
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Launcher", 0, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& pod = built->pod;
  EXPECT_EQ(pod["metadata"]["name"], "m-launcher");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels["training.kubeflow.org/replica-type"], "launcher");
  EXPECT_EQ(labels["training.kubeflow.org/job-role"], "master");
  EXPECT_EQ(labels["team"], "hpc");
  EXPECT_FALSE(labels.contains("training.kubeflow.org/replica-index"));
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "m-launcher");
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(c, "OMPI_MCA_plm_rsh_agent"), "/etc/mpi/kubexec.sh");
  EXPECT_EQ(EnvValue(c, "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
  EXPECT_EQ(EnvValue(c, "NVIDIA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(EnvNames(c),
            (std::vector<std::string>{"I_MPI_HYDRA_BOOTSTRAP", "OMPI_MCA_plm_rsh_agent",
                                      "OMPI_MCA_orte_default_hostfile", "NVIDIA_VISIBLE_DEVICES",
                                      "NVIDIA_DRIVER_CAPABILITIES", "I_MPI_HYDRA_BOOTSTRAP_EXEC"}))
      << "the user's I_MPI_HYDRA_BOOTSTRAP is kept and not added again";
  ASSERT_EQ(c["volumeMounts"].size(), 2u);
  const json& init = pod["spec"]["initContainers"][0];
  EXPECT_EQ(init["name"], "kubectl-delivery");
  EXPECT_EQ(init["resources"]["limits"]["ephemeral-storage"], "5Gi");
  const json& volumes = pod["spec"]["volumes"];
  ASSERT_EQ(volumes.size(), 2u);
  EXPECT_EQ(volumes[1]["configMap"]["name"], "m-config");
  EXPECT_EQ(volumes[1]["configMap"]["items"][0]["mode"], 365);  // 0555
  EXPECT_EQ(volumes[1]["configMap"]["items"][1]["mode"], 292);  // 0444
}

TEST(MpiChildrenTest, WorkersSleepAndMountKubexecOnly) {
  api::Job job = Load(kMpi);
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 1, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& pod = built->pod;
  EXPECT_EQ(pod["metadata"]["name"], "m-worker-1");
  EXPECT_EQ(pod["metadata"]["labels"]["training.kubeflow.org/replica-index"], "1");
  EXPECT_FALSE(pod["metadata"]["labels"].contains("training.kubeflow.org/job-role"));
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["command"], json::array({"sleep"}));
  EXPECT_EQ(c["args"], json::array({"365d"}));
  EXPECT_FALSE(c.contains("env"));
  EXPECT_EQ(pod["spec"]["volumes"][0]["configMap"]["items"].size(), 1u);
  EXPECT_FALSE(pod["spec"].contains("serviceAccountName"));
}

TEST(MpiChildrenTest, ConfigMapAndRbac) {
  api::Job job = Load(kMpi);
  json cm = MpiConfigMap(job, {"m-worker-1", "m-worker-0"});
  EXPECT_EQ(cm["metadata"]["name"], "m-config");
  EXPECT_EQ(cm["metadata"]["labels"]["app"], "m");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(cm["data"]["hostfile"], "m-worker-0 slots=2\nm-worker-1 slots=2\n");
  EXPECT_EQ(cm["data"]["discover_hosts.sh"], "#!/bin/sh\necho m-worker-0:2\necho m-worker-1:2\n");
  std::string kubexec = cm["data"]["kubexec.sh"];
  EXPECT_NE(kubexec.find("/opt/kube/kubectl exec ${POD_NAME} --container mpi -- /bin/sh -c"),
            std::string::npos)
      << kubexec;
  json role = MpiLauncherRole(job);
  EXPECT_EQ(role["rules"][1]["resources"], json::array({"pods/exec"}));
  EXPECT_EQ(role["rules"][1]["resourceNames"], json::array({"m-worker-0", "m-worker-1"}));
  json binding = MpiLauncherRoleBinding(job);
  EXPECT_EQ(binding["subjects"][0]["name"], "m-launcher");
  EXPECT_EQ(binding["subjects"][0]["namespace"], "hpc");
  EXPECT_FALSE(IsGpuLauncher(job));
}

TEST(MpiChildrenTest, LauncherWaitsForRunningWorkers) {
  api::Job job = Load(kMpi);
  engine::Plan plan;
  plan.create = {{"Launcher", 0, ""}, {"Worker", 0, ""}};
  std::vector<engine::ReplicaObservation> observed(1);
  observed[0].type = "Worker";
  observed[0].index = 1;
  observed[0].name = "m-worker-1";
  observed[0].phase = engine::Phase::kRunning;
  ChildActions held = PlanChildren(job, plan, {}, observed);
  EXPECT_TRUE(held.launcher_held);
  ASSERT_EQ(held.create_pods.size(), 1u);
  EXPECT_EQ(held.create_pods[0].name, "m-worker-0");
  EXPECT_TRUE(held.create_services.empty());
  observed.push_back(observed[0]);
  observed[1].index = 0;
  observed[1].name = "m-worker-0";
  ChildActions go = PlanChildren(job, plan, {}, observed);
  EXPECT_FALSE(go.launcher_held);
  ASSERT_EQ(go.create_pods.size(), 2u);
  EXPECT_EQ(go.create_pods[0].name, "m-launcher");
  ChildOptions upstream;
  upstream.mpi_launcher_waits_for_workers = false;
  EXPECT_EQ(PlanChildren(job, plan, {}, {}, upstream).create_pods.size(), 2u);
}

TEST(PodBuilderTest, KueueQueueNameReachesThePods) {
  api::Job job = Load(kPyTorch);
  job.metadata["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}, {"other", "x"}};
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> built = BuildPod(job, "Worker", 0, endpoints, {});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const json& labels = built->pod["metadata"]["labels"];
  EXPECT_EQ(labels["kueue.x-k8s.io/queue-name"], "team-a");
  EXPECT_FALSE(labels.contains("other")) << "only Kueue's queue label is copied";
  api::Job mpi = Load(kMpi);
  mpi.metadata["labels"] = {{"kueue.x-k8s.io/queue-name", "hpc"}};
  EXPECT_EQ(BuildPod(mpi, "Launcher", 0, endpoints, {})
                ->pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"],
            "hpc");
}

const char* kElastic = R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: el, namespace: ml}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 4
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: pytorch, image: t:1}]}}
)yaml";

TEST(HpaTest, DesiredAutoscalerAsUpstream) {
  api::Job job = Load(kElastic);
  std::optional<json> hpa = DesiredHpa(job);
  ASSERT_TRUE(hpa.has_value());
  EXPECT_EQ((*hpa)["apiVersion"], "autoscaling/v2");
  EXPECT_EQ((*hpa)["metadata"]["name"], "el");
  EXPECT_EQ((*hpa)["metadata"]["ownerReferences"][0]["controller"], true);
  const json& spec = (*hpa)["spec"];
  EXPECT_EQ(spec["scaleTargetRef"],
            json({{"apiVersion", "kubeflow.org/v1"}, {"kind", "PyTorchJob"}, {"name", "el"}}));
  EXPECT_EQ(spec["minReplicas"], 1);
  EXPECT_EQ(spec["maxReplicas"], 4);
  EXPECT_EQ(spec["metrics"][0]["resource"]["name"], "cpu");
  EXPECT_FALSE(DesiredHpa(Load(kPyTorch)).has_value()) << "no elasticPolicy.metrics, no HPA";
}

TEST(HpaTest, CreateUpdateDeleteWhileSuspendedAndLeaveForeignOnesAlone) {
  api::Job job = Load(kElastic);
  std::optional<json> desired = DesiredHpa(job);
  EXPECT_EQ(DecideHpa(job, desired, json()), HpaAction::kCreate);
  json existing = *desired;
  EXPECT_EQ(DecideHpa(job, desired, existing), HpaAction::kNone);
  existing["spec"]["maxReplicas"] = 8;
  EXPECT_EQ(DecideHpa(job, desired, existing), HpaAction::kUpdate);
  job.run_policy.suspend = true;
  EXPECT_EQ(DecideHpa(job, desired, existing), HpaAction::kDelete);
  EXPECT_EQ(DecideHpa(job, desired, json()), HpaAction::kNone);
  job.run_policy.suspend = false;
  existing["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  EXPECT_EQ(DecideHpa(job, desired, existing), HpaAction::kNone);
  EXPECT_EQ(DecideHpa(job, std::nullopt, *desired), HpaAction::kDelete)
      << "metrics removed from the job: its HPA goes";
}

TEST(QuantityTest, ParsesKubernetesQuantitiesToMilli) {
  EXPECT_EQ(api::ParseQuantityMilli("100m").value(), 100);
  EXPECT_EQ(api::ParseQuantityMilli("1.5").value(), 1500);
  EXPECT_EQ(api::ParseQuantityMilli("2").value(), 2000);
  EXPECT_EQ(api::ParseQuantityMilli("1Ki").value(), 1024000);
  EXPECT_EQ(api::ParseQuantityMilli("512Mi").value(), 536870912000LL);
  EXPECT_EQ(api::ParseQuantityMilli("1G").value(), 1000000000000LL);
  EXPECT_EQ(api::ParseQuantityMilli("1e3").value(), 1000000);
  EXPECT_EQ(api::ParseQuantityMilli("1n").value(), 1) << "rounds up to one milli";
  for (const char* bad : {"", "m", "1x", "1.2.3", "abc", "1e", "--1"})
    EXPECT_FALSE(api::ParseQuantityMilli(bad).ok()) << bad;
  EXPECT_EQ(api::FormatQuantityMilli(1500), "1500m");
  EXPECT_EQ(api::FormatQuantityMilli(3000), "3");
  EXPECT_EQ(api::FormatQuantityMilli(2147483648000LL), "2Gi");
  EXPECT_EQ(api::FormatQuantityMilli(1000LL * 1048576 * 3), "3Mi");
  EXPECT_EQ(api::FormatQuantityMilli(1024000), "1024") << "below 1Mi: plain";
}

const char* kGang = R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: g, namespace: ml, annotations: {team: a}}
spec:
  runPolicy:
    schedulingPolicy: {queue: research, priorityClass: high, minAvailable: 2}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: t:1, resources: {requests: {cpu: 500m, memory: 1Gi}}}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
          - {name: pytorch, image: t:1, resources: {limits: {cpu: "2", memory: 512Mi}}}
)yaml";

TEST(GangTest, VolcanoPodGroupAndPods) {
  api::Job job = Load(kGang);
  GangConfig volcano = GangFromFlag("Volcano");
  EXPECT_EQ(volcano.kind, GangKind::kVolcano);
  StatusOr<json> pg = DesiredPodGroup(job, volcano, json());
  ASSERT_TRUE(pg.ok()) << pg.status().message();
  EXPECT_EQ((*pg)["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ((*pg)["metadata"]["annotations"]["team"], "a");
  const json& spec = (*pg)["spec"];
  EXPECT_EQ(spec["minMember"], 2);
  EXPECT_EQ(spec["queue"], "research");
  EXPECT_EQ(spec["priorityClassName"], "high");
  // First 2 pods in type order: Master (requests) + one Worker (limits, no requests).
  EXPECT_EQ(spec["minResources"]["cpu"], "2500m");
  EXPECT_EQ(spec["minResources"]["memory"], "1536Mi");
  json existing = {{"spec", {{"queue", "kept"}}}};
  EXPECT_EQ(DesiredPodGroup(job, volcano, existing)->at("spec")["queue"], "kept");
  EXPECT_TRUE(VolcanoHoldsPods(volcano, json::object()));
  EXPECT_TRUE(VolcanoHoldsPods(volcano, {{"status", {{"phase", "Pending"}}}}));
  EXPECT_FALSE(VolcanoHoldsPods(volcano, {{"status", {{"phase", "Inqueue"}}}}));

  PodSettings settings;
  settings.gang = volcano;
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> pod = BuildPod(job, "Worker", 0, endpoints, settings);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->pod["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(pod->pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "g");
  EXPECT_EQ(pod->pod["metadata"]["annotations"]["volcano.sh/task-spec"], "worker");
}

TEST(GangTest, SchedulerPluginsPodGroupAndPods) {
  api::Job job = Load(kGang);
  job.run_policy.scheduling_policy = {{"scheduleTimeoutSeconds", 60}};
  GangConfig plugins = GangFromFlag("scheduler-plugins-scheduler");
  EXPECT_EQ(plugins.kind, GangKind::kSchedulerPlugins);
  StatusOr<json> pg = DesiredPodGroup(job, plugins, json());
  ASSERT_TRUE(pg.ok());
  EXPECT_EQ((*pg)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*pg)["spec"]["minMember"], 4);
  EXPECT_EQ((*pg)["spec"]["scheduleTimeoutSeconds"], 60);
  EXPECT_FALSE((*pg)["spec"].contains("queue"));
  EXPECT_FALSE(VolcanoHoldsPods(plugins, json::object()));
  job.replica_specs["Worker"].pod_template["spec"]["schedulerName"] = "other";
  PodSettings settings;
  settings.gang = plugins;
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> worker = BuildPod(job, "Worker", 1, endpoints, settings);
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(worker->pod["spec"]["schedulerName"], "other") << "not overwritten";
  EXPECT_EQ(worker->events.back().reason, "SetPodTemplateSchedulerName");
  EXPECT_EQ(worker->pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "g");
  StatusOr<BuiltPod> master = BuildPod(job, "Master", 0, endpoints, settings);
  EXPECT_EQ(master->pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_TRUE(GangFromFlag("").kind == GangKind::kNone);
}

TEST(GangTest, MpiPodsWarnWithTheMpiControllersReason) {
  api::Job job = Load(kMpi);
  job.replica_specs["Worker"].pod_template["spec"]["schedulerName"] = "other";
  PodSettings settings;
  settings.gang = GangFromFlag("volcano");
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> worker = BuildPod(job, "Worker", 0, endpoints, settings);
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(worker->pod["spec"]["schedulerName"], "other");
  EXPECT_EQ(worker->events.back().reason, "SettedPodTemplateSchedulerName");
}

TEST(GangTest, BadQuantityNamesTheContainer) {
  api::Job job = Load(kGang);
  job.replica_specs["Master"]
      .pod_template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  StatusOr<json> pg = DesiredPodGroup(job, GangFromFlag("volcano"), json());
  ASSERT_FALSE(pg.ok());
  EXPECT_NE(pg.status().message().find("Master container pytorch resource cpu"), std::string::npos)
      << pg.status().message();
}

TEST(GangTest, YuniKornAnnotations) {
  api::Job job = Load(kGang);
  job.metadata["uid"] = "uid-123";
  job.run_policy.scheduling_policy = {{"queue", "root.ml"}, {"scheduleTimeoutSeconds", 90}};
  GangConfig yunikorn = GangFromFlag("YuniKorn");
  EXPECT_EQ(yunikorn.kind, GangKind::kYuniKorn);
  EXPECT_FALSE(UsesPodGroups(yunikorn));
  PodSettings settings;
  settings.gang = yunikorn;
  api::ServiceEndpoints endpoints(job.name, job.namespace_);
  StatusOr<BuiltPod> pod = BuildPod(job, "Worker", 2, endpoints, settings);
  ASSERT_TRUE(pod.ok());
  const json& md = pod->pod["metadata"];
  EXPECT_EQ(pod->pod["spec"]["schedulerName"], "yunikorn");
  EXPECT_EQ(md["labels"]["applicationId"], "uid-123");
  EXPECT_EQ(md["labels"]["queue"], "root.ml");
  EXPECT_EQ(md["annotations"]["yunikorn.apache.org/task-group-name"], "worker");
  EXPECT_EQ(md["annotations"]["yunikorn.apache.org/schedulingPolicyParameters"],
            "placeholderTimeoutInSeconds=90");
  json groups =
      json::parse(md["annotations"]["yunikorn.apache.org/task-groups"].get<std::string>());
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], json({{"name", "master"},
                             {"minMember", 1},
                             {"minResource", {{"cpu", "500m"}, {"memory", "1Gi"}}}}));
  EXPECT_EQ(groups[1]["minMember"], 3);
  EXPECT_EQ(groups[1]["minResource"]["cpu"], "2");
}

}  // namespace
}  // namespace trainctl::op
