#include "operator/history_recorder.h"

#include "api/json_fields.h"
#include "operator/log.h"

namespace trainctl::op {

HistoryRecorder::HistoryRecorder(std::unique_ptr<history::HistoryStore> store,
                                 std::unique_ptr<kube::Client> client, history::Limits limits,
                                 const Clock* clock)
    : store_(std::move(store)),
      client_(std::move(client)),
      limits_(limits),
      clock_(clock),
      events_(clock) {}

HistoryRecorder::~HistoryRecorder() { Stop(); }

void HistoryRecorder::Start() {
  for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { Work(); });
}

void HistoryRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

bool HistoryRecorder::Recorded(const std::string& uid) {
  {
    std::lock_guard<std::mutex> lock(seen_mu_);
    if (recorded_.count(uid)) return true;
    if (absent_.count(uid)) return false;  // asked before: only this process writes since
  }
  bool has;
  {
    std::lock_guard<std::mutex> lock(store_mu_);
    has = store_->Has(uid);
  }
  std::lock_guard<std::mutex> lock(seen_mu_);
  if (recorded_.size() + absent_.size() > kMaxRemembered) {
    recorded_.clear();  // asked again from the store
    absent_.clear();
  }
  (has ? recorded_ : absent_).insert(uid);
  return has;
}

void HistoryRecorder::Enqueue(jobs::ClusterSnapshot snapshot) {
  const nlohmann::json& md = snapshot.job.value("metadata", nlohmann::json::object());
  Item item;
  item.ns = api::StringAt(md, "namespace");
  item.name = api::StringAt(md, "name");
  item.uid = api::StringAt(md, "uid");
  std::optional<api::Kind> kind = api::KindFromName(api::StringAt(snapshot.job, "kind"));
  if (item.uid.empty() || !kind) return;
  item.kind = *kind;
  item.snapshot = std::move(snapshot);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || !queued_.insert(item.uid).second) return;
    queue_.push_back(std::move(item));
  }
  wake_.notify_one();
}

void HistoryRecorder::Work() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    // The API reads without the store's lock: the controller asks Recorded() meanwhile.
    Status done = [&]() -> Status {
      JobEventLog::Seen seen = events_.Rows(item.uid);
      item.snapshot.events = std::move(seen.rows);
      item.snapshot.events_complete = seen.complete;
      TRAINCTL_ASSIGN_OR_RETURN(nlohmann::json record,
                                jobs::SnapshotRecord(*client_, item.snapshot, *clock_));
      {
        std::lock_guard<std::mutex> lock(store_mu_);
        TRAINCTL_RETURN_IF_ERROR(
            store_->Put(record, jobs::RecordRow(record), limits_, clock_->Now()).status());
      }
      std::lock_guard<std::mutex> lock(seen_mu_);
      recorded_.insert(item.uid);
      absent_.erase(item.uid);
      return Status::Ok();
    }();
    bool again = false;
    if (done.ok()) {
      ++written_;
      LogInfo("job history: recorded {} {}/{}", api::Info(item.kind).name, item.ns, item.name);
    } else {
      again = ++item.attempts < 8;  // the events list or the store failed
      if (!again) {
        ++failed_;
        LogError("job history: {}/{} not recorded: {}", item.ns, item.name, done.message());
      }
    }
    if (!again) events_.Forget(item.uid);
    if (!again && on_done_) on_done_(item.kind, item.ns, item.name);
    std::unique_lock<std::mutex> lock(mu_);
    if (!again) {
      queued_.erase(item.uid);
      continue;
    }
    // Back off (0.5 s, 1 s, 2 s, … up to 8 s) unless stopping, then try again.
    wake_.wait_for(lock, std::chrono::milliseconds(std::min(8000, 250 << item.attempts)),
                   [this] { return stop_; });
    if (stop_) return;
    queue_.push_back(item);
  }
}

}  // namespace trainctl::op
