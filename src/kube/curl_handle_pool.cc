#include "kube/curl_handle_pool.h"

namespace trainctl::kube {

CurlHandlePool::~CurlHandlePool() {
  Close();
  for (CURL* handle : idle_) curl_easy_cleanup(handle);
}

CURL* CurlHandlePool::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing()) return nullptr;
  if (!idle_.empty()) {
    CURL* handle = idle_.back();
    idle_.pop_back();
    ++lent_;
    return handle;
  }
  if (made_ >= capacity_) return nullptr;
  CURL* handle = curl_easy_init();
  if (!handle) return nullptr;
  ++made_;
  ++lent_;
  return handle;
}

void CurlHandlePool::Give(CURL* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  --lent_;
  if (closing()) {
    curl_easy_cleanup(handle);
    returned_.notify_all();
  } else {
    curl_easy_reset(handle);
    idle_.push_back(handle);
  }
}

void CurlHandlePool::Close() {
  std::unique_lock<std::mutex> lock(mu_);
  closing_.store(true);
  returned_.wait(lock, [this] { return lent_ == 0; });
}

size_t CurlHandlePool::made() const {
  std::lock_guard<std::mutex> lock(mu_);
  return made_;
}

}  // namespace trainctl::kube
