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
  bool empty() const { return order_.empty(); }
  size_t size() const { return order_.size(); }
  long folded() const { return folded_; }  // events folded into another so far

 private:
  struct Waiting {
    EventInput event;
    std::vector<std::string> messages;  // the distinct ones, while they fit in one message
    size_t bytes = 0;
    size_t distinct = 1;  // distinct messages folded, kept or not
    std::string key;
  };
  static Waiting Wrap(EventInput event);
  static void Fold(Waiting* into, Waiting from);

  size_t max_events_;
  std::list<Waiting> order_;
  std::unordered_map<std::string, std::list<Waiting>::iterator> by_key_;  // the newest per key
  long folded_ = 0;
};

}  // namespace trainctl::kube
