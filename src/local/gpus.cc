#include "local/gpus.h"

#include <algorithm>
#include <set>

#include "api/replica_env.h"
#include "api/validation.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

// The job's replica types in the kind's order, then any others (alphabetical).
std::vector<std::string> TypesInOrder(const api::Job& job) {
  std::vector<std::string> out;
  for (const std::string& t : job.ReplicaTypes())
    if (job.replica_specs.count(t)) out.push_back(t);
  for (const auto& [t, spec] : job.replica_specs)
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

// "3", 3 → 3; "500m", "1.5", -1 → error.
StatusOr<int> WholeCount(const json& value, const std::string& field) {
  if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= 4096)
    return static_cast<int>(value.get<int64_t>());
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 4 &&
        std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoi(s);
  }
  return InvalidError(field + ": Invalid value: " + value.dump() +
                      ": a GPU count must be a whole number of devices, e.g. \"1\"");
}

std::string Plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string Describe(const GpuAsk& ask) {
  return ask.type + " (" + Plural(ask.replicas, "replica") + " × " +
         std::to_string(ask.per_replica) + ")";
}

}  // namespace

int GpuInventory::Count(const std::string& resource) const {
  return static_cast<int>(std::count_if(gpus.begin(), gpus.end(),
                                        [&](const Gpu& g) { return g.resource == resource; }));
}

StatusOr<std::vector<GpuAsk>> GpuAsks(const api::Job& job) {
  std::vector<GpuAsk> asks;
  for (const std::string& type : TypesInOrder(job)) {
    int replicas = job.ReplicasOf(type);
    if (replicas <= 0) continue;
    api::ContainerAt at = api::DefaultContainerAt(job, type);
    if (!at.container) continue;
    const json& c = *at.container;
    if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
    const json& resources = c["resources"];
    std::string base = at.path + ".resources.";
    for (const char* resource : {kNvidiaGpu, kAmdGpu}) {
      std::string section;
      for (const char* s : {"limits", "requests"})
        if (resources.contains(s) && resources[s].is_object() && resources[s].contains(resource)) {
          section = s;
          break;
        }
      if (section.empty()) continue;
      std::string field = base + section + "[" + resource + "]";
      StatusOr<int> count = WholeCount(resources[section][resource], field);
      if (!count.ok()) return count.status();
      if (*count == 0) continue;
      asks.push_back({type, replicas, *count, resource, field});
    }
  }
  return asks;
}

StatusOr<GpuAssignment> AssignGpus(const api::Job& job, const std::vector<GpuAsk>& asks,
                                   const GpuInventory& inventory,
                                   const std::vector<DeviceClaim>& held, bool share) {
  GpuAssignment out;
  std::set<std::string> resources;
  for (const GpuAsk& a : asks) resources.insert(a.resource);
  for (const std::string& resource : resources) {
    std::vector<Gpu> present;
    for (const Gpu& g : inventory.gpus)
      if (g.resource == resource) present.push_back(g);
    std::sort(present.begin(), present.end(),
              [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
    const int have = static_cast<int>(present.size());
    const std::string where = " (" + inventory.source + ")";
    int total = 0;
    std::string parts;
    for (const GpuAsk& a : asks) {
      if (a.resource != resource) continue;
      if (a.per_replica > have)
        return InvalidError(a.field + ": " + a.type + " asks for " + std::to_string(a.per_replica) +
                            " " + resource + " per replica and this machine has " +
                            std::to_string(have) + where);
      total += a.replicas * a.per_replica;
      parts += (parts.empty() ? "" : ", ") + Describe(a);
    }
    if (share) {
      int next = 0;
      for (const GpuAsk& a : asks) {
        if (a.resource != resource) continue;
        for (int i = 0; i < a.replicas; ++i) {
          std::vector<Gpu>& mine = out[api::ReplicaName(job, a.type, i)];
          for (int k = 0; k < a.per_replica; ++k) mine.push_back(present[(next + k) % have]);
          next = (next + a.per_replica) % have;
        }
      }
      continue;
    }
    if (total > have) {
      const GpuAsk* last = nullptr;
      for (const GpuAsk& a : asks)
        if (a.resource == resource) last = &a;
      return InvalidError(last->field + ": the job asks for " + std::to_string(total) + " " +
                          resource + " (" + parts + ") and this machine has " +
                          std::to_string(have) + where +
                          "; lower the counts, or run with --gpu-share to let replicas share "
                          "devices");
    }
    std::vector<Gpu> free;
    std::vector<std::string> holders;
    for (const Gpu& g : present) {
      bool taken = false;
      for (const DeviceClaim& claim : held)
        for (const Gpu& h : claim.gpus)
          if (h.resource == g.resource && h.index == g.index) {
            taken = true;
            if (std::find(holders.begin(), holders.end(), claim.holder) == holders.end())
              holders.push_back(claim.holder);
          }
      if (!taken) free.push_back(g);
    }
    if (total > static_cast<int>(free.size())) {
      std::string names;
      for (const std::string& h : holders) names += (names.empty() ? "" : ", ") + h;
      return AlreadyExistsError(
          "the job asks for " + std::to_string(total) + " " + resource + " (" + parts +
          "); this machine has " + std::to_string(have) + where + " and " +
          std::to_string(free.size()) + " of them " + (free.size() == 1 ? "is" : "are") +
          " free: the others are in use by " + names +
          "; wait for it to finish, or run with --gpu-share to share devices");
    }
    size_t next = 0;
    for (const GpuAsk& a : asks) {
      if (a.resource != resource) continue;
      for (int i = 0; i < a.replicas; ++i) {
        std::vector<Gpu>& mine = out[api::ReplicaName(job, a.type, i)];
        for (int k = 0; k < a.per_replica; ++k) mine.push_back(free[next++]);
      }
    }
  }
  return out;
}

std::vector<Gpu> VisibleGpus(const api::Job& job, const GpuAssignment& assignment,
                             const std::string& type, int index) {
  std::vector<Gpu> out;
  auto add = [&](const std::string& replica) {
    auto it = assignment.find(replica);
    if (it == assignment.end()) return;
    for (const Gpu& g : it->second)
      if (std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
  };
  add(api::ReplicaName(job, type, index));
  if (job.IsMpiLauncher(type))
    for (const auto& [t, spec] : job.replica_specs)
      if (!job.IsMpiLauncher(t))
        for (int i = 0; i < job.ReplicasOf(t); ++i) add(api::ReplicaName(job, t, i));
  std::sort(out.begin(), out.end(), [](const Gpu& a, const Gpu& b) {
    return a.resource != b.resource ? a.resource < b.resource : a.index < b.index;
  });
  return out;
}

std::vector<std::pair<std::string, std::string>> GpuEnv(const std::vector<Gpu>& gpus) {
  std::string nvidia, amd, hip;
  int amd_count = 0;
  for (const Gpu& g : gpus) {
    if (g.resource == kNvidiaGpu) {
      nvidia += (nvidia.empty() ? "" : ",") + g.id;
    } else if (g.resource == kAmdGpu) {
      amd += (amd.empty() ? "" : ",") + g.id;
      hip += (hip.empty() ? "" : ",") + std::to_string(amd_count++);
    }
  }
  std::vector<std::pair<std::string, std::string>> env;
  if (!nvidia.empty()) env.emplace_back("CUDA_VISIBLE_DEVICES", nvidia);
  if (!amd.empty()) {
    env.emplace_back("ROCR_VISIBLE_DEVICES", amd);
    env.emplace_back("HIP_VISIBLE_DEVICES", hip);
  }
  return env;
}

}  // namespace trainctl::local
