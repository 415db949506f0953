#include "kube/event_correlator.h"

#include <algorithm>
#include <cstdio>

namespace trainctl::kube {
namespace {

using nlohmann::json;

std::string ObjectKeyOf(const ObjectReference& o) {
  return o.kind + "/" + o.namespace_ + "/" + o.name + "/" + o.uid;
}

json Involved(const ObjectReference& o) {
  json j = {{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name}};
  if (!o.namespace_.empty()) j["namespace"] = o.namespace_;
  if (!o.uid.empty()) j["uid"] = o.uid;
  return j;
}

}  // namespace

std::string SimilarKeyOf(const EventInput& input) {
  return ObjectKeyOf(input.object) + "/" + input.type + "/" + input.reason;
}

template <typename V>
V& EventCorrelator::Lru<V>::Touch(const std::string& key, size_t max, bool* created) {
  auto it = items.find(key);
  if (it != items.end()) {
    order.splice(order.begin(), order, it->second.second);
    *created = false;
    return it->second.first;
  }
  if (items.size() >= max && !order.empty()) {
    items.erase(order.back());
    order.pop_back();
  }
  order.push_front(key);
  *created = true;
  return items.emplace(key, std::make_pair(V{}, order.begin())).first->second.first;
}

double EventCorrelator::TokensAt(const Bucket& bucket, Time now) const {
  const double elapsed = std::chrono::duration<double>(now - bucket.last).count();
  const double refill =
      std::max(0.0, elapsed) / std::chrono::duration<double>(options_.spam_refill).count();
  return std::min<double>(options_.spam_burst, bucket.tokens + refill);
}

Duration EventCorrelator::WaitFor(double tokens) const {
  return std::max(Duration(1), std::chrono::ceil<Duration>((1 - tokens) * options_.spam_refill));
}

Duration EventCorrelator::SpamWait(const ObjectReference& object, Time now) const {
  auto it = buckets_.items.find(ObjectKeyOf(object));
  if (it == buckets_.items.end()) return Duration(0);  // a new object has its whole burst
  const double tokens = TokensAt(it->second.first, now);
  return tokens >= 1 ? Duration(0) : WaitFor(tokens);
}

EventWrite EventCorrelator::Correlate(const EventInput& input, Time now, bool filter) {
  EventWrite out;
  out.namespace_ = input.object.namespace_.empty() ? "default" : input.object.namespace_;
  std::string object_key = ObjectKeyOf(input.object);

  // Spam filter per object.
  bool created = false;
  Bucket& bucket = buckets_.Touch(object_key, options_.max_entries, &created);
  if (created) {
    bucket.tokens = options_.spam_burst;
    bucket.last = now;
  } else {
    bucket.tokens = TokensAt(bucket, now);
    bucket.last = now;
  }
  if (filter && bucket.tokens < 1) {
    out.wait = WaitFor(bucket.tokens);
    return out;  // kRefused
  }
  if (filter) bucket.tokens -= 1;

  // Aggregation of similar events (same object, type, reason; different messages).
  std::string message = input.message;
  std::string similar_key = SimilarKeyOf(input);
  Similar& similar = similar_.Touch(similar_key, options_.max_entries, &created);
  if (created || now - similar.window_start > options_.aggregation_window) {
    similar.messages.clear();
    similar.window_start = now;
  }
  similar.messages[input.message] = true;
  if (static_cast<int>(similar.messages.size()) > options_.max_similar)
    message = "(combined from similar events): " + input.message;

  // Deduplication of identical events.
  std::string aggregate_message =
      message.rfind("(combined", 0) == 0 ? std::string("(combined)") : message;
  std::string dedupe_key = similar_key + "/" + aggregate_message;
  Seen& seen = seen_.Touch(dedupe_key, options_.max_entries, &created);
  std::string stamp = FormatRfc3339(now);
  if (!created && !seen.name.empty()) {
    seen.count += std::max(1, input.count);
    out.kind = EventWrite::Kind::kPatch;
    out.name = seen.name;
    out.event = {{"count", seen.count}, {"lastTimestamp", stamp}, {"message", message}};
    return out;
  }
  char suffix[32];
  std::snprintf(
      suffix, sizeof(suffix), ".%llx",
      static_cast<unsigned long long>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() +
          sequence_++));
  seen.name = input.object.name + suffix;
  seen.count = std::max(1, input.count);
  seen.first = now;
  const std::string first_stamp =
      input.first == Time{} || input.first > now ? stamp : FormatRfc3339(input.first);
  out.kind = EventWrite::Kind::kCreate;
  out.name = seen.name;
  out.event = {{"apiVersion", "v1"},
               {"kind", "Event"},
               {"metadata", {{"name", seen.name}, {"namespace", out.namespace_}}},
               {"involvedObject", Involved(input.object)},
               {"type", input.type},
               {"reason", input.reason},
               {"message", message},
               {"count", seen.count},
               {"firstTimestamp", first_stamp},
               {"lastTimestamp", stamp},
               {"source", {{"component", options_.component}}},
               {"reportingComponent", options_.component}};
  if (!options_.host.empty()) out.event["source"]["host"] = options_.host;
  return out;
}

void EventCorrelator::Forget(const std::string& event_name) {
  for (auto& [key, entry] : seen_.items)
    if (entry.first.name == event_name) entry.first.name.clear();
}

}  // namespace trainctl::kube
