// Browser sessions of the in-cluster dashboard (docs/dashboard.md, "Signing in"). A browser's
// EventSource cannot send a bearer token, so the login page takes a Kubernetes token once
// (POST /api/v1/login) and the server keeps it, tied to a random session id that the browser
// holds in an HttpOnly, SameSite=Strict cookie. The token never goes back to the page. Every
// request is still authenticated with the token (TokenReview, cached for a minute), so a
// revoked or expired token ends the session; a session also ends after kLifetime, at sign-out,
// and when the operator restarts (sessions live in memory only).
//
// Each session has a CSRF token of its own that the page sends back in X-CSRF-Token with
// sign-out (the only write a session can make; everything else is read-only).
//
// Bounded (kMaxSessions: the oldest session goes first); the clock is injected. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace trainctl::ui {

inline constexpr const char* kSessionCookie = "trainctl_session";
inline constexpr const char* kCsrfHeader = "x-csrf-token";

struct Session {
  std::string id;     // the cookie's value
  std::string csrf;   // the page's X-CSRF-Token
  std::string token;  // the Kubernetes token it stands for
  std::string user;   // who the API server said the token is, at sign-in
};

class SessionStore {
 public:
  static constexpr std::chrono::hours kLifetime{8};
  static constexpr size_t kMaxSessions = 1024;

  explicit SessionStore(const Clock* clock) : clock_(clock) {}

  // A new session for `token` (already reviewed: it names `user`).
  StatusOr<Session> Create(const std::string& token, const std::string& user);
  // The live session with this id; nullopt when unknown or expired.
  std::optional<Session> Find(const std::string& id);
  void Remove(const std::string& id);
  size_t size() const;

 private:
  const Clock* clock_;
  mutable std::mutex mu_;
  // By the SHA-256 of the id; guarded by mu_.
  std::map<std::string, std::pair<MonoTime, Session>> sessions_;
};

// The Set-Cookie value that gives the browser `session_id` (empty: one that removes it).
std::string SessionCookie(const std::string& session_id);

}  // namespace trainctl::ui
