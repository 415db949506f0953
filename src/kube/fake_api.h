// FakeApi: a test-only Transport that answers like a small in-memory API server, by route, so
// requests may arrive in any order and from several threads (the operator writes children in
// parallel). Unlike FakeTransport (replies scripted in order), it keeps objects:
//   POST   <collection>            stores the body (uid, resourceVersion, creationTimestamp set)
//                                  → 201 with it; 409 AlreadyExists when the name is taken
//   PUT    <object>[/status]       replaces it (409 Conflict when the body's resourceVersion is
//                                  set and stale; 404 when absent) → 200, resourceVersion bumped
//   PATCH  <object>                a merge patch (application/merge-patch+json) is applied
//                                  (409 Conflict when it names a stale resourceVersion) →
//                                  200, resourceVersion bumped; other patch types → 200 with
//                                  the stored object unchanged (404 when absent)
//   DELETE <object>                removes it → 200 (404 when absent, 409 when a
//                                  precondition uid differs)
//   GET    <object>                → 200 with it (404 when absent)
//   GET    <pod>/log               → 200 with the text SetLog gave (404 when none)
//   GET    <collection>            after ServeLists(): 200 with a List of the objects directly
//                                  under it (selectors are ignored; none: an empty List)
// Paths are compared without their query. Fail() makes matching requests answer a Kubernetes
// Status error instead. Every request is recorded. Streams (watches) are answered 404: tests
// feed the caches directly. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/transport.h"

namespace trainctl::kube {

class FakeApi final : public Transport {
 public:
  // Requests with this method whose path starts with `path_prefix` answer `code` with a Status
  // body (`reason`, `message`); `times` < 0 means every time.
  void Fail(std::string method, std::string path_prefix, long code, std::string reason,
            std::string message, int times = -1) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back({std::move(method), std::move(path_prefix), code, std::move(reason),
                         std::move(message), times});
  }

  // Stores `object` at `path` ("/api/v1/namespaces/ns/pods/p"), as if created earlier; returns
  // the stored copy (uid and resourceVersion filled when missing).
  nlohmann::json Seed(const std::string& path, nlohmann::json object) {
    std::lock_guard<std::mutex> lock(mu_);
    Stamp(&object, /*keep_uid=*/true);
    objects_[path] = object;
    return object;
  }

  // What GET `pod_path`/log answers (the query is ignored: the test says what the window holds).
  void SetLog(const std::string& pod_path, std::string text) {
    std::lock_guard<std::mutex> lock(mu_);
    logs_[pod_path + "/log"] = std::move(text);
  }

  // GET on a collection answers a List (readers' tests); off by default, so informers in
  // controller tests see 404 and are fed by the test.
  void ServeLists(bool on) {
    std::lock_guard<std::mutex> lock(mu_);
    serve_lists_ = on;
  }

  std::optional<nlohmann::json> Object(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }

  // Objects directly under `collection` ("/api/v1/namespaces/ns/pods"), in name order.
  std::vector<nlohmann::json> Objects(const std::string& collection) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<nlohmann::json> out;
    const std::string prefix = collection + "/";
    for (const auto& [path, object] : objects_)
      if (path.rfind(prefix, 0) == 0 && path.find('/', prefix.size()) == std::string::npos)
        out.push_back(object);
    return out;
  }

  // Recorded requests; with arguments only those with `method` whose path (without query)
  // starts with `path_prefix`.
  std::vector<HttpRequest> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<HttpRequest> Requests(const std::string& method,
                                    const std::string& path_prefix) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<HttpRequest> out;
    for (const HttpRequest& r : requests_)
      if (r.method == method && PathOf(r).rfind(path_prefix, 0) == 0) out.push_back(r);
    return out;
  }
  void ClearRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.clear();
  }

  // While held, requests wait in Do() until Release(): an API server that answers on cue.
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
    }
    gate_.notify_all();
  }
  // Requests waiting for Release().
  int Waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }

  StatusOr<HttpResponse> Do(const HttpRequest& request) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (held_) {
      ++waiting_;
      gate_.wait(lock, [this] { return !held_; });
      --waiting_;
    }
    requests_.push_back(request);
    const std::string path = PathOf(request);
    for (Failure& f : failures_) {
      if (f.times == 0 || f.method != request.method || path.rfind(f.path_prefix, 0) != 0) continue;
      if (f.times > 0) --f.times;
      return Error(f.code, f.reason, f.message);
    }
    if (request.method == "POST") return Create(path, request.body);
    if (request.method == "GET" && logs_.count(path)) {
      HttpResponse r;
      r.status = 200;
      r.body = logs_[path];
      return r;
    }
    std::string object_path = path;
    const std::string kStatus = "/status";
    if (object_path.size() > kStatus.size() &&
        object_path.compare(object_path.size() - kStatus.size(), kStatus.size(), kStatus) == 0)
      object_path.resize(object_path.size() - kStatus.size());
    auto it = objects_.find(object_path);
    if (it == objects_.end() && serve_lists_ && request.method == "GET" &&
        IsNamespacedCollection(object_path)) {
      nlohmann::json list = {{"kind", "List"}, {"items", nlohmann::json::array()}};
      const std::string prefix = object_path + "/";
      for (const auto& [at, object] : objects_)
        if (at.rfind(prefix, 0) == 0 && at.find('/', prefix.size()) == std::string::npos)
          list["items"].push_back(object);
      return Ok(200, list);
    }
    if (it == objects_.end()) return Error(404, "NotFound", "\"" + object_path + "\" not found");
    if (request.method == "PATCH" && request.content_type == "application/merge-patch+json") {
      nlohmann::json patch = nlohmann::json::parse(request.body, nullptr, false);
      if (patch.is_object()) {
        std::string sent;
        if (patch.contains("metadata") && patch["metadata"].is_object())
          sent = patch["metadata"].value("resourceVersion", "");
        if (!sent.empty() && sent != it->second["metadata"].value("resourceVersion", ""))
          return Error(409, "Conflict", "the object has been modified");
        it->second.merge_patch(patch);
        it->second["metadata"]["resourceVersion"] = std::to_string(++revision_);
      }
      return Ok(200, it->second);
    }
    if (request.method == "GET" || request.method == "PATCH") return Ok(200, it->second);
    if (request.method == "DELETE") {
      nlohmann::json options = nlohmann::json::parse(request.body, nullptr, false);
      if (options.is_object() && options.contains("preconditions")) {
        const std::string want = options["preconditions"].value("uid", "");
        const std::string have = it->second["metadata"].value("uid", "");
        if (!want.empty() && want != have)
          return Error(409, "Conflict",
                       "Precondition failed: UID in precondition: " + want +
                           ", UID in object meta: " + have);
      }
      objects_.erase(it);
      return Ok(200, nlohmann::json{{"kind", "Status"}, {"status", "Success"}});
    }
    if (request.method == "PUT") {
      nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
      if (!body.is_object()) return Error(400, "BadRequest", "body is not a JSON object");
      const std::string sent = body["metadata"].value("resourceVersion", "");
      const std::string stored = it->second["metadata"].value("resourceVersion", "");
      if (!sent.empty() && sent != stored)
        return Error(409, "Conflict",
                     "the object has been modified; please apply your changes to the latest "
                     "version and try again");
      body["metadata"]["uid"] = it->second["metadata"].value("uid", "");
      body["metadata"]["resourceVersion"] = std::to_string(++revision_);
      it->second = body;
      return Ok(200, body);
    }
    return Error(405, "MethodNotAllowed", request.method + " is not supported by FakeApi");
  }

  std::shared_ptr<Stream> OpenStream(const HttpRequest& request,
                                     std::function<bool(std::string_view)> on_data,
                                     std::function<void(StatusOr<HttpResponse>)> on_done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    on_done(Error(404, "NotFound", "FakeApi serves no streams"));
    return std::make_shared<NoopStream>();
  }

  long ConnectionsOpened() const override { return 0; }

 private:
  std::map<std::string, std::string> logs_;
  struct Failure {
    std::string method, path_prefix;
    long code;
    std::string reason, message;
    int times;
  };
  struct NoopStream : Stream {
    void Cancel() override {}
  };

  static std::string PathOf(const HttpRequest& r) { return r.path.substr(0, r.path.find('?')); }

  static HttpResponse Ok(long code, const nlohmann::json& body) {
    HttpResponse r;
    r.status = code;
    r.body = body.dump();
    return r;
  }
  static HttpResponse Error(long code, const std::string& reason, const std::string& message) {
    return Ok(code, {{"kind", "Status"},
                     {"apiVersion", "v1"},
                     {"status", "Failure"},
                     {"code", code},
                     {"reason", reason},
                     {"message", message}});
  }

  // Fills uid (unless kept and present), resourceVersion and creationTimestamp.
  void Stamp(nlohmann::json* object, bool keep_uid) {
    nlohmann::json& meta = (*object)["metadata"];
    ++revision_;
    if (!keep_uid || !meta.contains("uid"))
      meta["uid"] = "00000000-0000-4000-8000-" + Twelve(revision_);
    meta["resourceVersion"] = std::to_string(revision_);
    if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = "2023-11-14T22:13:20Z";
  }
  static std::string Twelve(long n) {
    std::string s = std::to_string(n);
    return std::string(12 - std::min<size_t>(12, s.size()), '0') + s;
  }

  HttpResponse Create(const std::string& collection, const std::string& text) {
    nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
    if (!body.is_object()) return Error(400, "BadRequest", "body is not a JSON object");
    std::string name = body["metadata"].value("name", "");
    if (name.empty()) name = body["metadata"].value("generateName", "") + Twelve(revision_ + 1);
    body["metadata"]["name"] = name;
    const std::string path = collection + "/" + name;
    if (objects_.count(path)) return Error(409, "AlreadyExists", "\"" + name + "\" already exists");
    Stamp(&body, /*keep_uid=*/false);
    objects_[path] = body;
    return Ok(201, body);
  }

  // ".../namespaces/<ns>/<plural>"
  static bool IsNamespacedCollection(const std::string& path) {
    size_t last = path.rfind('/');
    if (last == std::string::npos || last == 0) return false;
    size_t ns = path.rfind('/', last - 1);
    if (ns == std::string::npos || ns == 0) return false;
    size_t word = path.rfind('/', ns - 1);
    return word != std::string::npos && path.compare(word, ns - word, "/namespaces") == 0;
  }

  mutable std::mutex mu_;
  std::condition_variable gate_;
  bool held_ = false;
  int waiting_ = 0;
  bool serve_lists_ = false;
  long revision_ = 1000;
  std::map<std::string, nlohmann::json> objects_;
  std::vector<Failure> failures_;
  std::vector<HttpRequest> requests_;
};

}  // namespace trainctl::kube
