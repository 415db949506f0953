// CurlHandlePool: the cap on handles, reuse of a returned handle, and Close() waiting for loans.
#include "kube/curl_handle_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace trainctl::kube {
namespace {

TEST(CurlHandlePoolTest, LendsAtMostItsCapacityAndReusesWhatComesBack) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CurlHandlePool pool(2);
  CURL* a = pool.Take();
  CURL* b = pool.Take();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.Take(), nullptr);  // both lent: the caller goes another way
  pool.Give(a);
  EXPECT_EQ(pool.Take(), a);  // the same handle, and with it its connection
  EXPECT_EQ(pool.made(), 2u);
  pool.Give(a);
  pool.Give(b);
}

TEST(CurlHandlePoolTest, ZeroCapacityLendsNothing) {
  CurlHandlePool pool(0);
  EXPECT_EQ(pool.Take(), nullptr);
  EXPECT_EQ(pool.made(), 0u);
}

TEST(CurlHandlePoolTest, CloseRefusesLoansAndWaitsForLentHandles) {
  CurlHandlePool pool(1);
  CURL* lent = pool.Take();
  ASSERT_NE(lent, nullptr);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    pool.Close();
    closed = true;
  });
  // The lent handle's transfer sees closing() and stops; until it is given back, Close() waits.
  while (!pool.closing()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(closed.load());
  EXPECT_EQ(pool.Take(), nullptr);
  pool.Give(lent);  // cleaned up, not kept
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(pool.Take(), nullptr);
}

}  // namespace
}  // namespace trainctl::kube
