#include "api/yaml.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "api/json_bounds.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

json One(const std::string& text) {
  auto docs = ParseYamlDocuments(text, "t.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ(docs->size(), 1u);
  return docs->empty() ? json() : (*docs)[0];
}

TEST(YamlTest, TypesPlainScalarsLikeKubectl) {
  json d =
      One("a: 1\nb: '1'\nc: yes\nd: \"yes\"\ne: ~\nf: 1.5\ng: 0x1F\nh: 017\ni: -3\nj: text\n"
          "k: on\nl: 1e3\nm: !!str 5\n");
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], "1");
  EXPECT_EQ(d["c"], true);
  EXPECT_EQ(d["d"], "yes");
  EXPECT_TRUE(d["e"].is_null());
  EXPECT_DOUBLE_EQ(d["f"].get<double>(), 1.5);
  EXPECT_EQ(d["g"], 31);
  EXPECT_EQ(d["h"], 15);
  EXPECT_EQ(d["i"], -3);
  EXPECT_EQ(d["j"], "text");
  EXPECT_EQ(d["k"], true);
  EXPECT_DOUBLE_EQ(d["l"].get<double>(), 1000.0);
  EXPECT_EQ(d["m"], "5");
}

TEST(YamlTest, MultiDocumentSkipsEmptyDocuments) {
  auto docs = ParseYamlDocuments("---\na: 1\n---\n---\nb: [1, 2]\n...\n", "t.yaml");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1]["b"], json::array({1, 2}));
}

TEST(YamlTest, AnchorsAliasesAndMergeKeys) {
  json d = One("base: &b {x: 1, q: 2}\nderived:\n  <<: *b\n  q: 3\nlist: [*b]\n");
  EXPECT_EQ(d["derived"]["x"], 1);
  EXPECT_EQ(d["derived"]["q"], 3);
  EXPECT_EQ(d["list"][0]["q"], 2);
  EXPECT_FALSE(d["derived"].contains("<<"));
}

TEST(YamlTest, JsonIsYaml) {
  json d = One(R"({"kind": "PyTorchJob", "spec": {"n": [1, "2", null, true]}})");
  EXPECT_EQ(d["spec"]["n"], json::parse(R"([1, "2", null, true])"));
}

TEST(YamlTest, SyntaxErrorNamesFileLineAndColumn) {
  auto docs = ParseYamlDocuments("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("bad.yaml:"), std::string::npos);
  EXPECT_NE(docs.status().message().find("YAML syntax error"), std::string::npos);
  EXPECT_EQ(docs.status().code(), StatusCode::kInvalid);
}

TEST(YamlTest, TabIndentationIsAnErrorWithPosition) {
  auto docs = ParseYamlDocuments("a:\n\tb: 1\n", "tabs.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("tabs.yaml:2:"), std::string::npos)
      << docs.status().message();
}

// Found by fuzzing (kubeconfig_fuzz): nested collections as keys were turned into text that
// doubled at every level; 147 bytes took minutes.
TEST(YamlTest, CollectionsAsKeysAreRefused) {
  std::string nested = std::string(75, '{') + std::string(75, '}') + ": 1\n";
  auto docs = ParseYamlDocuments(nested, "k.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(),
            "k.yaml:1:1: a mapping key must be a scalar, not a collection");
  auto sequence = ParseYamlDocuments("? [a, b]\n: 1\n", "s.yaml");
  ASSERT_FALSE(sequence.ok());
  EXPECT_NE(sequence.status().message().find("not a collection"), std::string::npos);
  auto alias = ParseYamlDocuments("a: &x [1]\n*x : 2\n", "a.yaml");
  ASSERT_FALSE(alias.ok());
  EXPECT_NE(alias.status().message().find("not an alias of a collection"), std::string::npos)
      << alias.status().message();
}

TEST(YamlTest, DuplicateKeyIsAnError) {
  auto docs = ParseYamlDocuments("a: 1\na: 2\n", "dup.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("dup.yaml:2:1"), std::string::npos)
      << docs.status().message();
}

}  // namespace
TEST(YamlTest, NestingAndAliasExpansionAreBounded) {
  std::string ok = std::string(kMaxYamlDepth, '[') + std::string(kMaxYamlDepth, ']');
  EXPECT_TRUE(ParseYamlDocuments(ok, "ok.yaml").ok());
  std::string deep = "[" + ok + "]";
  auto refused = ParseYamlDocuments(deep, "deep.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "deep.yaml:1:257: collections nested deeper than 256 levels");
  // Aliases are fine while what they expand to stays within the budget...
  auto small = ParseYamlDocuments("a: &a [1, 2]\nb: [*a, *a, *a]\n", "s.yaml");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)[0]["b"].dump(), "[[1,2],[1,2],[1,2]]");
  // ...and refused, before copying, once they multiply past it.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  auto bomb = ParseYamlDocuments(laughs, "l.yaml");
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.status().message().find("expands to more than 1000000 values"), std::string::npos);
  std::string huge(kMaxYamlBytes + 1, ' ');
  EXPECT_EQ(ParseYamlDocuments(huge, "h.yaml").status().message(),
            "h.yaml: 16777217 bytes: manifests larger than 16 MiB are refused");
}

TEST(JsonBoundsTest, DepthIsCountedOutsideStringsOnly) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}]})", 100), 4u);
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[[{{{{ \" [[["})", 100), 1u);
  EXPECT_EQ(JsonNestingDepth(R"(["\\", [[]]])", 100), 3u);  // an escaped backslash ends
  EXPECT_EQ(JsonNestingDepth("", 100), 0u);
  // The scan stops once past the limit.
  EXPECT_EQ(JsonNestingDepth(std::string(1000, '['), 10), 11u);
}

TEST(JsonBoundsTest, OverTheLimitsIsDiscardedWithTheReason) {
  std::string problem;
  std::string deep = std::string(kMaxYamlDepth + 1, '[') + std::string(kMaxYamlDepth + 1, ']');
  EXPECT_TRUE(ParseJsonWithin(deep, JsonLimits{}, &problem).is_discarded());
  EXPECT_EQ(problem, "nested deeper than 256 levels");
  EXPECT_TRUE(
      ParseJsonWithin(std::string(100, ' ') + "{}", JsonLimits{64, 8}, &problem).is_discarded());
  EXPECT_EQ(problem, "larger than 64 bytes (102 bytes)");
  EXPECT_TRUE(ParseJsonWithin("{", JsonLimits{}, &problem).is_discarded());
  EXPECT_EQ(problem, "not JSON");
  EXPECT_EQ(ParseJsonWithin(R"({"a": [1]})", JsonLimits{}, &problem)["a"][0], 1);
}

// kMaxApiJsonDepth matches the API server, so an object it stored is taken; at that depth the
// operator's threads can still copy and print it (both recurse once per level): an optimised
// build needs 1-2 MiB of a thread's 8 MiB for it (measured). AddressSanitizer's frames are
// several times larger, so the sanitized build skips this one.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINCTL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TRAINCTL_ASAN 1
#endif
TEST(JsonBoundsTest, AnApiObjectAtTheDepthLimitCanBeCopiedAndPrintedOnAThread) {
#ifdef TRAINCTL_ASAN
  GTEST_SKIP() << "AddressSanitizer's stack frames do not fit 10000 levels in 8 MiB";
#endif
  std::string text;
  for (size_t i = 0; i < kMaxApiJsonDepth; ++i) text += R"({"a":)";
  text += "1" + std::string(kMaxApiJsonDepth, '}');
  std::string printed;
  std::thread([&] {
    json parsed = ParseJsonWithin(text, kApiJsonLimits);
    json copy = parsed;
    printed = copy.dump();
  }).join();
  EXPECT_EQ(printed, text);
  std::string problem;
  EXPECT_TRUE(ParseJsonWithin("[" + text + "]", kApiJsonLimits, &problem).is_discarded());
  EXPECT_EQ(problem, "nested deeper than 10000 levels");
}

}  // namespace trainctl::api
