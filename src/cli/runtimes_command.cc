#include "cli/runtimes_command.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "cli/format.h"
#include "local/runtimes.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

std::string Framework(const api::TrainingRuntime& rt) {
  const json& md = rt.object.value("metadata", json::object());
  return api::StringAt(md.is_object() ? md.value("labels", json::object()) : json::object(),
                       api::kLabelFramework, "-");
}

std::string NameOf(const api::TrainingRuntime& rt) {
  return rt.namespace_.empty() ? rt.name : rt.namespace_ + "/" + rt.name;
}

}  // namespace

std::vector<std::vector<std::string>> RuntimeRows(const api::RuntimeCatalog& catalog) {
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "KIND", "FRAMEWORK", "POLICY", "NODES", "SOURCE"}};
  for (const api::TrainingRuntime& rt : catalog.runtimes())
    rows.push_back({NameOf(rt), rt.kind, Framework(rt), api::MlPolicyName(rt.policy),
                    std::to_string(rt.num_nodes), rt.source});
  return rows;
}

int RuntimesCommand(const GlobalOptions& global, const RuntimesOptions& options) {
  const std::string root = StateRoot(global);
  if (options.action == "install") {
    if (options.args.size() != 1) return Fail("runtimes install: give one FILE or folder", 2);
    StatusOr<std::vector<std::string>> lines = local::InstallRuntimes(root, options.args[0]);
    if (!lines.ok())
      return Fail("runtimes install: " + lines.status().message(),
                  lines.status().code() == StatusCode::kInvalid ? 2 : 1);
    for (const std::string& line : *lines) std::cout << line << "\n";
    return 0;
  }
  if (options.action != "list")
    return Fail("runtimes: unknown action \"" + options.action + "\" (list or install)", 2);
  if (!options.args.empty()) return Fail("runtimes list: takes no arguments", 2);
  StatusOr<api::RuntimeCatalog> catalog = local::LocalRuntimes(root, std::nullopt);
  if (!catalog.ok()) return Fail("runtimes: " + catalog.status().message(), 2);
  if (options.output == "json") {
    json out = json::array();
    for (const api::TrainingRuntime& rt : catalog->runtimes())
      out.push_back({{"name", rt.name},
                     {"namespace", rt.namespace_},
                     {"kind", rt.kind},
                     {"framework", Framework(rt)},
                     {"policy", api::MlPolicyName(rt.policy)},
                     {"numNodes", rt.num_nodes},
                     {"source", rt.source},
                     {"object", rt.object}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << FormatTable(RuntimeRows(*catalog));
  return 0;
}

}  // namespace trainctl::cli
