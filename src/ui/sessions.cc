#include "ui/sessions.h"

#include <openssl/sha.h>

#include <algorithm>

#include "ui/auth.h"

namespace trainctl::ui {
namespace {

// Sessions are found by a digest of their id, so a lookup's time says nothing about the id.
std::string Digest(const std::string& id) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(id.data()), id.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

}  // namespace

StatusOr<Session> SessionStore::Create(const std::string& token, const std::string& user) {
  TRAINCTL_ASSIGN_OR_RETURN(std::string id, NewToken());
  TRAINCTL_ASSIGN_OR_RETURN(std::string csrf, NewToken());
  Session session{id, csrf, token, user};
  MonoTime now = clock_->Monotonic();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();)
    it = now - it->second.first >= kLifetime ? sessions_.erase(it) : std::next(it);
  if (sessions_.size() >= kMaxSessions) {
    auto oldest = std::min_element(
        sessions_.begin(), sessions_.end(),
        [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    sessions_.erase(oldest);
  }
  sessions_[Digest(id)] = {now, session};
  return session;
}

std::optional<Session> SessionStore::Find(const std::string& id) {
  if (id.empty()) return std::nullopt;
  std::string key = Digest(id);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) return std::nullopt;
  if (clock_->Monotonic() - it->second.first >= kLifetime) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second.second;
}

void SessionStore::Remove(const std::string& id) {
  std::string key = Digest(id);
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.erase(key);
}

size_t SessionStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

std::string SessionCookie(const std::string& session_id) {
  std::string cookie =
      std::string(kSessionCookie) + "=" + session_id + "; Path=/; HttpOnly; SameSite=Strict";
  return session_id.empty() ? cookie + "; Max-Age=0" : cookie;
}

}  // namespace trainctl::ui
