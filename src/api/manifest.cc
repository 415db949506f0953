#include "api/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "api/defaults.h"
#include "api/json_fields.h"
#include "api/mpi_v1alpha2.h"
#include "api/validation.h"
#include "api/yaml.h"

namespace trainctl::api {

StatusOr<LoadedJob> PrepareJob(const nlohmann::json& doc) {
  StatusOr<Job> job = DecodeJob(doc);
  if (!job.ok()) return job.status();
  ValidationResult v = ValidateJob(*job);
  if (!v.errors.empty()) return FieldErrorsToStatus(job->info().name, job->name, v.errors);
  ApplyDefaults(&*job);
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
  for (size_t i = 0; i < docs->size(); ++i) {
    const nlohmann::json& doc = (*docs)[i];
    std::string where =
        source + (docs->size() > 1 ? " (document " + std::to_string(i + 1) + ")" : "");
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
      if (!extras || !IsMpiV1alpha2(doc)) return PrepareJob(doc);
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

}  // namespace trainctl::api
