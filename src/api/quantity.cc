#include "api/quantity.h"

#include <cctype>
#include <cmath>

namespace trainctl::api {

StatusOr<int64_t> ParseQuantityMilli(const std::string& text) {
  auto bad = [&]() { return InvalidError("\"" + text + "\" is not a resource quantity"); };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  size_t digits_start = i;
  std::string whole, fraction;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) whole += text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      fraction += text[i++];
  }
  if (i == digits_start || (whole.empty() && fraction.empty())) return bad();
  std::string suffix = text.substr(i);
  // value = (whole.fraction) × base^exp; computed in long double, checked, rounded up to milli.
  long double multiplier = 1;
  static const struct {
    const char* s;
    long double m;
  } kSuffixes[] = {{"Ki", 1024.0L},
                   {"Mi", 1048576.0L},
                   {"Gi", 1073741824.0L},
                   {"Ti", 1099511627776.0L},
                   {"Pi", 1125899906842624.0L},
                   {"Ei", 1152921504606846976.0L},
                   {"n", 1e-9L},
                   {"u", 1e-6L},
                   {"m", 1e-3L},
                   {"", 1.0L},
                   {"k", 1e3L},
                   {"M", 1e6L},
                   {"G", 1e9L},
                   {"T", 1e12L},
                   {"P", 1e15L},
                   {"E", 1e18L}};
  bool known = false;
  for (const auto& s : kSuffixes)
    if (suffix == s.s) {
      multiplier = s.m;
      known = true;
    }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return bad();
    size_t j = 1;
    bool neg_exp = false;
    if (suffix[j] == '+' || suffix[j] == '-') neg_exp = suffix[j++] == '-';
    if (j >= suffix.size()) return bad();
    int exponent = 0;
    for (; j < suffix.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[j])) || exponent > 100) return bad();
      exponent = exponent * 10 + (suffix[j] - '0');
    }
    multiplier = std::pow(10.0L, neg_exp ? -exponent : exponent);
  }
  long double value =
      std::stold((whole.empty() ? "0" : whole) + "." + (fraction.empty() ? "0" : fraction)) *
      multiplier * 1000.0L;
  long double rounded = std::ceil(value - 1e-9L);  // absorbs binary noise like 0.1 × 1000
  if (rounded > 9.2e18L) return InvalidError("\"" + text + "\" is too large a quantity");
  int64_t milli = static_cast<int64_t>(rounded);
  return negative ? -milli : milli;
}

std::string FormatQuantityMilli(int64_t milli) {
  if (milli % 1000 != 0) return std::to_string(milli) + "m";
  int64_t whole = milli / 1000;
  // Byte-sized amounts read best with a binary suffix ("2Gi"); small ones (CPUs) stay plain.
  static const char* kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (whole != 0 && whole % (int64_t{1} << 20) == 0) {
    int i = -1;
    while (i < 5 && whole % 1024 == 0) {
      whole /= 1024;
      ++i;
    }
    return std::to_string(whole) + kBinary[i];
  }
  return std::to_string(whole);
}

}  // namespace trainctl::api
