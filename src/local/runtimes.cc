#include "local/runtimes.h"

#include <filesystem>
#include <fstream>

#include "api/manifest.h"
#include "local/builtin_runtimes.h"

namespace trainctl::local {
namespace fs = std::filesystem;

namespace {

// The installed file of one runtime: <kind>-<namespace>-<name>.yaml (names are DNS labels or
// subdomains, so the file name is safe).
std::string FileName(const api::TrainingRuntime& rt) {
  std::string kind = rt.kind == api::kClusterTrainingRuntimeKind ? "cluster" : "namespaced";
  return kind + (rt.namespace_.empty() ? "" : "-" + rt.namespace_) + "-" + rt.name + ".yaml";
}

bool SafeName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  return s.front() != '.';
}

}  // namespace

std::string RuntimesFolder(const std::string& state_root) {
  return (fs::path(state_root) / "runtimes").string();
}

StatusOr<api::RuntimeCatalog> LocalRuntimes(const std::string& state_root,
                                            const std::optional<std::string>& extra) {
  api::RuntimeCatalog catalog;
  for (const builtin::Asset& asset : builtin::Assets()) {
    std::string text(reinterpret_cast<const char*>(asset.data), asset.size);
    StatusOr<std::vector<api::TrainingRuntime>> runtimes =
        api::LoadRuntimesFromText(text, std::string("built-in runtime ") + (asset.path + 1));
    if (!runtimes.ok()) return InternalError(runtimes.status().message());
    for (api::TrainingRuntime& rt : *runtimes) {
      rt.source = "built-in";
      catalog.Add(std::move(rt));
    }
  }
  std::error_code ec;
  if (fs::is_directory(RuntimesFolder(state_root), ec)) {
    StatusOr<std::vector<api::TrainingRuntime>> installed =
        api::LoadRuntimesFromPath(RuntimesFolder(state_root));
    if (!installed.ok())
      return InvalidError("installed runtimes: " + installed.status().message() +
                          " (replace it with trainctl runtimes install, or remove the file)");
    for (api::TrainingRuntime& rt : *installed) catalog.Add(std::move(rt));
  }
  if (extra) {
    if (!fs::exists(*extra, ec))
      return InvalidError("--runtimes " + *extra + ": no such file or folder");
    StatusOr<std::vector<api::TrainingRuntime>> given = api::LoadRuntimesFromPath(*extra);
    if (!given.ok()) return InvalidError("--runtimes: " + given.status().message());
    for (api::TrainingRuntime& rt : *given) catalog.Add(std::move(rt));
  }
  return catalog;
}

StatusOr<std::vector<std::string>> InstallRuntimes(const std::string& state_root,
                                                   const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return InvalidError(path + ": no such file or folder");
  StatusOr<std::vector<api::TrainingRuntime>> runtimes = api::LoadRuntimesFromPath(path);
  if (!runtimes.ok()) return runtimes.status();
  if (runtimes->empty()) return InvalidError(path + ": no runtime found");
  for (const api::TrainingRuntime& rt : *runtimes)
    if (!SafeName(rt.name) || (!rt.namespace_.empty() && !SafeName(rt.namespace_)))
      return InvalidError(rt.source + ": metadata.name: Invalid value: \"" + rt.name +
                          "\": a runtime's name and namespace are lowercase DNS names");
  const fs::path folder = RuntimesFolder(state_root);
  fs::create_directories(folder, ec);
  if (ec) return IoError("cannot make " + folder.string() + ": " + ec.message());
  std::vector<std::string> lines;
  for (const api::TrainingRuntime& rt : *runtimes) {
    const fs::path file = folder / FileName(rt);
    const bool replaced = fs::exists(file, ec);
    const fs::path tmp = file.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << rt.object.dump(2) << "\n";
      if (!out) return IoError("cannot write " + tmp.string());
    }
    fs::rename(tmp, file, ec);
    if (ec) return IoError("cannot write " + file.string() + ": " + ec.message());
    std::string where = rt.namespace_.empty() ? "" : rt.namespace_ + "/";
    lines.push_back(rt.kind + " " + where + rt.name + (replaced ? " replaced" : " installed") +
                    " (" + file.string() + ")");
  }
  return lines;
}

}  // namespace trainctl::local
