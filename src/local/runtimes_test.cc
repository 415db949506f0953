// The runtimes a local TrainJob may name: the built-in ones decode and carry upstream's names,
// installed ones land in the state folder (nothing written when one is bad), and --runtimes
// replaces a built-in of the same name.
#include "local/runtimes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace trainctl::local {
namespace {
namespace fs = std::filesystem;

class RuntimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::temp_directory_path() /
        ("trainctl-runtimes-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = root_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  static std::string Runtime(const std::string& name, const std::string& policy) {
    return "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
           "metadata: {name: " +
           name + "}\nspec:\n  mlPolicy: {" + policy +
           "}\n"
           "  template: {spec: {replicatedJobs: [{name: node, template: {metadata: {labels: "
           "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: {template: {spec: "
           "{containers: [{name: node, image: i}]}}}}}]}}\n";
  }
  fs::path root_;
};

const api::TrainingRuntime* Named(const api::RuntimeCatalog& c, const std::string& name) {
  for (const api::TrainingRuntime& rt : c.runtimes())
    if (rt.name == name) return &rt;
  return nullptr;
}

TEST_F(RuntimesTest, TheBuiltInRuntimesDecodeUnderUpstreamsNames) {
  StatusOr<api::RuntimeCatalog> c = LocalRuntimes(root_.string(), std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const auto& [name, policy] : {std::pair{"torch-distributed", api::MlPolicy::kTorch},
                                     {"deepspeed-distributed", api::MlPolicy::kMpi},
                                     {"mlx-distributed", api::MlPolicy::kMpi},
                                     {"jax-distributed", api::MlPolicy::kJax},
                                     {"xgboost-distributed", api::MlPolicy::kXGBoost}}) {
    const api::TrainingRuntime* rt = Named(*c, name);
    ASSERT_NE(rt, nullptr) << name;
    EXPECT_EQ(rt->policy, policy) << name;
    EXPECT_EQ(rt->source, "built-in");
    EXPECT_EQ(rt->kind, "ClusterTrainingRuntime");
  }
}

TEST_F(RuntimesTest, GivenRuntimesReplaceBuiltInOnesOfTheSameName) {
  std::string file = Write("rt.yaml", Runtime("torch-distributed", "jax: {}"));
  StatusOr<api::RuntimeCatalog> c = LocalRuntimes(root_.string(), file);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Named(*c, "torch-distributed")->policy, api::MlPolicy::kJax);
  EXPECT_FALSE(LocalRuntimes(root_.string(), (root_ / "nope").string()).ok());
}

TEST_F(RuntimesTest, InstallWritesEachRuntimeOrNothing) {
  fs::create_directories(root_ / "in");
  Write("in/a.yaml", Runtime("aa", "torch: {}"));
  Write("in/b.yaml", Runtime("bb", "torch: {}, jax: {}"));  // two policies: refused
  fs::path state = root_ / "state";
  StatusOr<std::vector<std::string>> bad = InstallRuntimes(state.string(), (root_ / "in").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Only one of the policy can be configured"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(RuntimesFolder(state.string()))) << "nothing written";
  fs::remove(root_ / "in" / "b.yaml");
  StatusOr<std::vector<std::string>> ok = InstallRuntimes(state.string(), (root_ / "in").string());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_NE((*ok)[0].find("ClusterTrainingRuntime aa installed"), std::string::npos);
  StatusOr<api::RuntimeCatalog> c = LocalRuntimes(state.string(), std::nullopt);
  ASSERT_TRUE(c.ok());
  ASSERT_NE(Named(*c, "aa"), nullptr);
  EXPECT_NE(Named(*c, "aa")->source.find("cluster-aa.yaml"), std::string::npos);
  ok = InstallRuntimes(state.string(), (root_ / "in" / "a.yaml").string());
  ASSERT_TRUE(ok.ok());
  EXPECT_NE((*ok)[0].find("replaced"), std::string::npos);
}

}  // namespace
}  // namespace trainctl::local
