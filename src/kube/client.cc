#include "kube/client.h"

#include <future>
#include <memory>
#include <thread>

#include "api/json_bounds.h"
#include "kube/api_error.h"
#include "kube/json_path.h"
#include "kube/list_metadata.h"

namespace trainctl::kube {
namespace {

using nlohmann::json;

std::string PercentEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> WriteParams(const WriteOptions& o) {
  return {{"dryRun", o.dry_run ? "All" : ""},
          {"fieldManager", o.field_manager},
          {"force", o.force ? "true" : ""},
          {"fieldValidation", o.field_validation}};
}

std::string Describe(const std::string& verb, const Resource& r, const std::string& ns,
                     const std::string& name) {
  std::string out = verb + " " + r.plural;
  if (!name.empty()) out += " \"" + name + "\"";
  if (r.namespaced && !ns.empty()) out += " in " + ns;
  return out;
}

StatusOr<std::string> NameOf(const json& object) {
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object() &&
      object["metadata"].contains("name") && object["metadata"]["name"].is_string())
    return object["metadata"]["name"].get<std::string>();
  return InvalidError("object has no metadata.name");
}

}  // namespace

std::string ResourcePath(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string path = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) path += "/namespaces/" + PercentEncode(ns);
  path += "/" + r.plural;
  if (!name.empty()) path += "/" + PercentEncode(name);
  if (!name.empty() && !subresource.empty()) path += "/" + subresource;
  return path;
}

std::string PodLogPath(const std::string& ns, const std::string& pod, const PodLogOptions& o) {
  auto number = [](const std::optional<long long>& v) { return v ? std::to_string(*v) : ""; };
  return ResourcePath(kPods, ns, pod, "log") +
         QueryString({{"container", o.container},
                      {"follow", o.follow ? "true" : ""},
                      {"previous", o.previous ? "true" : ""},
                      {"timestamps", o.timestamps ? "true" : ""},
                      {"tailLines", number(o.tail_lines)},
                      {"sinceSeconds", number(o.since_seconds)},
                      {"limitBytes", number(o.limit_bytes)}});
}

std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    out += (out.empty() ? "?" : "&") + PercentEncode(k) + "=" + PercentEncode(v);
  }
  return out;
}

Client::Client(std::unique_ptr<Transport> transport, ClientOptions options, const Clock* clock)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      clock_(clock),
      limiter_(options_.qps, options_.burst, clock) {}

void Client::Sleep(Duration d) {
  if (d <= Duration::zero()) return;
  if (options_.sleep)
    options_.sleep(d);
  else
    clock_->SleepFor(d);
}

namespace {

// A response body as JSON ({} when empty), within the limits on what the API may send.
StatusOr<json> ParseBody(const std::string& body, const std::string& what) {
  if (body.empty()) return json::object();
  std::string problem;
  json parsed = api::ParseJsonWithin(body, api::kApiJsonLimits, &problem);
  if (parsed.is_discarded())
    return InternalError(what + ": the server sent a body that is " + problem + " (" +
                         std::to_string(body.size()) + " bytes)");
  return parsed;
}

}  // namespace

StatusOr<json> Client::Call(HttpRequest request, const std::string& what, bool idempotent) {
  StatusOr<std::string> body = CallRaw(std::move(request), what, idempotent);
  if (!body.ok()) return body.status();
  return ParseBody(*body, what);
}

StatusOr<std::string> Client::CallRaw(HttpRequest request, const std::string& what,
                                      bool idempotent) {
  request.timeout = options_.request_timeout;
  Duration backoff(200);
  for (int attempt = 0;; ++attempt) {
    Sleep(limiter_.Reserve());
    StatusOr<HttpResponse> response = transport_->Do(request);
    bool last = attempt >= options_.max_retries;
    if (!response.ok()) {
      // A transport failure may have reached the server; only idempotent calls are repeated.
      if (!idempotent || last || response.status().code() == StatusCode::kCancelled)
        return Status(response.status().code(), what + ": " + response.status().message());
      Sleep(backoff);
      backoff = std::min(backoff * 2, Duration(5000));
      continue;
    }
    if (IsSuccess(*response)) return std::move(response->body);
    // 429 means the request was not processed (API priority and fairness): always safe to
    // repeat. 5xx with Retry-After: only idempotent calls.
    bool throttled = response->status == 429;
    bool server_busy = response->status >= 500 && response->retry_after_seconds;
    if (!last && (throttled || (server_busy && idempotent))) {
      Duration wait(1000LL * response->retry_after_seconds.value_or(1));
      limiter_.PauseFor(wait);
      continue;
    }
    return ErrorFromResponse(*response, what);
  }
}

StatusOr<std::string> Client::GetRaw(const std::string& path,
                                     std::vector<std::pair<std::string, std::string>> headers) {
  HttpRequest request;
  request.path = path;
  request.headers = std::move(headers);
  return CallRaw(std::move(request), "GET " + path.substr(0, path.find('?')), true);
}

StatusOr<json> Client::Get(const Resource& r, const std::string& ns, const std::string& name,
                           const std::string& subresource) {
  HttpRequest req;
  req.path = ResourcePath(r, ns, name, subresource);
  return Call(req, Describe("get", r, ns, name), true);
}

namespace {

HttpRequest ListRequest(const Resource& r, const std::string& ns, const ListOptions& o) {
  HttpRequest req;
  req.path =
      ResourcePath(r, ns) + QueryString({{"labelSelector", o.label_selector},
                                         {"fieldSelector", o.field_selector},
                                         {"limit", o.limit > 0 ? std::to_string(o.limit) : ""},
                                         {"continue", o.continue_token},
                                         {"resourceVersion", o.resource_version},
                                         {"resourceVersionMatch", o.resource_version_match}});
  return req;
}

}  // namespace

StatusOr<json> Client::List(const Resource& r, const std::string& ns, const ListOptions& o) {
  return Call(ListRequest(r, ns, o), Describe("list", r, ns, ""), true);
}

StatusOr<std::string> Client::ListPages(const Resource& r, const std::string& ns,
                                        ListOptions options,
                                        const std::function<void(std::vector<json>)>& on_page,
                                        const std::function<void()>& on_restart,
                                        const std::function<bool(std::string_view)>& on_raw_page) {
  const std::string what = Describe("list", r, ns, "");
  ListOptions first_page = options;
  first_page.continue_token.clear();  // a restart begins at the beginning
  bool restarted = false;
  size_t last_page_bytes = 0;  // the next page's body is given room for about as much again
  auto fetch = [&](const ListOptions& o) {
    HttpRequest request = ListRequest(r, ns, o);
    request.body_size_hint = last_page_bytes + last_page_bytes / 8;
    return CallRaw(std::move(request), what, true);
  };
  StatusOr<std::string> body = fetch(options);
  for (;;) {
    if (!body.ok()) {
      // The continue token expired (compaction): start over once, from a fresh list.
      if (body.status().code() == StatusCode::kGone && !options.continue_token.empty() &&
          !restarted) {
        restarted = true;
        options = first_page;
        on_restart();
        body = fetch(options);
        continue;
      }
      return body.status();
    }
    // The next page is asked for while this one is decoded: the server's encoding and ours
    // overlap. Its token comes from a scan that stops at the end of `metadata`.
    last_page_bytes = body->size();
    std::optional<ListMetadata> peeked = PeekListMetadata(*body);
    std::future<StatusOr<std::string>> next;
    auto ask_next = [&](const std::string& token) {
      options.continue_token = token;
      options.resource_version.clear();  // not allowed together with continue
      options.resource_version_match.clear();
      next = std::async(std::launch::async, fetch, options);
    };
    if (peeked && !peeked->continue_token.empty()) ask_next(peeked->continue_token);
    if (peeked && on_raw_page && on_raw_page(*body)) {
      body = std::string();
      if (!next.valid()) return peeked->resource_version;
      body = next.get();
      continue;
    }

    StatusOr<json> parsed = ParseBody(*body, what);
    body = std::string();
    if (!parsed.ok()) return parsed.status();
    json page = std::move(*parsed);
    std::vector<json> items;
    if (page.is_object() && page.contains("items") && page["items"].is_array())
      for (json& item : page["items"]) items.push_back(std::move(item));
    json metadata = page.is_object() ? page.value("metadata", json::object()) : json::object();
    page = json();  // only the items are kept, one page at a time
    on_page(std::move(items));
    std::string token = StringAt(metadata, {"continue"});
    if (!peeked && !token.empty()) ask_next(token);
    if (!next.valid()) return StringAt(metadata, {"resourceVersion"});
    body = next.get();
  }
}

StatusOr<json> Client::ListAll(const Resource& r, const std::string& ns, ListOptions options) {
  json out = {{"items", json::array()}, {"metadata", json::object()}};
  StatusOr<std::string> rv = ListPages(
      r, ns, std::move(options),
      [&out](std::vector<json> items) {
        for (json& item : items) out["items"].push_back(std::move(item));
      },
      [&out] { out["items"] = json::array(); });
  if (!rv.ok()) return rv.status();
  if (!rv->empty()) out["metadata"]["resourceVersion"] = *rv;
  return out;
}

namespace {

HttpRequest CreateRequest(const Resource& r, const std::string& ns, const json& object,
                          const WriteOptions& options) {
  HttpRequest req;
  req.method = "POST";
  req.path = ResourcePath(r, ns) + QueryString(WriteParams(options));
  req.body = object.dump();
  req.content_type = "application/json";
  return req;
}

}  // namespace

StatusOr<json> Client::Create(const Resource& r, const std::string& ns, const json& object,
                              const WriteOptions& options) {
  std::string name = StringAt(object, {"metadata", "name"});
  return Call(CreateRequest(r, ns, object, options), Describe("create", r, ns, name), false);
}

Status Client::CreateOnly(const Resource& r, const std::string& ns, const json& object,
                          const WriteOptions& options) {
  std::string name = StringAt(object, {"metadata", "name"});
  return CallRaw(CreateRequest(r, ns, object, options), Describe("create", r, ns, name), false)
      .status();
}

StatusOr<json> Client::Update(const Resource& r, const std::string& ns, const json& object,
                              const WriteOptions& options) {
  StatusOr<std::string> name = NameOf(object);
  if (!name.ok()) return name.status();
  HttpRequest req;
  req.method = "PUT";
  req.path = ResourcePath(r, ns, *name) + QueryString(WriteParams(options));
  req.body = object.dump();
  req.content_type = "application/json";
  return Call(req, Describe("update", r, ns, *name), false);
}

StatusOr<json> Client::UpdateStatus(const Resource& r, const std::string& ns, const json& object,
                                    const WriteOptions& options) {
  StatusOr<std::string> name = NameOf(object);
  if (!name.ok()) return name.status();
  HttpRequest req;
  req.method = "PUT";
  req.path = ResourcePath(r, ns, *name, "status") + QueryString(WriteParams(options));
  req.body = object.dump();
  req.content_type = "application/json";
  return Call(req, Describe("update status of", r, ns, *name), false);
}

StatusOr<json> Client::Patch(const Resource& r, const std::string& ns, const std::string& name,
                             PatchType type, const std::string& body, const WriteOptions& options,
                             const std::string& subresource) {
  if (type == PatchType::kApply && options.field_manager.empty())
    return InvalidError("server-side apply needs a field manager");
  HttpRequest req;
  req.method = "PATCH";
  req.path = ResourcePath(r, ns, name, subresource) + QueryString(WriteParams(options));
  req.body = body;
  req.content_type = type == PatchType::kMerge  ? "application/merge-patch+json"
                     : type == PatchType::kJson ? "application/json-patch+json"
                                                : "application/apply-patch+yaml";
  return Call(req, Describe("patch", r, ns, name), false);
}

Status Client::Delete(const Resource& r, const std::string& ns, const std::string& name,
                      const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty())
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  if (options.dry_run) body["dryRun"] = json::array({"All"});
  HttpRequest req;
  req.method = "DELETE";
  req.path = ResourcePath(r, ns, name);
  req.body = body.dump();
  req.content_type = "application/json";
  // DELETE is idempotent in effect: a repeat answers NotFound, which callers treat as done.
  StatusOr<json> result = Call(req, Describe("delete", r, ns, name), true);
  return result.ok() ? Status::Ok() : result.status();
}

StatusOr<json> Client::UpdateWithRetry(const Resource& r, const std::string& ns,
                                       const std::string& name,
                                       const std::function<Status(json&)>& mutate,
                                       bool status_subresource, int attempts) {
  Status last;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    StatusOr<json> current = Get(r, ns, name);
    if (!current.ok()) return current.status();
    Status st = mutate(*current);
    if (!st.ok()) return st;
    StatusOr<json> written =
        status_subresource ? UpdateStatus(r, ns, *current) : Update(r, ns, *current);
    if (written.ok() || written.status().code() != StatusCode::kConflict) return written;
    last = written.status();
    Sleep(Duration(10 + (attempt * 37) % 50));  // de-synchronise racing writers a little
  }
  return last;
}

std::shared_ptr<Stream> Client::Watch(const Resource& r, const std::string& ns,
                                      const ListOptions& o,
                                      std::function<Status(WatchEvent)> on_event,
                                      std::function<void(Status)> on_done) {
  HttpRequest req;
  req.path = ResourcePath(r, ns) +
             QueryString({{"watch", "1"},
                          {"labelSelector", o.label_selector},
                          {"fieldSelector", o.field_selector},
                          {"resourceVersion", o.resource_version},
                          {"allowWatchBookmarks", o.allow_bookmarks ? "true" : ""},
                          {"timeoutSeconds",
                           o.timeout_seconds > 0 ? std::to_string(o.timeout_seconds) : ""}});
  req.timeout = Duration::zero();
  // Bookmarks arrive about once a minute; a stream silent for much longer is dead.
  req.idle_timeout = Duration(o.allow_bookmarks ? 180000 : 0);
  std::string what = Describe("watch", r, ns, "");
  Sleep(limiter_.Reserve());

  struct State {
    LineSplitter splitter;
    Status ended;  // why the reader stopped, if it did
  };
  auto state = std::make_shared<State>();
  auto on_data = [state, on_event, what](std::string_view chunk) {
    Status st = state->splitter.Feed(chunk, [&](std::string_view line) -> Status {
      StatusOr<WatchEvent> event = ParseWatchEvent(line);
      if (!event.ok()) return Status(event.status().code(), what + ": " + event.status().message());
      if (event->type == WatchEventType::kError) return WatchErrorStatus(*event, what);
      return on_event(std::move(*event));
    });
    if (!st.ok()) {
      state->ended = st;
      return false;
    }
    return true;
  };
  auto finished = [state, on_done, what](StatusOr<HttpResponse> response) {
    if (!state->ended.ok()) return on_done(state->ended);
    if (!response.ok()) return on_done(response.status());
    if (!IsSuccess(*response)) return on_done(ErrorFromResponse(*response, what));
    if (state->splitter.pending() > 0)
      return on_done(UnavailableError(what + ": the stream was cut in the middle of an event (" +
                                      std::to_string(state->splitter.pending()) + " bytes)"));
    on_done(Status::Ok());
  };
  return transport_->OpenStream(req, std::move(on_data), std::move(finished));
}

StatusOr<std::string> Client::PodLog(const std::string& ns, const std::string& pod,
                                     const PodLogOptions& options) {
  PodLogOptions once = options;
  once.follow = false;
  HttpRequest req;
  req.path = PodLogPath(ns, pod, once);
  req.accept = "*/*";
  return CallRaw(req, Describe("get the log of", kPods, ns, pod), true);
}

std::shared_ptr<Stream> Client::StreamPodLog(const std::string& ns, const std::string& pod,
                                             PodLogOptions options,
                                             std::function<bool(std::string_view)> on_data,
                                             std::function<void(Status)> on_done) {
  options.follow = true;
  HttpRequest req;
  req.path = PodLogPath(ns, pod, options);
  req.accept = "*/*";
  req.timeout = Duration::zero();
  std::string what = Describe("follow the log of", kPods, ns, pod);
  Sleep(limiter_.Reserve());
  auto finished = [on_done, what](StatusOr<HttpResponse> response) {
    if (!response.ok())
      return on_done(Status(response.status().code(), what + ": " + response.status().message()));
    if (!IsSuccess(*response)) return on_done(ErrorFromResponse(*response, what));
    on_done(Status::Ok());
  };
  return transport_->OpenStream(req, std::move(on_data), std::move(finished));
}

}  // namespace trainctl::kube
