// For the operator's tests: an MPIJob of kubeflow.org/v2beta1 named ns/pi (uid u1), a Launcher
// running `mpirun pi` and 2 Workers labelled team=a, decoded and defaulted as the operator
// reads it. `spec_extra` and `worker_extra` are YAML lines spliced into spec and the Worker's
// pod spec (indented 2 and 10 spaces).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/manifest.h"

namespace trainctl::op {

inline api::Job LoadMpiV2TestJob(const std::string& spec_extra,
                                 const std::string& worker_extra = "") {
  std::string yaml =
      "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: pi, namespace: ns, uid: "
      "u1}\nspec:\n" +
      spec_extra +
      "  mpiReplicaSpecs:\n"
      "    Launcher:\n      template:\n        spec:\n          containers:\n"
      "          - {name: launcher, image: mpi-pi, command: [mpirun, pi]}\n"
      "    Worker:\n      replicas: 2\n      template:\n        metadata: {labels: {team: a}}\n"
      "        spec:\n" +
      worker_extra + "          containers:\n          - {name: worker, image: mpi-pi}\n";
  auto jobs = api::LoadJobsFromText(yaml, "pi.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return (*jobs)[0].job;
}

}  // namespace trainctl::op
