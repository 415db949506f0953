// Test helper: the first job of a manifest given as text, with a test failure (and an empty job)
// when it does not load. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "api/manifest.h"

namespace trainctl::api::test {

inline Job LoadJob(const std::string& text) {
  auto loaded = LoadJobsFromText(text, "test.yaml");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return loaded.ok() && !loaded->empty() ? (*loaded)[0].job : Job();
}

}  // namespace trainctl::api::test
