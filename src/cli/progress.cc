#include "cli/progress.h"

#include "api/json_fields.h"
#include "engine/checkpoint_notice.h"
#include "engine/conditions.h"

namespace trainctl::cli {

ProgressPrinter::ProgressPrinter(std::FILE* out, bool terminal, bool show_logs, Time started)
    : out_(out), terminal_(terminal), show_logs_(show_logs), started_(started) {}

ProgressPrinter::~ProgressPrinter() { Finish(); }

void ProgressPrinter::Finish() {
  ClearStatusLine();
  std::fflush(out_);
}

void ProgressPrinter::ClearStatusLine() {
  if (terminal_ && status_shown_) {
    std::fputs("\r\033[K", out_);
    status_shown_ = false;
  }
}

void ProgressPrinter::PrintLine(const std::string& line) {
  ClearStatusLine();
  std::fputs(line.c_str(), out_);
  std::fputc('\n', out_);
}

std::string ProgressPrinter::Color(const std::string& replica) const {
  if (!terminal_) return "";
  static const int kColors[] = {36, 33, 35, 32, 34, 91, 96, 93};
  auto it = colors_.find(replica);
  if (it == colors_.end()) it = colors_.emplace(replica, kColors[colors_.size() % 8]).first;
  return "\033[" + std::to_string(it->second) + "m";
}

void ProgressPrinter::OnLogLine(const std::string& replica, const std::string& line) {
  if (!show_logs_) return;
  std::string reset = terminal_ ? "\033[0m" : "";
  PrintLine(Color(replica) + "[" + replica + "]" + reset + " " + line);
}

void ProgressPrinter::OnEvent(const engine::Event& event) {
  if (event.type == "Warning" || event.reason == "Exited" ||
      event.reason == engine::kCheckpointNoticeReason)
    PrintLine("--- " + event.reason + ": " + event.message);
}

void ProgressPrinter::OnConditions(const api::JobStatus& status) {
  if (status.conditions.empty()) return;
  const api::Condition& c = status.conditions.back();
  std::string summary = c.type + "=" + c.status + " " + c.reason;
  if (summary == last_conditions_) return;
  last_conditions_ = summary;
  std::string bold = terminal_ ? "\033[1m" : "", reset = terminal_ ? "\033[0m" : "";
  PrintLine(bold + "==> " + c.type + reset + " (" + c.reason + "): " + c.message);
}

void ProgressPrinter::OnReplicas(const nlohmann::json& replicas) {
  for (const nlohmann::json& r : replicas) {
    std::string name = api::StringAt(r, "name");
    std::string state = api::StringAt(r, "state");
    if (replica_states_[name] == state) continue;
    replica_states_[name] = state;
    if (!terminal_) PrintLine("--- replica " + name + ": " + state);
  }
}

void ProgressPrinter::OnTick(const api::Job& job, const nlohmann::json& replicas, Time now) {
  if (!terminal_) return;
  std::string state = job.status.conditions.empty() ? "Pending" : job.status.conditions.back().type;
  long long secs = std::chrono::duration_cast<std::chrono::seconds>(now - started_).count();
  std::string line = "\033[7m " + job.name + " " + state + " " + std::to_string(secs) + "s \033[0m";
  for (const nlohmann::json& r : replicas) {
    std::string name = api::StringAt(r, "name");
    if (name.size() > job.name.size()) name = name.substr(job.name.size() + 1);
    line += " " + name + ":" + api::StringAt(r, "state");
  }
  ClearStatusLine();
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
  status_shown_ = true;
}

void ProgressPrinter::OnMessage(const std::string& message) { PrintLine("--- " + message); }

}  // namespace trainctl::cli
