// Clock: the only way trainctl code reads the time.
//
// Decision code receives a `Time` value; substrates read it from an injected Clock. RealClock
// wraps the system clock; FakeClock is advanced by hand in tests. Time is a system_clock time
// point (wall time, as Kubernetes timestamps are). Deadlines that must not jump with the wall
// clock (grace periods, back-off) use Monotonic(): steady time, only ever compared with itself.
// Code that waits a fixed time asks the clock too (SleepFor): a RealClock sleeps, a FakeClock
// moves its time forward instead, so a test of a polling loop or a retry takes no real time.
// Waits that must end early (stop requests) stay on condition variables with durations
// computed from the clock. Both clocks are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>

namespace trainctl {

using Time = std::chrono::system_clock::time_point;
using Duration = std::chrono::milliseconds;
using MonoTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time Now() const = 0;
  virtual MonoTime Monotonic() const = 0;
  // Returns after `d` of this clock's time.
  virtual void SleepFor(Duration d) const = 0;
};

class RealClock final : public Clock {
 public:
  Time Now() const override;
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  void SleepFor(Duration d) const override;
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(Time start) : now_ms_(ToMs(start)) {}
  Time Now() const override { return Time(std::chrono::milliseconds(now_ms_.load())); }
  // Moves with Advance (not with Set, which models a wall-clock jump).
  MonoTime Monotonic() const override {
    return MonoTime(std::chrono::milliseconds(mono_ms_.load()));
  }
  void Advance(Duration d) {
    now_ms_ += d.count();
    mono_ms_ += d.count();
  }
  void Set(Time t) { now_ms_ = ToMs(t); }
  // Sleeping on a fake clock is advancing it (both its wall and its monotonic time).
  void SleepFor(Duration d) const override {
    if (d <= Duration::zero()) return;
    now_ms_ += d.count();
    mono_ms_ += d.count();
  }

 private:
  static long long ToMs(Time t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }
  mutable std::atomic<long long> now_ms_;
  mutable std::atomic<long long> mono_ms_{0};
};

// RFC 3339 in UTC with second precision, as Kubernetes writes metav1.Time: 2024-05-01T12:00:00Z.
std::string FormatRfc3339(Time t);
// Parses the forms Kubernetes emits (Z or numeric offset, optional fractional seconds). A valid
// time beyond what Time holds (after 2262 or before 1678) becomes Time::max() / Time::min().
std::optional<Time> ParseRfc3339(const std::string& text);
// Truncates to whole seconds, the precision a Kubernetes timestamp keeps.
Time TruncateToSeconds(Time t);
// "5s", "3m12s", "2h4m", "3d4h" like kubectl's age column.
std::string FormatAge(Duration d);

}  // namespace trainctl
