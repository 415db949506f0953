// Where `trainctl history` reads finished jobs from (docs/history.md):
//   - StoreHistoryReader: a history file: this machine's, or a copy of the operator's.
//   - OperatorHistoryReader: the operator's history through its dashboard's read API
//     (GET /api/v1/history, /api/v1/history/record; ui/dashboard.h), which answers each user
//     with the rows and records RBAC lets them read. It is reached through the API server's
//     proxy to the dashboard's Service (the default: nothing to open by hand) or at an address
//     such as a `kubectl port-forward`.
//
// Who the operator sees: a Kubernetes token, checked there with a TokenReview. Through the API
// server's proxy the Authorization header does not reach the Service (the API server keeps it),
// so the token goes in X-Trainctl-Token; at an address it is a bearer token. The token is the
// one given (--token), else the kubeconfig's; a kubeconfig that signs in with a client
// certificate only has none, and the error says what to do.
//
// The pure parts (targets, paths, answers) are separate from the readers, which do the I/O.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "history/store.h"
#include "kube/client.h"

namespace trainctl::jobs {

struct HistoryPage {
  std::vector<history::Row> rows;
  size_t total = 0;  // how many match (limit and offset aside)
};

class HistoryReader {
 public:
  virtual ~HistoryReader() = default;
  virtual StatusOr<HistoryPage> List(const history::Query& query) = 0;
  // The record with this uid; nullopt when there is none.
  virtual StatusOr<std::optional<nlohmann::json>> Get(const std::string& uid) = 0;
  // For messages: the file, or the operator's address.
  virtual std::string Where() const = 0;
};

class StoreHistoryReader final : public HistoryReader {
 public:
  explicit StoreHistoryReader(history::HistoryStore* store) : store_(store) {}
  StatusOr<HistoryPage> List(const history::Query& query) override;
  StatusOr<std::optional<nlohmann::json>> Get(const std::string& uid) override;
  std::string Where() const override { return store_->path(); }

 private:
  history::HistoryStore* store_;
};

// Where the operator's dashboard is.
struct OperatorTarget {
  std::string kubeconfig;  // "" the usual lookup
  // "NAMESPACE/NAME:PORT" of its Service, reached through the API server's proxy.
  std::string service = "trainctl-system/trainctl-dashboard:dashboard";
  std::string address;  // "http(s)://host:port": reach it there instead
  std::string token;    // "" the kubeconfig's
};

// "/api/v1/namespaces/NS/services/http:NAME:PORT/proxy"; kInvalid when `service` is not
// NAMESPACE/NAME:PORT (the message names --dashboard-service and the form expected).
StatusOr<std::string> ServiceProxyPrefix(const std::string& service);
// "/api/v1/history?limit=…&offset=…[&ns=…][&kind=…][&name=…][&q=…]" (values URL-encoded).
std::string HistoryListTarget(const history::Query& query);
// {"items": [history::RowJson…], "total": N} → a page; kInvalid when it is not that shape.
StatusOr<HistoryPage> ParseHistoryPage(const nlohmann::json& answer);

class OperatorHistoryReader final : public HistoryReader {
 public:
  // `prefix` goes before every path ("" at an address); `headers` go with every request.
  OperatorHistoryReader(std::unique_ptr<kube::Client> client, std::string prefix,
                        std::vector<std::pair<std::string, std::string>> headers, std::string where)
      : client_(std::move(client)),
        prefix_(std::move(prefix)),
        headers_(std::move(headers)),
        where_(std::move(where)) {}
  // Loads the configuration, finds the token and connects; the error says what is missing.
  // `clock` must outlive the reader.
  static StatusOr<std::unique_ptr<OperatorHistoryReader>> Open(const OperatorTarget& target,
                                                               const Clock& clock);

  StatusOr<HistoryPage> List(const history::Query& query) override;
  StatusOr<std::optional<nlohmann::json>> Get(const std::string& uid) override;
  std::string Where() const override { return where_; }

 private:
  std::unique_ptr<kube::Client> client_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::string where_;
};

}  // namespace trainctl::jobs
