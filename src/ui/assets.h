// The dashboard's files (src/ui/assets/: the page, its script and style, and the vendored
// uPlot with its licence), compiled into the binary by src/ui/embed_assets.cmake.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trainctl::ui {

struct Asset {
  const char* path;  // "/index.html", "/third_party/uplot/uPlot.iife.min.js"
  const char* content_type;
  const unsigned char* data;
  size_t size;
  const char* etag;  // quoted, from the content's SHA-256
};

const std::vector<Asset>& Assets();
// nullptr when there is none; "/" is "/index.html".
const Asset* FindAsset(const std::string& path);

}  // namespace trainctl::ui
