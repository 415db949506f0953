#include "kube/event_recorder.h"

namespace trainctl::kube {

EventRecorder::EventRecorder(Client* client, const Clock* clock, CorrelatorOptions options,
                             size_t max_queue)
    : client_(client), clock_(clock), correlator_(std::move(options)), max_queue_(max_queue) {
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= max_queue_) {
      queue_.pop_front();
      stats_.dropped_queue_full++;
    }
    queue_.push_back(std::move(event));
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
    EventInput next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      next = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
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
