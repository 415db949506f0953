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

}  // namespace trainctl::local
