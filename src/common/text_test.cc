// Abbreviate: short text unchanged, long text cut at a character boundary with the count;
// LastLines: the end of a log from a line start.
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

TEST(LastLines, KeepsWholeLinesWhenItCanAndBytesWhenOneLineIsTooLong) {
  EXPECT_EQ(LastLines("short\n", 100), "short\n");
  EXPECT_EQ(LastLines("first line\nsecond\nthird\n", 14), "second\nthird\n");
  // One last line longer than the room: its end, not nothing.
  std::string long_line = "a\n" + std::string(50, 'x') + "\n";
  EXPECT_EQ(LastLines(long_line, 10), "xxxxxxxxx\n");
}

}  // namespace
}  // namespace trainctl
