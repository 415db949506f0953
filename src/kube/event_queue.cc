#include "kube/event_queue.h"

#include <algorithm>
#include <iterator>

namespace trainctl::kube {
namespace {

// Room kept at the end of a folded message for " and 123456 more".
constexpr size_t kSuffixRoom = 24;

}  // namespace

std::string FoldMessages(const std::vector<std::string>& messages, size_t total, size_t max_bytes) {
  if (messages.empty()) return "";
  if (messages.size() == 1 && total <= 1) return messages.front();
  const size_t colon = messages.front().find(": ");
  std::string prefix = colon == std::string::npos ? "" : messages.front().substr(0, colon + 2);
  bool shared =
      !prefix.empty() && std::all_of(messages.begin(), messages.end(), [&](const auto& m) {
        return m.size() > prefix.size() && m.compare(0, prefix.size(), prefix) == 0;
      });
  const std::string separator = shared ? ", " : "; ";
  std::vector<std::string> items;
  for (const std::string& message : messages)
    items.push_back(shared ? message.substr(prefix.size()) : message);
  auto join = [&](size_t n) {
    std::string out = shared ? prefix : "";
    for (size_t i = 0; i < n; ++i) out += (i ? separator : "") + items[i];
    return out;
  };
  total = std::max(total, messages.size());
  if (messages.size() == total) {
    std::string all = join(items.size());
    if (all.size() <= max_bytes) return all;
  }
  // Not all of them: as many as fit with room left for the count of the rest.
  size_t kept = 1;
  for (size_t length = join(1).size(); kept < items.size(); ++kept) {
    length += separator.size() + items[kept].size();
    if (length + kSuffixRoom > max_bytes) break;
  }
  std::string out = join(kept);
  if (kept < total) out += " and " + std::to_string(total - kept) + " more";
  return out;
}

EventQueue::Waiting EventQueue::Wrap(EventInput event) {
  Waiting waiting;
  waiting.key = SimilarKeyOf(event);
  waiting.bytes = event.message.size();
  waiting.messages.push_back(event.message);
  waiting.event = std::move(event);
  return waiting;
}

void EventQueue::Fold(Waiting* into, Waiting from) {
  into->event.count += from.event.count;
  const Time first = from.event.first;
  if (into->event.first == Time{} || (first != Time{} && first < into->event.first))
    into->event.first = first;
  // Distinct messages only; those past one message's worth are counted, not kept.
  size_t unkept = from.distinct - from.messages.size();
  for (std::string& message : from.messages) {
    if (std::find(into->messages.begin(), into->messages.end(), message) != into->messages.end())
      continue;
    ++into->distinct;
    if (into->bytes < kFoldedMessageBytes) {
      into->bytes += message.size();
      into->messages.push_back(std::move(message));
    }
  }
  into->distinct += unkept;
}

int EventQueue::Push(EventInput event, bool fold) {
  Waiting waiting = Wrap(std::move(event));
  if (fold) {
    auto it = by_key_.find(waiting.key);
    if (it != by_key_.end()) {
      Fold(&*it->second, std::move(waiting));
      ++folded_;
      return 0;
    }
  }
  int dropped = 0;
  if (order_.size() + deferred_.size() >= std::max<size_t>(1, max_events_)) {
    if (!order_.empty()) {
      dropped = std::max(1, TakeFront().event.count);
    } else if (!deferred_.empty()) {
      deferred_by_key_.erase(deferred_.front().key);
      dropped = std::max(1, deferred_.front().event.count);
      deferred_.pop_front();
    }
  }
  Append(std::move(waiting));
  return dropped;
}

EventQueue::Waiting EventQueue::TakeFront() {
  auto newest = by_key_.find(order_.front().key);
  if (newest != by_key_.end() && newest->second == order_.begin()) by_key_.erase(newest);
  Waiting front = std::move(order_.front());
  order_.pop_front();
  return front;
}

void EventQueue::Append(Waiting waiting) {
  std::string key = waiting.key;
  order_.push_back(std::move(waiting));
  by_key_[key] = std::prev(order_.end());
}

std::optional<EventInput> EventQueue::Pop(bool absorb) {
  if (order_.empty()) return std::nullopt;
  Waiting& front = order_.front();
  if (absorb) {
    for (auto it = std::next(order_.begin()); it != order_.end();) {
      if (it->key != front.key) {
        ++it;
        continue;
      }
      Fold(&front, std::move(*it));
      ++folded_;
      it = order_.erase(it);
    }
  }
  auto newest = by_key_.find(front.key);
  if (newest != by_key_.end() &&
      (absorb || newest->second == order_.begin()))  // absorbed: the front was the last of its key
    by_key_.erase(newest);
  EventInput out = std::move(front.event);
  if (front.messages.size() > 1 || front.distinct > 1)
    out.message = FoldMessages(front.messages, front.distinct);
  order_.pop_front();
  return out;
}

int EventQueue::DeferFront(MonoTime due) {
  if (order_.empty()) return 0;
  Waiting front = TakeFront();
  const int count = std::max(1, front.event.count);
  if (auto aside = deferred_by_key_.find(front.key); aside != deferred_by_key_.end()) {
    aside->second->due = std::max(aside->second->due, due);
    Fold(&*aside->second, std::move(front));
    ++folded_;
    return count;
  }
  front.due = due;
  std::string key = front.key;
  deferred_.push_back(std::move(front));
  deferred_by_key_[key] = std::prev(deferred_.end());
  return count;
}

std::optional<MonoTime> EventQueue::ReleaseDue(MonoTime now) {
  std::optional<MonoTime> next;
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    if (it->due > now) {
      if (!next || it->due < *next) next = it->due;
      ++it;
      continue;
    }
    deferred_by_key_.erase(it->key);
    Waiting released = std::move(*it);
    it = deferred_.erase(it);
    if (auto waiting = by_key_.find(released.key); waiting != by_key_.end()) {
      // A newer one of its key waits: one Event, the older names first, in the newer's place.
      Fold(&released, std::move(*waiting->second));
      ++folded_;
      *waiting->second = std::move(released);
      continue;
    }
    Append(std::move(released));
  }
  return next;
}

}  // namespace trainctl::kube
