// Loading jobs from a manifest file: read, parse YAML/JSON (multi-document), decode, validate
// and default every document.
//
// Errors name the file; YAML syntax errors also the line and column, validation errors every
// field path (all of them, not just the first). Performs file I/O; thread-safe.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/training_runtime.h"
#include "common/status.h"

namespace trainctl::api {

struct LoadedJob {
  Job job;                            // validated and defaulted
  std::vector<std::string> warnings;  // validation warnings (deprecated fields)
};

// What a manifest holds besides jobs, for `trainctl run` (which runs a file written for a
// cluster): core v1 PersistentVolumeClaims, whose folders it makes, and one note for each
// PersistentVolume, Service and Pod it skips and for each MPIJob of kubeflow.org/v1alpha2 it
// converts (api/mpi_v1alpha2.h). Without it (null) those documents are errors.
struct ClaimDocument {
  std::string namespace_;  // "default" when unset
  std::string name;
};
// A TrainJob (Trainer v2) is resolved against `runtimes`: those given before the load (the
// built-in ones, installed ones, --runtimes) and the file's own TrainingRuntimes and
// ClusterTrainingRuntimes, which the load adds (replacing one of the same kind and name).
struct ManifestExtras {
  std::vector<ClaimDocument> claims;
  std::vector<std::string> notes;  // "<source> (document 2): Service svc skipped: …"
  RuntimeCatalog runtimes;
};

// Parses `text` whose origin is `source` (a file name in messages).
StatusOr<std::vector<LoadedJob>> LoadJobsFromText(const std::string& text,
                                                  const std::string& source,
                                                  ManifestExtras* extras = nullptr);
StatusOr<std::vector<LoadedJob>> LoadJobsFromFile(const std::string& path,
                                                  ManifestExtras* extras = nullptr);
// Reads at most kMaxYamlBytes + 1 bytes of `in` (stdin), then as LoadJobsFromText.
StatusOr<std::vector<LoadedJob>> LoadJobsFromStream(std::istream& in, const std::string& source,
                                                    ManifestExtras* extras = nullptr);

// Decode + validate + default one document (used by the loader and by API-server paths). A
// TrainJob is then resolved against `runtimes` when given (api/trainjob_resolve.h); without,
// it stays unresolved (no replica groups).
StatusOr<LoadedJob> PrepareJob(const nlohmann::json& doc, const RuntimeCatalog* runtimes = nullptr);

// Every TrainingRuntime and ClusterTrainingRuntime of a file (or a folder's *.yaml, *.yml and
// *.json files, in name order), decoded and checked; anything else in them is an error naming
// the file and document. For `--runtimes` and `trainctl runtimes install`.
StatusOr<std::vector<TrainingRuntime>> LoadRuntimesFromPath(const std::string& path);
StatusOr<std::vector<TrainingRuntime>> LoadRuntimesFromText(const std::string& text,
                                                            const std::string& source);

}  // namespace trainctl::api
