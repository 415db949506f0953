#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/kind_plugin.h"

namespace trainctl::api {
namespace {

TEST(RegistryTest, OnePluginPerKindInKindOrder) {
  const std::vector<const KindPlugin*>& plugins = AllPlugins();
  ASSERT_EQ(plugins.size(), 7u);
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
  EXPECT_EQ(KindFromCliName("pytorchjobs"), Kind::kPyTorchJob);
  EXPECT_EQ(KindFromCliName("MXJob"), Kind::kMXJob);
}

}  // namespace
}  // namespace trainctl::api
