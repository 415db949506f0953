#include "engine/groups.h"

namespace trainctl::engine {
namespace {

bool DependencyMet(const api::Job& job, const api::GroupDependency& d,
                   const std::vector<ReplicaObservation>& observed) {
  auto spec = job.replica_specs.find(d.type);
  if (spec == job.replica_specs.end()) return true;  // no such group: nothing to wait for
  int wanted = spec->second.replicas.value_or(1);
  std::vector<bool> done(wanted > 0 ? wanted : 0, false);
  for (const ReplicaObservation& o : observed) {
    if (o.type != d.type || o.terminating || o.index < 0 || o.index >= wanted) continue;
    bool ok = d.until == api::GroupDependency::Until::kComplete ? o.phase == Phase::kSucceeded
                                                                : o.phase != Phase::kPending;
    if (ok) done[o.index] = true;
  }
  for (bool d_ok : done)
    if (!d_ok) return false;
  return true;
}

}  // namespace

std::vector<api::GroupDependency> UnmetDependencies(
    const api::Job& job, const std::string& type, const std::vector<ReplicaObservation>& observed) {
  std::vector<api::GroupDependency> out;
  auto spec = job.replica_specs.find(type);
  if (spec == job.replica_specs.end()) return out;
  for (const api::GroupDependency& d : spec->second.depends_on)
    if (!DependencyMet(job, d, observed)) out.push_back(d);
  return out;
}

std::string HeldGroupPhrase(const std::string& type,
                            const std::vector<api::GroupDependency>& unmet) {
  std::string out;
  for (const api::GroupDependency& d : unmet) {
    out += out.empty() ? "the " + type + " is made once every " : " and every ";
    out += d.type + (d.until == api::GroupDependency::Until::kReady ? " runs" : " has succeeded");
    if (!d.why.empty()) out += " (" + d.why + ")";
  }
  return out;
}

}  // namespace trainctl::engine
