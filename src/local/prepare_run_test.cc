// PrepareRun: a loaded job and the run's flags → the runner's options and the notes said once;
// MakeClaimFolders: the file's claims as folders.
#include "local/prepare_run.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "api/test_manifest.h"

namespace trainctl::local {
namespace {
namespace fs = std::filesystem;

const char* kMpiV2 = R"yaml(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template: {spec: {containers: [{name: l, image: mpi, command: [mpirun, hostname]}]}}
    Worker:
      replicas: 2
      template: {spec: {containers: [{name: w, image: mpi}]}}
)yaml";

class PrepareRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("prepare-run-" + std::to_string(getpid()));
    fs::create_directories(root_ / "jobs");
    flags_.manifest = (root_ / "jobs" / "pi.yaml").string();
    flags_.source = "jobs/pi.yaml";
    flags_.cwd = root_.string();
    flags_.state_root = (root_ / "state").string();
    flags_.env = {"PATH=/usr/bin:/bin"};
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  RunFlags flags_;
};

TEST_F(PrepareRunTest, PathsResolveBesideTheManifestAndTheFlagsCarryOver) {
  flags_.replace = true;
  flags_.grace_seconds = 1.5;
  StatusOr<PreparedRun> run = PrepareRun(api::test::LoadJob(kMpiV2), flags_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->options.manifest_dir, (root_ / "jobs").string());
  EXPECT_EQ(run->options.state_root, flags_.state_root);
  EXPECT_TRUE(run->options.replace);
  EXPECT_EQ(run->options.grace, Duration(1500));
  EXPECT_EQ(run->options.base_env, flags_.env);
  EXPECT_FALSE(run->options.gpus);  // asks for none: the inventory is not read
  EXPECT_FALSE(run->options.runtime);
  EXPECT_EQ(run->options.config.claims_dir, flags_.state_root + "/.claims/default");
  // As processes, the v2beta1 workers only hold their place: said once.
  bool said = false;
  for (const std::string& note : run->notes)
    said = said || note.find("the workers' command (sshd on a cluster) is not run here") !=
                       std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(PrepareRunTest, StdinResolvesInTheWorkingFolderAndABadWorkdirIsNamed) {
  flags_.manifest = "-";
  StatusOr<PreparedRun> run = PrepareRun(api::test::LoadJob(kMpiV2), flags_);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->options.manifest_dir, root_.string());
  flags_.workdir = (root_ / "nowhere").string();
  run = PrepareRun(api::test::LoadJob(kMpiV2), flags_);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(run.status().message(), "--workdir: \"" + flags_.workdir + "\" is not a folder");
}

TEST_F(PrepareRunTest, AnUnknownRuntimeNamesTheSource) {
  flags_.runtime = "lxc";
  StatusOr<PreparedRun> run = PrepareRun(api::test::LoadJob(kMpiV2), flags_);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message().rfind("jobs/pi.yaml: ", 0), 0u) << run.status().message();
}

TEST_F(PrepareRunTest, ClaimFoldersAreMadeOnceAndThenKept) {
  std::vector<api::ClaimDocument> claims(1);
  claims[0].name = "data";
  claims[0].namespace_ = "team";
  StatusOr<std::vector<std::string>> notes = MakeClaimFolders(flags_.state_root, claims);
  ASSERT_TRUE(notes.ok()) << notes.status().message();
  ASSERT_EQ(notes->size(), 1u);
  EXPECT_NE((*notes)[0].find("(made; trainctl claims delete data removes it)"), std::string::npos)
      << (*notes)[0];
  EXPECT_TRUE(fs::is_directory(flags_.state_root + "/.claims/team/data"));
  notes = MakeClaimFolders(flags_.state_root, claims);
  ASSERT_TRUE(notes.ok());
  EXPECT_NE((*notes)[0].find("(kept from earlier jobs; "), std::string::npos) << (*notes)[0];
}

}  // namespace
}  // namespace trainctl::local
