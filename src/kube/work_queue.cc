#include "kube/work_queue.h"

#include <algorithm>

namespace trainctl::kube {

WorkQueue::WorkQueue(const Clock* clock, WorkQueueOptions options)
    : clock_(clock), options_(options) {}

void WorkQueue::CancelDelayedLocked(const std::string& key, Lane lane) {
  auto d = delayed_at_.find(key);
  if (d == delayed_at_.end() || d->second.lane < lane) return;  // it would still raise the key
  delayed_.erase({d->second.at, key});
  delayed_at_.erase(d);
}

void WorkQueue::AddLocked(const std::string& key, Lane lane) {
  if (shutdown_) return;
  const bool processing = processing_.count(key) > 0;
  auto known = dirty_.find(key);
  if (known == dirty_.end()) {
    ++adds_;
  } else if (known->second <= lane) {
    return;                  // queued already, in this lane or one served before it
  } else if (!processing) {  // waiting in a later lane: it moves up
    std::deque<std::string>& from = lanes_[static_cast<size_t>(known->second)];
    auto queued = std::find(from.begin(), from.end(), key);
    if (queued != from.end()) from.erase(queued);
  }
  CancelDelayedLocked(key, lane);  // queued now: a pending delayed add to this lane is moot
  dirty_[key] = lane;
  if (processing) return;  // Done() queues it, in its lane
  lanes_[static_cast<size_t>(lane)].push_back(key);
  cv_.notify_one();
}

void WorkQueue::AddIn(const std::string& key, Lane lane) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key, lane);
}

void WorkQueue::Add(const std::string& key) { AddIn(key, Lane::kRoutine); }
void WorkQueue::AddPrompt(const std::string& key) { AddIn(key, Lane::kPrompt); }
void WorkQueue::AddUrgent(const std::string& key) { AddIn(key, Lane::kUrgent); }

void WorkQueue::AddAfter(const std::string& key, Duration delay, Lane lane) {
  if (delay <= Duration::zero()) return AddIn(key, lane);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return;
  if (auto known = dirty_.find(key); known != dirty_.end() && known->second <= lane) return;
  Time at = clock_->Now() + delay;
  auto d = delayed_at_.find(key);
  if (d != delayed_at_.end()) {  // one pending add a key: the earliest time, the first lane
    lane = std::min(lane, d->second.lane);
    if (d->second.at <= at) {
      d->second.lane = lane;
      return;
    }
    delayed_.erase({d->second.at, key});
  }
  delayed_at_[key] = {at, lane};
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
    const Lane lane = delayed_at_[key].lane;
    delayed_at_.erase(key);
    AddLocked(key, lane);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked(clock_->Now());
    if (std::any_of(lanes_.begin(), lanes_.end(), [](const auto& l) { return !l.empty(); })) break;
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      Duration wait = std::chrono::duration_cast<Duration>(delayed_.begin()->first - clock_->Now());
      wait = std::clamp(wait, Duration(1), Duration(1000));
      cv_.wait_for(lock, wait);
    }
  }
  // The first lane with a key, but never more than kUrgentStreak urgent or prompt keys in a row
  // while routine ones wait: a stream of failures or starts slows routine syncs down and cannot
  // stop them.
  std::deque<std::string>& routine = lanes_[static_cast<size_t>(Lane::kRoutine)];
  auto lane = std::find_if(lanes_.begin(), lanes_.end(), [](const auto& l) { return !l.empty(); });
  if (&*lane != &routine && !routine.empty() && urgent_streak_ >= kUrgentStreak)
    lane = lanes_.end() - 1;
  urgent_streak_ = &*lane != &routine && !routine.empty() ? urgent_streak_ + 1 : 0;
  std::string key = std::move(lane->front());
  lane->pop_front();
  dirty_.erase(key);
  CancelDelayedLocked(key, Lane::kUrgent);  // moot: this sync sees the change that asked for it
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  auto queued = dirty_.find(key);
  if (queued != dirty_.end() && !shutdown_) {
    lanes_[static_cast<size_t>(queued->second)].push_back(key);
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
  PromoteDueLocked(clock_->Now());
  cv_.notify_all();
}

WorkQueueStats WorkQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t depth = 0;
  for (const auto& lane : lanes_) depth += lane.size();
  return {depth, delayed_.size(), adds_, retries_};
}

}  // namespace trainctl::kube
