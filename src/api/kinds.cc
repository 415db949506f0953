#include "api/kinds.h"

#include <cctype>

#include "api/kind_plugin.h"

namespace trainctl::api {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo> kKinds = [] {
    std::vector<KindInfo> out;
    for (const KindPlugin* plugin : AllPlugins()) out.push_back(plugin->info());
    return out;
  }();
  return kKinds;
}

const KindInfo& Info(Kind kind) { return PluginFor(kind).info(); }

std::optional<Kind> KindFromName(std::string_view name) {
  for (const KindInfo& k : AllKinds())
    if (name == k.name) return k.kind;
  return std::nullopt;
}

std::optional<Kind> KindFromCliName(std::string_view name) {
  std::string lower = ToLower(name);
  for (const KindInfo& k : AllKinds()) {
    if (lower == ToLower(k.name) || lower == k.plural || (*k.short_name && lower == k.short_name))
      return k.kind;
  }
  return std::nullopt;
}

}  // namespace trainctl::api
