#include "api/torchrun_report.h"

#include <charconv>
#include <limits>

namespace trainctl::api {
namespace {

constexpr size_t kMaxLineBytes = 4096;

// Reads `prefix` then a whole decimal number (one optional '-', then digits: a signal's exit
// code is negative) at `*pos` of `text`; advances past both.
template <typename Int>
bool ReadField(std::string_view text, std::string_view prefix, size_t* pos, Int* out) {
  if (text.substr(*pos, prefix.size()) != prefix) return false;
  const char* first = text.data() + *pos + prefix.size();
  const char* last = text.data() + text.size();
  const char* digits = first != last && *first == '-' ? first + 1 : first;
  if (digits == last || *digits < '0' || *digits > '9') return false;
  auto [end, ec] = std::from_chars(first, last, *out);  // parses the sign itself
  if (ec != std::errc()) return false;
  *pos = static_cast<size_t>(end - text.data());
  return true;
}

std::optional<int> PlainNumber(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value < 0)
    return std::nullopt;
  return value;
}

}  // namespace

std::optional<TorchrunWorkerExit> ParseTorchrunWorkerExit(std::string_view line) {
  // The report ends its line; what comes before it may be a sibling's unfinished progress bar.
  if (line.size() > kMaxLineBytes) line = line.substr(line.size() - kMaxLineBytes);
  constexpr std::string_view kHead = "failed (exitcode: ";
  for (size_t at = line.find(kHead); at != std::string_view::npos; at = line.find(kHead, at + 1)) {
    TorchrunWorkerExit out;
    size_t pos = at;
    if (!ReadField(line, kHead, &pos, &out.exit_code)) continue;
    if (!ReadField(line, ") local_rank: ", &pos, &out.local_rank) || out.local_rank < 0) continue;
    if (!ReadField(line, " (pid: ", &pos, &out.pid) || out.pid <= 0) continue;
    std::string_view rest = line.substr(pos);
    if (rest.starts_with(") of binary: ") || rest.starts_with(") of fn: ")) return out;
  }
  return std::nullopt;
}

std::optional<int> TorchrunGlobalRank(std::string_view node_rank, std::string_view nproc_per_node,
                                      std::string_view command_line, int local_rank) {
  if (command_line.find("--nproc-per-node") != std::string_view::npos ||
      command_line.find("--nproc_per_node") != std::string_view::npos)
    return std::nullopt;
  std::optional<int> node = PlainNumber(node_rank);
  std::optional<int> nproc = nproc_per_node.empty() ? 1 : PlainNumber(nproc_per_node);
  if (!node || !nproc || *nproc <= 0 || local_rank < 0 || local_rank >= *nproc) return std::nullopt;
  if (*node > (std::numeric_limits<int>::max() - local_rank) / *nproc) return std::nullopt;
  return *node * *nproc + local_rank;
}

bool TorchrunMayRestartWorkers(std::string_view max_restarts, std::string_view command_line) {
  if (command_line.find("--max-restarts") != std::string_view::npos ||
      command_line.find("--max_restarts") != std::string_view::npos)
    return true;
  if (max_restarts.empty()) return false;
  std::optional<int> count = PlainNumber(max_restarts);
  return !count || *count > 0;
}

}  // namespace trainctl::api
