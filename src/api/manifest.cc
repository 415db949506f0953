#include "api/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/defaults.h"
#include "api/json_fields.h"
#include "api/mpi_v1alpha2.h"
#include "api/trainjob_resolve.h"
#include "api/validation.h"
#include "api/yaml.h"

namespace trainctl::api {

StatusOr<LoadedJob> PrepareJob(const nlohmann::json& doc, const RuntimeCatalog* runtimes) {
  StatusOr<Job> job = DecodeJob(doc);
  if (!job.ok()) return job.status();
  ValidationResult v = ValidateJob(*job);
  if (!v.errors.empty()) return FieldErrorsToStatus(job->info().name, job->name, v.errors);
  ApplyDefaults(&*job);
  if (runtimes && job->train_job) {
    StatusOr<const TrainingRuntime*> runtime =
        runtimes->Find(job->train_job->runtime_ref, job->namespace_);
    if (!runtime.ok())
      return InvalidError("TrainJob \"" + job->name +
                          "\" is invalid: " + runtime.status().message());
    TRAINCTL_RETURN_IF_ERROR(ResolveTrainJob(**runtime, &*job));
    ApplyDefaults(&*job);  // the groups' replicas and restart policies
  }
  return LoadedJob{std::move(job).value(), std::move(v.warnings)};
}

namespace {

// Why `trainctl run` needs no object of a core kind it skips.
const char* SkipReason(const std::string& kind) {
  if (kind == "PersistentVolume")
    return "a claim's folder on this machine stands in for the volume it would bind";
  if (kind == "Service") return "replicas reach each other on this machine's network";
  if (kind == "Pod") return "trainctl run runs jobs only; run the Pod's container yourself";
  return nullptr;
}

std::string StringField(const nlohmann::json& doc, const char* object, const char* key) {
  return doc.contains(object) ? StringAt(doc[object], key) : "";
}

}  // namespace

StatusOr<std::vector<LoadedJob>> LoadJobsFromText(const std::string& text,
                                                  const std::string& source,
                                                  ManifestExtras* extras) {
  StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(text, source);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return InvalidError(source + ": no job found (the file has no documents)");
  std::vector<LoadedJob> jobs;
  std::string side;  // the side documents, for a file without a job
  auto where_of = [&](size_t i) {
    return source + (docs->size() > 1 ? " (document " + std::to_string(i + 1) + ")" : "");
  };
  std::vector<bool> is_runtime(docs->size(), false);
  if (extras) {  // the file's runtimes first: a TrainJob may come before its runtime
    for (size_t i = 0; i < docs->size(); ++i) {
      if (!IsRuntimeDocument((*docs)[i])) continue;
      is_runtime[i] = true;
      StatusOr<TrainingRuntime> rt = DecodeTrainingRuntime((*docs)[i], where_of(i));
      if (!rt.ok()) return InvalidError(where_of(i) + ": " + rt.status().message());
      side += (side.empty() ? "" : ", ") + rt->kind + " " + rt->name;
      extras->runtimes.Add(std::move(rt).value());
    }
  }
  for (size_t i = 0; i < docs->size(); ++i) {
    const nlohmann::json& doc = (*docs)[i];
    if (is_runtime[i]) continue;
    std::string where = where_of(i);
    bool core = doc.is_object() && doc.contains("apiVersion") && doc["apiVersion"] == "v1" &&
                doc.contains("kind") && doc["kind"].is_string();
    if (extras && core) {
      std::string kind = doc["kind"].get<std::string>();
      std::string name = StringField(doc, "metadata", "name");
      if (kind == "PersistentVolumeClaim" || SkipReason(kind)) {
        if (name.empty())
          return InvalidError(where + ": metadata.name: Required value: a " + kind +
                              " needs a name");
        if (kind == "PersistentVolumeClaim") {
          std::string ns = StringField(doc, "metadata", "namespace");
          extras->claims.push_back({ns.empty() ? "default" : ns, name});
        } else {
          extras->notes.push_back(where + ": " + kind + " " + name +
                                  " skipped: " + SkipReason(kind));
        }
        side += (side.empty() ? "" : ", ") + kind + " " + name;
        continue;
      }
    }
    StatusOr<LoadedJob> job = [&]() -> StatusOr<LoadedJob> {
      if (!extras || !IsMpiV1alpha2(doc))
        return PrepareJob(doc, extras ? &extras->runtimes : nullptr);
      std::string note;
      StatusOr<nlohmann::json> converted = ConvertMpiV1alpha2(doc, &note);
      if (!converted.ok()) return converted.status();
      extras->notes.push_back(where + ": " + note);
      return PrepareJob(*converted);
    }();
    if (!job.ok()) return InvalidError(where + ": " + job.status().message());
    jobs.push_back(std::move(job).value());
  }
  if (jobs.empty()) return InvalidError(source + ": no job found (the file holds " + side + ")");
  return jobs;
}

StatusOr<std::vector<LoadedJob>> LoadJobsFromStream(std::istream& in, const std::string& source,
                                                    ManifestExtras* extras) {
  // One byte past the limit is enough for LoadJobsFromText to refuse it: /dev/zero or a huge
  // file never fills memory.
  std::string text;
  char buf[1 << 16];
  while (text.size() <= kMaxYamlBytes && in) {
    in.read(buf,
            static_cast<std::streamsize>(std::min(sizeof buf, kMaxYamlBytes + 1 - text.size())));
    text.append(buf, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return InvalidError(source + ": cannot read: " + std::strerror(errno));
  if (text.size() > kMaxYamlBytes)
    return InvalidError(source + ": more than " + std::to_string(kMaxYamlBytes) +
                        " bytes: manifests larger than " + std::to_string(kMaxYamlBytes >> 20) +
                        " MiB are refused");
  return LoadJobsFromText(text, source, extras);
}

StatusOr<std::vector<LoadedJob>> LoadJobsFromFile(const std::string& path, ManifestExtras* extras) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidError(path + ": cannot read the file: " + std::strerror(errno));
  return LoadJobsFromStream(in, path, extras);
}

StatusOr<std::vector<TrainingRuntime>> LoadRuntimesFromText(const std::string& text,
                                                            const std::string& source) {
  StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(text, source);
  if (!docs.ok()) return docs.status();
  std::vector<TrainingRuntime> out;
  for (size_t i = 0; i < docs->size(); ++i) {
    std::string where =
        source + (docs->size() > 1 ? " (document " + std::to_string(i + 1) + ")" : "");
    const nlohmann::json& doc = (*docs)[i];
    if (!IsRuntimeDocument(doc))
      return InvalidError(where + ": kind: Unsupported value: \"" + StringAt(doc, "kind") +
                          "\": a runtimes file holds TrainingRuntimes and "
                          "ClusterTrainingRuntimes of " +
                          kTrainerApiVersion);
    StatusOr<TrainingRuntime> rt = DecodeTrainingRuntime(doc, where);
    if (!rt.ok()) return InvalidError(where + ": " + rt.status().message());
    out.push_back(std::move(rt).value());
  }
  return out;
}

StatusOr<std::vector<TrainingRuntime>> LoadRuntimesFromPath(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> files;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      std::string ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json"))
        files.push_back(entry.path());
    }
    if (ec) return InvalidError(path + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<TrainingRuntime> out;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return InvalidError(file + ": cannot read the file: " + std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    while (text.size() <= kMaxYamlBytes && in) {
      in.read(buf, sizeof buf);
      text.append(buf, static_cast<size_t>(in.gcount()));
    }
    if (text.size() > kMaxYamlBytes)
      return InvalidError(file + ": more than " + std::to_string(kMaxYamlBytes) + " bytes");
    StatusOr<std::vector<TrainingRuntime>> runtimes = LoadRuntimesFromText(text, file);
    if (!runtimes.ok()) return runtimes.status();
    for (TrainingRuntime& rt : *runtimes) out.push_back(std::move(rt));
  }
  return out;
}

}  // namespace trainctl::api
