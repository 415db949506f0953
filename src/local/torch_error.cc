#include "local/torch_error.h"

#include <nlohmann/json.hpp>

#include "api/json_bounds.h"

namespace trainctl::local {

std::optional<std::string> TorchElasticErrorText(const std::string& text, size_t max_bytes) {
  nlohmann::json doc = api::ParseJsonWithin(text, api::JsonLimits{});
  if (!doc.is_object() || !doc.contains("message")) return std::nullopt;
  const nlohmann::json& m = doc["message"];
  std::string message, stack;
  if (m.is_string()) {
    message = m.get<std::string>();
  } else if (m.is_object() && m.contains("message") && m["message"].is_string()) {
    message = m["message"].get<std::string>();
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      const nlohmann::json& extra = m["extraInfo"];
      if (extra.contains("py_callstack") && extra["py_callstack"].is_string())
        stack = extra["py_callstack"].get<std::string>();
    }
  } else {
    return std::nullopt;
  }
  if (message.empty()) return std::nullopt;
  // The call stack, then the message (a Python traceback already ends with it): whoever cuts
  // this text keeps its end, so the root cause comes last.
  while (!stack.empty() && (stack.back() == '\n' || stack.back() == ' ')) stack.pop_back();
  std::string out = stack;
  if (out.size() < message.size() ||
      out.compare(out.size() - message.size(), message.size(), message) != 0)
    out += (out.empty() ? "" : "\n") + message;
  if (out.size() > max_bytes) {
    out = out.substr(out.size() - max_bytes);
    size_t nl = out.find('\n');
    if (nl != std::string::npos && nl + 1 < out.size() && out.size() - nl - 1 >= message.size())
      out = out.substr(nl + 1);
  }
  return out;
}

namespace {

// The value after "<key> :" on the report line that starts with `key` (after spaces), up to
// `stop` (exclusive; npos: the line's end), trimmed; "" when there is none.
std::string ReportField(const std::string& report, const std::string& key, char stop) {
  size_t at = 0;
  while ((at = report.find(key, at)) != std::string::npos) {
    size_t line = report.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    if (report.find_first_not_of(' ', line) == at) break;
    at += key.size();
  }
  if (at == std::string::npos) return "";
  size_t colon = report.find(':', at + key.size());
  size_t end = report.find('\n', at);
  if (colon == std::string::npos || (end != std::string::npos && colon > end)) return "";
  std::string value = report.substr(colon + 1, end == std::string::npos ? end : end - colon - 1);
  if (size_t cut = value.find(stop); stop != '\0' && cut != std::string::npos) value.resize(cut);
  size_t first = value.find_first_not_of(' ');
  size_t last = value.find_last_not_of(' ');
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

}  // namespace

std::optional<std::string> WorkerOutputBeforeTorchrunReport(const std::string& log_end,
                                                            size_t max_bytes) {
  const std::string kError = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError";
  size_t error = log_end.rfind(kError);
  if (error == std::string::npos) return std::nullopt;
  // The agent's traceback is the last one before the error line.
  size_t traceback = log_end.rfind("Traceback (most recent call last):", error);
  if (traceback == std::string::npos) return std::nullopt;
  std::string report = log_end.substr(error);
  std::string summary = "torchrun: ";
  std::string rank = ReportField(report, "rank", '\0');
  std::string code = ReportField(report, "exitcode", '(');
  summary += rank.empty() ? "a worker" : "rank " + rank;
  summary += code.empty() ? " failed" : " exited with code " + code;
  std::string before = log_end.substr(0, traceback);
  while (!before.empty() && (before.back() == '\n' || before.back() == ' ')) before.pop_back();
  size_t room = max_bytes > summary.size() + 1 ? max_bytes - summary.size() - 1 : 0;
  if (before.size() > room) {
    size_t start = before.size() - room;
    size_t newline = before.find('\n', start);
    start = newline == std::string::npos ? before.size() : newline + 1;
    before = before.substr(start);
  }
  return before.empty() ? summary : before + "\n" + summary;
}

}  // namespace trainctl::local
