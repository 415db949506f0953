#include "kube/list_parse_scope.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "kube/json_node.h"

namespace trainctl::kube {
namespace {

std::vector<std::string> Names(std::string_view body) {
  std::vector<std::string> names;
  bool read = ForEachListItem(
      body, [&](const SimdNode& item) { names.push_back(item["metadata"]["name"].str()); });
  if (!read) names.push_back("<declined>");
  return names;
}

std::string Page(int first, int count) {
  std::string body = R"({"metadata":{},"items":[)";
  for (int i = first; i < first + count; ++i)
    body += (i > first ? "," : "") + std::string(R"({"metadata":{"name":"p)") + std::to_string(i) +
            R"("}})";
  return body + "]}";
}

TEST(ListParseScopeTest, OneParserServesEveryPageReadWhileTheScopeLives) {
  EXPECT_EQ(ListParseScope::Current(), nullptr);
  const std::string big = Page(0, 200), small = Page(200, 2);
  {
    ListParseScope scope;
    simdjson::dom::parser* parser = ListParseScope::Current();
    ASSERT_NE(parser, nullptr);
    EXPECT_EQ(Names(big).size(), 200u);
    EXPECT_GE(parser->capacity(), big.size()) << "the page's buffers stay with the scope";
    size_t capacity = parser->capacity();
    EXPECT_EQ(Names(small), (std::vector<std::string>{"p200", "p201"}))
        << "a reused parser reads the next page, not what is left of the last";
    EXPECT_EQ(parser->capacity(), capacity) << "a smaller page needs no new buffers";
    EXPECT_EQ(Names("{broken"), (std::vector<std::string>{"<declined>"}));
    EXPECT_EQ(Names(small).size(), 2u) << "a declined page leaves the parser usable";
    {
      ListParseScope inner;
      EXPECT_EQ(ListParseScope::Current(), parser) << "an inner scope shares the outer parser";
    }
    EXPECT_EQ(ListParseScope::Current(), parser) << "only the outermost scope frees it";
    std::thread other([] { EXPECT_EQ(ListParseScope::Current(), nullptr) << "per thread"; });
    other.join();
  }
  EXPECT_EQ(ListParseScope::Current(), nullptr);
  EXPECT_EQ(Names(small).size(), 2u) << "without a scope each call has its own parser";
}

}  // namespace
}  // namespace trainctl::kube
