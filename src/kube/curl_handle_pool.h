// CurlHandlePool: at most `capacity` curl easy handles, each lent to one caller at a time, so a
// request can run on its caller's thread (curl_easy_perform) over a connection that the handle
// keeps alive between requests. Part of the transport (transport.cc); knows nothing of HTTP.
//
// - Take() lends an idle handle, or makes one while fewer than `capacity` exist; it returns
//   nullptr when all are lent (the caller then goes another way) or after Close().
// - Give() takes a lent handle back and resets its options (curl_easy_reset: its connection and
//   TLS session stay), so an idle handle points at nothing of its last caller's; a handle given
//   back after Close() is cleaned up.
// - CurlHandleLease takes a handle for a scope and gives it back at the scope's end.
// - Close() refuses further loans, raises closing() (a lent handle's transfer polls it to stop
//   early) and waits until every lent handle is back. The destructor cleans up idle handles.
//
// Thread-safe.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace trainctl::kube {

class CurlHandlePool {
 public:
  explicit CurlHandlePool(size_t capacity) : capacity_(capacity) {}
  ~CurlHandlePool();
  CurlHandlePool(const CurlHandlePool&) = delete;
  CurlHandlePool& operator=(const CurlHandlePool&) = delete;

  CURL* Take();
  void Give(CURL* handle);
  void Close();
  bool closing() const { return closing_.load(std::memory_order_relaxed); }

  size_t made() const;  // handles made so far (each opens its own connection when used)

 private:
  const size_t capacity_;
  std::atomic<bool> closing_{false};
  mutable std::mutex mu_;
  std::condition_variable returned_;
  std::vector<CURL*> idle_;  // guarded by mu_
  size_t lent_ = 0;          // guarded by mu_
  size_t made_ = 0;          // guarded by mu_
};

// One handle for a scope (get() is nullptr when none was free); given back when it ends.
class CurlHandleLease {
 public:
  explicit CurlHandleLease(CurlHandlePool* pool) : pool_(pool), handle_(pool->Take()) {}
  ~CurlHandleLease() {
    if (handle_) pool_->Give(handle_);
  }
  CurlHandleLease(const CurlHandleLease&) = delete;
  CurlHandleLease& operator=(const CurlHandleLease&) = delete;

  CURL* get() const { return handle_; }

 private:
  CurlHandlePool* pool_;
  CURL* handle_;
};

}  // namespace trainctl::kube
