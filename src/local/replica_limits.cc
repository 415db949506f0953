#include "local/replica_limits.h"

#include <algorithm>

#include "api/quantity.h"
#include "api/validation.h"

namespace trainctl::local {
namespace {

using nlohmann::json;

// The amount of `name` in limits (else requests) as milli-units; nullopt when neither has it.
StatusOr<std::optional<int64_t>> Amount(const json& resources, const std::string& base,
                                        const std::string& name, std::string* field) {
  for (const char* section : {"limits", "requests"}) {
    if (!resources.contains(section) || !resources[section].is_object() ||
        !resources[section].contains(name))
      continue;
    *field = base + section + "." + name;
    const json& v = resources[section][name];
    std::string text = v.is_string() ? v.get<std::string>() : v.is_number() ? v.dump() : "";
    StatusOr<int64_t> milli = text.empty() ? StatusOr<int64_t>(InvalidError("not a quantity"))
                                           : api::ParseQuantityMilli(text);
    if (!milli.ok() || *milli <= 0)
      return InvalidError(*field + ": Invalid value: " + v.dump() +
                          ": expected a quantity greater than 0, e.g. " +
                          (name == "cpu" ? "\"2\" or \"500m\"" : "\"4Gi\""));
    return std::optional<int64_t>(*milli);
  }
  return std::optional<int64_t>();
}

}  // namespace

StatusOr<ReplicaLimits> LimitsOf(const api::Job& job, const std::string& type) {
  ReplicaLimits limits;
  api::ContainerAt at = api::DefaultContainerAt(job, type);
  if (!at.container) return limits;
  const json& c = *at.container;
  if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) return limits;
  std::string base = at.path + ".resources.";
  StatusOr<std::optional<int64_t>> cpu = Amount(c["resources"], base, "cpu", &limits.cpu_field);
  if (!cpu.ok()) return cpu.status();
  limits.cpu_milli = *cpu;
  limits.cpu_is_limit = *cpu && limits.cpu_field.rfind(base + "limits.", 0) == 0;
  StatusOr<std::optional<int64_t>> memory =
      Amount(c["resources"], base, "memory", &limits.memory_field);
  if (!memory.ok()) return memory.status();
  if (*memory) limits.memory_bytes = std::max<int64_t>(1, **memory / 1000);
  limits.memory_is_limit = *memory && limits.memory_field.rfind(base + "limits.", 0) == 0;
  return limits;
}

std::vector<std::pair<std::string, std::string>> ThreadEnv(const ReplicaLimits& limits) {
  if (!limits.cpu_milli) return {};
  std::string threads = std::to_string(std::max<int64_t>(1, *limits.cpu_milli / 1000));
  return {{"OMP_NUM_THREADS", threads},
          {"MKL_NUM_THREADS", threads},
          {"OPENBLAS_NUM_THREADS", threads}};
}

std::string FormatMemory(int64_t bytes) {
  // The largest binary unit that writes it exactly, with at most one decimal.
  const std::pair<const char*, int64_t> units[] = {
      {"Ti", int64_t{1} << 40}, {"Gi", int64_t{1} << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}};
  for (const auto& [unit, scale] : units) {
    if (bytes < scale || (bytes % scale) * 10 % scale != 0) continue;
    int64_t tenths = bytes / scale * 10 + (bytes % scale) * 10 / scale;
    return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") +
           unit;
  }
  return std::to_string(bytes);
}

}  // namespace trainctl::local
