#include "engine/diagnosis.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "engine/conditions.h"
#include "engine/groups.h"

namespace trainctl::engine {
namespace {

constexpr size_t kMaxReadinessMessage = 1024;
constexpr size_t kMaxNamesListed = 8;

// Problem reasons in the order they win the aggregated reason, with the phrase for the message.
struct ProblemKind {
  const char* reason;
  const char* phrase;
};
constexpr ProblemKind kProblems[] = {
    {"InvalidImageName", "have an invalid image name"},
    {"ErrImagePull", "cannot pull their image"},
    {"ImagePullBackOff", "cannot pull their image"},
    {"ErrImageNeverPull", "lack their image and may not pull it (imagePullPolicy: Never)"},
    {"CreateContainerConfigError", "cannot create their container"},
    {"CreateContainerError", "cannot create their container"},
    {"RunContainerError", "cannot start their container"},
    {"CommandNotFound", "cannot start their command"},
    {"CrashLoopBackOff", "keep crashing and restarting"},
    {"RankFailed", "run on after one of their processes failed"},
    {"ReplicaFailed", "failed"},
    {"Unschedulable", "are unschedulable"},
};

// One replica the spec asks for that is not running (or done).
struct Slot {
  std::string type;
  int index = 0;
  std::string reason;  // a ProblemKind reason, or a benign detail (ContainerCreating, …)
  std::string message;
  const ReplicaObservation* observed = nullptr;
};

// Cuts `text` to at most `max` bytes at a UTF-8 boundary, keeping the head ("…" appended).
std::string Head(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

// Keeps the tail of `text` within `max` bytes, starting at a line (or UTF-8) boundary.
std::string Tail(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  size_t start = text.size() - max;
  size_t newline = text.find('\n', start);
  if (newline != std::string::npos && newline + 1 < text.size()) return text.substr(newline + 1);
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return text.substr(start);
}

// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD: a log
// may hold anything, a status must be valid JSON text.
std::string ValidUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && len == 2) ok = c >= 0xC2;  // no overlong forms
    if (ok && len == 3) {
      unsigned char c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      unsigned char c1 = static_cast<unsigned char>(text[i + 1]);
      ok = c <= 0xF4 && !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// "Worker 0, 1, 2; Master 0", at most kMaxNamesListed replicas, then "and N more".
std::string ListReplicas(const std::vector<const Slot*>& slots) {
  std::string out;
  std::string current_type;
  size_t listed = 0;
  for (const Slot* s : slots) {
    if (listed == kMaxNamesListed) break;
    if (s->type != current_type) {
      if (!out.empty()) out += "; ";
      out += s->type + " " + std::to_string(s->index);
      current_type = s->type;
    } else {
      out += ", " + std::to_string(s->index);
    }
    ++listed;
  }
  if (slots.size() > listed) out += " and " + std::to_string(slots.size() - listed) + " more";
  return out;
}

// The not-running state of one observed replica: "" when it runs (or is done).
std::pair<std::string, std::string> StateOf(const ReplicaObservation& r) {
  if (!r.waiting_reason.empty()) return {r.waiting_reason, r.waiting_message};
  switch (r.phase) {
    case Phase::kRunning:
      if (r.process_failure) return {"RankFailed", ""};
      return {"", ""};
    case Phase::kSucceeded:
      return {"", ""};
    case Phase::kPending:
      return {"Pending", ""};
    case Phase::kFailed: {
      std::string m = "exit code " + (r.exit_code ? std::to_string(*r.exit_code) : "unknown");
      if (!r.end_reason.empty()) m += " (" + r.end_reason + ")";
      return {"ReplicaFailed", m};
    }
  }
  return {"", ""};
}

std::string BenignPhrase(const std::string& reason) {
  if (reason == "NotCreated") return "not created yet";
  if (reason == "Terminating") return "being replaced";
  if (reason == "Pending") return "pending";
  return reason;
}

std::string SignalName(int signal) {
  switch (signal) {
    case 1:
      return "SIGHUP";
    case 2:
      return "SIGINT";
    case 4:
      return "SIGILL";
    case 6:
      return "SIGABRT";
    case 7:
      return "SIGBUS";
    case 8:
      return "SIGFPE";
    case 9:
      return "SIGKILL";
    case 11:
      return "SIGSEGV";
    case 13:
      return "SIGPIPE";
    case 15:
      return "SIGTERM";
  }
  return "signal " + std::to_string(signal);
}

// "exited with code 2", "was killed by SIGKILL (exit code 137)", "failed" (unknown), with the
// end reason when it says more than the code (OOMKilled, Evicted, …).
std::string EndText(const ReplicaObservation& r) {
  std::string text;
  if (r.exit_code) {
    int code = *r.exit_code;
    if (code > 128 && code < 128 + 65)
      text =
          "was killed by " + SignalName(code - 128) + " (exit code " + std::to_string(code) + ")";
    else
      text = "exited with code " + std::to_string(code);
  } else {
    text = "failed";
  }
  // "Error"/"Completed" only restate the exit code; OOMKilled, Evicted, … say more.
  if (!r.end_reason.empty() && r.end_reason != "Error" && r.end_reason != "Completed")
    text += ", reason " + r.end_reason;
  return text;
}

// "\nLast output:\n<tail>" of `output` within `room` bytes; "" when there is nothing to show.
std::string LastOutput(const std::string& output, size_t room) {
  if (room <= 16) return "";
  std::string tail = Tail(output, room - 16);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail.empty() ? "" : "\nLast output:\n" + tail;
}

// The message of a crash loop: every replica in it, then the one that exited last.
std::string CrashLoopMessage(const std::vector<const Slot*>& hit, const std::string& of_total,
                             size_t others) {
  const ReplicaObservation* last = nullptr;
  for (const Slot* s : hit) {
    const ReplicaObservation* r = s->observed;
    if (!r) continue;
    if (!last || (r->finished_at && (!last->finished_at || *r->finished_at > *last->finished_at)))
      last = r;
  }
  std::string text = std::to_string(hit.size()) + of_total + "keep crashing and restarting (" +
                     ListReplicas(hit) + ")";
  if (others > 0) text += " (" + std::to_string(others) + " more not running)";
  if (!last) return Head(text, kMaxReadinessMessage);
  text += ". Last exit: " + last->name + " " + EndText(*last);
  if (last->finished_at) text += " at " + FormatRfc3339(*last->finished_at);
  if (last->restarts > 0)
    text += ", " + std::to_string(last->restarts) +
            (last->restarts == 1 ? " restart" : " restarts") + " so far";
  if (!last->waiting_message.empty()) text += "; " + last->waiting_message;
  text = Head(text, kMaxReadinessMessage) + ".";
  return text + LastOutput(last->end_message, kMaxAttributionBytes - text.size());
}

// The message of failed ranks: every replica with one, then the one whose rank failed first.
std::string RankFailedMessage(const std::vector<const Slot*>& hit, const std::string& of_total,
                              size_t others) {
  const ReplicaObservation* first = nullptr;
  for (const Slot* s : hit) {
    const ReplicaObservation* r = s->observed;
    if (!r || !r->process_failure) continue;
    const auto& at = r->process_failure->at;
    if (!first || (at && (!first->process_failure->at || *at < *first->process_failure->at)))
      first = r;
  }
  std::string text = std::to_string(hit.size()) + of_total +
                     "run on after one of their processes failed (" + ListReplicas(hit) + ")";
  if (others > 0) text += " (" + std::to_string(others) + " more not running)";
  if (!first) return Head(text, kMaxReadinessMessage);
  text = Head(text + ". " + ProcessFailureText(*first) +
                  "; torchrun keeps the replica running at its exit barrier until every node's "
                  "agent is done (up to 300 s)",
              kMaxReadinessMessage) +
         ".";
  return text + LastOutput(first->process_failure->output, kMaxAttributionBytes - text.size());
}

bool IsFailedEnd(const ReplicaObservation& r) {
  if (r.phase == Phase::kFailed) return true;
  // Restarted in place (OnFailure/Always): its last end is known and was not a success.
  return r.restarts > 0 && r.exit_code && *r.exit_code != 0;
}

// A group not made until others run or finish (api::GroupDependency: an MPIJob v2beta1's
// launcher under WaitForWorkersReady, Trainer v2's trainer after its initializers): what it
// waits for, and which of their replicas are still not there.
std::string HeldGroupsNote(const api::Job& job, const std::vector<const Slot*>& waiting) {
  std::string out;
  std::set<std::string> held;
  for (const Slot* s : waiting)
    if (s->reason == "NotCreated") held.insert(s->type);
  for (const std::string& type : held) {
    auto spec = job.replica_specs.find(type);
    if (spec == job.replica_specs.end()) continue;
    std::vector<api::GroupDependency> unmet;
    std::vector<const Slot*> behind;
    for (const api::GroupDependency& d : spec->second.depends_on) {
      size_t before = behind.size();
      for (const Slot* s : waiting)
        if (s->type == d.type) behind.push_back(s);
      if (behind.size() > before) unmet.push_back(d);
    }
    if (!unmet.empty())
      out += "; " + HeldGroupPhrase(type, unmet) + ", still waiting for " + ListReplicas(behind);
  }
  return out;
}

}  // namespace

bool InCrashLoop(const ReplicaObservation& r, Time now) {
  if (r.terminating) return false;
  if (r.waiting_reason == "CrashLoopBackOff") return true;
  if (r.phase != Phase::kRunning || !r.waiting_reason.empty() || r.restarts <= 0) return false;
  if (!r.exit_code || *r.exit_code == 0) return false;  // its last run did not fail
  if (r.awaiting_restart) return true;  // ended again, the substrate's back-off not yet over
  std::optional<Time> since = r.started_at ? r.started_at : r.finished_at;
  return since && now - *since < kCrashLoopSettle;
}

Readiness AssessReplicas(const api::Job& job, const std::vector<ReplicaObservation>& observed,
                         Time now) {
  // Each slot's first live observation, and whether one of them is being removed: one pass,
  // so that a job of thousands of replicas costs n log n, not n².
  struct Seen {
    const ReplicaObservation* live = nullptr;
    bool terminating = false;
  };
  std::map<std::pair<std::string_view, int>, Seen> seen;
  for (const ReplicaObservation& r : observed) {
    Seen& s = seen[{r.type, r.index}];
    if (r.terminating)
      s.terminating = true;
    else if (!s.live)
      s.live = &r;
  }
  std::vector<Slot> slots;
  int total = 0;
  for (const auto& [type, spec] : job.replica_specs) {
    int replicas = spec.replicas.value_or(1);
    total += replicas;
    for (int index = 0; index < replicas; ++index) {
      auto found = seen.find({type, index});
      const ReplicaObservation* live = found == seen.end() ? nullptr : found->second.live;
      const bool terminating = found != seen.end() && found->second.terminating;
      Slot slot{type, index, "", "", live};
      if (!live) {
        slot.reason = terminating ? "Terminating" : "NotCreated";
      } else if (InCrashLoop(*live, now)) {
        slot.reason = "CrashLoopBackOff";
      } else {
        auto [reason, message] = StateOf(*live);
        if (reason.empty()) continue;
        slot.reason = reason;
        slot.message = message;
      }
      slots.push_back(std::move(slot));
    }
  }
  Readiness out;
  if (slots.empty()) {
    out.ready = true;
    out.reason = "AllReplicasRunning";
    out.message = "Every replica is running (or has completed).";
    return out;
  }
  const std::string of_total = "/" + std::to_string(total) + " replicas ";
  for (const ProblemKind& problem : kProblems) {
    std::vector<const Slot*> hit;
    for (const Slot& s : slots)
      if (s.reason == problem.reason) hit.push_back(&s);
    if (hit.empty()) continue;
    out.reason = problem.reason;
    out.warning = true;
    if (out.reason == std::string("CrashLoopBackOff")) {
      out.message = ValidUtf8(CrashLoopMessage(hit, of_total, slots.size() - hit.size()));
      return out;
    }
    if (out.reason == std::string("RankFailed")) {
      out.message = ValidUtf8(RankFailedMessage(hit, of_total, slots.size() - hit.size()));
      return out;
    }
    out.message =
        std::to_string(hit.size()) + of_total + problem.phrase + " (" + ListReplicas(hit) + ")";
    if (!hit.front()->message.empty()) out.message += ": " + hit.front()->message;
    size_t others = slots.size() - hit.size();
    if (others > 0) out.message += " (" + std::to_string(others) + " more not running)";
    out.message = ValidUtf8(Head(out.message, kMaxReadinessMessage));
    return out;
  }
  // Only benign states: the replicas are on their way.
  std::vector<const Slot*> all;
  std::map<std::string, int> details;  // benign reason → count, in name order
  std::string first_message;
  for (const Slot& s : slots) {
    all.push_back(&s);
    details[s.reason]++;
    if (first_message.empty() && !s.message.empty()) first_message = s.message;
  }
  out.reason = "Starting";
  out.message =
      std::to_string(slots.size()) + of_total + "not running yet (" + ListReplicas(all) + "): ";
  bool first = true;
  for (const auto& [reason, count] : details) {
    out.message += (first ? "" : ", ") + std::to_string(count) + " " + BenignPhrase(reason);
    first = false;
  }
  if (!first_message.empty()) out.message += "; " + first_message;
  out.message += HeldGroupsNote(job, all);
  out.message = ValidUtf8(Head(out.message, kMaxReadinessMessage));
  return out;
}

Readiness SuspendedReadiness(const api::Job& job) {
  Readiness out;
  out.message = std::string(job.info().name) + " " + job.name + " is suspended";
  std::string queue;
  if (job.metadata.is_object()) {
    auto labels = job.metadata.find("labels");
    if (labels != job.metadata.end() && labels->is_object()) {
      auto it = labels->find("kueue.x-k8s.io/queue-name");
      if (it != labels->end() && it->is_string()) queue = it->get<std::string>();
    }
  }
  if (!queue.empty()) {
    out.reason = "WaitingForAdmission";
    out.message += ": waiting for Kueue to admit it in LocalQueue \"" + queue +
                   "\"; Kueue resumes it when the queue has quota.";
  } else {
    out.reason = "Suspended";
    out.message += " (spec.runPolicy.suspend: true); set it to false to run.";
  }
  return out;
}

bool ApplyReadiness(const Readiness& readiness, Time now, api::JobStatus* status,
                    std::vector<Event>* events, std::optional<Duration>* refresh_after) {
  std::vector<api::Condition>& list = status->conditions;
  const std::string value = readiness.ready ? "True" : "False";
  auto it = std::find_if(list.begin(), list.end(),
                         [](const api::Condition& c) { return c.type == kReplicasReady; });
  if (it != list.end() && it->status == value && it->reason == readiness.reason) {
    if (it->message == readiness.message) return false;
    Duration age = std::chrono::duration_cast<Duration>(now - it->last_update_time);
    if (age < kReadinessRefresh) {
      Duration wait = kReadinessRefresh - age;
      if (refresh_after && (!*refresh_after || wait < **refresh_after)) *refresh_after = wait;
      return false;
    }
    it->message = readiness.message;
    it->last_update_time = now;
    return true;
  }
  api::Condition next{kReplicasReady, value, readiness.reason, readiness.message, now, now};
  bool was_problem = false;
  if (it != list.end()) {
    if (it->status == value) next.last_transition_time = it->last_transition_time;
    was_problem = it->status == "False" && it->reason != "Starting" && it->reason != "Suspended";
    list.erase(it);
  }
  list.insert(list.begin(), std::move(next));
  // An event for each new reason: Warning for problems, Normal for a wait with a cause (a gang,
  // a queue) and for the end of a problem. The start of every job, suspension (it has its own
  // event) and the first "all running" stay quiet.
  bool quiet = readiness.reason == "Starting" || readiness.reason == "Suspended" ||
               (readiness.ready && !was_problem);
  if (events && !quiet)
    events->push_back(
        {readiness.warning ? "Warning" : "Normal", readiness.reason, readiness.message});
  return true;
}

void ClearReadiness(api::JobStatus* status) {
  std::vector<api::Condition>& list = status->conditions;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const api::Condition& c) { return c.type == kReplicasReady; }),
             list.end());
}

std::string ProcessFailureText(const ReplicaObservation& r) {
  if (!r.process_failure) return "";
  const ReplicaObservation::ProcessExit& p = *r.process_failure;
  std::string text = r.name + " (" + r.type + " " + std::to_string(r.index) + "): ";
  text += p.rank ? "rank " + std::to_string(*p.rank) + " (local_rank " +
                       std::to_string(p.local_rank) + ")"
                 : "local_rank " + std::to_string(p.local_rank);
  // torchrun reports a worker killed by a signal with the signal's negative number.
  text += p.exit_code < 0 ? " was killed by " + SignalName(-p.exit_code)
                          : " exited with code " + std::to_string(p.exit_code);
  if (p.at) text += " at " + FormatRfc3339(*p.at);
  return ValidUtf8(text);
}

std::string FailedRanksNote(const std::vector<ReplicaObservation>& observed) {
  std::vector<const ReplicaObservation*> failed;
  for (const ReplicaObservation& r : observed)
    if (r.process_failure) failed.push_back(&r);
  if (failed.empty()) return "";
  std::stable_sort(failed.begin(), failed.end(), [](const auto* a, const auto* b) {
    return a->process_failure->at.value_or(Time::max()) <
           b->process_failure->at.value_or(Time::max());
  });
  std::string text = " While it ran, a process failed: " + ProcessFailureText(*failed.front());
  if (failed.size() > 1) text += " (and " + std::to_string(failed.size() - 1) + " more)";
  return Head(text, kMaxReadinessMessage) + ".";
}

std::optional<size_t> FirstFailedIndex(const std::vector<ReplicaObservation>& observed) {
  // Known ends first, earliest first; then the substrate's exit order (unknown = 0 sorts
  // after known ones); then the name.
  auto key = [](const ReplicaObservation& r) {
    return std::make_tuple(!r.finished_at.has_value(), r.finished_at.value_or(Time::max()),
                           r.exit_seq > 0 ? r.exit_seq : std::numeric_limits<long long>::max(),
                           std::string_view(r.name));
  };
  std::optional<size_t> first;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (!IsFailedEnd(observed[i])) continue;
    if (!first || key(observed[i]) < key(observed[*first])) first = i;
  }
  return first;
}

std::optional<std::string> FirstFailure(const std::vector<ReplicaObservation>& observed) {
  std::optional<size_t> index = FirstFailedIndex(observed);
  if (!index) return std::nullopt;
  const ReplicaObservation* first = &observed[*index];
  std::string text = "First failure: " + first->name + " (" + first->type + " " +
                     std::to_string(first->index) + ") " + EndText(*first);
  if (first->finished_at) text += ", at " + FormatRfc3339(*first->finished_at);
  text += ".";
  if (text.size() < kMaxAttributionBytes)
    text += LastOutput(first->end_message, kMaxAttributionBytes - text.size());
  return ValidUtf8(text);
}

ProgressVerdict CheckProgress(const api::ProgressPolicy& policy,
                              const std::vector<ReplicaObservation>& observed, Time ready_since,
                              Time now) {
  ProgressVerdict out;
  std::optional<Time> last;
  std::string last_name;
  bool measured = false;
  for (const ReplicaObservation& r : observed) {
    if (r.terminating || r.phase != Phase::kRunning) continue;
    if (!r.last_output) continue;
    measured = true;
    if (!last || *r.last_output > *last) {
      last = r.last_output;
      last_name = r.name;
    }
  }
  if (!measured) return out;  // the substrate does not measure output: no verdict
  Time since = std::max(*last, ready_since);
  Duration idle = std::chrono::duration_cast<Duration>(now - since);
  if (idle < policy.timeout) {
    out.check_after = policy.timeout - idle;
    return out;
  }
  out.hung = true;
  long long seconds = std::chrono::duration_cast<std::chrono::seconds>(policy.timeout).count();
  out.message = "No replica has written output for " + std::to_string(seconds) +
                " s (progress timeout; last output " +
                (*last >= ready_since ? "at " + FormatRfc3339(*last) + " from " + last_name
                                      : std::string("before every replica was running")) +
                ").";
  return out;
}

}  // namespace trainctl::engine
