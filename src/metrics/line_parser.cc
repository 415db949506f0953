#include "metrics/line_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace trainctl::metrics {
namespace {

constexpr size_t kMaxNameBytes = 128;
constexpr size_t kMaxQuotedValueBytes = 64;
// A bare value longer than this is not a number (a 400-digit integer still is one).
constexpr size_t kMaxValueBytes = 512;
constexpr size_t kMaxTimeTokenBytes = 40;

// Where the step comes from, in order of preference.
constexpr std::array<std::string_view, 5> kStepNames = {"step", "global_step", "iteration", "iter",
                                                        "epoch"};
// "<name><extension>:<line>" is where a log line was written, not a metric.
constexpr std::array<std::string_view, 14> kSourceExtensions = {
    ".c",   ".cc", ".cpp", ".cxx", ".cu",   ".h",     ".hh",
    ".hpp", ".py", ".go",  ".rs",  ".java", ".scala", ".kt"};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
         c == '-';
}
bool IsQuote(char c) { return c == '"' || c == '\''; }
// After one of these a new token starts.
bool IsBoundary(char c) {
  return IsSpace(c) || c == ',' || c == ';' || c == '{' || c == '}' || c == '(' || c == ')' ||
         c == '[' || c == ']' || c == '|' || c == ':';
}
// An unquoted value ends at one of these.
bool EndsValue(char c) {
  return IsSpace(c) || c == ',' || c == ';' || c == ')' || c == ']' || c == '}' || c == '|';
}
// What a number's text is made of (digits, sign, point, exponent, and the letters of nan/inf).
bool IsNumberChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-';
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool IsDigits(std::string_view text) {
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), IsDigit);
}

size_t SkipSpaces(std::string_view line, size_t at) {
  while (at < line.size() && IsSpace(line[at])) ++at;
  return at;
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
  if (!IsDigit(text[0]) && text[0] != '.') return std::nullopt;
  double parsed = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), parsed, std::chars_format::general);
  if (end != text.data() + text.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Too large (1e999, 400 digits) is an infinity; too small (1e-999) is 0 or a subnormal.
    parsed = std::strtod(std::string(text).c_str(), nullptr);
  } else if (ec != std::errc()) {
    return std::nullopt;
  }
  v.value = negative ? -parsed : parsed;
  v.finite = std::isfinite(parsed);
  return v;
}

// Moves `*pos` (on a quote) past the closing quote, or to the end when there is none.
// Returns whether the string was closed.
bool SkipString(std::string_view line, size_t* pos) {
  char quote = line[*pos];
  for (size_t i = *pos + 1; i < line.size(); ++i) {
    if (line[i] == '\\') {
      ++i;
      continue;
    }
    if (line[i] == quote) {
      *pos = i + 1;
      return true;
    }
  }
  *pos = line.size();
  return false;
}

// The inside of the quoted string at `*pos`, moving `*pos` past it; nullopt when it is
// unterminated or longer than `max` (then `*pos` is left where it was).
std::optional<std::string_view> Quoted(std::string_view line, size_t* pos, size_t max) {
  size_t start = *pos + 1;
  for (size_t i = start; i < line.size() && i - start <= max; ++i) {
    if (line[i] == '\\') {
      ++i;
      continue;
    }
    if (line[i] == line[*pos]) {
      *pos = i + 1;
      return line.substr(start, i - start);
    }
  }
  return std::nullopt;
}

bool IsOpener(char c) { return c == '{' || c == '[' || c == '('; }
bool IsCloser(char c) { return c == '}' || c == ']' || c == ')'; }

// Moves `*pos` (on an opener) past its closer, counting depth (never recursing), or to the end.
void SkipNested(std::string_view line, size_t* pos) {
  size_t depth = 0;
  size_t i = *pos;
  while (i < line.size()) {
    char c = line[i];
    if (IsQuote(c)) {
      SkipString(line, &i);
      continue;
    }
    if (IsOpener(c)) ++depth;
    if (IsCloser(c) && --depth == 0) {
      *pos = i + 1;
      return;
    }
    ++i;
  }
  *pos = line.size();
}

// The values of one piece, as they are accepted: step names are held with the rest and the one
// that gives the step is taken out at the end.
class Collector {
 public:
  void Add(std::string_view name, MetricValue value) {
    if (std::find(kNotMetrics.begin(), kNotMetrics.end(), name) != kNotMetrics.end()) return;
    value.name = std::string(name);
    for (MetricValue& v : line_.values)
      if (v.name == value.name) {
        v = std::move(value);
        return;
      }
    if (line_.values.size() < kMaxValuesPerLine) line_.values.push_back(std::move(value));
  }

  std::optional<MetricLine> Finish(std::optional<double> bracket_step,
                                   std::optional<Time> time) && {
    for (std::string_view step_name : kStepNames) {
      auto it = std::find_if(line_.values.begin(), line_.values.end(),
                             [&](const MetricValue& v) { return v.name == step_name && v.finite; });
      if (it == line_.values.end()) continue;
      line_.step = it->value;
      line_.step_name = it->name;
      line_.values.erase(it);
      break;
    }
    if (line_.values.empty()) return std::nullopt;
    if (!line_.step) line_.step = bracket_step;
    line_.time = time;
    return std::move(line_);
  }

 private:
  MetricLine line_;
};

// Where the piece's object starts: the first '{' followed by a quoted key; npos when none.
size_t ObjectStart(std::string_view line, size_t from) {
  for (size_t i = line.find('{', from); i != std::string_view::npos; i = line.find('{', i + 1)) {
    size_t key = SkipSpaces(line, i + 1);
    if (key < line.size() && IsQuote(line[key])) return i;
  }
  return std::string_view::npos;
}

// "rdzv_configs     : {'rank': 0}": an object that is the value of an aligned report's label
// (a space before the colon), as torchrun prints its launch configuration.
bool AfterAlignedLabel(std::string_view line, size_t object) {
  size_t at = object;
  while (at > 0 && IsSpace(line[at - 1])) --at;
  return at >= 2 && line[at - 1] == ':' && IsSpace(line[at - 2]);
}

// The top-level members of the object at `start` whose values are numbers. Reading stops at
// the object's end, at the end of the piece, or where it stops being an object. `cut`: the
// piece was cut at kMaxMetricLineBytes, so a value that reaches its end may be partial.
void ReadObject(std::string_view line, size_t start, bool cut, Collector* out) {
  size_t at = start + 1;
  for (;;) {
    at = SkipSpaces(line, at);
    if (at >= line.size() || !IsQuote(line[at])) return;
    std::optional<std::string_view> key = Quoted(line, &at, kMaxNameBytes);
    if (!key) return;
    at = SkipSpaces(line, at);
    if (at >= line.size() || line[at] != ':') return;
    at = SkipSpaces(line, at + 1);
    if (at >= line.size()) return;
    std::optional<MetricValue> value;
    if (IsQuote(line[at])) {
      size_t begin = at;
      if (!SkipString(line, &at)) return;
      std::string_view inside = line.substr(begin + 1, at - begin - 2);
      if (inside.size() <= kMaxQuotedValueBytes) value = ParseNumber(inside);
    } else if (IsOpener(line[at])) {
      SkipNested(line, &at);
    } else {
      size_t begin = at;
      bool nested = false;  // tensor(0.5), np.float64(0.5): not a number here
      while (at < line.size() && line[at] != ',' && line[at] != '}' && !IsSpace(line[at])) {
        if (IsOpener(line[at])) {
          SkipNested(line, &at);
          nested = true;
        } else {
          ++at;
        }
      }
      bool partial = cut && at >= line.size();
      if (!nested && !partial && at - begin <= kMaxValueBytes)
        value = ParseNumber(line.substr(begin, at - begin));
    }
    if (value && !key->empty()) out->Add(*key, *value);
    at = SkipSpaces(line, at);
    if (at >= line.size() || line[at] != ',') return;  // '}' or not an object any more
    ++at;
  }
}

// A name, then optional spaces and '=' (or ':' right after the name): the start of a pair.
bool StartsLabel(std::string_view line, size_t at) {
  if (IsQuote(line[at])) {
    if (!Quoted(line, &at, kMaxNameBytes)) return false;
  } else {
    size_t start = at;
    while (at < line.size() && IsNameChar(line[at]) && at - start <= kMaxNameBytes) ++at;
  }
  if (at < line.size() && line[at] == ':') return true;
  at = SkipSpaces(line, at);
  return at < line.size() && line[at] == '=';
}

// Whether what follows a "name: value" at `at` lets it be a metric: the end, a separator, or
// another pair. A word ("2 process(es)", "0.5 seconds") or an aside ("7 (pid: 12)",
// "(exitcode: 7)") makes it prose.
bool EndsColonMetric(std::string_view line, size_t at) {
  if (at >= line.size()) return true;
  char c = line[at];
  if (c == ',' || c == ';' || c == '|' || c == ']' || c == '}') return true;
  if (!IsSpace(c)) return false;
  at = SkipSpaces(line, at);
  if (at >= line.size()) return true;
  c = line[at];
  if (c == '-' || c == '|' || c == ',' || c == ';') return true;
  return (IsNameStart(c) || IsQuote(c)) && StartsLabel(line, at);
}

// "1,234": a number printed with thousands separators, not the 1 before the comma.
bool ThousandsFollow(std::string_view line, size_t at) {
  if (at + 4 > line.size()) return false;
  if (line[at] != ',' || !IsDigit(line[at + 1]) || !IsDigit(line[at + 2]) || !IsDigit(line[at + 3]))
    return false;
  return at + 4 == line.size() || !IsDigit(line[at + 4]);
}

// "reducer.cpp:1298]", "api.py:1002]", "learner.cc:767:", "train.py:45": where a log line was
// written.
bool IsSourceLocation(std::string_view name, std::string_view line, size_t at) {
  for (std::string_view ext : kSourceExtensions)
    if (name.size() > ext.size() && name.ends_with(ext)) return true;
  bool path_like = name.find_first_of("./") != std::string_view::npos;
  return path_like && at < line.size() && (line[at] == ']' || line[at] == ':');
}

// Whether the name at `pos` ends a label of several words: a plain word (letters only, standing
// alone) and spaces come before it ("Num examples = 320", "all params: 122", "Validation loss:
// 0.4"). In "mode=train loss: 1" it does not: "train" is a value.
bool EndsWordyLabel(std::string_view line, size_t pos) {
  size_t at = pos;
  while (at > 0 && IsSpace(line[at - 1])) --at;
  if (at == pos || at == 0) return false;
  size_t end = at;
  while (at > 0 && IsNameChar(line[at - 1]) && end - at <= kMaxNameBytes) --at;
  if (at == end) return false;
  for (size_t i = at; i < end; ++i)
    if (!std::isalpha(static_cast<unsigned char>(line[i]))) return false;
  return at == 0 || IsSpace(line[at - 1]);
}

struct Pair {
  std::string_view name;
  MetricValue value;
};

// A "name <sep> value" pair starting at `*pos`; on success moves `*pos` past the value.
std::optional<Pair> ReadPair(std::string_view line, size_t* pos, bool cut) {
  size_t at = *pos;
  std::string_view name;
  bool quoted_name = IsQuote(line[at]);
  if (quoted_name) {
    std::optional<std::string_view> quoted = Quoted(line, &at, kMaxNameBytes);
    if (!quoted || quoted->empty()) return std::nullopt;
    name = *quoted;
  } else {
    size_t start = at;
    while (at < line.size() && IsNameChar(line[at])) {
      if (at - start >= kMaxNameBytes) return std::nullopt;
      ++at;
    }
    name = line.substr(start, at - start);
  }
  size_t after_name = at;
  at = SkipSpaces(line, at);
  if (at >= line.size() || (line[at] != '=' && line[at] != ':')) return std::nullopt;
  char sep = line[at];
  if (!quoted_name) {
    // "exitcode  : 7": an aligned report, not "name: value".
    if (sep == ':' && at != after_name) return std::nullopt;
    // "Num examples = 320", "Validation loss: 0.4"; "rank worker loss=42" is a name=value.
    if ((sep == ':' || at != after_name) && EndsWordyLabel(line, *pos)) return std::nullopt;
  }
  ++at;
  if (at < line.size() && line[at] == '=') return std::nullopt;  // "==" compares, ":=" assigns
  at = SkipSpaces(line, at);
  if (at >= line.size()) return std::nullopt;
  std::string_view text;
  if (IsQuote(line[at])) {
    std::optional<std::string_view> quoted = Quoted(line, &at, kMaxQuotedValueBytes);
    if (!quoted) return std::nullopt;
    text = *quoted;
  } else {
    size_t start = at;
    while (at < line.size() && IsNumberChar(line[at])) {
      if (at - start >= kMaxValueBytes) return std::nullopt;
      ++at;
    }
    if (at < line.size() && !EndsValue(line[at])) return std::nullopt;  // "0:00:12", "93%"
    if (cut && at >= line.size()) return std::nullopt;  // cut at the bound: maybe partial
    text = line.substr(start, at - start);
  }
  std::optional<MetricValue> value = ParseNumber(text);
  if (!value) return std::nullopt;
  if (IsDigits(text) && ThousandsFollow(line, at)) return std::nullopt;
  if (sep == ':') {
    if (IsDigits(text) && IsSourceLocation(name, line, at)) return std::nullopt;
    if (!EndsColonMetric(line, at)) return std::nullopt;
  }
  *pos = at;
  return Pair{name, *value};
}

// "[12]" at `*pos`: the number, moving `*pos` past it.
std::optional<double> BracketStep(std::string_view line, size_t* pos) {
  if (*pos >= line.size() || line[*pos] != '[') return std::nullopt;
  size_t close = line.substr(*pos, 22).find(']');
  if (close == std::string_view::npos || close == 1) return std::nullopt;
  std::string_view digits = line.substr(*pos + 1, close - 1);
  if (!std::all_of(digits.begin(), digits.end(), IsDigit)) return std::nullopt;
  double step = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), step);
  *pos += close + 1;
  return step;
}

// The piece with ANSI escape sequences (colours, cursor moves) turned into spaces.
std::string WithoutEscapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      out += line[i];
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {  // CSI: parameters, then a final byte
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
    } else {
      ++i;  // a two-byte escape
    }
    out += ' ';
  }
  return out;
}

// The end of a leading RFC 3339 token at `pos` and its time; nullopt when there is none.
std::optional<std::pair<size_t, Time>> TimeToken(std::string_view line, size_t pos) {
  if (pos >= line.size() || !IsDigit(line[pos])) return std::nullopt;
  size_t end = pos;
  while (end < line.size() && !IsSpace(line[end]) && end - pos <= kMaxTimeTokenBytes) ++end;
  if (end - pos > kMaxTimeTokenBytes) return std::nullopt;
  std::optional<Time> t = ParseRfc3339(std::string(line.substr(pos, end - pos)));
  if (!t) return std::nullopt;
  return std::make_pair(end, *t);
}

}  // namespace

std::optional<MetricLine> ParseMetricLine(std::string_view line) {
  bool cut = line.size() > kMaxMetricLineBytes;
  if (cut) line = line.substr(0, kMaxMetricLineBytes);
  std::string unescaped;
  if (line.find('\x1b') != std::string_view::npos) {
    unescaped = WithoutEscapes(line);
    line = unescaped;
  }
  size_t pos = SkipSpaces(line, 0);
  std::optional<Time> time;
  if (std::optional<std::pair<size_t, Time>> t = TimeToken(line, pos)) {
    time = t->second;
    pos = SkipSpaces(line, t->first);
  }
  Collector values;
  if (size_t object = ObjectStart(line, pos); object != std::string_view::npos) {
    if (!AfterAlignedLabel(line, object)) ReadObject(line, object, cut, &values);
    return std::move(values).Finish(std::nullopt, time);
  }
  std::optional<double> bracket_step = BracketStep(line, &pos);
  bool boundary = true;
  while (pos < line.size()) {
    char c = line[pos];
    if (boundary && (IsNameStart(c) || IsQuote(c))) {
      if (std::optional<Pair> pair = ReadPair(line, &pos, cut)) {
        values.Add(pair->name, pair->value);
        boundary = true;
        continue;
      }
    }
    boundary = IsBoundary(c);
    ++pos;
  }
  return std::move(values).Finish(bracket_step, time);
}

std::optional<Time> LeadingTime(std::string_view line) {
  std::optional<std::pair<size_t, Time>> t = TimeToken(line, SkipSpaces(line, 0));
  if (!t) return std::nullopt;
  return t->second;
}

std::vector<std::string_view> SplitOutputLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n' || text[i] == '\r' || text[i] == '\b') {
      if (i > start) lines.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return lines;
}

}  // namespace trainctl::metrics
