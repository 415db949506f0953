#include "progress/coalesced_writer.h"

#include <chrono>
#include <utility>

namespace trainctl::progress {

void CoalescedWriter::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(250));
      if (stopping_) break;
      lock.unlock();
      Flush();
      lock.lock();
    }
  });
}

void CoalescedWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  Flush(/*everything=*/true);
}

void CoalescedWriter::Flush(bool everything) {
  std::lock_guard<std::mutex> one_at_a_time(flush_mu_);
  auto taken = everything ? coalescer_.TakeAll() : coalescer_.TakeDue(clock_->Now());
  for (auto& [key, status] : taken) {
    const Status written = write_(key, status);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(written.ok() ? writes_ : failures_);
    }
    if (!written.ok() && written.code() != StatusCode::kNotFound)
      coalescer_.Return(key, std::move(status));
  }
}

WriterCounts CoalescedWriter::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {coalescer_.counts(), writes_, failures_};
}

}  // namespace trainctl::progress
