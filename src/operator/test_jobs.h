// Test-only: jobs for the operator's unit tests, loaded from YAML the way `kubectl apply`
// input is (decoded, defaulted, validated). A bad fixture fails the calling test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/manifest.h"

namespace trainctl::op::testing {

// A minimal MPIJob "mpi" in namespace "ns": one Launcher, three Workers.
inline constexpr const char* kMpiJob = R"(apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mpi, namespace: ns}
spec:
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: x}]}}}
    Worker: {replicas: 3, template: {spec: {containers: [{name: mpi, image: x}]}}}
)";

inline api::Job LoadJob(const std::string& yaml) {
  auto jobs = api::LoadJobsFromText(yaml, "test.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().message();
  if (!jobs.ok() || jobs->empty()) return api::Job{};
  return jobs->at(0).job;
}

}  // namespace trainctl::op::testing
