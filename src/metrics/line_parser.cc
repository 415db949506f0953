#include "metrics/line_parser.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace trainctl::metrics {
namespace {

constexpr size_t kMaxNameBytes = 128;

// Where the step comes from, in order of preference.
constexpr std::array<std::string_view, 5> kStepNames = {"step", "global_step", "iteration", "iter",
                                                        "epoch"};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
         c == '-';
}
// After one of these a new token starts.
bool IsBoundary(char c) {
  return IsSpace(c) || c == ',' || c == ';' || c == '{' || c == '}' || c == '(' || c == ')' ||
         c == '[' || c == ']' || c == '|' || c == ':';
}
// An unquoted value ends at one of these.
bool EndsValue(char c) {
  return IsSpace(c) || c == ',' || c == ';' || c == ')' || c == ']' || c == '}' || c == '|';
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The whole of `text` as a decimal number; nan and inf (any case, signed) too.
std::optional<MetricValue> ParseNumber(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  MetricValue v;
  if (EqualsIgnoringCase(text, "nan")) {
    v.value = std::numeric_limits<double>::quiet_NaN();
    v.finite = false;
    return v;
  }
  if (EqualsIgnoringCase(text, "inf") || EqualsIgnoringCase(text, "infinity")) {
    v.value = negative ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
    v.finite = false;
    return v;
  }
  // Digits first: from_chars would also take "nan(…)" and hex is not a metric.
  if (!std::isdigit(static_cast<unsigned char>(text[0])) && text[0] != '.') return std::nullopt;
  double parsed = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), parsed, std::chars_format::general);
  if (end != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {  // 1e999: an overflow is an infinity
    v.value = std::numeric_limits<double>::infinity();
    v.finite = false;
  } else if (ec != std::errc()) {
    return std::nullopt;
  } else {
    v.value = parsed;
  }
  if (negative) v.value = -v.value;
  return v;
}

// Reads a quoted string starting at `pos` (on the quote). Returns the inside, moves `pos`
// past the closing quote; nullopt when unterminated or longer than `max`.
std::optional<std::string_view> Quoted(std::string_view line, size_t* pos, size_t max) {
  char quote = line[*pos];
  size_t start = *pos + 1;
  for (size_t i = start; i < line.size() && i - start <= max; ++i) {
    if (line[i] == '\\') {
      ++i;
      continue;
    }
    if (line[i] == quote) {
      *pos = i + 1;
      return line.substr(start, i - start);
    }
  }
  return std::nullopt;
}

struct Pair {
  std::string_view name;
  MetricValue value;
};

// A "name <sep> value" pair starting at `*pos`; on success moves `*pos` past the value.
std::optional<Pair> ReadPair(std::string_view line, size_t* pos) {
  size_t at = *pos;
  std::string_view name;
  if (line[at] == '\'' || line[at] == '"') {
    std::optional<std::string_view> quoted = Quoted(line, &at, kMaxNameBytes);
    if (!quoted || quoted->empty()) return std::nullopt;
    name = *quoted;
  } else {
    size_t start = at;
    while (at < line.size() && IsNameChar(line[at])) ++at;
    if (at - start > kMaxNameBytes) return std::nullopt;
    name = line.substr(start, at - start);
  }
  while (at < line.size() && IsSpace(line[at])) ++at;
  if (at >= line.size() || (line[at] != '=' && line[at] != ':')) return std::nullopt;
  ++at;
  if (at < line.size() && line[at] == '=') return std::nullopt;  // "==" compares, not assigns
  while (at < line.size() && IsSpace(line[at])) ++at;
  if (at >= line.size()) return std::nullopt;
  std::string_view text;
  if (line[at] == '\'' || line[at] == '"') {
    std::optional<std::string_view> quoted = Quoted(line, &at, 64);
    if (!quoted) return std::nullopt;
    text = *quoted;
  } else {
    size_t start = at;
    while (at < line.size() && !EndsValue(line[at])) ++at;
    text = line.substr(start, at - start);
  }
  std::optional<MetricValue> value = ParseNumber(text);
  if (!value) return std::nullopt;
  *pos = at;
  return Pair{name, *value};
}

// "[12]" at `*pos`: the number, moving `*pos` past it.
std::optional<double> BracketStep(std::string_view line, size_t* pos) {
  if (*pos >= line.size() || line[*pos] != '[') return std::nullopt;
  size_t close = line.find(']', *pos);
  if (close == std::string_view::npos || close == *pos + 1 || close - *pos > 20)
    return std::nullopt;
  std::string_view digits = line.substr(*pos + 1, close - *pos - 1);
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  double step = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), step);
  *pos = close + 1;
  return step;
}

}  // namespace

std::optional<MetricLine> ParseMetricLine(std::string_view line) {
  if (line.size() > kMaxMetricLineBytes) line = line.substr(0, kMaxMetricLineBytes);
  MetricLine out;
  size_t pos = 0;
  while (pos < line.size() && IsSpace(line[pos])) ++pos;
  // A leading RFC 3339 timestamp (Katib's optional first token).
  if (pos < line.size() && std::isdigit(static_cast<unsigned char>(line[pos]))) {
    size_t end = pos;
    while (end < line.size() && !IsSpace(line[end])) ++end;
    if (std::optional<Time> t = ParseRfc3339(std::string(line.substr(pos, end - pos)))) {
      out.time = t;
      pos = end;
      while (pos < line.size() && IsSpace(line[pos])) ++pos;
    }
  }
  std::optional<double> bracket_step = BracketStep(line, &pos);
  std::array<std::optional<double>, kStepNames.size()> named_steps;
  bool boundary = true;
  while (pos < line.size()) {
    char c = line[pos];
    if (boundary && (IsNameStart(c) || c == '\'' || c == '"')) {
      if (std::optional<Pair> pair = ReadPair(line, &pos)) {
        bool is_step = false;
        for (size_t i = 0; i < kStepNames.size(); ++i)
          if (pair->name == kStepNames[i]) {
            if (pair->value.finite) named_steps[i] = pair->value.value;
            is_step = true;
          }
        if (!is_step) {
          std::string name(pair->name);
          pair->value.name = name;
          bool replaced = false;
          for (MetricValue& v : out.values)
            if (v.name == name) {
              v = pair->value;
              replaced = true;
            }
          if (!replaced && out.values.size() < kMaxValuesPerLine) out.values.push_back(pair->value);
        }
        boundary = true;
        continue;
      }
    }
    boundary = IsBoundary(c);
    ++pos;
  }
  if (out.values.empty()) return std::nullopt;
  for (const std::optional<double>& s : named_steps)
    if (s) {
      out.step = s;
      break;
    }
  if (!out.step) out.step = bracket_step;
  return out;
}

std::vector<std::string_view> SplitOutputLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n' || text[i] == '\r') {
      if (i > start) lines.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return lines;
}

}  // namespace trainctl::metrics
