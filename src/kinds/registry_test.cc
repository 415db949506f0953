#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/kind_plugin.h"

namespace trainctl::api {
namespace {

TEST(RegistryTest, OnePluginPerKindInKindOrder) {
  const std::vector<const KindPlugin*>& plugins = AllPlugins();
  ASSERT_EQ(plugins.size(), 8u);  // the seven v1 kinds and TrainJob
  std::set<std::string> names;
  for (size_t i = 0; i < plugins.size(); ++i) {
    const KindInfo& info = plugins[i]->info();
    EXPECT_EQ(static_cast<size_t>(info.kind), i) << info.name;
    EXPECT_EQ(&PluginFor(info.kind), plugins[i]) << info.name;
    EXPECT_EQ(&Info(info.kind), &info) << info.name;
    EXPECT_EQ(KindFromName(info.name), info.kind);
    names.insert(info.name);
  }
  EXPECT_EQ(names.size(), plugins.size());
  ASSERT_EQ(AllKinds().size(), plugins.size());
  for (size_t i = 0; i < plugins.size(); ++i)
    EXPECT_STREQ(AllKinds()[i].name, plugins[i]->info().name);
}

TEST(RegistryTest, FactsOfEachKind) {
  EXPECT_STREQ(Info(Kind::kPyTorchJob).name, "PyTorchJob");
  EXPECT_EQ(Info(Kind::kPyTorchJob).default_port, 23456);
  EXPECT_STREQ(Info(Kind::kTFJob).spec_map_field, "tfReplicaSpecs");
  EXPECT_STREQ(Info(Kind::kXGBoostJob).port_name, "xgboostjob-port");
  EXPECT_FALSE(Info(Kind::kMPIJob).normalizes_type_case);
  EXPECT_FALSE(Info(Kind::kMPIJob).injects_default_port);
  EXPECT_STREQ(Info(Kind::kPaddleJob).port_name, "master");
  EXPECT_EQ(Info(Kind::kJAXJob).replica_types, std::vector<std::string>{"Worker"});
  EXPECT_EQ(Info(Kind::kMXJob).replica_types.size(), 6u);
  EXPECT_TRUE(Info(Kind::kTrainJob).runtime_resolved);
  EXPECT_FALSE(Info(Kind::kTrainJob).operator_serves);  // served locally only, so far
  EXPECT_EQ(Info(Kind::kTrainJob).api_versions,
            std::vector<std::string>{"trainer.kubeflow.org/v1alpha1"});
  EXPECT_TRUE(Info(Kind::kPyTorchJob).uses_selector);
  EXPECT_FALSE(Info(Kind::kTFJob).uses_selector);
  EXPECT_TRUE(Info(Kind::kPyTorchJob).supports_hpa);
  EXPECT_FALSE(Info(Kind::kPaddleJob).supports_hpa);
  EXPECT_EQ(KindFromCliName("pytorchjobs"), Kind::kPyTorchJob);
  EXPECT_EQ(KindFromCliName("MXJob"), Kind::kMXJob);
  EXPECT_EQ(KindFromCliName("tj"), Kind::kTrainJob);
  EXPECT_EQ(KindFromCliName("trainjobs"), Kind::kTrainJob);
  EXPECT_EQ(KindFromCliName("TrainJob"), Kind::kTrainJob);
}

TEST(RegistryTest, OnlyMpiHasALauncher) {
  for (const KindInfo& info : AllKinds()) {
    bool mpi = info.kind == Kind::kMPIJob;
    EXPECT_EQ(info.has_launcher(), mpi) << info.name;
    EXPECT_EQ(info.IsLauncher("Launcher"), mpi) << info.name;
    EXPECT_FALSE(info.IsLauncher("Worker")) << info.name;
    EXPECT_FALSE(info.IsLauncher("")) << info.name;
  }
}

TEST(RegistryTest, OnlyPyTorchWorkersWaitForTheMaster) {
  Job with_master, workers_only;
  with_master.replica_specs["Master"] = {};
  with_master.replica_specs["Worker"] = {};
  workers_only.replica_specs["Worker"] = {};
  for (const KindPlugin* plugin : AllPlugins()) {
    bool pytorch = plugin->info().kind == Kind::kPyTorchJob;
    EXPECT_EQ(plugin->WaitsForMaster(with_master, "Worker"), pytorch) << plugin->info().name;
    EXPECT_FALSE(plugin->WaitsForMaster(with_master, "Master")) << plugin->info().name;
    EXPECT_FALSE(plugin->WaitsForMaster(workers_only, "Worker")) << plugin->info().name;
  }
}

TEST(RegistryTest, StatusRulesOfEachKind) {
  using Shape = StatusRules::Shape;
  for (Kind k : {Kind::kPyTorchJob, Kind::kPaddleJob, Kind::kJAXJob})
    EXPECT_EQ(Info(k).status_rules.shape, Shape::kMasterOrWorkers) << Info(k).name;
  EXPECT_TRUE(Info(Kind::kPyTorchJob).status_rules.elastic_success);
  EXPECT_FALSE(Info(Kind::kPaddleJob).status_rules.elastic_success);
  EXPECT_FALSE(Info(Kind::kJAXJob).status_rules.master_decides);
  EXPECT_EQ(Info(Kind::kTFJob).status_rules.shape, Shape::kChiefOrWorkers);
  EXPECT_EQ(Info(Kind::kTFJob).status_rules.type_order,
            (std::vector<std::string>{"Chief", "Evaluator", "Master", "PS", "Worker"}));
  for (Kind k : {Kind::kXGBoostJob, Kind::kMPIJob, Kind::kMXJob})
    EXPECT_EQ(Info(k).status_rules.shape, Shape::kLeadType) << Info(k).name;
  EXPECT_TRUE(Info(Kind::kXGBoostJob).status_rules.running_on_finish);
  EXPECT_EQ(Info(Kind::kMPIJob).status_rules.lead_types, std::vector<std::string>{"Launcher"});
  EXPECT_EQ(Info(Kind::kMXJob).status_rules.lead_types,
            (std::vector<std::string>{"Scheduler", "Worker"}));
  EXPECT_EQ(Info(Kind::kMXJob).status_rules.failed_prefix, "mxjob");
}

}  // namespace
}  // namespace trainctl::api
