// HistoryStore: finished jobs' records (history/record.h) in SQLite, kept after the job, its
// folder or its pods are gone, with full-text search (FTS5, trigram: any substring of three
// or more characters). One file: <state root>/history.db locally, a volume for the operator
// (--history sqlite:PATH).
//
// Put() replaces the record with the same uid and then applies the retention limits, in one
// transaction. WAL mode with a busy timeout lets several runners finishing at once and
// readers (trainctl history, the dashboard) share the file. Never put it on a network file
// system: SQLite's locking needs one host.
//
// Does file I/O. One HistoryStore is used from one thread at a time; open one per thread.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "history/record.h"

struct sqlite3;

namespace trainctl::history {

struct Query {
  std::string source;                     // "" any
  std::optional<std::string> namespace_;  // nullopt: every namespace
  std::string kind, name;                 // "" any
  std::string text;                       // full-text search; "" none
  size_t limit = 100;
  size_t offset = 0;
};

class HistoryStore {
 public:
  // Creates the file and its tables when missing. The error names the file.
  static StatusOr<std::unique_ptr<HistoryStore>> Open(const std::string& path);
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Stores `record` (replacing the one with its uid) and removes what `limits` evicts at `now`.
  // Returns how many records were evicted.
  StatusOr<size_t> Put(const nlohmann::json& record, const Row& row, const Limits& limits,
                       Time now);
  // Several records (each as its JSON text) in one transaction with one retention pass: many
  // records written together cost far less than one by one (the full-text index merges its
  // segments per transaction). All or none are written. Returns how many records were evicted.
  struct Text {
    std::string record;  // the record's JSON
    Row row;
  };
  StatusOr<size_t> PutMany(const std::vector<Text>& records, const Limits& limits, Time now);
  // Newest first (by finished time).
  StatusOr<std::vector<Row>> List(const Query& query);
  // How many records match `query` (limit and offset ignored).
  StatusOr<size_t> Count(const Query& query);
  // The record with this uid; nullopt when there is none.
  StatusOr<std::optional<nlohmann::json>> Get(const std::string& uid);
  bool Has(const std::string& uid);
  // Every uid with a record (read from an index, not the records).
  StatusOr<std::vector<std::string>> Uids();
  // Caps this connection's page cache (SQLite's default is 2,000 KiB). A connection that mostly
  // appends, like the operator's recorder, re-reads the few pages it needs from the OS's cache
  // and keeps its memory small (docs/benchmarks.md, the history at scale).
  Status LimitCache(int kib);
  const std::string& path() const { return path_; }

 private:
  HistoryStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  Status Exec(const std::string& sql);
  Status Migrate();
  StatusOr<long long> SchemaVersion();  // PRAGMA user_version
  Status Error(const std::string& what);

  sqlite3* db_;
  std::string path_;
};

}  // namespace trainctl::history
