// Server-sent events framing (the text/event-stream format): one event is "id:", "event:" and
// "data:" lines and a blank line; data with line breaks becomes several data lines, which the
// browser joins again. Pure.
#pragma once

#include <string>

namespace trainctl::ui {

std::string SseEvent(const std::string& event, const std::string& data, const std::string& id = "");
// A comment line: keeps the connection busy, shows nothing.
std::string SseComment(const std::string& text);
// How long the browser waits before it reconnects.
std::string SseRetry(int milliseconds);

}  // namespace trainctl::ui
