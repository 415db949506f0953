// Shortening text for people: a long command line or message cut to a width that a table or an
// event can show, at a UTF-8 character boundary, saying how much was left out; the end of a
// log kept from a line start. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainctl {

// `text` itself when it has at most `max` bytes; otherwise its first bytes (at most `max`,
// never splitting a UTF-8 character) followed by " … (N more characters)".
std::string Abbreviate(std::string_view text, size_t max);

// The end of `text` in at most `max` bytes: from the first line start within them, or, when
// none is (one long last line), its last `max` bytes.
std::string_view LastLines(std::string_view text, size_t max);

}  // namespace trainctl
