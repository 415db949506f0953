// Unit tests for replica cgroups: finding the runner's cgroups in /proc/self/cgroup and
// mountinfo (cgroup v1, v2, hybrid, inside a container, none), what is made and written for a
// replica's limits in v1 and v2, the CFS quota, the OOM kill count, the note said when limits
// cannot be enforced, and making and removing the folders (on a plain folder laid out like a
// cgroup tree). The kernel's side is tested end to end in test/e2e/test_workstation.py.
#include "local/cgroups.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/test_manifest.h"
#include "local/replica_limits.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

// This machine's layout (a VM with cgroup v1 for memory and cpu, and an empty unified tree).
constexpr char kV1Self[] =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/1505\n2:cpuacct:/\n1:cpu:/\n0::/\n";
constexpr char kV1Mounts[] =
    "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:6 - cgroup cgroup rw,cpu\n"
    "33 25 0:29 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
    "40 25 0:36 / /sys/fs/cgroup/unified rw,relatime shared:16 - cgroup2 cgroup2 rw\n"
    "22 1 253:0 / / rw,relatime - ext4 /dev/vda rw\n";

// A systemd host with only cgroup v2.
constexpr char kV2Self[] = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/t.scope\n";
constexpr char kV2Mounts[] =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

api::Job LimitedJob(const std::string& resources) {
  return api::test::LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: demo}\nspec:\n"
      "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n"
      "          containers:\n          - name: pytorch\n            image: t\n"
      "            command: [\"true\"]\n            resources: " +
      resources + "\n");
}

ReplicaLimits Limits(const std::string& resources) {
  StatusOr<ReplicaLimits> limits = LimitsOf(LimitedJob(resources), "Master");
  EXPECT_TRUE(limits.ok()) << limits.status().message();
  return *limits;
}

TEST(CgroupLocation, FindsTheRunnersCgroupInEachV1HierarchyAndPrefersV1Memory) {
  CgroupLocation loc = LocateCgroups(ParseProcCgroup(kV1Self), ParseCgroupMounts(kV1Mounts));
  EXPECT_EQ(loc.version, 1);
  EXPECT_EQ(loc.memory_dir, "/sys/fs/cgroup/memory/process_api/1505");
  EXPECT_EQ(loc.cpu_dir, "/sys/fs/cgroup/cpu");
}

TEST(CgroupLocation, FindsTheUnifiedCgroupOnAV2Host) {
  CgroupLocation loc = LocateCgroups(ParseProcCgroup(kV2Self), ParseCgroupMounts(kV2Mounts));
  EXPECT_EQ(loc.version, 2);
  EXPECT_EQ(loc.memory_dir,
            "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/t.scope");
  EXPECT_EQ(loc.cpu_dir, "");
  EXPECT_EQ(loc.mount_point, "/sys/fs/cgroup");
}

TEST(CgroupLocation, AMountOfASubtreeAndEscapedPathsAreFollowed) {
  // Inside a container the hierarchy's own cgroup is mounted, not its root.
  std::string mounts =
      "1 0 0:1 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "2 0 0:2 /docker/abc /my\\040cgroups/cpu rw - cgroup cgroup rw,cpu,cpuacct\n";
  CgroupLocation loc =
      LocateCgroups(ParseProcCgroup("3:memory:/docker/abc/job\n2:cpu,cpuacct:/docker/abc\n"),
                    ParseCgroupMounts(mounts));
  EXPECT_EQ(loc.version, 1);
  EXPECT_EQ(loc.memory_dir, "/sys/fs/cgroup/memory/job");
  EXPECT_EQ(loc.cpu_dir, "/my cgroups/cpu");
  // A cgroup outside what is mounted cannot be reached.
  CgroupLocation outside =
      LocateCgroups(ParseProcCgroup("3:memory:/other\n"), ParseCgroupMounts(mounts));
  EXPECT_EQ(outside.version, 0);
  EXPECT_FALSE(outside.why_not.empty());
}

TEST(CgroupLocation, NoCgroupMountedSaysSo) {
  CgroupLocation loc = LocateCgroups(ParseProcCgroup(""), ParseCgroupMounts(""));
  EXPECT_EQ(loc.version, 0);
  EXPECT_NE(loc.why_not.find("no cgroup"), std::string::npos) << loc.why_not;
}

TEST(CgroupPlan, V1WritesTheMemoryLimitSwapIncludedAndTheCfsQuota) {
  CgroupHost host{1, "/m/base", "/c/base", false, "", "", {}};
  CgroupPlan plan = PlanReplicaCgroup(host, "trainctl-7", "demo-master-0.1",
                                      Limits("{limits: {cpu: 500m, memory: 64Mi}}"));
  EXPECT_EQ(plan.dirs,
            (std::vector<std::string>{"/m/base/trainctl-7", "/m/base/trainctl-7/demo-master-0.1",
                                      "/c/base/trainctl-7", "/c/base/trainctl-7/demo-master-0.1"}));
  ASSERT_EQ(plan.writes.size(), 4u);
  EXPECT_EQ(plan.writes[0].file, "/m/base/trainctl-7/demo-master-0.1/memory.limit_in_bytes");
  EXPECT_EQ(plan.writes[0].value, "67108864");
  EXPECT_EQ(plan.writes[1].file, "/m/base/trainctl-7/demo-master-0.1/memory.memsw.limit_in_bytes");
  EXPECT_TRUE(plan.writes[1].optional);
  EXPECT_EQ(plan.writes[2].value, "100000");
  EXPECT_EQ(plan.writes[3].file, "/c/base/trainctl-7/demo-master-0.1/cpu.cfs_quota_us");
  EXPECT_EQ(plan.writes[3].value, "50000");
  EXPECT_EQ(plan.procs,
            (std::vector<std::string>{"/m/base/trainctl-7/demo-master-0.1/cgroup.procs",
                                      "/c/base/trainctl-7/demo-master-0.1/cgroup.procs"}));
  EXPECT_EQ(plan.oom_file, "/m/base/trainctl-7/demo-master-0.1/memory.oom_control");
  EXPECT_EQ(plan.remove_dirs.size(), 2u);
  EXPECT_EQ(JobCgroupDirs(host, "trainctl-7"),
            (std::vector<std::string>{"/m/base/trainctl-7", "/c/base/trainctl-7"}));
}

TEST(CgroupPlan, V2HandsTheControllersDownAndWritesMaxFiles) {
  CgroupHost host{2, "/sys/fs/cgroup/app.slice", "", true, "", "", {}};
  CgroupPlan plan =
      PlanReplicaCgroup(host, "trainctl-7", "w.1", Limits("{limits: {cpu: \"2\", memory: 1Gi}}"));
  std::string job = "/sys/fs/cgroup/app.slice/trainctl-7";
  EXPECT_EQ(plan.dirs, (std::vector<std::string>{job, job + "/w.1"}));
  std::vector<std::pair<std::string, std::string>> writes;
  for (const CgroupWrite& w : plan.writes) writes.emplace_back(w.file, w.value);
  EXPECT_EQ(writes, (std::vector<std::pair<std::string, std::string>>{
                        {job + "/cgroup.subtree_control", "+memory"},
                        {job + "/cgroup.subtree_control", "+cpu"},
                        {job + "/w.1/memory.max", "1073741824"},
                        {job + "/w.1/memory.swap.max", "0"},
                        {job + "/w.1/memory.oom.group", "1"},
                        {job + "/w.1/cpu.max", "200000 100000"}}));
  EXPECT_EQ(plan.procs, (std::vector<std::string>{job + "/w.1/cgroup.procs"}));
  EXPECT_EQ(plan.oom_file, job + "/w.1/memory.events");
}

TEST(CgroupPlan, NothingForRequestsNoLimitsOrWhatTheHostCannotEnforce) {
  CgroupHost v1{1, "/m", "", false, "no cpu hierarchy", "", {}};
  EXPECT_TRUE(
      PlanReplicaCgroup(v1, "j", "r", Limits("{requests: {cpu: \"1\", memory: 1Gi}}")).dirs.empty())
      << "requests are not limits";
  EXPECT_TRUE(PlanReplicaCgroup(v1, "j", "r", Limits("{}")).dirs.empty());
  EXPECT_TRUE(PlanReplicaCgroup(v1, "j", "r", Limits("{limits: {cpu: \"1\"}}")).dirs.empty())
      << "a CPU limit without a cpu hierarchy";
  CgroupPlan memory_only =
      PlanReplicaCgroup(v1, "j", "r", Limits("{limits: {cpu: \"1\", memory: 1Gi}}"));
  EXPECT_EQ(memory_only.procs, (std::vector<std::string>{"/m/j/r/cgroup.procs"}));
  EXPECT_TRUE(
      PlanReplicaCgroup(CgroupHost{}, "j", "r", Limits("{limits: {memory: 1Gi}}")).dirs.empty());
}

TEST(CgroupPlan, QuotaAndOomCountAndMemoryText) {
  EXPECT_EQ(CpuQuotaMicros(500), 50000);
  EXPECT_EQ(CpuQuotaMicros(2000), 200000);
  EXPECT_EQ(CpuQuotaMicros(1), 1000) << "the kubelet's 1 ms floor";
  EXPECT_EQ(ParseOomKills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3);
  EXPECT_EQ(ParseOomKills("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n"), 1);
  EXPECT_EQ(ParseOomKills(""), 0);
  EXPECT_EQ(FormatMemory(64 << 20), "64Mi");
  EXPECT_EQ(FormatMemory(int64_t{3} << 29), "1.5Gi");
  EXPECT_EQ(FormatMemory(1000), "1000");
  EXPECT_EQ(FormatMemory(1000 * 1000), "1000000") << "976.5625Ki is not exact to a tenth";
  EXPECT_EQ(FormatMemory(1536), "1.5Ki");
}

TEST(CgroupNote, SaysWhichLimitIsNotEnforcedAndWhyOnce) {
  api::Job both = LimitedJob("{limits: {cpu: \"2\", memory: 1Gi}}");
  CgroupHost none;
  none.why_not = "no cgroup with a memory controller is mounted for this process";
  std::optional<std::string> note = UnenforcedLimitsNote(both, none);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("resources.limits.memory (and any other CPU or memory limit) is not "
                       "enforced by trainctl run: no cgroup"),
            std::string::npos)
      << *note;
  EXPECT_NE(note->find("OMP_NUM_THREADS"), std::string::npos);

  CgroupHost v1_no_cpu{1, "/m", "", false, "no cgroup v1 cpu hierarchy is mounted", "", {}};
  note = UnenforcedLimitsNote(both, v1_no_cpu);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("resources.limits.cpu (and any other CPU limit)"), std::string::npos)
      << *note;
  EXPECT_FALSE(UnenforcedLimitsNote(LimitedJob("{limits: {memory: 1Gi}}"), v1_no_cpu));

  CgroupHost full{1, "/m", "/c", false, "", "", {}};
  EXPECT_FALSE(UnenforcedLimitsNote(both, full)) << "every limit is enforced";
  EXPECT_FALSE(UnenforcedLimitsNote(LimitedJob("{requests: {cpu: \"2\"}}"), none))
      << "requests are never enforced, on a cluster either";
  EXPECT_TRUE(HasLimits(both));
  api::Job mpi = api::test::LoadJob(
      "apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: m}\nspec:\n"
      "  mpiReplicaSpecs:\n    Launcher:\n      replicas: 1\n      template:\n        spec:\n"
      "          containers:\n          - name: mpi\n            image: t\n"
      "            command: [\"true\"]\n            resources: {limits: {memory: 1Gi}}\n");
  note = UnenforcedLimitsNote(mpi, full);
  ASSERT_TRUE(note.has_value()) << "an MPIJob's ranks all run under the Launcher's mpirun";
  EXPECT_NE(note->find("of this MPIJob) is not enforced"), std::string::npos) << *note;
  EXPECT_FALSE(HasLimits(LimitedJob("{requests: {memory: 1Gi}}")));
}

// A folder laid out like a cgroup tree: the kernel's files exist, so writes land in them.
class CgroupFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("trainctl-cgroups-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "trainctl-1" / "r.1");
    for (const char* f : {"memory.limit_in_bytes", "cgroup.procs", "memory.oom_control"})
      std::ofstream(root_ / "trainctl-1" / "r.1" / f) << "";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path root_;
};

TEST_F(CgroupFiles, WritesThePlanSkipsMissingOptionalFilesAndReadsTheOomCount) {
  CgroupHost host{1, root_.string(), "", false, "", "", {}};
  CgroupPlan plan =
      PlanReplicaCgroup(host, "trainctl-1", "r.1", Limits("{limits: {memory: 64Mi}}"));
  Status made = MakeReplicaCgroup(plan);
  ASSERT_TRUE(made.ok()) << made.message();
  EXPECT_EQ(Read(root_ / "trainctl-1/r.1/memory.limit_in_bytes"), "67108864");
  EXPECT_FALSE(fs::exists(root_ / "trainctl-1/r.1/memory.memsw.limit_in_bytes"))
      << "optional, and absent without swap accounting";
  EXPECT_EQ(ReadOomKills(plan), 0);
  std::ofstream(root_ / "trainctl-1/r.1/memory.oom_control") << "under_oom 0\noom_kill 2\n";
  EXPECT_EQ(ReadOomKills(plan), 2);
}

TEST_F(CgroupFiles, ARefusedCpuQuotaLeavesTheCpuLimitUnenforcedNotTheReplicaFailed) {
  // The cpu hierarchy's files are missing here, as a write the kernel refuses would fail.
  fs::create_directories(root_ / "cpu");
  CgroupHost host{1, root_.string(), (root_ / "cpu").string(), false, "", "", {}};
  CgroupPlan plan =
      PlanReplicaCgroup(host, "trainctl-1", "r.1", Limits("{limits: {cpu: \"4\", memory: 64Mi}}"));
  std::vector<std::string> skipped;
  Status made = MakeReplicaCgroup(plan, &skipped);
  ASSERT_TRUE(made.ok()) << made.message();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("the CPU limit is not enforced: "), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[0].find("cpu.cfs_period_us"), std::string::npos) << skipped[0];
  EXPECT_EQ(Read(root_ / "trainctl-1/r.1/memory.limit_in_bytes"), "67108864");
}

TEST_F(CgroupFiles, AFailedWriteNamesTheFileAndRemovesWhatWasMade) {
  CgroupHost host{1, root_.string(), root_.string() + "/cpu", false, "", "", {}};
  CgroupPlan plan =
      PlanReplicaCgroup(host, "trainctl-2", "r.1", Limits("{limits: {memory: 64Mi}}"));
  Status made = MakeReplicaCgroup(plan);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.message().find("trainctl-2/r.1/memory.limit_in_bytes"), std::string::npos)
      << made.message();
  EXPECT_FALSE(fs::exists(root_ / "trainctl-2")) << "the folders it made are gone";
  EXPECT_TRUE(fs::exists(root_ / "trainctl-1")) << "others are kept";
}

TEST_F(CgroupFiles, StaleJobCgroupsOfDeadRunnersAreRemovedLiveOnesKept) {
  // pid 2^22+1 is above any pid_max, so no process has it.
  fs::create_directories(root_ / "trainctl-4194305" / "r.1");
  fs::create_directories(root_ / ("trainctl-" + std::to_string(getpid())) / "r.1");
  CgroupHost host{1, root_.string(), "", false, "", "", {}};
  RemoveStaleJobCgroups(host);
  EXPECT_FALSE(fs::exists(root_ / "trainctl-4194305"));
  EXPECT_FALSE(fs::exists(root_ / ("trainctl-" + std::to_string(getpid()))))
      << "left by an earlier runner with this pid";
  EXPECT_TRUE(fs::exists(root_ / "trainctl-1")) << "pid 1 is alive";
  EXPECT_FALSE(FindCgroupHost({"TRAINCTL_CGROUPS=off"}).version);
  EXPECT_EQ(FindCgroupHost({"TRAINCTL_CGROUPS=off"}).why_not, "TRAINCTL_CGROUPS=off");
}

}  // namespace
}  // namespace trainctl::local
