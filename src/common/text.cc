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

}  // namespace trainctl
