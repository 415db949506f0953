#include "mpi_bench.h"

#include <gtest/gtest.h>

#include <map>

namespace trainctl::bench {
namespace {

using nlohmann::json;

TEST(MpiJobV2Doc, OneLauncherThatEndsAndWorkersThatRunOn) {
  const json doc = MpiJobV2Doc("job-3", "ns", 4, 30);
  EXPECT_EQ(doc["apiVersion"], "kubeflow.org/v2beta1");
  EXPECT_EQ(doc["kind"], "MPIJob");
  const json& specs = doc["spec"]["mpiReplicaSpecs"];
  EXPECT_EQ(specs["Launcher"]["replicas"], 1);
  EXPECT_EQ(specs["Worker"]["replicas"], 4);
  EXPECT_EQ(
      specs["Launcher"]["template"]["metadata"]["annotations"]["trainctl.dev/kwok-run-seconds"],
      "30");
  EXPECT_EQ(specs["Worker"]["template"]["metadata"]["annotations"]["trainctl.dev/kwok-run-forever"],
            "true");
  EXPECT_EQ(doc["spec"]["runPolicy"]["cleanPodPolicy"], "None");
}

TEST(MpiV2FloorObjects, WhatAnOperatorMakesForOneJobWithoutAnOwner) {
  auto objects = MpiV2FloorObjects(MpiJobV2Doc("job-0", "ns", 3, 5));
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  std::map<std::string, int> by_resource;
  for (const auto& [resource, object] : *objects) {
    ++by_resource[resource->plural];
    EXPECT_FALSE(object["metadata"].contains("ownerReferences")) << object["metadata"]["name"];
    EXPECT_EQ(object["metadata"].value("namespace", ""), "ns");
  }
  EXPECT_EQ(by_resource,
            (std::map<std::string, int>{
                {"secrets", 1}, {"configmaps", 1}, {"services", 1}, {"pods", 3}, {"jobs", 1}}));
  // The Secret, ConfigMap and Service first; the launcher's Job last.
  EXPECT_EQ((*objects)[0].first->plural, "secrets");
  EXPECT_EQ(objects->back().first->plural, "jobs");
  EXPECT_EQ(objects->back().second["metadata"]["name"], "job-0-launcher");
  // discover_hosts.sh names every worker: the ConfigMap's last content, written once.
  const std::string hosts = (*objects)[1].second["data"]["discover_hosts.sh"];
  for (const char* worker : {"job-0-worker-0", "job-0-worker-1", "job-0-worker-2"})
    EXPECT_NE(hosts.find(worker), std::string::npos) << hosts;
  // The pods keep the template's kwok annotations (they run on until deleted).
  EXPECT_EQ((*objects)[3].second["metadata"]["annotations"]["trainctl.dev/kwok-run-forever"],
            "true");
}

TEST(MpiV2FloorObjects, RefusesAnotherKind) {
  json doc = MpiJobV2Doc("job-0", "ns", 1, 5);
  doc["apiVersion"] = "kubeflow.org/v1";
  EXPECT_FALSE(MpiV2FloorObjects(doc).ok());
}

TEST(PointConversionAt, ReplacesTheServiceWithTheUrl) {
  json crd = {{"spec",
               {{"conversion",
                 {{"strategy", "Webhook"},
                  {"webhook",
                   {{"conversionReviewVersions", {"v1"}},
                    {"clientConfig", {{"service", {{"name", "trainctl-operator"}}}}}}}}}}}};
  auto pointed = PointConversionAt(crd, "https://127.0.0.1:1/convert");
  ASSERT_TRUE(pointed.ok());
  const json& webhook = (*pointed)["spec"]["conversion"]["webhook"];
  EXPECT_EQ(webhook["clientConfig"], (json{{"url", "https://127.0.0.1:1/convert"}}));
  EXPECT_EQ(webhook["conversionReviewVersions"], json::array({"v1"}));
}

TEST(PointConversionAt, RefusesACrdThatConvertsWithoutAWebhook) {
  EXPECT_FALSE(PointConversionAt({{"spec", {{"conversion", {{"strategy", "None"}}}}}}, "u").ok());
  EXPECT_FALSE(PointConversionAt({{"spec", json::object()}}, "u").ok());
}

}  // namespace
}  // namespace trainctl::bench
