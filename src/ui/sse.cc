#include "ui/sse.h"

namespace trainctl::ui {
namespace {

// No line breaks in a field that must stay on one line.
std::string OneLine(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

std::string SseEvent(const std::string& event, const std::string& data, const std::string& id) {
  std::string out;
  if (!id.empty()) out += "id: " + OneLine(id) + "\n";
  if (!event.empty()) out += "event: " + OneLine(event) + "\n";
  size_t start = 0;
  while (true) {
    size_t nl = data.find_first_of("\r\n", start);
    out += "data: " + data.substr(start, nl == std::string::npos ? std::string::npos : nl - start) +
           "\n";
    if (nl == std::string::npos) break;
    start = nl + (data[nl] == '\r' && nl + 1 < data.size() && data[nl + 1] == '\n' ? 2 : 1);
  }
  return out + "\n";
}

std::string SseComment(const std::string& text) { return ": " + OneLine(text) + "\n\n"; }

std::string SseRetry(int milliseconds) { return "retry: " + std::to_string(milliseconds) + "\n\n"; }

}  // namespace trainctl::ui
