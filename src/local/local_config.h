// What stands in, on this machine, for the cluster objects a pod template refers to: ConfigMaps
// and Secrets given as folders (`trainctl run --configmap NAME=DIR --secret NAME=DIR`: each
// file is a key, its content the value, as `kubectl create configmap --from-file=DIR` makes
// them), any volume given as a folder (`--volume NAME=DIR`), and env files (`--env-file FILE`:
// KEY=VALUE lines, `#` comments, applied to every replica after the shell's env).
//
// ParseEnvFile and ParseNameDir are pure; ReadLocalConfig reads the files.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trainctl::local {

using KeyValues = std::map<std::string, std::string>;

struct LocalConfig {
  std::map<std::string, KeyValues> config_maps;  // name → key → value
  std::map<std::string, KeyValues> secrets;
  std::map<std::string, std::string> volume_dirs;              // volume name → folder
  std::vector<std::pair<std::string, std::string>> env_files;  // in order, later wins
  // Where this job's namespace keeps its PVC folders (ClaimFolder's parent, local/volumes.h);
  // empty: persistentVolumeClaim volumes are refused.
  std::string claims_dir;
};

struct LocalConfigFlags {
  std::vector<std::string> config_maps;  // "NAME=DIR"
  std::vector<std::string> secrets;      // "NAME=DIR"
  std::vector<std::string> volumes;      // "NAME=DIR"
  std::vector<std::string> env_files;    // paths
};

// "NAME=DIR" → {NAME, DIR}; kInvalid names `flag` and says what was expected.
StatusOr<std::pair<std::string, std::string>> ParseNameDir(const std::string& text,
                                                           const std::string& flag);

// KEY=VALUE lines; blank lines and lines starting with '#' are skipped; `export ` is allowed;
// a value in matching single or double quotes loses them. kInvalid names `source:line`.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseEnvFile(const std::string& text,
                                                                        const std::string& source);

// Reads every folder and file the flags name (relative paths against `cwd`). Errors name the
// flag and the path.
StatusOr<LocalConfig> ReadLocalConfig(const LocalConfigFlags& flags, const std::string& cwd);

}  // namespace trainctl::local
