#include "api/trainer_status.h"

#include <limits>

#include "api/field_error.h"
#include "api/job.h"
#include "api/json_bounds.h"
#include "api/json_fields.h"

namespace trainctl::api {
namespace {

using nlohmann::json;

constexpr const char* kRoot = "trainerStatus";

// An integer within [low, high] (both within int32) at trainerStatus.<key>, or an error.
std::optional<FieldError> ReadInt(const json& object, const char* key, int64_t low, int64_t high,
                                  std::optional<int32_t>* out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  const std::string path = std::string(kRoot) + "." + key;
  if (!it->is_number_integer()) return Invalid(path, *it, "must be an integer");
  const bool too_big =
      it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(high);
  const int64_t value = too_big ? high + 1 : it->get<int64_t>();
  if (value < low || value > high)
    return Invalid(path, *it,
                   "must be between " + std::to_string(low) + " and " + std::to_string(high));
  *out = static_cast<int32_t>(value);
  return std::nullopt;
}

std::optional<FieldError> ReadText(const json& metric, const char* key, const std::string& at,
                                   std::string* out) {
  auto it = metric.find(key);
  const std::string path = at + "." + key;
  if (it == metric.end() || it->is_null()) return Required(path, "a string of 1-64 characters");
  if (!it->is_string()) return Invalid(path, *it, "must be a string");
  const std::string& text = it->get_ref<const std::string&>();
  // Characters, as the CRD's maxLength counts them (JSON text is UTF-8): bytes that do not
  // continue a multi-byte sequence.
  size_t characters = 0;
  for (unsigned char c : text) characters += (c & 0xC0) != 0x80;
  if (characters > kMaxMetricText) {
    size_t cut = 16;  // on a character's first byte: the message stays valid UTF-8
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return Invalid(path, json(text.substr(0, cut) + "…"), "must be 1-64 characters long");
  }
  if (characters == 0) return Invalid(path, json(text), "must be 1-64 characters long");
  *out = text;
  return std::nullopt;
}

}  // namespace

StatusOr<TrainerStatusReport> DecodeTrainerStatusReport(std::string_view body) {
  std::string problem;
  const json doc = ParseJsonWithin(body, JsonLimits{kMaxReportBytes, kMaxYamlDepth}, &problem);
  if (doc.is_discarded())
    return InvalidError("the report is not a JSON object" +
                        (problem.empty() ? std::string() : " (" + problem + ")"));
  if (!doc.is_object()) return InvalidError("the report is not a JSON object");
  TrainerStatusReport report;
  auto root = doc.find(kRoot);
  if (root == doc.end() || root->is_null()) return report;
  if (!root->is_object())
    return InvalidError(Invalid(kRoot, *root, "must be an object").ToString());

  FieldErrorList errors;
  TrainerStatus status;
  if (auto e = ReadInt(*root, "progressPercentage", 0, 100, &status.progress_percentage))
    errors.push_back(*e);
  if (auto e = ReadInt(*root, "estimatedRemainingSeconds", 0, std::numeric_limits<int32_t>::max(),
                       &status.estimated_remaining_seconds))
    errors.push_back(*e);
  if (auto metrics = root->find("metrics"); metrics != root->end() && !metrics->is_null()) {
    if (!metrics->is_array()) {
      errors.push_back(Invalid(std::string(kRoot) + ".metrics", *metrics, "must be a list"));
    } else if (metrics->size() > kMaxReportMetrics) {
      errors.push_back(
          Invalid(std::string(kRoot) + ".metrics", metrics->size(), "must have at most 256 items"));
    } else {
      for (size_t i = 0; i < metrics->size(); ++i) {
        const json& m = (*metrics)[i];
        const std::string at = std::string(kRoot) + ".metrics[" + std::to_string(i) + "]";
        if (!m.is_object()) {
          errors.push_back(Invalid(at, m, "must be an object with name and value"));
          continue;
        }
        TrainerMetric metric;
        if (auto e = ReadText(m, "name", at, &metric.name)) errors.push_back(*e);
        if (auto e = ReadText(m, "value", at, &metric.value)) errors.push_back(*e);
        status.metrics.push_back(std::move(metric));
      }
    }
  }
  auto when = root->find("lastUpdatedTime");
  const std::string when_path = std::string(kRoot) + ".lastUpdatedTime";
  if (when == root->end() || when->is_null()) {
    errors.push_back(
        Required(when_path, "lastUpdatedTime is required when trainerStatus is present"));
  } else if (!when->is_string()) {
    errors.push_back(Invalid(when_path, *when, "must be an RFC 3339 time"));
  } else if (std::optional<Time> t = ParseRfc3339(when->get<std::string>()); !t) {
    errors.push_back(Invalid(when_path, *when, "must be an RFC 3339 time"));
  } else {
    status.last_updated_time = *t;
  }
  if (!errors.empty()) return InvalidError(JoinFieldErrors(errors));
  report.status = std::move(status);
  return report;
}

json TrainerStatusJson(const TrainerStatus& status) {
  json out = json::object();
  if (status.progress_percentage) out["progressPercentage"] = *status.progress_percentage;
  if (status.estimated_remaining_seconds)
    out["estimatedRemainingSeconds"] = *status.estimated_remaining_seconds;
  if (!status.metrics.empty()) {
    json list = json::array();
    for (const TrainerMetric& m : status.metrics)
      list.push_back({{"name", m.name}, {"value", m.value}});
    out["metrics"] = std::move(list);
  }
  out["lastUpdatedTime"] = FormatRfc3339(status.last_updated_time);
  return out;
}

StatusTarget TrainJobStatusTarget(const std::string& ns, const std::string& name) {
  return {"trainer.kubeflow.org/v1alpha1", "trainjobs", ns, name};
}

StatusTarget StatusTargetOf(Kind kind, const std::string& ns, const std::string& name) {
  if (kind == Kind::kTrainJob) return TrainJobStatusTarget(ns, name);
  return {kApiVersion, Info(kind).plural, ns, name};
}

std::string StatusAudience(const StatusTarget& t) {
  return t.group_version + "/namespaces/" + t.namespace_ + "/" + t.plural + "/" + t.name +
         "/status";
}

std::string StatusPath(const StatusTarget& target) { return "/apis/" + StatusAudience(target); }

std::optional<StatusTarget> ParseStatusPath(std::string_view path) {
  // /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>/status
  std::vector<std::string_view> parts;
  if (path.substr(0, 6) != "/apis/") return std::nullopt;
  path.remove_prefix(6);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
    if (path.empty()) return std::nullopt;  // a trailing slash
  }
  if (parts.size() != 7 || parts[2] != "namespaces" || parts[6] != "status") return std::nullopt;
  StatusTarget t{std::string(parts[0]) + "/" + std::string(parts[1]), std::string(parts[4]),
                 std::string(parts[3]), std::string(parts[5])};
  bool served = t.group_version == "trainer.kubeflow.org/v1alpha1" && t.plural == "trainjobs";
  if (t.group_version == kApiVersion)
    for (const KindInfo& k : AllKinds())
      served = served || (k.kind != Kind::kTrainJob && t.plural == k.plural);
  // Namespaces are DNS labels; job names subdomains (the CRDs narrow them further).
  if (!served || t.namespace_.empty() || t.namespace_.size() > 63 ||
      t.namespace_.find('.') != std::string::npos || !IsDnsSubdomain(t.namespace_) ||
      !IsDnsSubdomain(t.name))
    return std::nullopt;
  return t;
}

void ShowTrainerStatusAnnotation(json* job) {
  const json& annotations = ChildAt(ChildAt(*job, "metadata"), "annotations");
  const json& kept = ChildAt(annotations, kTrainerStatusAnnotation);
  if (!kept.is_string() || StringAt(*job, "kind") == "TrainJob") return;
  std::string problem;
  json report = ParseJsonWithin(kept.get_ref<const std::string&>(),
                                JsonLimits{kMaxReportBytes, kMaxYamlDepth}, &problem);
  if (!report.is_object()) return;
  json& status = (*job)["status"];
  if (status.is_null()) status = json::object();
  if (status.is_object()) status["trainerStatus"] = std::move(report);
}

std::string TrainerStatusAudience(const std::string& ns, const std::string& name) {
  return StatusAudience(TrainJobStatusTarget(ns, name));
}

std::string TrainerStatusPath(const std::string& ns, const std::string& name) {
  return StatusPath(TrainJobStatusTarget(ns, name));
}

}  // namespace trainctl::api
