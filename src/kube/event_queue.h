// EventQueue: the events a recorder holds until its budget lets them out, in arrival order.
//
// Contract:
// - Push() appends an event. When `fold` is true (the writer is waiting for its budget) and an
//   event with the same object, type and reason is already waiting, the new one is folded into
//   it instead: one Event carries both, its count is the number folded, its first time the
//   earliest, its message both messages (FoldMessages). Nothing a user would read is lost; only
//   writes are saved.
// - At most `max_events` wait (at least 1); when full, the oldest is dropped.
// - Pop() takes the oldest waiting event; Pop(/*absorb=*/true) folds every later event with its
//   object, type and reason into it first (the writer waited for its budget: all of them
//   waited).
// - DeferFront(due) puts the oldest waiting event aside until `due` (the spam filter refused
//   its object), folded into one aside with its object, type and reason; ReleaseDue(now) puts
//   what is due back at the end, folded with a waiting one of its key. Folded events keep every
//   name they carry through both moves. What is aside counts against `max_events` but not in
//   empty()/size().
//
// Pure bookkeeping; thread-compatible (the recorder holds its lock around every call).
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kube/event_correlator.h"

namespace trainctl::kube {

// The message of `messages` folded into one Event, at most `max_bytes` long (UTF-8 is cut only
// between items): "Created pod: a-0, a-1, a-2" when every message starts with the same
// "<words>: ", else the messages joined with "; ". Items that do not fit are counted at the
// end: "Created pod: a-0, a-1 and 6 more". `total` is how many messages were folded, of which
// `messages` are the first ones kept.
inline constexpr size_t kFoldedMessageBytes = 1024;
std::string FoldMessages(const std::vector<std::string>& messages, size_t total,
                         size_t max_bytes = kFoldedMessageBytes);

class EventQueue {
 public:
  explicit EventQueue(size_t max_events = 1000) : max_events_(max_events) {}

  // Returns the occurrences dropped to make room (the oldest waiting Event's count; 0 when the
  // queue had room or the event was folded).
  int Push(EventInput event, bool fold);
  std::optional<EventInput> Pop(bool absorb = false);
  // The oldest waiting event; nullptr when none waits.
  const EventInput* Front() const { return order_.empty() ? nullptr : &order_.front().event; }
  // Returns the occurrences put aside (0 when nothing waits).
  int DeferFront(MonoTime due);
  // Returns when the next event still aside is due (nullopt: none is aside).
  std::optional<MonoTime> ReleaseDue(MonoTime now);
  bool empty() const { return order_.empty(); }
  size_t size() const { return order_.size(); }
  size_t deferred() const { return deferred_.size(); }
  long folded() const { return folded_; }  // events folded into another so far

 private:
  struct Waiting {
    EventInput event;
    std::vector<std::string> messages;  // the distinct ones, while they fit in one message
    size_t bytes = 0;
    size_t distinct = 1;  // distinct messages folded, kept or not
    std::string key;
    MonoTime due{};  // aside: when it may go back
  };
  static Waiting Wrap(EventInput event);
  // Removes the oldest waiting entry (there is one) and its index if it is its key's newest.
  Waiting TakeFront();
  // Adds `waiting` at the end as its key's newest.
  void Append(Waiting waiting);
  static void Fold(Waiting* into, Waiting from);

  size_t max_events_;
  std::list<Waiting> order_;
  std::unordered_map<std::string, std::list<Waiting>::iterator> by_key_;  // the newest per key
  std::list<Waiting> deferred_;                                           // aside, one per key
  std::unordered_map<std::string, std::list<Waiting>::iterator> deferred_by_key_;
  long folded_ = 0;
};

}  // namespace trainctl::kube
