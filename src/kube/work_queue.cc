#include "kube/work_queue.h"

#include <algorithm>

namespace trainctl::kube {

WorkQueue::WorkQueue(const Clock* clock, WorkQueueOptions options)
    : clock_(clock), options_(options) {}

void WorkQueue::MarkDirtyLocked(const std::string& key) {
  ++adds_;
  dirty_.insert(key);
  auto d = delayed_at_.find(key);
  if (d != delayed_at_.end()) {  // queued now: the pending delayed add is moot
    delayed_.erase({d->second, key});
    delayed_at_.erase(d);
  }
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutdown_ || dirty_.count(key)) return;
  MarkDirtyLocked(key);
  if (processing_.count(key)) return;  // queued again by Done()
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddUrgent(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_ || urgent_keys_.count(key)) return;
  const bool processing = processing_.count(key) > 0;
  if (!dirty_.count(key)) {
    MarkDirtyLocked(key);
  } else if (!processing) {  // waiting in the ordinary lane: it moves
    auto queued = std::find(queue_.begin(), queue_.end(), key);
    if (queued != queue_.end()) queue_.erase(queued);
  }
  urgent_keys_.insert(key);
  if (processing) return;  // Done() queues it, in the urgent lane
  urgent_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  if (delay <= Duration::zero()) return Add(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_ || dirty_.count(key)) return;
  Time at = clock_->Now() + delay;
  auto d = delayed_at_.find(key);
  if (d != delayed_at_.end()) {
    if (d->second <= at) return;  // an earlier wake-up is already pending
    delayed_.erase({d->second, key});
  }
  delayed_at_[key] = at;
  delayed_.insert({at, key});
  cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Duration delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int n = failures_[key]++;
    ++retries_;
    double ms = static_cast<double>(options_.base_backoff.count());
    for (int i = 0; i < n && ms < options_.max_backoff.count(); ++i) ms *= 2;
    delay = Duration(static_cast<long long>(std::min<double>(ms, options_.max_backoff.count())));
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked(Time now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayed_at_.erase(key);
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked(clock_->Now());
    if (!urgent_.empty() || !queue_.empty()) break;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      Duration wait = std::chrono::duration_cast<Duration>(delayed_.begin()->first - clock_->Now());
      wait = std::clamp(wait, Duration(1), Duration(1000));
      cv_.wait_for(lock, wait);
    }
  }
  // The urgent lane first, but never more than kUrgentStreak keys in a row while ordinary ones
  // wait: a stream of failures slows routine syncs down and cannot stop them.
  const bool urgent = !urgent_.empty() && (queue_.empty() || urgent_streak_ < kUrgentStreak);
  urgent_streak_ = urgent && !queue_.empty() ? urgent_streak_ + 1 : 0;
  std::deque<std::string>& lane = urgent ? urgent_ : queue_;
  std::string key = std::move(lane.front());
  lane.pop_front();
  dirty_.erase(key);
  urgent_keys_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutdown_) {
    (urgent_keys_.count(key) ? urgent_ : queue_).push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

void WorkQueue::Poke() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

WorkQueueStats WorkQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {queue_.size() + urgent_.size(), delayed_.size(), adds_, retries_};
}

}  // namespace trainctl::kube
