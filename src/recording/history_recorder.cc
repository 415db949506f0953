#include "recording/history_recorder.h"

#include <fmt/format.h>
#include <pthread.h>

#include "api/json_bounds.h"
#include "api/json_fields.h"

namespace trainctl::recording {

HistoryRecorder::HistoryRecorder(std::unique_ptr<history::HistoryStore> store, kube::Client* client,
                                 history::Limits limits, const Clock* clock, RecordingLog log)
    : store_(std::move(store)),
      client_(client),
      limits_(limits),
      clock_(clock),
      log_(log ? std::move(log) : [](bool, const std::string&) {}),
      events_(clock) {}

HistoryRecorder::~HistoryRecorder() { Stop(); }

void HistoryRecorder::Start() {
  // Named, so that top -H and the scale benchmark can attribute the history's CPU.
  for (int i = 0; i < kWorkers; ++i)
    workers_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "hist-capture");
      Work();
    });
  workers_.emplace_back([this] {
    pthread_setname_np(pthread_self(), "hist-writer");
    Writer();
  });
}

void HistoryRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  write_wake_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
  workers_.clear();
}

bool HistoryRecorder::Recorded(const std::string& uid) {
  std::lock_guard<std::mutex> lock(seen_mu_);
  if (recorded_.size() > kMaxRemembered) {
    recorded_.clear();
    loaded_ = false;
  }
  if (!loaded_) {
    StatusOr<std::vector<std::string>> uids = [&] {
      std::lock_guard<std::mutex> store_lock(store_mu_);
      return store_->Uids();
    }();
    if (!uids.ok()) {
      // Not known: the job is captured (again); a record that exists is then replaced.
      if (!load_failed_) log_(true, fmt::format("job history: {}", uids.status().message()));
      load_failed_ = true;
      return false;
    }
    recorded_.insert(uids->begin(), uids->end());
    loaded_ = true;
  }
  return recorded_.count(uid) > 0;
}

bool HistoryRecorder::Queued(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_.count(uid) > 0;
}

void HistoryRecorder::Enqueue(jobs::ClusterSnapshot snapshot, bool wake) {
  const nlohmann::json& md = snapshot.job.value("metadata", nlohmann::json::object());
  Item item;
  item.ns = api::StringAt(md, "namespace");
  item.name = api::StringAt(md, "name");
  item.uid = api::StringAt(md, "uid");
  std::optional<api::Kind> kind = api::KindFromName(api::StringAt(snapshot.job, "kind"));
  if (item.uid.empty() || !kind) return;
  item.kind = *kind;
  item.wake = wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || queued_.count(item.uid)) return;
    queued_.insert(item.uid);
  }
  item.job_text = snapshot.job.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  item.replicas_text =
      snapshot.replicas.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  item.targets = std::move(snapshot.targets);
  item.metrics_replica = std::move(snapshot.metrics_replica);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    queue_.push_back(std::move(item));
  }
  wake_.notify_one();
}

void HistoryRecorder::Done(const std::string& uid, api::Kind kind, const std::string& ns,
                           const std::string& name, bool wake) {
  events_.Forget(uid);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.erase(uid);
  }
  if (wake && on_done_) on_done_(kind, ns, name);
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
    // The API reads without any lock: the controller asks Recorded() meanwhile.
    StatusOr<nlohmann::json> record = [&]() -> StatusOr<nlohmann::json> {
      jobs::ClusterSnapshot snapshot;
      snapshot.job = api::ParseJsonWithin(item.job_text, api::kApiJsonLimits);
      snapshot.replicas = api::ParseJsonWithin(item.replicas_text, api::kApiJsonLimits);
      snapshot.targets = item.targets;
      snapshot.metrics_replica = item.metrics_replica;
      JobEventLog::Seen seen = events_.Rows(item.uid);
      snapshot.events = std::move(seen.rows);
      snapshot.events_complete = seen.complete;
      return jobs::SnapshotRecord(*client_, snapshot, *clock_);
    }();
    if (record.ok()) {
      Write write{item.ns, item.name, item.uid, item.kind, item.wake, {}};
      write.text.row = jobs::RecordRow(*record);
      write.text.record = record->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        writes_.push_back(std::move(write));
      }
      write_wake_.notify_one();
      continue;
    }
    if (++item.attempts >= 8) {  // the events list kept failing
      ++failed_;
      log_(true, fmt::format("job history: {}/{} not recorded: {}", item.ns, item.name,
                             record.status().message()));
      Done(item.uid, item.kind, item.ns, item.name, item.wake);
      continue;
    }
    // Back off (0.5 s, 1 s, 2 s, … up to 8 s) unless stopping, then try again.
    std::unique_lock<std::mutex> lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(std::min(8000, 250 << item.attempts)),
                   [this] { return stop_; });
    if (stop_) return;
    queue_.push_back(std::move(item));
  }
}

void HistoryRecorder::Writer() {
  for (;;) {
    std::vector<Write> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      write_wake_.wait(lock, [this] { return stop_ || !writes_.empty(); });
      if (stop_) return;
      // Gather what comes in the next moments: one transaction for many records.
      write_wake_.wait_for(lock, kBatchWindow,
                           [this] { return stop_ || writes_.size() >= kMaxBatch; });
      if (stop_) return;
      while (!writes_.empty() && batch.size() < kMaxBatch) {
        batch.push_back(std::move(writes_.front()));
        writes_.pop_front();
      }
    }
    std::vector<history::HistoryStore::Text> texts;
    for (const Write& w : batch) texts.push_back(w.text);
    Status written = Status::Ok();
    for (int attempt = 0;; ++attempt) {
      {
        std::lock_guard<std::mutex> lock(store_mu_);
        written = store_->PutMany(texts, limits_, clock_->Now()).status();
      }
      if (written.ok() || attempt >= 7) break;
      std::unique_lock<std::mutex> lock(mu_);  // back off, unless stopping
      wake_.wait_for(lock, std::chrono::milliseconds(std::min(8000, 250 << attempt)),
                     [this] { return stop_; });
      if (stop_) return;
    }
    for (const Write& w : batch) {
      if (written.ok()) {
        ++written_;
        {
          std::lock_guard<std::mutex> lock(seen_mu_);
          recorded_.insert(w.uid);
        }
        log_(false,
             fmt::format("job history: recorded {} {}/{}", api::Info(w.kind).name, w.ns, w.name));
      } else {
        ++failed_;
        log_(true,
             fmt::format("job history: {}/{} not recorded: {}", w.ns, w.name, written.message()));
      }
      Done(w.uid, w.kind, w.ns, w.name, w.wake);
    }
  }
}

}  // namespace trainctl::recording
