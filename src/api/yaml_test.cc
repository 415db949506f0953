#include "api/yaml.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  json d = One(
      "a: 1\nb: '1'\nc: yes\nd: \"yes\"\ne: ~\nf: 1.5\ng: 0x1F\nh: 017\ni: -3\nj: text\n"
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

TEST(YamlTest, DuplicateKeyIsAnError) {
  auto docs = ParseYamlDocuments("a: 1\na: 2\n", "dup.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("dup.yaml:2:1"), std::string::npos)
      << docs.status().message();
}

}  // namespace
}  // namespace trainctl::api
