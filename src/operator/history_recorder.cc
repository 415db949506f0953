#include "operator/history_recorder.h"

#include "jobs/history_capture.h"
#include "operator/log.h"

namespace trainctl::op {

HistoryRecorder::HistoryRecorder(std::unique_ptr<history::HistoryStore> store,
                                 std::unique_ptr<jobs::ClusterJobSource> source,
                                 history::Limits limits, const Clock* clock)
    : store_(std::move(store)), source_(std::move(source)), limits_(limits), clock_(clock) {}

HistoryRecorder::~HistoryRecorder() { Stop(); }

void HistoryRecorder::Start() {
  worker_ = std::thread([this] { Work(); });
}

void HistoryRecorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

bool HistoryRecorder::Recorded(const std::string& uid) {
  std::lock_guard<std::mutex> lock(store_mu_);
  if (recorded_.count(uid)) return true;
  if (!store_->Has(uid)) return false;
  recorded_.insert(uid);
  return true;
}

void HistoryRecorder::Enqueue(const std::string& ns, api::Kind kind, const std::string& name,
                              const std::string& uid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || !queued_.insert(uid).second) return;
    queue_.push_back({ns, name, uid, kind, 0});
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
      item = queue_.front();
      queue_.pop_front();
    }
    // The API reads without the store's lock: the controller asks Recorded() meanwhile.
    StatusOr<bool> done = [&]() -> StatusOr<bool> {
      TRAINCTL_ASSIGN_OR_RETURN(
          std::optional<nlohmann::json> record,
          jobs::ClusterRecord(*source_, item.ns, item.kind, item.name, item.uid, *clock_));
      if (!record) return false;
      std::lock_guard<std::mutex> lock(store_mu_);
      TRAINCTL_RETURN_IF_ERROR(
          store_->Put(*record, jobs::RecordRow(*record), limits_, clock_->Now()).status());
      recorded_.insert(item.uid);
      return true;
    }();
    bool again = false;
    if (done.ok() && *done) {
      ++written_;
      LogInfo("job history: recorded {} {}/{}", api::Info(item.kind).name, item.ns, item.name);
    } else if (!done.ok() && done.status().code() == StatusCode::kNotFound) {
      ++failed_;  // deleted or replaced meanwhile: nothing to keep
      LogInfo("job history: {}/{} not recorded: {}", item.ns, item.name, done.status().message());
    } else {
      again = ++item.attempts < 8;  // not finished in the API yet, or the API failed
      if (!again) {
        ++failed_;
        LogError(
            "job history: {}/{} not recorded: {}", item.ns, item.name,
            done.ok() ? std::string("its final status never showed") : done.status().message());
      }
    }
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
