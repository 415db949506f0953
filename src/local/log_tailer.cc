#include "local/log_tailer.h"

#include <algorithm>
#include <fstream>

namespace trainctl::local {

size_t LogTailer::Poll(const std::string& key, const std::string& path,
                       const std::function<void(const std::string&)>& on_line, bool flush) {
  State& st = files_[key];
  size_t gained = 0;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    in.seekg(0, std::ios::end);
    long long size = in.tellg();
    if (size < st.offset) st.offset = 0;  // truncated or replaced
    if (size > st.offset) {
      in.seekg(st.offset);
      std::string chunk(static_cast<size_t>(size - st.offset), '\0');
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      chunk.resize(static_cast<size_t>(in.gcount()));
      st.offset += static_cast<long long>(chunk.size());
      gained = chunk.size();
      st.partial += chunk;
    }
  }
  size_t start = 0;
  for (size_t nl = st.partial.find('\n', st.scanned); nl != std::string::npos;
       nl = st.partial.find('\n', start)) {
    std::string line = st.partial.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    on_line(line);
    start = nl + 1;
  }
  st.partial.erase(0, start);
  st.scanned = st.partial.size();
  if (st.partial.size() > kMaxPartialLineBytes) {
    size_t cr = st.partial.rfind('\r');
    size_t cut = cr == std::string::npos || cr == 0 ? st.partial.size() : cr;
    on_line(st.partial.substr(0, cut));
    st.partial.erase(0, cut);
    st.scanned = st.partial.size();
  }
  if (flush && !st.partial.empty()) {
    on_line(st.partial);
    st.partial.clear();
    st.scanned = 0;
  }
  return gained;
}

std::string ReadLogTail(const std::string& path, size_t max_bytes, long long from) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  long long size = in.tellg();
  if (size <= 0 || from >= size) return "";
  from = std::max(0LL, from);
  long long start = size - from > static_cast<long long>(max_bytes) ? size - max_bytes : from;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  if (start > from) {
    size_t newline = tail.find('\n');
    if (newline != std::string::npos && newline + 1 < tail.size()) tail.erase(0, newline + 1);
  }
  return tail;
}

}  // namespace trainctl::local
