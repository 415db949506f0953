// EventCorrelator: decides what to write for each event a controller records, so a busy
// controller does not flood the API server with core/v1 Events (the behaviour users know from
// client-go):
//
// - Deduplication: an event identical to an earlier one (same object, type, reason, message,
//   source) becomes a PATCH of the existing Event's `count` and `lastTimestamp`.
// - Aggregation: when more than `max_similar` events with the same object, type and reason but
//   different messages arrive within `aggregation_window`, further ones are folded into one
//   Event whose message starts with "(combined from similar events): ".
// - Spam filter: per involved object a token bucket (burst `spam_burst`, one token per
//   `spam_refill`); an event beyond it is refused (kRefused) with the time until the object has
//   a token again. client-go drops such events; the recorder holds them, folded, and writes
//   them then (kube/event_recorder.h), so a big job's events are late, never lost.
//
// Pure bookkeeping against the time it is given; thread-compatible (one owner). Memory is
// bounded: at most `max_entries` keys are remembered (oldest forgotten first).
#pragma once

#include <list>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "common/clock.h"

namespace trainctl::kube {

struct ObjectReference {
  std::string api_version, kind, namespace_, name, uid;
};

struct EventInput {
  ObjectReference object;
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
  int count = 1;  // occurrences it stands for (more than 1 once folded: kube/event_queue.h)
  Time first{};   // when the first occurrence was recorded; unset: when it is written
};

struct CorrelatorOptions {
  std::string component = "trainctl-operator";
  std::string host;
  int max_similar = 10;
  Duration aggregation_window{600000};
  int spam_burst = 25;
  Duration spam_refill{300000};
  size_t max_entries = 4096;
};

struct EventWrite {
  enum class Kind { kCreate, kPatch, kRefused } kind = Kind::kRefused;
  nlohmann::json event;  // kCreate: the Event to create; kPatch: the merge patch
  std::string name;      // the Event's name (for kPatch: which one to patch)
  std::string namespace_;
  Duration wait{0};  // kRefused: until the spam filter has a token for the object again
};

// The key of "similar" events: the same object, type and reason (messages may differ). The
// correlator aggregates by it; the recorder's queue folds by it (kube/event_queue.h).
std::string SimilarKeyOf(const EventInput& input);

class EventCorrelator {
 public:
  explicit EventCorrelator(CorrelatorOptions options) : options_(std::move(options)) {}

  // `filter` false: the spam filter is not asked (a recorder's last writes at shutdown).
  EventWrite Correlate(const EventInput& input, Time now, bool filter = true);
  // How long until the spam filter lets an Event of `object` through (zero: now). Asks only.
  Duration SpamWait(const ObjectReference& object, Time now) const;
  // The API said the Event to patch is gone (expired): forget it so the next one creates.
  void Forget(const std::string& event_name);

 private:
  struct Seen {
    std::string name;
    int count = 0;
    Time first;
  };
  struct Similar {
    std::unordered_map<std::string, bool> messages;
    Time window_start;
  };
  struct Bucket {
    double tokens = 0;
    Time last;
  };
  template <typename V>
  struct Lru {
    std::list<std::string> order;
    std::unordered_map<std::string, std::pair<V, std::list<std::string>::iterator>> items;
    V& Touch(const std::string& key, size_t max, bool* created);
  };

  // The bucket's tokens at `now` (never fewer than it had: a clock stepped back adds none).
  double TokensAt(const Bucket& bucket, Time now) const;
  // The wait for one token with `tokens` left (at least 1 ms).
  Duration WaitFor(double tokens) const;

  CorrelatorOptions options_;
  Lru<Seen> seen_;
  Lru<Similar> similar_;
  Lru<Bucket> buckets_;
  long long sequence_ = 0;
};

}  // namespace trainctl::kube
