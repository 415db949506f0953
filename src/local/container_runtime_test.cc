// Unit tests for container runtimes (local/container_runtime.h) and a replica's launch as a
// container (local/replica_launch.h with a runtime): which runtime a run uses, what pre-flight
// decides for this kind of host, the exact command lines, pull decisions, leftovers' parsing.
#include "local/container_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/test_manifest.h"
#include "local/endpoints.h"
#include "local/replica_launch.h"

namespace trainctl::local {
namespace {

using api::test::LoadJob;

bool Has(const std::vector<std::string>& argv, const std::vector<std::string>& run) {
  return std::search(argv.begin(), argv.end(), run.begin(), run.end()) != argv.end();
}

const char* kJob = R"yaml(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: img
  annotations: {trainctl.dev/runtime: docker}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          volumes:
          - {name: data, hostPath: {path: /tmp}}
          initContainers:
          - {name: prep, image: "busybox:1.36", command: [sh, -c, "echo $(RANK)"]}
          containers:
          - name: pytorch
            image: "registry.local/train:2"
            imagePullPolicy: IfNotPresent
            args: ["--data=$(DATA)"]
            workingDir: /workspace
            env: [{name: DATA, value: /data/set}, {name: TOKEN, value: s3cr3t}]
            volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
            resources: {limits: {cpu: 1500m, memory: 1Gi}}
)yaml";

TEST(ChooseRuntime, FlagThenAnnotationThenEnvThenProcess) {
  api::Job annotated = LoadJob(kJob);
  api::Job plain = LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: p}\nspec:\n  tfReplicaSpecs:\n"
      "    Worker:\n      template:\n        spec:\n          containers:\n"
      "          - {name: tensorflow, image: x, command: [\"true\"]}\n");
  EXPECT_EQ(ChooseRuntime(std::string("podman"), annotated, {}).value(), RuntimeKind::kPodman);
  EXPECT_EQ(ChooseRuntime(std::nullopt, annotated, {"TRAINCTL_RUNTIME=podman"}).value(),
            RuntimeKind::kDocker);
  EXPECT_EQ(ChooseRuntime(std::nullopt, plain, {"TRAINCTL_RUNTIME=podman"}).value(),
            RuntimeKind::kPodman);
  EXPECT_EQ(ChooseRuntime(std::nullopt, plain, {}).value(), RuntimeKind::kProcess);
  StatusOr<RuntimeKind> bad = ChooseRuntime(std::nullopt, plain, {"TRAINCTL_RUNTIME=lxc"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "$TRAINCTL_RUNTIME: Unsupported value: \"lxc\": supported values: process, podman, "
            "docker");
  EXPECT_NE(ChooseRuntime(std::string("k8s"), plain, {}).status().message().find("--runtime"),
            std::string::npos);
}

TEST(RuntimeInfo, ReadsPodmanAndDockerInfo) {
  RuntimeFacts podman;
  ASSERT_TRUE(ParseRuntimeInfo(R"({"host": {"ociRuntime": {"name": "crun"},
      "cgroupManager": "cgroupfs", "cgroupVersion": "v1", "security": {"rootless": false}},
      "version": {"Version": "4.3.1"}})",
                               &podman)
                  .ok());
  EXPECT_EQ(podman.oci_runtime, "crun");
  EXPECT_EQ(podman.cgroup_version, 1);
  EXPECT_EQ(podman.version, "4.3.1");
  RuntimeFacts docker;
  docker.kind = RuntimeKind::kDocker;
  ASSERT_TRUE(ParseRuntimeInfo(R"({"ServerVersion": "20.10.24", "DefaultRuntime": "runc",
      "CgroupDriver": "systemd", "CgroupVersion": "2",
      "SecurityOptions": ["name=seccomp,profile=default", "name=rootless"]})",
                               &docker)
                  .ok());
  EXPECT_EQ(docker.cgroup_version, 2);
  EXPECT_TRUE(docker.rootless);
  EXPECT_FALSE(ParseRuntimeInfo("not json", &docker).ok());
  RuntimeFacts empty;
  empty.kind = RuntimeKind::kDocker;
  EXPECT_FALSE(ParseRuntimeInfo("{}", &empty).ok());
}

RuntimeFacts HybridPodman() {
  RuntimeFacts f;
  f.version = "4.3.1";
  f.binary = "/usr/bin/podman";
  f.oci_runtime = "crun";
  f.cgroup_manager = "cgroupfs";
  f.cgroup_version = 1;
  f.cgroup_hybrid = true;
  f.nofile_soft = 1024;
  f.nofile_hard = 20000;
  f.nproc_soft = 96365;
  f.nproc_hard = 96365;
  f.pid_max = 32768;
  return f;
}

TEST(RuntimeHost, HybridHostGetsRuncAndTheProcessLimits) {
  RuntimeFacts f = HybridPodman();
  f.runc_path = "/usr/sbin/runc";
  StatusOr<RuntimeHost> host = DecideRuntimeHost(f);
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_TRUE(Has(host->run_flags, {"--runtime", "/usr/sbin/runc"}));
  EXPECT_TRUE(Has(host->run_flags, {"--ulimit", "nofile=1024:20000"}));
  // nproc above pid_max is refused by this kind of host: bounded.
  EXPECT_TRUE(Has(host->run_flags, {"--ulimit", "nproc=32768:32768"}));
  EXPECT_TRUE(host->cgroup_parent);
  f.runc_path.clear();
  StatusOr<RuntimeHost> refused = DecideRuntimeHost(f);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("install runc"), std::string::npos);
  // Rootless, or systemd's cgroups: the runtime's own limits, said once.
  f = HybridPodman();
  f.oci_runtime = "runc";
  f.rootless = true;
  host = DecideRuntimeHost(f);
  ASSERT_TRUE(host.ok());
  EXPECT_FALSE(host->cgroup_parent);
  EXPECT_FALSE(Has(host->run_flags, {"--runtime"}));
  EXPECT_FALSE(host->own_limits);  // rootless on cgroup v1: the runtime cannot set them
  ASSERT_EQ(host->notes.size(), 1u);
  EXPECT_NE(host->notes[0].find("no memory or CPU limits"), std::string::npos);
  f.cgroup_version = 2;
  f.cgroup_manager = "systemd";
  host = DecideRuntimeHost(f);
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->own_limits);
  EXPECT_FALSE(host->cgroup_parent);
  ASSERT_EQ(host->notes.size(), 1u);
  EXPECT_NE(host->notes[0].find("OOMKilled"), std::string::npos);
}

TEST(RuntimeHost, TooOldRuntimesAreRefusedWithTheVersionNeeded) {
  RuntimeFacts f = HybridPodman();
  f.runc_path = "/usr/sbin/runc";
  f.version = "2.2.1";
  StatusOr<RuntimeHost> old = DecideRuntimeHost(f);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().message(), "podman 2.2.1 is too old: trainctl needs podman 3.0 or newer");
  f.kind = RuntimeKind::kDocker;
  f.version = "20.10.24+dfsg1";
  EXPECT_TRUE(DecideRuntimeHost(f).ok());
  f.version = "19.03.15";
  EXPECT_FALSE(DecideRuntimeHost(f).ok());
  f.version = "";
  EXPECT_NE(DecideRuntimeHost(f).status().message().find("version unknown"), std::string::npos);
}

TEST(RunArgv, CommandReplacesTheEntrypointArgsTheCmd) {
  RuntimeHost host;
  host.binary = "/usr/bin/podman";
  ContainerRun run;
  run.name = "c1";
  run.image = "img:1";
  std::vector<std::string> plain = RunArgv(host, run);
  EXPECT_EQ(plain.back(), "img:1");  // the image's entrypoint and cmd
  EXPECT_TRUE(Has(plain, {"--network", "host"}));
  EXPECT_TRUE(Has(plain, {"--pull", "never"}));
  run.args = {"--epochs", "2"};
  std::vector<std::string> args = RunArgv(host, run);
  EXPECT_EQ(std::vector<std::string>(args.end() - 3, args.end()),
            (std::vector<std::string>{"img:1", "--epochs", "2"}));
  EXPECT_EQ(std::find(args.begin(), args.end(), "--entrypoint"), args.end());
  run.command = {"python3", "train.py"};
  std::vector<std::string> both = RunArgv(host, run);
  EXPECT_TRUE(Has(both, {"--entrypoint", "python3", "img:1", "train.py", "--epochs", "2"}));
  run.mounts = {{"/h/data", "/data", true}, {"/h/out", "/out", false}};
  run.env_names = {"RANK"};
  run.gpus = {"0", "2"};
  run.cgroup_parent = "/p/trainctl-1/r";
  std::vector<std::string> full = RunArgv(host, run);
  EXPECT_TRUE(Has(full, {"--volume", "/h/data:/data:ro"}));
  EXPECT_TRUE(Has(full, {"--volume", "/h/out:/out"}));
  EXPECT_TRUE(Has(full, {"--env", "RANK"}));
  EXPECT_TRUE(Has(full, {"--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=2"}));
  EXPECT_TRUE(Has(full, {"--cgroup-parent", "/p/trainctl-1/r", "--cgroups=no-conmon"}));
  host.kind = RuntimeKind::kDocker;
  EXPECT_TRUE(Has(RunArgv(host, run), {"--gpus", "\"device=0,2\""}));
}

TEST(Pull, PolicyAsOnACluster) {
  EXPECT_EQ(DecidePull("busybox", "", true), PullAction::kPull);         // no tag: Always
  EXPECT_EQ(DecidePull("busybox:latest", "", true), PullAction::kPull);  // :latest: Always
  EXPECT_EQ(DecidePull("busybox:1.36", "", true), PullAction::kNone);    // IfNotPresent
  EXPECT_EQ(DecidePull("busybox:1.36", "", false), PullAction::kPull);
  EXPECT_EQ(DecidePull("reg:5000/busybox", "", true), PullAction::kPull);  // a port is no tag
  EXPECT_EQ(DecidePull("b@sha256:ab", "", true), PullAction::kNone);
  EXPECT_EQ(DecidePull("b:1", "Always", true), PullAction::kPull);
  EXPECT_EQ(DecidePull("b:1", "Never", false), PullAction::kNeverPullMissing);
  EXPECT_EQ(DecidePull("b", "Never", true), PullAction::kNone);
}

TEST(Leftovers, PodmanAndDockerListings) {
  std::vector<OwnedContainer> podman = ParseOwnedContainers(
      R"([{"Names": ["a"], "Labels": {"trainctl.dev/runner-pid": "42",
           "trainctl.dev/job": "pytorchjob/default/x"}}, {"Names": ["b"], "Labels": {}}])");
  ASSERT_EQ(podman.size(), 1u);
  EXPECT_EQ(podman[0].name, "a");
  EXPECT_EQ(podman[0].runner_pid, 42);
  EXPECT_EQ(podman[0].job, "pytorchjob/default/x");
  std::vector<OwnedContainer> docker = ParseOwnedContainers(
      "{\"Names\":\"c\",\"Labels\":\"trainctl.dev/job=tfjob/ns/y,trainctl.dev/runner-pid=7\"}\n"
      "garbage\n");
  ASSERT_EQ(docker.size(), 1u);
  EXPECT_EQ(docker[0].runner_pid, 7);
  EXPECT_EQ(docker[0].job, "tfjob/ns/y");
  EXPECT_TRUE(ParseOwnedContainers("").empty());
}

TEST(Names, OnlyWhatRuntimesAccept) {
  EXPECT_EQ(ContainerName("default", "PyTorchJob", "img-master-0", 3, ""),
            "trainctl-default-pytorchjob-img-master-0-3");
  EXPECT_EQ(ContainerName("ns", "TFJob", "a-worker-1", 1, "init/x"),
            "trainctl-ns-tfjob-a-worker-1-1-init-x");
  EXPECT_EQ(ShellJoin({"sh", "-c", "echo 'hi'", ""}), "sh -c 'echo '\\''hi'\\''' ''");
}

TEST(ContainerLaunch, ThePodsSemanticsInTheImage) {
  api::Job job = LoadJob(kJob);
  StatusOr<LocalEndpoints> endpoints = LocalEndpoints::Allocate(job);
  ASSERT_TRUE(endpoints.ok());
  RuntimeHost host;
  host.binary = "/usr/bin/podman";
  ReplicaLaunchInputs inputs;
  inputs.manifest_dir = "/m";
  inputs.base_env = {"PATH=/usr/bin:/bin", "HOME=/root", "TOKEN=the-shells"};
  inputs.job_folder = "/state/job";
  inputs.error_file = "/state/job/errors/img-master-0/error.json";
  inputs.runtime = &host;
  StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, "Master", 0, *endpoints, inputs);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  ASSERT_TRUE(launch->container);
  const std::vector<std::string>& argv = launch->spec.argv;
  EXPECT_EQ(argv[0], "/usr/bin/podman");
  // No command: the image's entrypoint, with the args ($(DATA) expanded, path not rewritten).
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--entrypoint"), argv.end());
  EXPECT_TRUE(Has(argv, {"registry.local/train:2", "--data=/data/set"}));
  EXPECT_TRUE(Has(argv, {"--workdir", "/workspace"}));
  EXPECT_TRUE(Has(argv, {"--volume", "/tmp:/data:ro"}));
  EXPECT_TRUE(Has(argv, {"--memory", "1073741824", "--memory-swap", "1073741824"}));
  EXPECT_TRUE(Has(argv, {"--cpus", "1.5"}));
  EXPECT_TRUE(Has(argv, {"--env", "RANK"}));
  EXPECT_TRUE(Has(argv, {"--label", std::string(kLabelJob) + "=pytorchjob/default/img"}));
  // Values never on the command line; the pod's value wins over the shell's for the client.
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "TOKEN=s3cr3t"), argv.end());
  const std::vector<std::string>& env = launch->spec.env;
  EXPECT_NE(std::find(env.begin(), env.end(), "TOKEN=s3cr3t"), env.end());
  EXPECT_EQ(std::find(env.begin(), env.end(), "TOKEN=the-shells"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "PATH=/usr/bin:/bin"), env.end());
  // The shell's own variables are not the container's.
  const std::vector<std::string>& names = launch->container->env_names;
  EXPECT_EQ(std::find(names.begin(), names.end(), "PATH"), names.end());
  EXPECT_EQ(launch->pull_policy, "IfNotPresent");
  // torchelastic's error file: in a folder of its own, mounted at the same path.
  EXPECT_NE(std::find(env.begin(), env.end(),
                      "TORCHELASTIC_ERROR_FILE=/state/job/errors/img-master-0/error.json"),
            env.end());
  EXPECT_TRUE(
      Has(argv, {"--volume", "/state/job/errors/img-master-0:/state/job/errors/img-master-0"}));
  EXPECT_EQ(launch->error_file, "/state/job/errors/img-master-0/error.json");

  StatusOr<InitLaunches> inits = BuildInitLaunches(job, "Master", 0, *endpoints, inputs);
  ASSERT_TRUE(inits.ok()) << inits.status().message();
  ASSERT_EQ(inits->launches.size(), 1u);
  const PreparedLaunch& init = inits->launches[0].launch;
  ASSERT_TRUE(init.container);
  EXPECT_EQ(init.container->image, "busybox:1.36");
  EXPECT_TRUE(Has(init.spec.argv, {"--entrypoint", "sh", "busybox:1.36", "-c", "echo $(RANK)"}));
  EXPECT_EQ(init.container->name, "trainctl-default-pytorchjob-img-master-0-1-prep");
}

}  // namespace
}  // namespace trainctl::local
