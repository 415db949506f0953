#include "local/local_config.h"

#include <filesystem>
#include <sstream>

#include "local/state_store.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;

bool EnvName(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

std::string Absolute(const std::string& path, const std::string& cwd) {
  fs::path p(path);
  return (p.is_absolute() ? p : fs::path(cwd) / p).lexically_normal().string();
}

// Every regular file directly in `dir` (hidden ones and `..data` links of a mounted ConfigMap
// excepted), by file name.
StatusOr<KeyValues> ReadKeys(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return InvalidError(flag + ": \"" + dir + "\" is not a folder (each file in it is a key)");
  KeyValues keys;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || !e.is_regular_file()) continue;
    StatusOr<std::string> content = ReadFile(e.path().string());
    if (!content.ok()) return InvalidError(flag + ": " + content.status().message());
    keys[name] = *content;
  }
  if (ec) return InvalidError(flag + ": cannot list \"" + dir + "\": " + ec.message());
  return keys;
}

}  // namespace

StatusOr<std::pair<std::string, std::string>> ParseNameDir(const std::string& text,
                                                           const std::string& flag) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return InvalidError(flag + ": \"" + text + "\": expected NAME=FOLDER");
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> ParseEnvFile(const std::string& text,
                                                                        const std::string& source) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    line = line.substr(start);
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    size_t eq = line.find('=');
    std::string name = eq == std::string::npos ? line : line.substr(0, eq);
    if (eq == std::string::npos || !EnvName(name))
      return InvalidError(source + ":" + std::to_string(number) +
                          ": expected NAME=VALUE with NAME made of letters, digits, '_', '-' "
                          "or '.'");
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0])
      value = value.substr(1, value.size() - 2);
    out.emplace_back(name, value);
  }
  return out;
}

StatusOr<LocalConfig> ReadLocalConfig(const LocalConfigFlags& flags, const std::string& cwd) {
  LocalConfig config;
  // --configmap and --secret: NAME=FOLDER, a file per key.
  auto read_objects = [&](const std::vector<std::string>& given, const std::string& flag,
                          std::map<std::string, KeyValues>* into) -> Status {
    for (const std::string& f : given) {
      StatusOr<std::pair<std::string, std::string>> nd = ParseNameDir(f, flag);
      if (!nd.ok()) return nd.status();
      StatusOr<KeyValues> keys = ReadKeys(Absolute(nd->second, cwd), flag + " " + nd->first);
      if (!keys.ok()) return keys.status();
      (*into)[nd->first] = std::move(keys).value();
    }
    return Status::Ok();
  };
  TRAINCTL_RETURN_IF_ERROR(read_objects(flags.config_maps, "--configmap", &config.config_maps));
  TRAINCTL_RETURN_IF_ERROR(read_objects(flags.secrets, "--secret", &config.secrets));
  for (const std::string& f : flags.volumes) {
    StatusOr<std::pair<std::string, std::string>> nd = ParseNameDir(f, "--volume");
    if (!nd.ok()) return nd.status();
    std::string dir = Absolute(nd->second, cwd);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return InvalidError("--volume " + nd->first + ": \"" + dir + "\" is not a folder");
    config.volume_dirs[nd->first] = dir;
  }
  for (const std::string& f : flags.env_files) {
    std::string path = Absolute(f, cwd);
    StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return InvalidError("--env-file: " + text.status().message());
    StatusOr<std::vector<std::pair<std::string, std::string>>> vars = ParseEnvFile(*text, f);
    if (!vars.ok()) return InvalidError("--env-file " + vars.status().message());
    config.env_files.insert(config.env_files.end(), vars->begin(), vars->end());
  }
  return config;
}

}  // namespace trainctl::local
