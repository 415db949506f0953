#include "api/checkpoint_notice.h"

#include <charconv>
#include <csignal>

#include "api/annotations.h"

namespace trainctl::api {
namespace {

constexpr int kMaxNoticeSeconds = 86400;

}  // namespace

int NoticeSignalNumber(const std::string& name) {
  if (name == "SIGUSR1") return SIGUSR1;
  if (name == "SIGUSR2") return SIGUSR2;
  if (name == "SIGHUP") return SIGHUP;
  if (name == "SIGINT") return SIGINT;
  return 0;
}

std::optional<NoticePolicy> NoticePolicyOf(const Job& job, FieldErrorList* errors) {
  const nlohmann::json* seconds = AnnotationOf(job, kNoticeSecondsAnnotation);
  const nlohmann::json* signal = AnnotationOf(job, kNoticeSignalAnnotation);
  NoticePolicy policy;
  bool valid = true;
  if (signal) {
    policy.signal_name = AnnotationText(*signal);
    policy.signal = NoticeSignalNumber(policy.signal_name);
    if (policy.signal == 0) {
      valid = false;
      if (errors)
        errors->push_back(NotSupported(AnnotationPath(kNoticeSignalAnnotation), *signal,
                                       {"SIGUSR1", "SIGUSR2", "SIGHUP", "SIGINT"}));
    } else if (!seconds && errors) {
      errors->push_back(Required(AnnotationPath(kNoticeSecondsAnnotation),
                                 "a checkpoint signal needs the notice's length in seconds"));
    }
  }
  if (!seconds) return std::nullopt;
  const std::string text = AnnotationText(*seconds);
  // Digits only: no space, sign or suffix around them (from_chars skips nothing).
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > kMaxNoticeSeconds) {
    if (errors)
      errors->push_back(Invalid(AnnotationPath(kNoticeSecondsAnnotation), *seconds,
                                "expected a whole number of seconds from 1 to 86400"));
    return std::nullopt;
  }
  if (!valid) return std::nullopt;
  policy.seconds = static_cast<int>(value);
  return policy;
}

std::string EncodeNotice(const Notice& notice) {
  nlohmann::json out = {{"reason", notice.reason},
                        {"stopAt", FormatRfc3339(notice.stop_at)},
                        {"attempt", notice.attempt},
                        {"seconds", notice.seconds}};
  return out.dump();
}

std::optional<Notice> DecodeNotice(const std::string& text) {
  if (text.empty()) return std::nullopt;
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return std::nullopt;
  const auto reason = parsed.find("reason");
  const auto stop_at = parsed.find("stopAt");
  if (reason == parsed.end() || !reason->is_string() || stop_at == parsed.end() ||
      !stop_at->is_string())
    return std::nullopt;
  std::optional<Time> at = ParseRfc3339(stop_at->get<std::string>());
  if (!at) return std::nullopt;
  Notice notice;
  notice.reason = reason->get<std::string>();
  notice.stop_at = *at;
  if (auto a = parsed.find("attempt"); a != parsed.end() && a->is_number_integer())
    notice.attempt = a->get<int>();
  if (auto s = parsed.find("seconds"); s != parsed.end() && s->is_number_integer())
    notice.seconds = s->get<int>();
  return notice;
}

bool HasNoticeFinalizer(const nlohmann::json& metadata) {
  if (!metadata.is_object()) return false;
  auto it = metadata.find("finalizers");
  if (it == metadata.end() || !it->is_array()) return false;
  for (const nlohmann::json& f : *it)
    if (f.is_string() && f.get<std::string>() == kNoticeFinalizer) return true;
  return false;
}

bool BeingDeleted(const nlohmann::json& metadata) {
  if (!metadata.is_object()) return false;
  auto it = metadata.find("deletionTimestamp");
  return it != metadata.end() && !it->is_null();
}

nlohmann::json FinalizersWithNotice(const nlohmann::json& metadata, bool add) {
  nlohmann::json out = nlohmann::json::array();
  if (metadata.is_object())
    if (auto it = metadata.find("finalizers"); it != metadata.end() && it->is_array())
      for (const nlohmann::json& f : *it)
        if (!(f.is_string() && f.get<std::string>() == kNoticeFinalizer)) out.push_back(f);
  if (add) out.push_back(kNoticeFinalizer);
  return out;
}

std::string RecordedNoticeText(const Job& job) {
  const nlohmann::json* recorded = AnnotationOf(job, kNoticeAnnotation);
  return recorded ? AnnotationText(*recorded) : std::string();
}

std::optional<Notice> RecordedNotice(const Job& job) {
  return DecodeNotice(RecordedNoticeText(job));
}

}  // namespace trainctl::api
