#include "kube/event_recorder.h"

#include <algorithm>

namespace trainctl::kube {

EventRecorder::EventRecorder(Client* client, const Clock* clock, CorrelatorOptions options,
                             RecorderBudget budget)
    : client_(client),
      clock_(clock),
      correlator_(std::move(options)),
      budget_(budget.qps, std::max(1, budget.burst), clock),
      queue_(budget.max_queue) {
  thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Record(EventInput event) {
  if (tap_) tap_(event);
  if (event.first == Time{}) event.first = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.Push(std::move(event), /*fold=*/over_budget_)) stats_.dropped_queue_full++;
    stats_.folded = queue_.folded();
  }
  cv_.notify_all();
}

bool EventRecorder::Flush(Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

RecorderStats EventRecorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void EventRecorder::Write(const EventInput& input) {
  EventWrite write = correlator_.Correlate(input, clock_->Now());
  Status st;
  bool patched = false;
  if (write.kind == EventWrite::Kind::kDrop) {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.dropped_by_filter++;
    return;
  }
  if (write.kind == EventWrite::Kind::kPatch) {
    st =
        client_->Patch(kEvents, write.namespace_, write.name, PatchType::kMerge, write.event.dump())
            .status();
    patched = st.ok();
    if (st.code() == StatusCode::kNotFound) {
      correlator_.Forget(write.name);
      write = correlator_.Correlate(input, clock_->Now());
    }
  }
  if (write.kind == EventWrite::Kind::kCreate)
    st = client_->CreateOnly(kEvents, write.namespace_, write.event);
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok())
    stats_.failed++;
  else if (patched)
    stats_.patched++;
  else
    stats_.created++;
}

void EventRecorder::Loop() {
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      busy_ = true;
      stopping = stopping_;
    }
    // The next Event leaves the queue only once the budget allows it; if it had to wait, every
    // event of its job and reason recorded meanwhile, or queued behind it, is folded into it. What
    // is left at shutdown is written without waiting.
    const Duration wait = stopping ? Duration::zero() : budget_.Reserve();
    if (wait > Duration::zero()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        over_budget_ = true;
      }
      clock_->SleepFor(wait);
    }
    EventInput next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      over_budget_ = false;
      next = std::move(*queue_.Pop(/*absorb=*/wait > Duration::zero()));
      stats_.folded = queue_.folded();
    }
    Write(next);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

}  // namespace trainctl::kube
