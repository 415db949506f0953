#include "kube/watch_decoder.h"

#include "api/json_bounds.h"
#include "kube/api_error.h"
#include "kube/json_node.h"

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

namespace {

std::optional<WatchEventType> TypeNamed(std::string_view name) {
  for (WatchEventType type :
       {WatchEventType::kAdded, WatchEventType::kModified, WatchEventType::kDeleted,
        WatchEventType::kBookmark, WatchEventType::kError})
    if (name == WatchEventTypeName(type)) return type;
  return std::nullopt;
}

// The event read with simdjson; nullopt when simdjson declines it or it is not a well-formed
// event (the nlohmann reader then accepts it or says why not).
std::optional<WatchEvent> ReadWithSimdjson(std::string_view line) {
  std::optional<WatchEvent> event;
  WithSimdDocument(line, [&](const SimdNode& root) {
    SimdNode object = root["object"];
    SimdNode type_name = root["type"];
    if (!object.is_object() || !type_name.is_string()) return;
    std::optional<WatchEventType> type = TypeNamed(type_name.str());
    if (!type) return;
    event = WatchEvent{*type, object["metadata"]["resourceVersion"].str(), std::string(line)};
  });
  return event;
}

}  // namespace

StatusOr<WatchEvent> ParseWatchEvent(std::string_view line) {
  if (std::optional<WatchEvent> event = ReadWithSimdjson(line)) return std::move(*event);
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
  const std::string& name = type->get_ref<const std::string&>();
  std::optional<WatchEventType> known = TypeNamed(name);
  if (!known) return fail("unknown type \"" + name + "\"");
  return WatchEvent{*known, JsonNode(&*object)["metadata"]["resourceVersion"].str(),
                    std::string(line)};
}

nlohmann::json WatchEventObject(const WatchEvent& event) {
  nlohmann::json doc = api::ParseJsonWithin(event.text, api::kApiJsonLimits);
  if (!doc.is_object() || !doc.contains("object") || !doc["object"].is_object())
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return std::move(doc["object"]);
}

Status WatchErrorStatus(const WatchEvent& event, const std::string& what) {
  nlohmann::json object = WatchEventObject(event);
  if (!object.is_object()) object = nlohmann::json::object();
  HttpResponse response;
  auto code = object.find("code");
  response.status = code != object.end() && code->is_number_integer() ? code->get<long>() : 500;
  response.body = object.dump();
  return ErrorFromResponse(response, what);
}

}  // namespace trainctl::kube
