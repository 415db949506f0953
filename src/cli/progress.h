// Live progress for `trainctl run`: replica log lines with their rank prefix, condition and
// replica changes as lines, and on a terminal a status line redrawn at the bottom. Writes to
// one FILE* (stdout, or stderr when stdout carries -o json).
#pragma once

#include <cstdio>
#include <map>
#include <string>

#include "local/runner.h"

namespace trainctl::cli {

class ProgressPrinter final : public local::RunObserver {
 public:
  ProgressPrinter(std::FILE* out, bool terminal, bool show_logs, Time started);
  ~ProgressPrinter() override;

  void OnLogLine(const std::string& replica, const std::string& line) override;
  void OnEvent(const engine::Event& event) override;
  void OnConditions(const api::JobStatus& status) override;
  void OnReplicas(const nlohmann::json& replicas) override;
  void OnTick(const api::Job& job, const nlohmann::json& replicas, Time now) override;
  void OnMessage(const std::string& message) override;
  void Finish();

 private:
  void ClearStatusLine();
  void PrintLine(const std::string& line);
  std::string Color(const std::string& replica) const;

  std::FILE* out_;
  bool terminal_;
  bool show_logs_;
  Time started_;
  bool status_shown_ = false;
  std::string last_conditions_;
  std::map<std::string, std::string> replica_states_;
  mutable std::map<std::string, int> colors_;
};

}  // namespace trainctl::cli
