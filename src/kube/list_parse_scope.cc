#include "kube/list_parse_scope.h"

#include <memory>

namespace trainctl::kube {
namespace {

thread_local std::unique_ptr<simdjson::dom::parser> scope_parser;

}  // namespace

ListParseScope::ListParseScope() {
  if (scope_parser) return;
  scope_parser = std::make_unique<simdjson::dom::parser>();
  owner_ = true;
}

ListParseScope::~ListParseScope() {
  if (owner_) scope_parser.reset();
}

simdjson::dom::parser* ListParseScope::Current() { return scope_parser.get(); }

}  // namespace trainctl::kube
