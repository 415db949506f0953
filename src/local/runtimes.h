// The Trainer v2 runtimes a TrainJob run on this machine may name, and the ones installed in the
// state folder:
//
//   built-in    the runtimes trainctl ships (local/builtin_runtimes.h), source "built-in"
//   installed   <state root>/runtimes/*.yaml, written by `trainctl runtimes install`
//   --runtimes  a file or folder given to `trainctl run`
//
// each later one replacing an earlier one of the same kind, namespace and name; the manifest's
// own runtimes are added by the loader after these (api/manifest.h).
//
// LocalRuntimes only reads. InstallRuntimes checks every runtime of FILE|DIR first and then
// writes each one (nothing is written when one is bad). Errors name the file, the document and
// the field path; kInvalid (exit 2), or kIo when the folder cannot be written.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/training_runtime.h"
#include "common/status.h"

namespace trainctl::local {

// <state root>/runtimes
std::string RuntimesFolder(const std::string& state_root);

// The built-in runtimes, then the installed ones, then `extra` (--runtimes) when given.
StatusOr<api::RuntimeCatalog> LocalRuntimes(const std::string& state_root,
                                            const std::optional<std::string>& extra);

// Installs every runtime of `path` (a file or a folder) into RuntimesFolder; one line per
// runtime saying what was installed (or replaced) and where.
StatusOr<std::vector<std::string>> InstallRuntimes(const std::string& state_root,
                                                   const std::string& path);

}  // namespace trainctl::local
