// Manager: owns the running operator — API clients, event recorder, metrics, the Controller,
// the metrics/health servers, the admission webhook (certificates kept in a Secret, renewed and
// re-injected by a background loop) and Lease leader election — and their start-up order and
// shutdown. `trainctl operator` (run.cc) only maps flags to ManagerOptions.
//
// Run() blocks until `*stop` becomes true (a signal) or the leader lease is lost, then stops
// everything in reverse order: workers drain, events are flushed, the lease is released.
// Exit status: 0 stopped, 1 lost the lease, 2 could not start (the reason is logged).
// Not copyable; one Manager per process.
#pragma once

#include <atomic>
#include <string>

#include "kube/client.h"
#include "kube/config.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"
#include "operator/controller.h"
#include "operator/webhook_certs.h"

namespace trainctl::op {

struct ManagerOptions {
  kube::RestConfig config;
  kube::ClientOptions client;
  kube::RecorderBudget events;       // the events' budget (--event-qps, --event-burst)
  ControllerOptions controller;      // kinds: the enabled ones; probed against the server
  std::string gang_scheduler_name;   // as given (for messages)
  std::string metrics_bind_address;  // "0": off
  std::string health_probe_bind_address;
  int webhook_port = 0;  // 0: no webhook server
  std::string webhook_bind_host;
  WebhookCertOptions webhook_certs;
  bool leader_elect = false;
  kube::LeaderElectionConfig leader_election;
  std::string host;                          // this machine's name, for events
  std::string history_path;                  // the job history's SQLite file; "" off
  std::string dashboard_bind_address = "0";  // the in-cluster dashboard; "0" off
  std::string dashboard_user_header;         // a trusted proxy's user header; "" off
};

class Manager {
 public:
  explicit Manager(ManagerOptions options) : options_(std::move(options)) {}
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  int Run(std::atomic<bool>* stop);

 private:
  ManagerOptions options_;
};

}  // namespace trainctl::op
