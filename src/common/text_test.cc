// Abbreviate: short text unchanged, long text cut at a character boundary with the count.
#include "common/text.h"

#include <gtest/gtest.h>

namespace trainctl {
namespace {

TEST(Abbreviate, ShortTextIsUnchangedAndLongTextSaysHowMuchIsLeftOut) {
  EXPECT_EQ(Abbreviate("torchrun -m x", 20), "torchrun -m x");
  EXPECT_EQ(Abbreviate("abcdefghij", 4), "abcd … (6 more characters)");
  // "é" is two bytes: a cut inside it moves back before it.
  EXPECT_EQ(Abbreviate("abcé-xyz", 4), "abc … (5 more characters)");
  EXPECT_EQ(Abbreviate("", 0), "");
}

}  // namespace
}  // namespace trainctl
