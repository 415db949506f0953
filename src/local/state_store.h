// The local state folder: where `trainctl run` keeps each job's object, replica records, events
// and logs, so other trainctl commands can read them while the job runs and after.
//
// Layout: <root>/<namespace>/<plural>/<name>/{job.json, replicas.json, events.jsonl,
// metrics.jsonl, metadata.json, trainer_status.json, runner.lock, runner.log, devices.json,
// logs/<replica>.log, trainer-status/{ca.crt,token}}.
// Whole-file writes are atomic (write + rename), so readers never see a torn file. The runner holds
// an flock on runner.lock while it runs. Methods do file I/O; a JobDir is not shared between
// threads.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/kinds.h"
#include "common/status.h"

namespace trainctl::local {

// How long AcquireRunnerLock tries again while the lock is held (a reader's instant test), and
// how often.
inline constexpr std::chrono::milliseconds kRunnerLockRetry{200};
inline constexpr std::chrono::milliseconds kRunnerLockRetryStep{5};

// $TRAINCTL_STATE_DIR, else $XDG_STATE_HOME/trainctl, else $HOME/.local/state/trainctl.
std::string DefaultStateRoot();

struct JobKey {
  api::Kind kind;
  std::string namespace_;
  std::string name;
};

class JobDir {
 public:
  JobDir(std::string root, JobKey key);

  const std::string& path() const { return path_; }
  const JobKey& key() const { return key_; }
  std::string LogPath(const std::string& replica) const;
  std::string LogDir() const { return path_ + "/logs"; }

  bool Exists() const;
  Status Create();     // mkdir -p, incl. logs/
  Status RemoveAll();  // rm -r (TTL and `trainctl delete`)

  Status WriteJob(const nlohmann::json& job) const;
  std::string HostfilePath() const;  // <dir>/hostfile: an MPIJob launcher's local hostfile
  Status WriteHostfile(const std::string& content) const;
  // <dir>/ssh: the key folder of a v2beta1 MPIJob run in containers (local/mpi_local.h), made
  // anew (0700) with the files mpi-operator mounts its Secret as, id_rsa (the private key),
  // id_rsa.pub and authorized_keys, and the ssh `config`, each 0600. Removed when the run ends:
  // the private key is not kept.
  std::string SshFolderPath() const;
  Status WriteSshFolder(const std::string& private_pem, const std::string& authorized_key,
                        const std::string& config) const;
  Status RemoveSshFolder() const;
  // <dir>/runtime: the container runtime its replicas run with ("podman", "docker"), written
  // before they start, so `trainctl delete` can remove what a dead runner left; "" : none.
  Status WriteRuntime(const std::string& name) const;
  std::string ReadRuntime() const;
  // devices.json: the GPUs this job's replicas were given (local/device_claims.h).
  Status WriteDevices(const nlohmann::json& devices) const;
  StatusOr<nlohmann::json> ReadDevices() const;  // null when the job has none
  StatusOr<nlohmann::json> ReadJob() const;
  Status WriteReplicas(const nlohmann::json& replicas) const;
  StatusOr<nlohmann::json> ReadReplicas() const;
  Status AppendEvent(const nlohmann::json& event) const;
  // metadata.json: labels and annotations changed after the job was created (`trainctl
  // patch`), kept apart from job.json, which the runner owns, and merged in by readers.
  Status WriteMetadataPatch(const nlohmann::json& metadata) const;
  StatusOr<nlohmann::json> ReadMetadataPatch() const;  // {} when there is none
  // trainer_status.json: the newest progress report of the job's trainer (Trainer v2.3's
  // trainerStatus, local/status_server.h); null when it has reported none.
  Status WriteTrainerStatus(const nlohmann::json& trainer_status) const;
  StatusOr<nlohmann::json> ReadTrainerStatus() const;
  StatusOr<std::vector<nlohmann::json>> ReadEvents() const;
  // metrics.jsonl: the metric records of the job's metrics replica (metrics/series.h).
  Status AppendMetricRecords(const std::vector<nlohmann::json>& records) const;
  std::vector<nlohmann::json> ReadMetricRecords() const;  // none when there is no file

  // Takes the runner lock without waiting for a holder: fails with AlreadyExists if another
  // runner holds it. A reader's RunnerActive test holds it shared for an instant, so a refusal
  // is tried again for up to kRunnerLockRetry before it counts. The lock is released when the
  // process exits or ReleaseRunnerLock is called.
  Status AcquireRunnerLock();
  void ReleaseRunnerLock();
  // True while some runner process holds the lock; its pid when known. Tests it with a shared
  // flock, released at once.
  bool RunnerActive(int* pid = nullptr) const;
  // The pid last written to runner.lock (also after that runner is gone); 0 when unknown.
  int LastRunnerPid() const;

 private:
  std::string root_;
  JobKey key_;
  std::string path_;
  int lock_fd_ = -1;
};

// Every job folder under `root` (for `get`), optionally in one namespace.
// `marker`: the file that makes a folder count (job.json: a job; devices.json: a GPU claim,
// written before job.json).
std::vector<JobKey> ListJobs(const std::string& root, const std::optional<std::string>& ns,
                             const char* marker = "job.json");

Status WriteFileAtomically(const std::string& path, const std::string& content);
StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace trainctl::local
