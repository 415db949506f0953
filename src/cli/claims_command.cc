#include "cli/claims_command.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "api/job.h"
#include "cli/format.h"
#include "local/state_store.h"
#include "local/volumes.h"

namespace trainctl::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

unsigned long long FolderBytes(const fs::path& dir) {
  unsigned long long total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    std::error_code size_error;
    if (it->is_regular_file(size_error)) total += it->file_size(size_error);
  }
  return total;
}

// Every claim folder in the namespaces `ns` selects, with the local jobs that name it.
std::vector<ClaimUse> ReadClaims(const std::string& root, const std::optional<std::string>& ns) {
  std::vector<ClaimUse> out;
  fs::path base = fs::path(local::ClaimFolder(root, "x", "x")).parent_path().parent_path();
  std::error_code ec;
  for (const auto& ns_dir : fs::directory_iterator(base, ec)) {
    if (!ns_dir.is_directory() || (ns && ns_dir.path().filename() != *ns)) continue;
    std::error_code inner;
    for (const auto& claim : fs::directory_iterator(ns_dir.path(), inner)) {
      if (!claim.is_directory()) continue;
      out.push_back({ns_dir.path().filename().string(),
                     claim.path().filename().string(),
                     claim.path().string(),
                     FolderBytes(claim.path()),
                     {},
                     {}});
    }
  }
  for (const local::JobKey& key : local::ListJobs(root, ns)) {
    local::JobDir dir(root, key);
    StatusOr<json> stored = dir.ReadJob();
    if (!stored.ok()) continue;
    StatusOr<api::Job> job = api::DecodeJob(*stored);
    if (!job.ok()) continue;
    bool running = dir.RunnerActive();
    std::string name = api::ToLower(api::Info(key.kind).name) + "/" + key.name;
    for (const api::ClaimRef& ref : api::JobClaims(*job))
      for (ClaimUse& use : out)
        if (use.namespace_ == key.namespace_ && use.name == ref.claim) {
          use.jobs.push_back(name);
          if (running) use.running.push_back(name);
        }
  }
  std::sort(out.begin(), out.end(), [](const ClaimUse& a, const ClaimUse& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  });
  return out;
}

// 1536 → "1.5Ki", 0 → "0B": one decimal, for people.
std::string HumanBytes(unsigned long long bytes) {
  const char* units[] = {"B", "Ki", "Mi", "Gi", "Ti"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f%s" : "%.1f%s", value, units[unit]);
  std::string out = buf;
  size_t dot = out.find(".0");
  if (dot != std::string::npos && !std::isdigit(static_cast<unsigned char>(out[dot + 2])))
    out.erase(dot, 2);
  return out;
}

}  // namespace

std::vector<std::vector<std::string>> ClaimRows(const std::vector<ClaimUse>& claims) {
  std::vector<std::vector<std::string>> rows = {{"NAMESPACE", "CLAIM", "SIZE", "JOBS", "PATH"}};
  for (const ClaimUse& c : claims) {
    std::string jobs;
    for (const std::string& j : c.jobs) {
      bool running = std::find(c.running.begin(), c.running.end(), j) != c.running.end();
      jobs += (jobs.empty() ? "" : ",") + j + (running ? " (running)" : "");
    }
    rows.push_back(
        {c.namespace_, c.name, HumanBytes(c.bytes), jobs.empty() ? "<none>" : jobs, c.path});
  }
  return rows;
}

int ClaimsCommand(const GlobalOptions& global, const ClaimsOptions& options) {
  std::string root = StateRoot(global);
  if (options.action == "list") {
    std::vector<ClaimUse> claims = ReadClaims(root, NamespaceFilter(global));
    if (options.output == "json") {
      json out = json::array();
      for (const ClaimUse& c : claims)
        out.push_back({{"namespace", c.namespace_},
                       {"name", c.name},
                       {"path", c.path},
                       {"bytes", c.bytes},
                       {"jobs", c.jobs},
                       {"running", c.running}});
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    if (claims.empty()) {
      std::cout << "No claim folders"
                << (global.all_namespaces ? "" : " in namespace " + *NamespaceFilter(global))
                << " (a job's persistentVolumeClaim volume makes one in " << root << "/.claims)\n";
      return 0;
    }
    std::cout << FormatTable(ClaimRows(claims));
    return 0;
  }
  if (options.action != "delete")
    return Fail("claims: unknown action \"" + options.action + "\" (list or delete)", 2);
  if (options.args.size() != 1) return Fail("claims delete: give one claim name", 2);
  if (global.all_namespaces) return Fail("claims delete: name one namespace (-n), not -A", 2);
  std::string ns = *NamespaceFilter(global);
  const std::string& name = options.args[0];
  for (const ClaimUse& c : ReadClaims(root, ns)) {
    if (c.name != name) continue;
    if (!c.running.empty())
      return Fail("claim " + ns + "/" + name + " is in use by running " + c.running.front() +
                      "; stop it first (trainctl delete)",
                  1);
    std::error_code ec;
    fs::remove_all(c.path, ec);
    if (ec) return Fail("claim " + ns + "/" + name + ": " + c.path + ": " + ec.message(), 1);
    std::cout << "claim " << ns << "/" << name << " deleted (" << c.path << ")\n";
    return 0;
  }
  return Fail("claim " + ns + "/" + name + " not found (trainctl claims lists them)", 1);
}

}  // namespace trainctl::cli
