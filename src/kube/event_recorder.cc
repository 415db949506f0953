#include "kube/event_recorder.h"

#include <algorithm>

namespace trainctl::kube {

EventRecorder::EventRecorder(Client* client, const Clock* clock, CorrelatorOptions options,
                             RecorderBudget budget)
    : client_(client),
      clock_(clock),
      correlator_(std::move(options)),
      budget_(budget.qps, budget.burst, clock),
      drain_limit_(budget.drain_limit),
      fold_after_(budget.fold_after),
      queue_(budget.max_queue) {
  thread_ = std::thread([this] { Loop(); });
}

EventRecorder::~EventRecorder() { Stop(); }

RecorderStats EventRecorder::Stop() {
  std::call_once(stop_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  });
  return stats();
}

void EventRecorder::Record(EventInput event) {
  // After the writer has ended nothing would write it: counted as lost at the stop, and not
  // given to the tap (the job history keeps what was recorded to be written).
  auto too_late = [this, &event] {
    if (!writer_done_) return false;
    stats_.dropped_at_stop += std::max(1, event.count);
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (too_late()) return;
  }
  if (tap_) tap_(event);
  if (event.first == Time{}) event.first = clock_->Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (too_late()) return;  // the writer ended since
    // Over the budget the event waits anyway: folded into one of its kind that waits too. The
    // events queued ahead take their tokens first (counting only the bucket, a burst recorded
    // before the writer woke went unfolded and filled the queue: 923 of 16,000 dropped once).
    const bool over = budget_.enabled() && !budget_.WouldGoNow(queue_.size());
    stats_.dropped_queue_full += queue_.Push(std::move(event), /*fold=*/over || over_budget_);
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

bool EventRecorder::Write(const EventInput& input, bool stopping) {
  EventWrite write = correlator_.Correlate(input, clock_->Now(), /*filter=*/!stopping);
  if (write.kind == EventWrite::Kind::kRefused) return false;
  Status st;
  bool patched = false;
  if (write.kind == EventWrite::Kind::kPatch) {
    st =
        client_->Patch(kEvents, write.namespace_, write.name, PatchType::kMerge, write.event.dump())
            .status();
    patched = st.ok();
    if (st.code() == StatusCode::kNotFound) {
      correlator_.Forget(write.name);
      // The filter passed this event already: created again without asking it twice.
      write = correlator_.Correlate(input, clock_->Now(), /*filter=*/false);
    }
  }
  if (write.kind == EventWrite::Kind::kCreate)
    st = client_->CreateOnly(kEvents, write.namespace_, write.event);
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok())
    stats_.failed += std::max(1, input.count);
  else if (patched)
    stats_.patched++;
  else
    stats_.created++;
  return true;
}

void EventRecorder::Loop() {
  for (;;) {
    bool stopping = false;
    bool behind = false;
    ObjectReference object;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        // What was put aside for the spam filter goes back once due (at a stop, all of it).
        const std::optional<MonoTime> next_due =
            queue_.ReleaseDue(stopping_ ? MonoTime::max() : clock_->Monotonic());
        if (stopping_ || !queue_.empty()) break;
        if (next_due)
          cv_.wait_for(lock, *next_due - clock_->Monotonic());
        else
          cv_.wait(lock);
      }
      if (queue_.empty()) {  // stopping and drained
        writer_done_ = true;
        return;
      }
      busy_ = true;
      stopping = stopping_;
      object = queue_.Front()->object;
      // Behind: the next Event has waited long enough that those of its kind queued behind it
      // go with it.
      behind = clock_->Now() - queue_.Front()->first >= fold_after_;
    }
    // An Event the spam filter would refuse costs no budget: it is put aside until its object
    // has a token again.
    if (!stopping) {
      if (const Duration refused = correlator_.SpamWait(object, clock_->Now());
          refused > Duration::zero()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          stats_.held_by_filter += queue_.DeferFront(clock_->Monotonic() + refused);
          stats_.folded = queue_.folded();
          busy_ = false;
        }
        cv_.notify_all();
        continue;
      }
    }
    // The next Event leaves the queue only once the budget allows it; if it had to wait, every
    // event of its job and reason queued behind it is folded into it. The wait ends early when
    // the recorder stops; then the rest is folded and written without the budget.
    const Duration wait = stopping ? Duration::zero() : budget_.Reserve();
    if (wait > Duration::zero()) {
      std::unique_lock<std::mutex> lock(mu_);
      over_budget_ = true;
      cv_.wait_for(lock, wait, [this] { return stopping_; });
    }
    EventInput next;
    bool drop = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      over_budget_ = false;
      stopping = stopping_;
      next = std::move(*queue_.Pop(/*absorb=*/wait > Duration::zero() || stopping || behind));
      stats_.folded = queue_.folded();
      if (stopping && !drain_until_) drain_until_ = clock_->Monotonic() + drain_limit_;
      drop = drain_until_ && clock_->Monotonic() > *drain_until_;
      if (drop) stats_.dropped_at_stop += std::max(1, next.count);
    }
    // Refused after all only if the clock stepped back since it was asked: queued again.
    const bool refused = !drop && !Write(next, stopping);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (refused) stats_.dropped_queue_full += queue_.Push(std::move(next), /*fold=*/true);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

long EventsLost(const RecorderStats& s) {
  return s.dropped_queue_full + s.failed + s.dropped_at_stop;
}

std::string EventSummary(const RecorderStats& s) {
  std::string out = "events: " + std::to_string(s.created) + " created, " +
                    std::to_string(s.patched) + " patched, " + std::to_string(s.folded) +
                    " folded into another's write";
  const long lost = EventsLost(s);
  if (lost == 0) return out + ", none lost";
  return out + "; lost " + std::to_string(lost) + " (" + std::to_string(s.dropped_queue_full) +
         " with the queue full, " + std::to_string(s.failed) + " in failed writes, " +
         std::to_string(s.dropped_at_stop) + " still queued when the stop's drain time ran out)";
}

}  // namespace trainctl::kube
