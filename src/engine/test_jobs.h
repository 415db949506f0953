// Test helpers for the decision core: jobs from a few lines of spec, observed replicas, one pass
// applied like a substrate applies it, and condition summaries. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "api/manifest.h"
#include "engine/plan.h"
#include "engine/reconcile.h"

namespace trainctl::engine::test {

using std::chrono::seconds;

inline const Time kT0 = std::chrono::system_clock::from_time_t(1700000000);

struct TypeSpec {
  std::string type;
  int replicas;
  std::string restart_policy;  // "" = kind default
};

inline api::Job MakeJob(const std::string& kind, const std::vector<TypeSpec>& types,
                        const std::string& extra_spec = "", const std::string& run_policy = "") {
  const api::KindInfo& info = api::Info(*api::KindFromName(kind));
  std::string yaml = "apiVersion: kubeflow.org/v1\nkind: " + kind +
                     "\nmetadata: {name: job, namespace: ns}\nspec:\n" + extra_spec;
  if (!run_policy.empty()) yaml += "  runPolicy: " + run_policy + "\n";
  yaml += std::string("  ") + info.spec_map_field + ":\n";
  for (const TypeSpec& t : types) {
    yaml += "    " + t.type + ":\n      replicas: " + std::to_string(t.replicas) + "\n";
    if (!t.restart_policy.empty()) yaml += "      restartPolicy: " + t.restart_policy + "\n";
    yaml += std::string("      template: {spec: {containers: [{name: ") + info.default_container +
            ", image: img}]}}\n";
  }
  auto jobs = api::LoadJobsFromText(yaml, "t.yaml");
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return (*jobs)[0].job;
}

inline ReplicaObservation Pod(const std::string& type, int index, Phase phase,
                              std::optional<int> exit_code = std::nullopt, int restarts = 0) {
  ReplicaObservation r;
  r.type = type;
  r.index = index;
  r.name = "job-" + api::ToLower(type) + "-" + std::to_string(index);
  r.phase = phase;
  r.exit_code = exit_code;
  r.restarts = restarts;
  return r;
}

inline std::vector<ReplicaObservation> All(const api::Job& job, Phase phase) {
  std::vector<ReplicaObservation> out;
  for (const auto& [type, spec] : job.replica_specs)
    for (int i = 0; i < *spec.replicas; ++i) out.push_back(Pod(type, i, phase));
  return out;
}

// Runs one pass and stores the new status on the job, like a substrate does.
inline Plan Step(api::Job* job, const std::vector<ReplicaObservation>& observed, Time now) {
  Plan plan = Reconcile(*job, observed, now);
  job->status = plan.status;
  return plan;
}

inline std::string Summary(const api::JobStatus& s) {
  std::string out;
  for (const api::Condition& c : s.conditions)
    out += (out.empty() ? "" : " ") + c.type + "=" + c.status;
  return out;
}

inline std::string Last(const api::JobStatus& s) {
  return s.conditions.empty() ? "" : s.conditions.back().type;
}

}  // namespace trainctl::engine::test
