#include "jobs/history_reader.h"

#include "api/json_bounds.h"
#include "kube/config_loader.h"
#include "kube/connect.h"
#include "kube/token_source.h"

namespace trainctl::jobs {

using nlohmann::json;

StatusOr<HistoryPage> StoreHistoryReader::List(const history::Query& query) {
  HistoryPage page;
  TRAINCTL_ASSIGN_OR_RETURN(page.rows, store_->List(query));
  StatusOr<size_t> total = store_->Count(query);
  page.total = total.ok() ? *total : page.rows.size();
  return page;
}

StatusOr<std::optional<json>> StoreHistoryReader::Get(const std::string& uid) {
  return store_->Get(uid);
}

StatusOr<std::string> ServiceProxyPrefix(const std::string& service) {
  size_t slash = service.find('/');
  size_t colon = service.rfind(':');
  if (slash == std::string::npos || colon == std::string::npos || colon < slash || slash == 0 ||
      colon == slash + 1 || colon + 1 == service.size() ||
      service.find_first_of("?#% ") != std::string::npos)
    return InvalidError("--dashboard-service \"" + service +
                        "\": expected NAMESPACE/NAME:PORT, e.g. "
                        "trainctl-system/trainctl-dashboard:dashboard");
  return "/api/v1/namespaces/" + service.substr(0, slash) +
         "/services/http:" + service.substr(slash + 1, colon - slash - 1) + ":" +
         service.substr(colon + 1) + "/proxy";
}

std::string HistoryListTarget(const history::Query& query) {
  return "/api/v1/history" + kube::QueryString({{"limit", std::to_string(query.limit)},
                                                {"offset", std::to_string(query.offset)},
                                                {"ns", query.namespace_.value_or("")},
                                                {"kind", query.kind},
                                                {"name", query.name},
                                                {"q", query.text}});
}

StatusOr<HistoryPage> ParseHistoryPage(const json& answer) {
  if (!answer.is_object() || !answer.contains("items") || !answer["items"].is_array())
    return InvalidError("the operator's answer has no \"items\" list");
  HistoryPage page;
  for (const json& row : answer["items"]) page.rows.push_back(history::RowFromJson(row));
  page.total = answer.contains("total") && answer["total"].is_number_unsigned()
                   ? answer["total"].get<size_t>()
                   : page.rows.size();
  return page;
}

StatusOr<std::unique_ptr<OperatorHistoryReader>> OperatorHistoryReader::Open(
    const OperatorTarget& target, const Clock& clock) {
  // At an address with a token given, no kubeconfig is needed.
  StatusOr<kube::RestConfig> loaded = kube::LoadClientConfig(target.kubeconfig);
  if (!loaded.ok() && (target.address.empty() || target.token.empty())) return loaded.status();
  kube::RestConfig config = loaded.ok() ? *loaded : kube::RestConfig{};
  std::string token = target.token;
  if (token.empty()) {
    StatusOr<kube::AuthCredentials> credentials = kube::NewTokenSource(config, &clock)->Get();
    if (credentials.ok()) token = credentials->bearer_token;
  }
  if (token.empty())
    return Status(StatusCode::kUnauthorized,
                  "the operator's history answers to a Kubernetes token, and this kubeconfig "
                  "has none (it signs in with a client certificate, which cannot be passed on): "
                  "give one with --token $(kubectl create token NAME -n NAMESPACE), for a "
                  "ServiceAccount that may list the jobs, or read a copy of the history file "
                  "with --file PATH");
  if (!target.address.empty()) {
    kube::RestConfig direct;
    direct.server = target.address;
    direct.bearer_token = token;
    direct.ca_pem = config.ca_pem;  // an https address is checked against the cluster's CA
    StatusOr<std::unique_ptr<kube::Client>> client = kube::Connect(direct, &clock);
    if (!client.ok())
      return Status(client.status().code(),
                    "--dashboard \"" + target.address + "\"" +
                        (client.status().message().rfind(": ", 0) == 0 ? "" : ": ") +
                        client.status().message());
    return std::make_unique<OperatorHistoryReader>(
        std::move(*client), "", std::vector<std::pair<std::string, std::string>>{},
        "the dashboard at " + target.address);
  }
  TRAINCTL_ASSIGN_OR_RETURN(std::string prefix, ServiceProxyPrefix(target.service));
  TRAINCTL_ASSIGN_OR_RETURN(std::unique_ptr<kube::Client> client, kube::Connect(config, &clock));
  return std::make_unique<OperatorHistoryReader>(
      std::move(client), prefix,
      std::vector<std::pair<std::string, std::string>>{{"X-Trainctl-Token", token}},
      "the operator's dashboard (service " + target.service + " on " + config.server + ")");
}

StatusOr<HistoryPage> OperatorHistoryReader::List(const history::Query& query) {
  StatusOr<std::string> body = client_->GetRaw(prefix_ + HistoryListTarget(query), headers_);
  if (!body.ok()) return Status(body.status().code(), Where() + ": " + body.status().message());
  json answer = api::ParseJsonWithin(*body, api::kApiJsonLimits);
  StatusOr<HistoryPage> page = ParseHistoryPage(answer);
  if (!page.ok()) return Status(page.status().code(), Where() + ": " + page.status().message());
  return page;
}

StatusOr<std::optional<json>> OperatorHistoryReader::Get(const std::string& uid) {
  StatusOr<std::string> body = client_->GetRaw(
      prefix_ + "/api/v1/history/record" + kube::QueryString({{"uid", uid}}), headers_);
  if (!body.ok() && body.status().code() == StatusCode::kNotFound) return std::optional<json>();
  if (!body.ok()) return Status(body.status().code(), Where() + ": " + body.status().message());
  json record = api::ParseJsonWithin(*body, api::kApiJsonLimits);
  if (!record.is_object()) return IoError(Where() + ": the record is not a JSON object");
  return std::optional<json>(std::move(record));
}

}  // namespace trainctl::jobs
