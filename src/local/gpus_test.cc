// Unit tests for GPUs and limits on this machine: what replicas ask for, device assignment
// (own devices, refusal naming type and counts, other jobs' claims, sharing, an MPIJob
// Launcher's view), the visibility env, the injected and nvidia-smi inventories, the thread env
// of a CPU limit, and the claims kept in the state folder.
#include "local/gpus.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "api/manifest.h"
#include "api/test_manifest.h"
#include "local/device_claims.h"
#include "local/gpu_inventory.h"
#include "local/local_nproc.h"
#include "local/replica_launch.h"
#include "local/replica_limits.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

using api::test::LoadJob;

// A PyTorchJob: Master and `workers` Workers, each with `gpus` GPUs and the given cpu limit.
api::Job TorchJob(int workers, const std::string& gpus, const std::string& cpu = "",
                  const std::string& name = "demo") {
  std::string resources =
      "{limits: {nvidia.com/gpu: " + gpus + (cpu.empty() ? "" : ", cpu: \"" + cpu + "\"") + "}}";
  std::string container =
      "        spec:\n          containers:\n          - name: pytorch\n            image: t\n"
      "            command: [\"true\"]\n            resources: " +
      resources + "\n";
  return LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: " + name +
      "}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n" +
      container + "    Worker:\n      replicas: " + std::to_string(workers) +
      "\n      template:\n" + container);
}

GpuInventory Inventory(int nvidia, int amd = 0) {
  std::string spec = "nvidia.com/gpu=" + std::to_string(nvidia);
  if (amd) spec += ",amd.com/gpu=" + std::to_string(amd);
  StatusOr<GpuInventory> inv = ParseInventorySpec(spec);
  EXPECT_TRUE(inv.ok()) << inv.status().message();
  return *inv;
}

std::vector<int> Indices(const std::vector<Gpu>& gpus) {
  std::vector<int> out;
  for (const Gpu& g : gpus) out.push_back(g.index);
  return out;
}

TEST(GpuAsks, ReadsTheDefaultContainersLimitPerReplicaTypeWithItsFieldPath) {
  StatusOr<std::vector<GpuAsk>> asks = GpuAsks(TorchJob(3, "2"));
  ASSERT_TRUE(asks.ok()) << asks.status().message();
  ASSERT_EQ(asks->size(), 2u);
  EXPECT_EQ((*asks)[0].type, "Master");
  EXPECT_EQ((*asks)[1].type, "Worker");
  EXPECT_EQ((*asks)[1].replicas, 3);
  EXPECT_EQ((*asks)[1].per_replica, 2);
  EXPECT_EQ((*asks)[1].field,
            "spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources.limits[nvidia."
            "com/gpu]");
}

TEST(GpuAsks, AFractionalOrNegativeCountIsRefusedNamingTheField) {
  for (const char* bad : {"\"500m\"", "\"1.5\"", "-1", "\"lots\""}) {
    StatusOr<std::vector<GpuAsk>> asks = GpuAsks(TorchJob(1, bad));
    ASSERT_FALSE(asks.ok()) << bad;
    EXPECT_EQ(asks.status().code(), StatusCode::kInvalid);
    EXPECT_NE(asks.status().message().find("spec.pytorchReplicaSpecs[Master].template.spec."
                                           "containers[0].resources.limits[nvidia.com/gpu]"),
              std::string::npos)
        << asks.status().message();
    EXPECT_NE(asks.status().message().find("whole number"), std::string::npos);
  }
  StatusOr<std::vector<GpuAsk>> zero = GpuAsks(TorchJob(1, "0"));
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->empty());
}

TEST(AssignGpus, EachReplicaGetsDevicesOfItsOwn) {
  api::Job job = TorchJob(3, "2");
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(8), {}, false);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(Indices(a->at("demo-master-0")), (std::vector<int>{0, 1}));
  EXPECT_EQ(Indices(a->at("demo-worker-0")), (std::vector<int>{2, 3}));
  EXPECT_EQ(Indices(a->at("demo-worker-1")), (std::vector<int>{4, 5}));
  EXPECT_EQ(Indices(a->at("demo-worker-2")), (std::vector<int>{6, 7}));
}

TEST(AssignGpus, MoreThanTheMachineHasIsInvalidNamingTypeCountsAndSource) {
  api::Job job = TorchJob(2, "1");  // 3 GPUs in all
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(2), {}, false);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalid);
  const std::string& m = a.status().message();
  EXPECT_NE(m.find("asks for 3 nvidia.com/gpu"), std::string::npos) << m;
  EXPECT_NE(m.find("Worker (2 replicas × 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("this machine has 2 (TRAINCTL_GPU_INVENTORY)"), std::string::npos) << m;
  EXPECT_NE(m.find("--gpu-share"), std::string::npos) << m;

  api::Job big = TorchJob(1, "4");
  StatusOr<GpuAssignment> b = AssignGpus(big, *GpuAsks(big), Inventory(2), {}, true);
  ASSERT_FALSE(b.ok()) << "one replica cannot have 4 distinct devices of 2, shared or not";
  EXPECT_NE(b.status().message().find("Master asks for 4 nvidia.com/gpu per replica"),
            std::string::npos)
      << b.status().message();
}

TEST(AssignGpus, DevicesAnotherRunningJobHoldsAreSkippedOrTheJobWaitsItsTurn) {
  api::Job job = TorchJob(1, "1");  // 2 GPUs
  DeviceClaim other{"pytorchjob default/other (runner pid 42)", {Inventory(4).gpus[1]}};
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(4), {other}, false);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(Indices(a->at("demo-master-0")), (std::vector<int>{0}));
  EXPECT_EQ(Indices(a->at("demo-worker-0")), (std::vector<int>{2}));

  DeviceClaim most{"pytorchjob default/big (runner pid 7)", {}};
  for (int i = 0; i < 3; ++i) most.gpus.push_back(Inventory(4).gpus[i]);
  StatusOr<GpuAssignment> b = AssignGpus(job, *GpuAsks(job), Inventory(4), {most}, false);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(b.status().message().find("1 of them is free"), std::string::npos)
      << b.status().message();
  EXPECT_NE(b.status().message().find("pytorchjob default/big (runner pid 7)"), std::string::npos);

  StatusOr<GpuAssignment> shared = AssignGpus(job, *GpuAsks(job), Inventory(4), {most}, true);
  ASSERT_TRUE(shared.ok()) << "sharing ignores the others' claims";
}

TEST(AssignGpus, SharingSpreadsReplicasRoundRobinWithDistinctDevicesEach) {
  api::Job job = TorchJob(2, "2");  // 6 GPUs asked, 4 present
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(4), {}, true);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(Indices(a->at("demo-master-0")), (std::vector<int>{0, 1}));
  EXPECT_EQ(Indices(a->at("demo-worker-0")), (std::vector<int>{2, 3}));
  EXPECT_EQ(Indices(a->at("demo-worker-1")), (std::vector<int>{0, 1}));
}

TEST(GpuEnv, NvidiaGetsCudaVisibleDevicesAndAmdRocrWithHipRenumbered) {
  GpuInventory inv = Inventory(4, 4);
  std::vector<Gpu> gpus = {inv.gpus[1], inv.gpus[3], inv.gpus[6], inv.gpus[7]};
  auto env = GpuEnv(gpus);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], std::make_pair(std::string("CUDA_VISIBLE_DEVICES"), std::string("1,3")));
  EXPECT_EQ(env[1], std::make_pair(std::string("ROCR_VISIBLE_DEVICES"), std::string("2,3")));
  EXPECT_EQ(env[2], std::make_pair(std::string("HIP_VISIBLE_DEVICES"), std::string("0,1")));
  EXPECT_TRUE(GpuEnv({}).empty());
}

TEST(VisibleGpus, AnMpiLauncherSeesItsWorkersDevicesForTheRanksItForks) {
  api::Job job = LoadJob(R"yaml(
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: hvd}
spec:
  slotsPerWorker: 1
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: mpi, image: m, command: [mpirun, "true"]}]}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: mpi, image: m, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}
)yaml");
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(2), {}, false);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(Indices(VisibleGpus(job, *a, "Launcher", 0)), (std::vector<int>{0, 1}));
  EXPECT_EQ(Indices(VisibleGpus(job, *a, "Worker", 1)), (std::vector<int>{1}));
}

TEST(GpuInventory, TheInjectedSpecIsCheckedAndNamesTheVariable) {
  GpuInventory inv = Inventory(2, 1);
  EXPECT_EQ(inv.Count(kNvidiaGpu), 2);
  EXPECT_EQ(inv.Count(kAmdGpu), 1);
  EXPECT_EQ(ParseInventorySpec("none")->gpus.size(), 0u);
  for (const char* bad : {"nvidia.com/gpu", "nvidia.com/gpu=two", "intel.com/gpu=1",
                          "nvidia.com/gpu=1,nvidia.com/gpu=2", "nvidia.com/gpu=99999"}) {
    StatusOr<GpuInventory> parsed = ParseInventorySpec(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("TRAINCTL_GPU_INVENTORY"), std::string::npos);
  }
}

TEST(GpuInventory, NvidiaSmiCsvGivesUuidsAndTheCallersCudaVisibleDevicesNarrowsIt) {
  std::vector<Gpu> gpus = ParseNvidiaSmi(
      "0, GPU-8d1c0000-aaaa-bbbb-cccc-000000000000, NVIDIA H100 80GB HBM3\n"
      "1, GPU-77aa0000-aaaa-bbbb-cccc-000000000001, NVIDIA H100 80GB HBM3\n"
      "No devices were found\n"
      "2, [N/A], NVIDIA H100 80GB HBM3\n");
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].id, "GPU-8d1c0000-aaaa-bbbb-cccc-000000000000");
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[2].id, "2") << "without a UUID, the index";
  EXPECT_EQ(Indices(RestrictToVisible(gpus, "2,0")), (std::vector<int>{2, 0}));
  EXPECT_EQ(Indices(RestrictToVisible(gpus, "GPU-77aa")), (std::vector<int>{1}));
  EXPECT_EQ(Indices(RestrictToVisible(gpus, "1,7,0")), (std::vector<int>{1}))
      << "CUDA stops at the first entry it does not know";
  EXPECT_TRUE(RestrictToVisible(gpus, "").empty());
  EXPECT_TRUE(RestrictToVisible(gpus, "-1").empty());
}

TEST(ReplicaLimits, ACpuLimitGivesTheThreadEnvAndABadQuantityNamesTheField) {
  api::Job job = TorchJob(1, "0", "2500m");
  StatusOr<ReplicaLimits> limits = LimitsOf(job, "Worker");
  ASSERT_TRUE(limits.ok()) << limits.status().message();
  EXPECT_EQ(limits->cpu_milli, 2500);
  auto env = ThreadEnv(*limits);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], std::make_pair(std::string("OMP_NUM_THREADS"), std::string("2")));
  EXPECT_EQ(ThreadEnv(*LimitsOf(TorchJob(1, "0", "100m"), "Master"))[0].second, "1");
  EXPECT_TRUE(ThreadEnv(*LimitsOf(TorchJob(1, "0"), "Master")).empty());
  EXPECT_TRUE(limits->cpu_is_limit);
  EXPECT_FALSE(limits->memory_bytes);

  StatusOr<ReplicaLimits> bad = LimitsOf(TorchJob(1, "0", "two"), "Master");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find(
          "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].resources.limits.cpu"),
      std::string::npos)
      << bad.status().message();
}

TEST(ReplicaLaunch, DevicesAndThreadsComeBeforeTheTemplateAndAreMarked) {
  api::Job job = TorchJob(1, "1", "4");
  StatusOr<GpuAssignment> a = AssignGpus(job, *GpuAsks(job), Inventory(2), {}, false);
  ASSERT_TRUE(a.ok());
  api::ServiceEndpoints endpoints("demo", "default");
  ReplicaLaunchInputs inputs{
      "/",    {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=0,1"}, "", &*a, "/tmp/x.error.json", "",
      nullptr};
  StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, "Worker", 0, endpoints, inputs);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  auto has = [&](const std::string& entry) {
    return std::find(launch->spec.env.begin(), launch->spec.env.end(), entry) !=
           launch->spec.env.end();
  };
  EXPECT_TRUE(has("CUDA_VISIBLE_DEVICES=1")) << "the replica's own device, not the shell's";
  EXPECT_FALSE(has("CUDA_VISIBLE_DEVICES=0,1"));
  EXPECT_TRUE(has("OMP_NUM_THREADS=4"));
  EXPECT_TRUE(has("TORCHELASTIC_ERROR_FILE=/tmp/x.error.json"));
  std::map<std::string, EnvSource> sources(launch->env_sources.begin(), launch->env_sources.end());
  EXPECT_EQ(sources["CUDA_VISIBLE_DEVICES"], EnvSource::kResources);
  EXPECT_EQ(sources["MASTER_ADDR"], EnvSource::kInjected);
  EXPECT_EQ(sources["TORCHELASTIC_ERROR_FILE"], EnvSource::kRunner);
  EXPECT_EQ(sources.count("PATH"), 0u) << "the caller's env is not listed";
}

TEST(DeviceClaims, OnlyJobsWhoseRunnerIsAliveHoldDevices) {
  std::string root = fs::temp_directory_path() / ("trainctl-claims-" + std::to_string(getpid()));
  fs::remove_all(root);
  GpuInventory inv = Inventory(4);
  JobDir alive(root, {api::Kind::kPyTorchJob, "default", "alive"});
  JobDir gone(root, {api::Kind::kPyTorchJob, "default", "gone"});
  for (JobDir* d : {&alive, &gone}) {
    ASSERT_TRUE(d->Create().ok());
    ASSERT_TRUE(d->WriteJob({{"kind", "PyTorchJob"}, {"metadata", {{"name", "x"}}}}).ok());
  }
  ASSERT_TRUE(alive.WriteDevices(EncodeAssignment({{"alive-master-0", {inv.gpus[2]}}})).ok());
  ASSERT_TRUE(gone.WriteDevices(EncodeAssignment({{"gone-master-0", {inv.gpus[0]}}})).ok());
  ASSERT_TRUE(alive.AcquireRunnerLock().ok());
  // A runner that has claimed its devices but not yet written its job counts too.
  JobDir starting(root, {api::Kind::kTFJob, "default", "starting"});
  ASSERT_TRUE(starting.Create().ok());
  ASSERT_TRUE(starting.WriteDevices(EncodeAssignment({{"starting-worker-0", {inv.gpus[3]}}})).ok());
  ASSERT_TRUE(starting.AcquireRunnerLock().ok());
  {
    StatusOr<DeviceLock> lock = DeviceLock::Acquire(root);
    ASSERT_TRUE(lock.ok()) << lock.status().message();
    std::vector<DeviceClaim> claims =
        ReadDeviceClaims(root, {api::Kind::kPyTorchJob, "default", "me"});
    ASSERT_EQ(claims.size(), 2u);
    EXPECT_NE(claims[0].holder.find("pytorchjob default/alive (runner pid " +
                                    std::to_string(getpid()) + ")"),
              std::string::npos)
        << claims[0].holder;
    EXPECT_EQ(Indices(claims[0].gpus), (std::vector<int>{2}));
    EXPECT_EQ(Indices(claims[1].gpus), (std::vector<int>{3}));
    EXPECT_EQ(ReadDeviceClaims(root, alive.key()).size(), 1u) << "a job does not block itself";
  }
  alive.ReleaseRunnerLock();
  starting.ReleaseRunnerLock();
  EXPECT_TRUE(ReadDeviceClaims(root, {api::Kind::kPyTorchJob, "default", "me"}).empty());
  EXPECT_TRUE(
      DecodeAssignment(nlohmann::json::parse(R"({"replicas": {"a": [{"index": "x"}]}})")).empty())
      << "a damaged record frees its devices";
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainctl::local

namespace trainctl::local {
namespace {

// `nprocPerNode: auto` locally: one process per replica without limits (never the machine's CPU
// count: every replica shares this machine), the whole CPUs of a CPU limit, the devices of a
// GPU ask; WORLD_SIZE is the sum, and every replica's env says so.
TEST(LocalNproc, AutoIsOneProcessPerReplicaUnlessALimitSaysMore) {
  auto job_with = [](const std::string& master, const std::string& worker,
                     const std::string& nproc) {
    auto container = [](const std::string& resources) {
      return "        spec:\n          containers:\n          - name: pytorch\n            image: "
             "t\n            command: [\"true\"]\n" +
             (resources.empty() ? "" : "            resources: " + resources + "\n");
    };
    return LoadJob(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: demo}\nspec:\n" +
        (nproc.empty() ? "" : "  nprocPerNode: \"" + nproc + "\"\n") +
        "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n" +
        container(master) + "    Worker:\n      replicas: 2\n      template:\n" +
        container(worker));
  };
  // Defaulted to auto, no limits: 1 each, WORLD_SIZE 3 (torchrun's auto would start a process
  // per CPU of the machine in each of the three replicas).
  StatusOr<std::optional<LocalNproc>> plain = ResolveLocalNproc(job_with("", "", ""));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(plain->has_value());
  EXPECT_EQ((*plain)->per_type.at("Master"), 1);
  EXPECT_EQ((*plain)->per_type.at("Worker"), 1);
  EXPECT_EQ((*plain)->world_size, 3);

  // A CPU limit of 2.5 gives 2 (whole CPUs); a request is not a limit; a GPU ask wins.
  StatusOr<std::optional<LocalNproc>> limited =
      ResolveLocalNproc(job_with("{limits: {cpu: \"2500m\"}}", "{requests: {cpu: \"4\"}}", "auto"));
  ASSERT_TRUE(limited.ok() && limited->has_value());
  EXPECT_EQ((*limited)->per_type.at("Master"), 2);
  EXPECT_EQ((*limited)->per_type.at("Worker"), 1);
  EXPECT_EQ((*limited)->world_size, 4);
  StatusOr<std::optional<LocalNproc>> gpus = ResolveLocalNproc(
      job_with("{limits: {nvidia.com/gpu: 2, cpu: \"8\"}}", "{limits: {nvidia.com/gpu: 2}}", ""));
  ASSERT_TRUE(gpus.ok() && gpus->has_value());
  EXPECT_EQ((*gpus)->per_type.at("Master"), 2);
  EXPECT_EQ((*gpus)->world_size, 6);

  // A number (or cpu/gpu, asked for explicitly) is left as written.
  StatusOr<std::optional<LocalNproc>> fixed = ResolveLocalNproc(job_with("", "", "4"));
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->has_value());

  // A bad limit names its field.
  StatusOr<std::optional<LocalNproc>> bad =
      ResolveLocalNproc(job_with("{limits: {cpu: \"lots\"}}", "", ""));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pytorchReplicaSpecs[Master]"), std::string::npos)
      << bad.status().message();

  // The env of every replica carries the numbers.
  api::Job job = job_with("{limits: {cpu: \"2\"}}", "", "");
  api::ServiceEndpoints endpoints("demo", "default");
  ReplicaLaunchInputs inputs{"/", {"PATH=/usr/bin:/bin"}, "", nullptr, "", "", nullptr};
  for (const auto& [type, want_nproc] :
       std::vector<std::pair<std::string, std::string>>{{"Master", "2"}, {"Worker", "1"}}) {
    StatusOr<PreparedLaunch> launch = BuildReplicaLaunch(job, type, 0, endpoints, inputs);
    ASSERT_TRUE(launch.ok()) << launch.status().message();
    auto has = [&](const std::string& entry) {
      return std::find(launch->spec.env.begin(), launch->spec.env.end(), entry) !=
             launch->spec.env.end();
    };
    EXPECT_TRUE(has("PET_NPROC_PER_NODE=" + want_nproc)) << type;
    EXPECT_TRUE(has("WORLD_SIZE=4")) << type;
    EXPECT_FALSE(has("PET_NPROC_PER_NODE=auto")) << type;
  }
}

}  // namespace
}  // namespace trainctl::local
