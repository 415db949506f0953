#include "etcd_maintenance.h"

#include <curl/curl.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>

namespace trainctl::bench {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One POST of a JSON body to etcd's gateway; the reply parsed. A non-200 answer is an error
// carrying etcd's message.
StatusOr<nlohmann::json> Post(const std::string& endpoint, const std::string& path,
                              const nlohmann::json& body) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return InternalError("etcd " + path + ": curl_easy_init failed");
  const std::string url = endpoint + path;
  const std::string sent = body.dump();
  std::string reply;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, sent.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, 300L);  // defragmenting a large file takes a while
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK) return UnavailableError(url + ": " + curl_easy_strerror(rc));
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  nlohmann::json parsed = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (code != 200) {
    std::string message = parsed.is_object() ? parsed.value("message", reply) : reply;
    return UnavailableError(url + ": HTTP " + std::to_string(code) + ": " + message);
  }
  if (parsed.is_discarded()) return InvalidError(url + ": the reply is not JSON: " + reply);
  return parsed;
}

// An int64 of etcd's gateway: a JSON string of digits (or a number).
StatusOr<int64_t> Int64At(const nlohmann::json& object, const char* field, const char* where) {
  auto it = object.find(field);
  if (it == object.end()) return InvalidError(std::string(where) + "." + field + " is missing");
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && end == s.data() + s.size()) return v;
  }
  return InvalidError(std::string(where) + "." + field + ": expected an integer, got " +
                      it->dump());
}

std::string Mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

StatusOr<EtcdSpace> ParseEtcdStatus(const nlohmann::json& reply) {
  if (!reply.is_object()) return InvalidError("etcd status: expected an object");
  auto header = reply.find("header");
  if (header == reply.end() || !header->is_object())
    return InvalidError("etcd status: header is missing");
  EtcdSpace space;
  TRAINCTL_ASSIGN_OR_RETURN(space.revision, Int64At(*header, "revision", "header"));
  TRAINCTL_ASSIGN_OR_RETURN(space.db_bytes, Int64At(reply, "dbSize", "status"));
  TRAINCTL_ASSIGN_OR_RETURN(space.in_use_bytes, Int64At(reply, "dbSizeInUse", "status"));
  return space;
}

StatusOr<EtcdSpace> ReadEtcdSpace(const std::string& endpoint) {
  TRAINCTL_ASSIGN_OR_RETURN(nlohmann::json reply,
                            Post(endpoint, "/v3/maintenance/status", nlohmann::json::object()));
  return ParseEtcdStatus(reply);
}

StatusOr<EtcdCompaction> CompactAndDefragment(const std::string& endpoint) {
  const auto began = std::chrono::steady_clock::now();
  EtcdCompaction out;
  TRAINCTL_ASSIGN_OR_RETURN(out.before, ReadEtcdSpace(endpoint));
  StatusOr<nlohmann::json> compacted =
      Post(endpoint, "/v3/kv/compaction",
           {{"revision", std::to_string(out.before.revision)}, {"physical", true}});
  if (!compacted.ok() &&
      compacted.status().message().find("has been compacted") == std::string::npos)
    return compacted.status();
  TRAINCTL_RETURN_IF_ERROR(
      Post(endpoint, "/v3/maintenance/defragment", nlohmann::json::object()).status());
  TRAINCTL_ASSIGN_OR_RETURN(out.after, ReadEtcdSpace(endpoint));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

std::string Describe(const EtcdCompaction& c) {
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", c.seconds);
  return Mib(c.before.db_bytes) + " (in use " + Mib(c.before.in_use_bytes) + ") → " +
         Mib(c.after.db_bytes) + " (in use " + Mib(c.after.in_use_bytes) + ") in " + took;
}

}  // namespace trainctl::bench
