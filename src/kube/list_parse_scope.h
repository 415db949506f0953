// ListParseScope: while one is alive on a thread, ForEachListItem on that thread reads every list
// page with one simdjson parser, so the parser's buffers (a padded copy of the text, the tape,
// the strings: several times a page's size) are allocated once for a whole paged list, not once
// a page, and freed when the scope ends. Without a scope each call has a parser of its own.
//
// A reflector opens one around each list (ListAndReplace). Scopes nest: an inner scope uses the
// outer one's parser and frees nothing. A scope belongs to the thread that made it; it must end
// on that thread (it is not copyable or movable). Internal to src/kube/.
#pragma once

#include <simdjson.h>

namespace trainctl::kube {

class ListParseScope {
 public:
  ListParseScope();
  ~ListParseScope();
  ListParseScope(const ListParseScope&) = delete;
  ListParseScope& operator=(const ListParseScope&) = delete;

  // The parser of the scope open on this thread; nullptr when none is.
  static simdjson::dom::parser* Current();

 private:
  bool owner_ = false;  // the outermost scope: it made the parser and frees it
};

}  // namespace trainctl::kube
