#include "common/text.h"

namespace trainctl {

std::string Abbreviate(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  size_t rest = 0;  // characters, not bytes: continuation bytes are not counted
  for (size_t i = cut; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++rest;
  return std::string(text.substr(0, cut)) + " … (" + std::to_string(rest) + " more characters)";
}

std::string_view LastLines(std::string_view text, size_t max) {
  if (text.size() <= max) return text;
  std::string_view tail = text.substr(text.size() - max);
  size_t newline = tail.find('\n');
  // A newline that ends the text starts no line within it.
  if (newline == std::string_view::npos || newline + 1 >= tail.size()) return tail;
  return tail.substr(newline + 1);
}

}  // namespace trainctl
