// Unit tests of the job history: retention decisions (pure), the columns of a record, and the
// SQLite store in a temporary file (replace by uid, list newest first, search any substring,
// retention at insert, a damaged or unwritable file).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "history/record.h"
#include "history/store.h"

namespace trainctl::history {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Time At(const char* text) { return *ParseRfc3339(text); }

TEST(EvictTest, OldestFirstUntilWithinEveryLimit) {
  Time now = At("2026-11-26T00:00:00Z");
  std::vector<Stored> stored = {{"c", At("2026-11-25T00:00:00Z"), 10},
                                {"a", At("2026-08-01T00:00:00Z"), 10},
                                {"b", At("2026-11-20T00:00:00Z"), 10}};
  Limits limits;
  EXPECT_EQ(Evict(stored, limits, now), std::vector<std::string>{"a"}) << "older than 90 days";
  limits.max_age = std::chrono::hours(24 * 365);
  EXPECT_TRUE(Evict(stored, limits, now).empty());
  limits.max_jobs = 1;
  EXPECT_EQ(Evict(stored, limits, now), (std::vector<std::string>{"a", "b"}));
  limits.max_jobs = 10;
  limits.max_bytes = 25;
  EXPECT_EQ(Evict(stored, limits, now), std::vector<std::string>{"a"});
}

TEST(LogTailTest, KeepsTheEndFromALineStart) {
  EXPECT_EQ(LogTail("short", 100), "short");
  EXPECT_EQ(LogTail("line one\nline two\nline three\n", 15), "line three\n");
  EXPECT_EQ(LogTail(std::string(50, 'x'), 10), std::string(10, 'x')) << "no line start: cut";
}

json Record(const std::string& uid, const std::string& name, const std::string& state,
            const std::string& finished, const std::string& log) {
  return {
      {"uid", uid},
      {"source", "local"},
      {"namespace", "default"},
      {"kind", "PyTorchJob"},
      {"name", name},
      {"job",
       {{"kind", "PyTorchJob"},
        {"metadata", {{"name", name}, {"creationTimestamp", "2026-11-25T09:00:00Z"}}},
        {"status",
         {{"completionTime", finished},
          {"conditions", json::array({{{"type", state}, {"status", "True"}}})}}}}},
      {"failure", state == "Failed" ? json{{"name", name + "-worker-1"},
                                           {"message", "First failure: " + name + "-worker-1"},
                                           {"lastLogLines", json::array({"NCCL error: unhandled"})}}
                                    : json(nullptr)},
      {"events", json::array({{{"reason", "Created"}, {"message", "pod created"}}})},
      {"logs", {{"master-0", {{"bytes", log.size()}, {"tail", log}}}}}};
}

TEST(RowOfTest, ColumnsAndSearchTextComeFromTheRecord) {
  Row row = RowOf(Record("u1", "pt", "Failed", "2026-11-25T10:00:00Z", "loss=0.5\n"),
                  "First failure: pt-worker-1");
  EXPECT_EQ(row.state, "Failed");
  EXPECT_EQ(row.first_failure, "pt-worker-1");
  EXPECT_EQ(row.finished, "2026-11-25T10:00:00Z");
  EXPECT_EQ(row.created, "2026-11-25T09:00:00Z");
  for (const char* part : {"NCCL error", "loss=0.5", "pod created", "First failure"})
    EXPECT_NE(row.search_text.find(part), std::string::npos) << part;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("history_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    chmod(dir_.c_str(), 0700);
    fs::remove_all(dir_);
  }
  std::unique_ptr<HistoryStore> Open() {
    StatusOr<std::unique_ptr<HistoryStore>> store = HistoryStore::Open((dir_ / "h.db").string());
    EXPECT_TRUE(store.ok()) << store.status().message();
    return store.ok() ? std::move(*store) : nullptr;
  }
  size_t Put(HistoryStore& store, const json& record, Limits limits = {}) {
    StatusOr<size_t> evicted =
        store.Put(record, RowOf(record, ""), limits, At("2026-11-26T00:00:00Z"));
    EXPECT_TRUE(evicted.ok()) << evicted.status().message();
    return evicted.ok() ? *evicted : 0;
  }

  fs::path dir_;
};

TEST_F(StoreTest, PutListGetSearchAndReplace) {
  std::unique_ptr<HistoryStore> store = Open();
  ASSERT_TRUE(store);
  Put(*store, Record("u1", "first", "Succeeded", "2026-11-25T10:00:00Z", "all good\n"));
  Put(*store, Record("u2", "second", "Failed", "2026-11-25T11:00:00Z", "boom\n"));
  StatusOr<std::vector<Row>> rows = store->List({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].name, "second") << "newest first";
  Query q;
  q.text = "nccl ERR";  // any substring of 3+ characters, any case
  rows = store->List(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].uid, "u2");
  q.text = "100%_";  // LIKE wildcards are literal
  EXPECT_TRUE(store->List(q)->empty());
  q = {};
  q.name = "first";
  EXPECT_EQ(store->Count(q).value(), 1u);
  q = {};
  q.namespace_ = "other";
  EXPECT_EQ(store->Count(q).value(), 0u);
  // The same uid again replaces the record and its text.
  Put(*store, Record("u2", "second", "Failed", "2026-11-25T11:00:00Z", "different\n"));
  EXPECT_EQ(store->Count({}).value(), 2u);
  q.namespace_.reset();
  q.text = "boom";
  EXPECT_EQ(store->Count(q).value(), 0u);
  StatusOr<std::optional<json>> got = store->Get("u2");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((**got)["logs"]["master-0"]["tail"], "different\n");
  EXPECT_FALSE(store->Get("nope")->has_value());
  EXPECT_TRUE(store->Has("u1"));
  // Reopened, everything is still there.
  store.reset();
  store = Open();
  EXPECT_EQ(store->Count({}).value(), 2u);
}

TEST_F(StoreTest, RetentionAtInsert) {
  std::unique_ptr<HistoryStore> store = Open();
  ASSERT_TRUE(store);
  Limits limits;
  limits.max_jobs = 2;
  Put(*store, Record("u1", "a", "Succeeded", "2026-11-25T10:00:00Z", "x"), limits);
  Put(*store, Record("u2", "b", "Succeeded", "2026-11-25T11:00:00Z", "x"), limits);
  EXPECT_EQ(Put(*store, Record("u3", "c", "Succeeded", "2026-11-25T12:00:00Z", "x"), limits), 1u);
  EXPECT_FALSE(store->Has("u1"));
  EXPECT_TRUE(store->Has("u3"));
  Query q;
  q.text = "a\n";
  EXPECT_EQ(store->Count(q).value(), 0u) << "its text went with it";
}

TEST_F(StoreTest, ManyRecordsGoInOneTransactionAllOrNone) {
  std::unique_ptr<HistoryStore> store = Open();
  ASSERT_TRUE(store);
  std::vector<HistoryStore::Text> batch;
  for (const char* uid : {"b1", "b2", "b3"}) {
    json r = Record(uid, std::string("job-") + uid, "Succeeded", "2026-11-25T10:00:00Z",
                    std::string("tail of ") + uid + "\n");
    batch.push_back({r.dump(), RowOf(r, "")});
  }
  Limits limits;
  limits.max_jobs = 2;
  StatusOr<size_t> evicted = store->PutMany(batch, limits, At("2026-11-26T00:00:00Z"));
  ASSERT_TRUE(evicted.ok()) << evicted.status().message();
  EXPECT_EQ(*evicted, 1u) << "one retention pass for the batch";
  EXPECT_EQ(store->Count({}).value(), 2u);
  Query q;
  q.text = "tail of b3";
  EXPECT_EQ(store->Count(q).value(), 1u) << "indexed for search";
  std::vector<Row> rows = store->List({}).value();
  ASSERT_EQ(rows.size(), 2u);
  for (const Row& row : rows) {
    for (const HistoryStore::Text& t : batch) {
      if (t.row.uid == row.uid) {
        EXPECT_EQ(row.bytes, t.record.size()) << "the size of the text stored, for retention";
      }
    }
  }
  json bad = Record("", "x", "Failed", "2026-11-25T10:00:00Z", "");
  json good = Record("b4", "job-b4", "Failed", "2026-11-25T12:00:00Z", "");
  EXPECT_EQ(store
                ->PutMany({{good.dump(), RowOf(good, "")}, {bad.dump(), RowOf(bad, "")}}, {},
                          At("2026-11-26T00:00:00Z"))
                .status()
                .code(),
            StatusCode::kInvalid);
  EXPECT_FALSE(store->Has("b4")) << "none written";
}

// A file written before the search rows had their record's rowid: opening it copies them once,
// and then replacing a record replaces its own search row, not another's.
TEST_F(StoreTest, AnOlderFileIsMigratedSoThatSearchRowsFollowTheirRecords) {
  std::string path = (dir_ / "h.db").string();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* v1 = R"sql(
CREATE TABLE job_history(
  uid TEXT PRIMARY KEY, source TEXT, namespace TEXT, kind TEXT, name TEXT, state TEXT,
  why TEXT, first_failure TEXT, created TEXT, finished TEXT, bytes INTEGER, record TEXT);
CREATE VIRTUAL TABLE job_history_text USING fts5(uid UNINDEXED, body, tokenize = 'trigram');
INSERT INTO job_history(uid, name, state, finished, bytes, record)
  VALUES('u1', 'one', 'Failed', '2026-11-25T10:00:00Z', 2, '{}'),
        ('u2', 'two', 'Failed', '2026-11-25T11:00:00Z', 2, '{}');
INSERT INTO job_history_text(rowid, uid, body) VALUES(7, 'u2', 'walrus output'), (9, 'u1', 'penguin output');
)sql";
    ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  std::unique_ptr<HistoryStore> store = Open();
  ASSERT_TRUE(store);
  Query q;
  q.text = "penguin";
  EXPECT_EQ(store->Count(q).value(), 1u);
  Put(*store, Record("u1", "one", "Failed", "2026-11-25T12:00:00Z", "otter output\n"));
  EXPECT_EQ(store->Count(q).value(), 0u) << "u1's old search row went with it";
  q.text = "walrus";
  EXPECT_EQ(store->Count(q).value(), 1u) << "u2's search row is still there";
  q.text = "otter";
  EXPECT_EQ(store->Count(q).value(), 1u);
  store.reset();
  store = Open();  // version 2 now: nothing copied again
  EXPECT_EQ(store->Count(q).value(), 1u);
}

// Runners and the CLI may open a new file at the same moment: each opens, migrates at most
// once between them, and writes.
TEST_F(StoreTest, SeveralOpenANewFileAtOnce) {
  std::vector<std::thread> openers;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    openers.emplace_back([&, i] {
      StatusOr<std::unique_ptr<HistoryStore>> store =
          HistoryStore::Open((dir_ / "shared.db").string());
      if (!store.ok()) {
        ADD_FAILURE() << store.status().message();
        return;
      }
      json r = Record("s" + std::to_string(i), "job", "Succeeded", "2026-11-25T10:00:00Z", "x\n");
      if ((*store)->Put(r, RowOf(r, ""), {}, At("2026-11-26T00:00:00Z")).ok()) ++ok;
    });
  for (std::thread& t : openers) t.join();
  EXPECT_EQ(ok.load(), 4);
  StatusOr<std::unique_ptr<HistoryStore>> store = HistoryStore::Open((dir_ / "shared.db").string());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Count({}).value(), 4u);
  Query q;
  q.text = "job";
  EXPECT_EQ((*store)->Count(q).value(), 4u) << "one search row each, none copied twice";
}

TEST_F(StoreTest, ErrorsNameTheFile) {
  fs::create_directories(dir_ / "ro");
  chmod((dir_ / "ro").c_str(), 0500);
  if (::geteuid() != 0) {  // root may write anywhere
    StatusOr<std::unique_ptr<HistoryStore>> store =
        HistoryStore::Open((dir_ / "ro" / "h.db").string());
    ASSERT_FALSE(store.ok());
    EXPECT_NE(store.status().message().find("ro/h.db"), std::string::npos);
  }
  std::ofstream(dir_ / "junk.db") << "this is not a database, and it is long enough to tell";
  StatusOr<std::unique_ptr<HistoryStore>> junk = HistoryStore::Open((dir_ / "junk.db").string());
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("junk.db"), std::string::npos);
  std::unique_ptr<HistoryStore> store = Open();
  json no_uid = Record("", "x", "Failed", "2026-11-25T10:00:00Z", "");
  EXPECT_EQ(store->Put(no_uid, RowOf(no_uid, ""), {}, At("2026-11-26T00:00:00Z")).status().code(),
            StatusCode::kInvalid);
}

}  // namespace
}  // namespace trainctl::history
