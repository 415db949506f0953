// LocalStatusServer: the runtime status endpoint of one local run, Trainer v2.3's protocol
// (progress/status_endpoint.h) as the operator serves it, so a training script — or Hugging Face
// transformers on its own — reports its progress on this machine as on a cluster:
//   Start   a CA and serving certificate of the run's own (127.0.0.1 and localhost, valid a
//           week), a random token (32 bytes, hex), both written under
//           <job folder>/trainer-status/ (ca.crt, token; the folder 0700, the token 0600), and
//           HTTPS on 127.0.0.1 on a free port
//   Env     KUBEFLOW_TRAINER_SERVER_URL (the job's api::StatusPath: upstream's for a TrainJob,
//           /apis/kubeflow.org/v1/… for a v1 job), KUBEFLOW_TRAINER_SERVER_CA_CERT and
//           KUBEFLOW_TRAINER_SERVER_TOKEN (those files), for the job's trainer processes
//   reports the run's token only (compared in constant time; any other 401), for this job only
//           (another job's path with the token: 403); what is accepted is written to
//           <job folder>/trainer_status.json (JobDir::WriteTrainerStatus), at most once a
//           second and the newest always, so `trainctl get/describe`, the dashboard and the
//           SDK read it as status.trainerStatus
//   Stop    stops serving, then writes what is pending
//
// I/O: the two files, the listening socket, trainer_status.json. Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/trainer_status.h"
#include "common/clock.h"
#include "common/status.h"
#include "local/state_store.h"
#include "progress/coalesced_writer.h"
#include "progress/status_endpoint.h"
#include "server/tls_server.h"

namespace trainctl::local {

inline constexpr Duration kLocalStatusWriteInterval = Duration(1000);

class LocalStatusServer {
 public:
  // `dir`: the job's folder, made and locked by this runner.
  static StatusOr<std::unique_ptr<LocalStatusServer>> Start(const JobDir& dir, const Clock* clock);
  ~LocalStatusServer() { Stop(); }
  LocalStatusServer(const LocalStatusServer&) = delete;
  LocalStatusServer& operator=(const LocalStatusServer&) = delete;

  // (name, value) of the three variables.
  std::vector<std::pair<std::string, std::string>> Env() const;
  // <job folder>/trainer-status: mounted read-only into a trainer's container at the same path.
  const std::string& folder() const { return folder_; }
  int port() const { return server_.port(); }
  void Stop();

 private:
  LocalStatusServer(const JobDir& dir, const Clock* clock);
  progress::Grant Authorize(const std::string& token, const api::StatusTarget& target) const;

  JobDir dir_;                // a copy of its own: written only by writer_, one write at a time
  api::StatusTarget target_;  // this run's job
  std::string folder_;
  std::string token_;
  std::unique_ptr<progress::StatusEndpoint> endpoint_;
  server::TlsServer server_;
  std::atomic<bool> stopped_{false};
  progress::CoalescedWriter writer_;
};

}  // namespace trainctl::local
