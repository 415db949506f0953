#include "api/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "api/defaults.h"
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

StatusOr<std::vector<LoadedJob>> LoadJobsFromText(const std::string& text,
                                                  const std::string& source) {
  StatusOr<std::vector<nlohmann::json>> docs = ParseYamlDocuments(text, source);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return InvalidError(source + ": no job found (the file has no documents)");
  std::vector<LoadedJob> jobs;
  for (size_t i = 0; i < docs->size(); ++i) {
    StatusOr<LoadedJob> job = PrepareJob((*docs)[i]);
    if (!job.ok()) {
      std::string where =
          source + (docs->size() > 1 ? " (document " + std::to_string(i + 1) + ")" : "");
      return InvalidError(where + ": " + job.status().message());
    }
    jobs.push_back(std::move(job).value());
  }
  return jobs;
}

StatusOr<std::vector<LoadedJob>> LoadJobsFromStream(std::istream& in, const std::string& source) {
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
  return LoadJobsFromText(text, source);
}

StatusOr<std::vector<LoadedJob>> LoadJobsFromFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidError(path + ": cannot read the file: " + std::strerror(errno));
  return LoadJobsFromStream(in, path);
}

}  // namespace trainctl::api
