#include "kube/watch_decoder.h"

#include "api/json_bounds.h"
#include "kube/api_error.h"

namespace trainctl::kube {

Status LineSplitter::Feed(std::string_view chunk,
                          const std::function<Status(std::string_view)>& on_line) {
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) {
      if (partial_.size() + chunk.size() > max_line_)
        return InternalError("watch event longer than " + std::to_string(max_line_) + " bytes");
      partial_.append(chunk);
      return Status::Ok();
    }
    std::string_view piece = chunk.substr(0, nl);
    chunk.remove_prefix(nl + 1);
    Status st;
    if (partial_.empty()) {
      if (!piece.empty() && piece != "\r") st = on_line(piece);
    } else {
      if (partial_.size() + piece.size() > max_line_)
        return InternalError("watch event longer than " + std::to_string(max_line_) + " bytes");
      partial_.append(piece);
      std::string line;
      line.swap(partial_);
      st = on_line(line);
    }
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

const char* WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "?";
}

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line) {
  auto fail = [&](const std::string& why) {
    std::string start(line.substr(0, 120));
    return InternalError("malformed watch event (" + why + "): " + start +
                         (line.size() > 120 ? "…" : ""));
  };
  std::string problem;
  nlohmann::json doc = api::ParseJsonWithin(line, api::kApiJsonLimits, &problem);
  if (doc.is_discarded()) return fail(problem);
  if (!doc.is_object()) return fail("not an object");
  auto type = doc.find("type");
  if (type == doc.end() || !type->is_string()) return fail("no type");
  auto object = doc.find("object");
  if (object == doc.end() || !object->is_object()) return fail("no object");
  WatchEvent event;
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "ADDED")
    event.type = WatchEventType::kAdded;
  else if (t == "MODIFIED")
    event.type = WatchEventType::kModified;
  else if (t == "DELETED")
    event.type = WatchEventType::kDeleted;
  else if (t == "BOOKMARK")
    event.type = WatchEventType::kBookmark;
  else if (t == "ERROR")
    event.type = WatchEventType::kError;
  else
    return fail("unknown type \"" + t + "\"");
  event.object = std::move(*object);
  return event;
}

Status WatchErrorStatus(const WatchEvent& event, const std::string& what) {
  HttpResponse response;
  auto code = event.object.find("code");
  response.status =
      code != event.object.end() && code->is_number_integer() ? code->get<long>() : 500;
  response.body = event.object.dump();
  return ErrorFromResponse(response, what);
}

}  // namespace trainctl::kube
