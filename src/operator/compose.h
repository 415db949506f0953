// The operator's composition root: from OperatorOptions (run.cc maps the flags to them) it
// makes the API clients (the controller's; the events' and the history's log reads; the
// dashboard's two) and the parts — event recorder, job history, dashboard, metrics and health
// servers, webhooks, and the controller, the one part only the leader runs — and adds each to
// a Manager (operator/manager.h) as a Runnable, in start-up order. A second API group is one
// more reconciler added here, and one more admission registration in WebhookService.
//
// RunComposedOperator blocks until `*stop` (or a lost lease) and returns the Manager's exit
// status; 2 when a client, a probe of the served kinds or a part cannot start (logged).
#pragma once

#include <atomic>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"
#include "operator/controller.h"
#include "admission/webhook_certs.h"

namespace trainctl::op {

struct OperatorOptions {
  kube::RestConfig config;
  kube::ClientOptions client;
  kube::RecorderBudget events;       // the events' budget (--event-qps, --event-burst)
  ControllerOptions controller;      // kinds: the enabled ones; probed against the server
  std::string gang_scheduler_name;   // as given (for messages)
  std::string metrics_bind_address;  // "0": off
  std::string health_probe_bind_address;
  int webhook_port = 0;  // 0: no webhook server
  std::string webhook_bind_host;
  admission::WebhookCertOptions webhook_certs;
  int status_port = 0;     // 0: no runtime status endpoint (needs the webhook server)
  std::string status_url;  // what trainer pods are told: "https://<service>.<ns>.svc:<port>"
  bool leader_elect = false;
  kube::LeaderElectionConfig leader_election;
  std::string host;                          // this machine's name, for events
  std::string history_path;                  // the job history's SQLite file; "" off
  std::string dashboard_bind_address = "0";  // the in-cluster dashboard; "0" off
  std::string dashboard_user_header;         // a trusted proxy's user header; "" off
};

int RunComposedOperator(const OperatorOptions& options, std::atomic<bool>* stop);

}  // namespace trainctl::op
