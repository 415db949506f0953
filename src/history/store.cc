#include "history/store.h"

#include <sqlite3.h>

#include <chrono>
#include <thread>

namespace trainctl::history {
namespace {

using nlohmann::json;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS job_history(
  uid TEXT PRIMARY KEY, source TEXT, namespace TEXT, kind TEXT, name TEXT, state TEXT,
  why TEXT, first_failure TEXT, created TEXT, finished TEXT, bytes INTEGER, record TEXT);
CREATE INDEX IF NOT EXISTS job_history_finished ON job_history(finished);
CREATE INDEX IF NOT EXISTS job_history_retention ON job_history(finished, uid, bytes);
CREATE VIRTUAL TABLE IF NOT EXISTS job_history_text USING fts5(
  uid UNINDEXED, body, tokenize = 'trigram');
)sql";

// A prepared statement, finalized when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql) {
    ok_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) == SQLITE_OK;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return ok_; }
  void Bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void Bind(int i, long long n) { sqlite3_bind_int64(stmt_, i, n); }
  int Step() { return sqlite3_step(stmt_); }
  std::string Text(int col) {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  long long Int(int col) { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  bool ok_ = false;
};

// LIKE's wildcards in user text, escaped with '\'.
std::string LikePattern(const std::string& text) {
  std::string out = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out + "%";
}

// The WHERE clause of `q` and its parameters, in order.
std::string Where(const Query& q, std::vector<std::string>* params) {
  std::string where = " WHERE 1";
  auto add = [&](const char* clause, const std::string& value) {
    where += clause;
    params->push_back(value);
  };
  if (!q.source.empty()) add(" AND source = ?", q.source);
  if (q.namespace_) add(" AND namespace = ?", *q.namespace_);
  if (!q.kind.empty()) add(" AND kind = ?", q.kind);
  if (!q.name.empty()) add(" AND name = ?", q.name);
  if (!q.text.empty())
    add(" AND uid IN (SELECT uid FROM job_history_text WHERE body LIKE ? ESCAPE '\\')",
        LikePattern(q.text));
  return where;
}

constexpr const char* kRowColumns =
    "uid, source, namespace, kind, name, state, why, first_failure, created, finished, bytes";

Row ReadRow(Statement& s) {
  Row r;
  r.uid = s.Text(0);
  r.source = s.Text(1);
  r.namespace_ = s.Text(2);
  r.kind = s.Text(3);
  r.name = s.Text(4);
  r.state = s.Text(5);
  r.why = s.Text(6);
  r.first_failure = s.Text(7);
  r.created = s.Text(8);
  r.finished = s.Text(9);
  r.bytes = static_cast<size_t>(s.Int(10));
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<HistoryStore>> HistoryStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return IoError("job history " + path + ": " + message);
  }
  std::unique_ptr<HistoryStore> store(new HistoryStore(db, path));
  sqlite3_busy_timeout(db, 5000);
  // Several processes may open a new file at once (runners, the CLI). Switching it to WAL takes
  // a lock that SQLite does not wait for (its busy handler is not called there), so a set-up
  // step that finds the file locked is tried again, for up to the busy timeout.
  auto set_up = [&store]() -> Status {
    TRAINCTL_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode = WAL"));
    // With WAL, a commit survives the process dying; a power cut may lose the last few. The
    // history can afford that, and every write is then one fsync fewer.
    TRAINCTL_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous = NORMAL"));
    TRAINCTL_RETURN_IF_ERROR(store->Exec(kSchema));
    return store->Migrate();
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    Status st = set_up();
    int code = sqlite3_errcode(db) & 0xff;
    bool locked = !st.ok() && (code == SQLITE_BUSY || code == SQLITE_LOCKED);
    if (!locked || std::chrono::steady_clock::now() >= give_up) {
      if (!st.ok()) return st;
      return store;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Version 2: each search row has its record's rowid, so that replacing or evicting a record
// finds its search row by rowid instead of scanning the whole search table (uid is not indexed
// there); at 1,000 records that scan was most of a write's cost. A file of version 0 or 1 gets
// its search rows copied with the right rowids, once.
// The statement is finalized on return: one still open would lock the table a migration drops.
StatusOr<long long> HistoryStore::SchemaVersion() {
  Statement version(db_, "PRAGMA user_version");
  if (!version.ok() || version.Step() != SQLITE_ROW) return Error("read the schema version");
  return version.Int(0);
}

Status HistoryStore::Migrate() {
  TRAINCTL_ASSIGN_OR_RETURN(long long version_number, SchemaVersion());
  if (version_number >= 2) return Status::Ok();
  TRAINCTL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  // Another process may have migrated the file meanwhile: ask again under the write lock.
  StatusOr<long long> locked_version = SchemaVersion();
  if (!locked_version.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return locked_version.status();
  }
  if (*locked_version >= 2) return Exec("COMMIT");
  Status st = Exec(R"sql(
CREATE VIRTUAL TABLE job_history_text_v2 USING fts5(uid UNINDEXED, body, tokenize = 'trigram');
INSERT INTO job_history_text_v2(rowid, uid, body)
  SELECT h.rowid, t.uid, t.body FROM job_history_text t JOIN job_history h ON h.uid = t.uid;
DROP TABLE job_history_text;
ALTER TABLE job_history_text_v2 RENAME TO job_history_text;
PRAGMA user_version = 2;
)sql");
  if (!st.ok()) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  }
  return Exec("COMMIT");
}

HistoryStore::~HistoryStore() { sqlite3_close(db_); }

Status HistoryStore::Exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  std::string message = error ? error : "unknown error";
  sqlite3_free(error);
  return IoError("job history " + path_ + ": " + message);
}

Status HistoryStore::Error(const std::string& what) {
  return IoError("job history " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

Status HistoryStore::LimitCache(int kib) {
  return Exec("PRAGMA cache_size = -" + std::to_string(std::max(kib, 64)));
}

StatusOr<size_t> HistoryStore::Put(const json& record, const Row& row, const Limits& limits,
                                   Time now) {
  return PutMany({{record.dump(-1, ' ', false, json::error_handler_t::replace), row}}, limits, now);
}

StatusOr<size_t> HistoryStore::PutMany(const std::vector<Text>& records, const Limits& limits,
                                       Time now) {
  for (const Text& t : records)
    if (t.row.uid.empty()) return InvalidError("a history record needs a uid");
  TRAINCTL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  auto rollback = [&](Status st) {
    Exec("ROLLBACK").IgnoreError();
    return st;
  };
  for (const Text& t : records) {
    const Row& row = t.row;
    {
      // The search row of the record this one replaces, by its rowid (schema version 2).
      Statement del(db_,
                    "DELETE FROM job_history_text WHERE rowid IN "
                    "(SELECT rowid FROM job_history WHERE uid = ?)");
      if (!del.ok()) return rollback(Error("prepare"));
      del.Bind(1, row.uid);
      if (del.Step() != SQLITE_DONE) return rollback(Error("delete"));
    }
    {
      Statement put(db_,
                    "INSERT OR REPLACE INTO job_history(uid, source, namespace, kind, name, state, "
                    "why, first_failure, created, finished, bytes, record) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
      if (!put.ok()) return rollback(Error("prepare"));
      int i = 1;
      for (const std::string* v :
           {&row.uid, &row.source, &row.namespace_, &row.kind, &row.name, &row.state, &row.why,
            &row.first_failure, &row.created, &row.finished})
        put.Bind(i++, *v);
      put.Bind(i++, static_cast<long long>(t.record.size()));
      put.Bind(i++, t.record);
      if (put.Step() != SQLITE_DONE) return rollback(Error("insert"));
    }
    {
      Statement text(db_,
                     "INSERT INTO job_history_text(rowid, uid, body) VALUES("
                     "(SELECT rowid FROM job_history WHERE uid = ?), ?, ?)");
      if (!text.ok()) return rollback(Error("prepare"));
      text.Bind(1, row.uid);
      text.Bind(2, row.uid);
      text.Bind(3, row.search_text);
      if (text.Step() != SQLITE_DONE) return rollback(Error("index"));
    }
  }
  std::vector<Stored> stored;
  {
    // Read from the covering index, not the records.
    Statement all(db_,
                  "SELECT uid, finished, bytes FROM job_history INDEXED BY "
                  "job_history_retention");
    if (!all.ok()) return rollback(Error("prepare"));
    int rc;
    while ((rc = all.Step()) == SQLITE_ROW)
      stored.push_back(
          {all.Text(0), ParseRfc3339(all.Text(1)).value_or(now), static_cast<size_t>(all.Int(2))});
    if (rc != SQLITE_DONE) return rollback(Error("read"));
  }
  std::vector<std::string> evict = Evict(std::move(stored), limits, now);
  for (const std::string& uid : evict)
    for (const char* sql : {"DELETE FROM job_history_text WHERE rowid IN "
                            "(SELECT rowid FROM job_history WHERE uid = ?)",
                            "DELETE FROM job_history WHERE uid = ?"}) {
      Statement del(db_, sql);
      if (!del.ok()) return rollback(Error("prepare"));
      del.Bind(1, uid);
      if (del.Step() != SQLITE_DONE) return rollback(Error("evict"));
    }
  TRAINCTL_RETURN_IF_ERROR(Exec("COMMIT"));
  return evict.size();
}

StatusOr<std::vector<Row>> HistoryStore::List(const Query& query) {
  std::vector<std::string> params;
  std::string sql = std::string("SELECT ") + kRowColumns + " FROM job_history" +
                    Where(query, &params) + " ORDER BY finished DESC, uid LIMIT ? OFFSET ?";
  Statement s(db_, sql);
  if (!s.ok()) return Error("prepare");
  int i = 1;
  for (const std::string& p : params) s.Bind(i++, p);
  s.Bind(i++, static_cast<long long>(query.limit));
  s.Bind(i++, static_cast<long long>(query.offset));
  std::vector<Row> rows;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) rows.push_back(ReadRow(s));
  if (rc != SQLITE_DONE) return Error("list");
  return rows;
}

StatusOr<size_t> HistoryStore::Count(const Query& query) {
  std::vector<std::string> params;
  Statement s(db_, "SELECT count(*) FROM job_history" + Where(query, &params));
  if (!s.ok()) return Error("prepare");
  int i = 1;
  for (const std::string& p : params) s.Bind(i++, p);
  if (s.Step() != SQLITE_ROW) return Error("count");
  return static_cast<size_t>(s.Int(0));
}

StatusOr<std::optional<json>> HistoryStore::Get(const std::string& uid) {
  Statement s(db_, "SELECT record FROM job_history WHERE uid = ?");
  if (!s.ok()) return Error("prepare");
  s.Bind(1, uid);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<json>();
  if (rc != SQLITE_ROW) return Error("get");
  json record = json::parse(s.Text(0), nullptr, false);
  if (record.is_discarded())
    return IoError("job history " + path_ + ": record " + uid + " is damaged");
  return std::optional<json>(std::move(record));
}

bool HistoryStore::Has(const std::string& uid) {
  Statement s(db_, "SELECT 1 FROM job_history WHERE uid = ?");
  if (!s.ok()) return false;
  s.Bind(1, uid);
  return s.Step() == SQLITE_ROW;
}

StatusOr<std::vector<std::string>> HistoryStore::Uids() {
  Statement s(db_, "SELECT uid FROM job_history INDEXED BY job_history_retention");
  if (!s.ok()) return Error("prepare");
  std::vector<std::string> uids;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) uids.push_back(s.Text(0));
  if (rc != SQLITE_DONE) return Error("read");
  return uids;
}

}  // namespace trainctl::history
