#include "cli/history_commands.h"

#include <filesystem>
#include <iostream>

#include "api/json_fields.h"
#include "cli/format.h"
#include "jobs/history_capture.h"
#include "jobs/history_reader.h"
#include "jobs/local_sweep.h"
#include "metrics/series.h"

namespace trainctl::cli {
namespace {

using nlohmann::json;

int PrintRows(const std::vector<history::Row>& rows, size_t total, const HistoryOptions& o,
              bool with_namespace) {
  if (o.output == "json") {
    json items = json::array();
    for (const history::Row& r : rows) items.push_back(history::RowJson(r));
    std::cout << json({{"items", items}, {"total", total}}).dump(2) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cerr << "No finished jobs in the history" << (o.action == "search" ? " match." : ".")
              << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header = {"FINISHED", "KIND", "NAME", "STATE", "REASON"};
  if (with_namespace) header.insert(header.begin() + 1, "NAMESPACE");
  table.push_back(header);
  for (const history::Row& r : rows) {
    std::vector<std::string> line = {r.finished, r.kind, r.name, r.state,
                                     r.why.substr(0, r.why.find('\n'))};
    if (with_namespace) line.insert(line.begin() + 1, r.namespace_);
    table.push_back(line);
  }
  std::cout << FormatTable(table);
  if (total > rows.size())
    std::cout << "(" << rows.size() << " of " << total << "; --limit shows more)\n";
  return 0;
}

std::string Bytes(size_t n) {
  char buf[32];
  if (n < 1024) return std::to_string(n) + " B";
  std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  return buf;
}

int Show(jobs::HistoryReader& reader, const GlobalOptions& g, const HistoryOptions& o) {
  if (o.args.size() != 1) return Fail("history show NAME|UID: one job name or uid", 2);
  const std::string& ref = o.args[0];
  StatusOr<std::optional<json>> record = reader.Get(ref);
  if (!record.ok()) return Fail(record.status().message(), 1);
  if (!record->has_value()) {
    history::Query q;
    q.namespace_ = NamespaceFilter(g);
    q.name = ref;
    q.limit = 1;
    StatusOr<jobs::HistoryPage> rows = reader.List(q);
    if (!rows.ok()) return Fail(rows.status().message(), 1);
    if (rows->rows.empty())
      return Fail("no job \"" + ref + "\" in the history of " + reader.Where() + " (namespace " +
                      q.namespace_.value_or("any") + ")",
                  1);
    record = reader.Get(rows->rows[0].uid);
    if (!record.ok()) return Fail(record.status().message(), 1);
    if (!record->has_value()) return Fail("the record went away", 1);
  }
  const json& r = **record;
  if (o.output == "json") {
    std::cout << r.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  RealClock clock;
  std::cout << FormatDescribe(r.value("job", json::object()), r.value("replicas", json::array()),
                              r.value("events", json::array()).get<std::vector<json>>(),
                              clock.Now());
  std::cout << "Recorded:           " << api::StringAt(r, "recordedAt") << " (uid "
            << api::StringAt(r, "uid") << ", " << api::StringAt(r, "source") << ")\n";
  if (r.contains("failure") && r["failure"].is_object()) {
    const json& f = r["failure"];
    std::cout << "Last output of " << api::StringAt(f, "name") << ":\n";
    if (f.contains("lastLogLines") && f["lastLogLines"].is_array())
      for (const json& line : f["lastLogLines"])
        if (line.is_string()) std::cout << "  " << line.get<std::string>() << "\n";
  }
  json last = metrics::LastValues(r.value("metrics", json::object()));
  if (!last.empty()) std::cout << "Last metrics:       " << last.dump() << "\n";
  if (r.contains("logs") && r["logs"].is_object()) {
    std::string kept;
    for (const auto& [replica, log] : r["logs"].items())
      kept += (kept.empty() ? "" : ", ") + replica + " " +
              Bytes(api::StringAt(log, "tail").size()) + " of " +
              Bytes(log.value("bytes", static_cast<size_t>(0)));
    std::cout << "Kept logs:          " << kept << (o.logs ? "" : " (--logs prints them)") << "\n";
    if (o.logs)
      for (const auto& [replica, log] : r["logs"].items())
        std::cout << "==> " << replica << " <==\n" << api::StringAt(log, "tail");
  }
  return 0;
}

}  // namespace

std::unique_ptr<history::HistoryStore> OpenLocalHistory(const std::string& state_root) {
  std::error_code ec;
  std::filesystem::create_directories(state_root, ec);
  StatusOr<std::unique_ptr<history::HistoryStore>> store =
      history::HistoryStore::Open(jobs::LocalHistoryPath(state_root));
  if (!store.ok()) {
    std::cerr << "warning: " << store.status().message() << "\n";
    return nullptr;
  }
  return std::move(*store);
}

void SweepLocal(const std::string& state_root, const std::optional<std::string>& ns) {
  RealClock clock;
  std::unique_ptr<history::HistoryStore> store;
  jobs::SweepReport report = jobs::SweepLocalJobs(
      state_root, ns,
      [&]() {
        store = OpenLocalHistory(state_root);
        return store.get();
      },
      clock);
  for (const std::string& warning : report.warnings) std::cerr << "warning: " << warning << "\n";
}

void CaptureInto(history::HistoryStore* store, const std::string& state_root,
                 const local::JobKey& key) {
  if (!store) return;
  RealClock clock;
  StatusOr<bool> captured = jobs::CaptureLocalJob(state_root, key, *store, {}, clock);
  if (!captured.ok())
    std::cerr << "warning: not recorded in the job history: " << captured.status().message()
              << "\n";
}

int HistoryCommand(const GlobalOptions& global, const HistoryOptions& options) {
  if (!options.output.empty() && options.output != "json")
    return Fail("unsupported output format \"" + options.output + "\" (json)", 2);
  std::string action = options.action.empty() ? "list" : options.action;
  if (action != "list" && action != "show" && action != "search")
    return Fail("history: unknown action \"" + action + "\" (list, show NAME, search TEXT)", 2);
  RealClock clock;  // outlives the reader's client, which keeps it
  std::unique_ptr<history::HistoryStore> store;
  std::unique_ptr<jobs::HistoryReader> reader;
  if (!options.file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(options.file, ec))
      return Fail("--file: no history file " + options.file, 1);
    StatusOr<std::unique_ptr<history::HistoryStore>> opened =
        history::HistoryStore::Open(options.file);
    if (!opened.ok()) return Fail(opened.status().message(), 1);
    store = std::move(*opened);
  } else {
    StatusOr<bool> cluster =
        UseCluster(global, std::getenv("TRAINCTL_BACKEND") ? std::getenv("TRAINCTL_BACKEND") : "");
    if (!cluster.ok()) return Fail(cluster.status().message(), 2);
    if (*cluster || !options.dashboard.empty()) {
      // The operator's history, through its dashboard (jobs/history_reader.h).
      jobs::OperatorTarget target;
      target.kubeconfig = global.kubeconfig;
      if (!options.dashboard_service.empty()) target.service = options.dashboard_service;
      target.address = options.dashboard;
      target.token = !options.token.empty()          ? options.token
                     : std::getenv("TRAINCTL_TOKEN") ? std::getenv("TRAINCTL_TOKEN")
                                                     : "";
      StatusOr<std::unique_ptr<jobs::OperatorHistoryReader>> remote =
          jobs::OperatorHistoryReader::Open(target, clock);
      if (!remote.ok())
        return Fail(remote.status().message(),
                    remote.status().code() == StatusCode::kInvalid ? 2 : 1);
      reader = std::move(*remote);
    } else {
      // Finished jobs with no record yet (a runner that was killed, a job from before the
      // history existed) are recorded first: the sweep.
      SweepLocal(StateRoot(global), NamespaceFilter(global));
      store = OpenLocalHistory(StateRoot(global));
      if (!store) return 1;
    }
  }
  if (!reader) reader = std::make_unique<jobs::StoreHistoryReader>(store.get());
  if (action == "show") return Show(*reader, global, options);
  history::Query q;
  q.namespace_ = NamespaceFilter(global);
  q.limit = options.limit;
  if (action == "search") {
    if (options.args.size() != 1) return Fail("history search TEXT: one text to look for", 2);
    if (options.args[0].size() < 3)
      return Fail("history search: give at least 3 characters (\"" + options.args[0] + "\")", 2);
    q.text = options.args[0];
  } else if (!options.args.empty()) {
    q.name = options.args[0];
  }
  StatusOr<jobs::HistoryPage> page = reader->List(q);
  if (!page.ok()) return Fail(page.status().message(), 1);
  return PrintRows(page->rows, page->total, options, global.all_namespaces);
}

}  // namespace trainctl::cli
