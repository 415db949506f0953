#include "local/state_store.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/json_bounds.h"

namespace trainctl::local {

namespace fs = std::filesystem;

std::string DefaultStateRoot() {
  if (const char* d = std::getenv("TRAINCTL_STATE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/trainctl";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {  // never a shared folder such as /tmp: the account's own home
    const passwd* account = getpwuid(getuid());
    home = account && account->pw_dir ? account->pw_dir : "/nonexistent";
  }
  return std::string(home) + "/.local/state/trainctl";
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
    out << content;
    out.flush();
    if (!out) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

// The JSON objects of a file written one per line; unreadable lines and a missing file: none.
std::vector<nlohmann::json> ReadJsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = api::ParseJsonWithin(line, api::JsonLimits{});
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string problem;
  nlohmann::json j = api::ParseJsonWithin(*text, api::JsonLimits{}, &problem);
  if (j.is_discarded()) return InternalError(path + ": " + problem + " (damaged state file)");
  return j;
}

}  // namespace

JobDir::JobDir(std::string root, JobKey key) : root_(std::move(root)), key_(std::move(key)) {
  path_ = root_ + "/" + key_.namespace_ + "/" + api::Info(key_.kind).plural + "/" + key_.name;
}

std::string JobDir::LogPath(const std::string& replica) const {
  return LogDir() + "/" + replica + ".log";
}

bool JobDir::Exists() const { return fs::exists(path_ + "/job.json"); }

Status JobDir::Create() {
  // Validation already refuses such names; this keeps a path from ever leaving the root.
  for (const std::string* part : {&key_.namespace_, &key_.name}) {
    if (part->empty() || *part == "." || *part == ".." || part->find('/') != std::string::npos)
      return InvalidError("refusing to write job state for \"" + key_.namespace_ + "/" + key_.name +
                          "\": a namespace or name must not be empty, \".\", "
                          "\"..\" or contain \"/\"");
  }
  std::error_code ec;
  // A new state root is private (0700): job.json holds the replicas' env, and logs may hold
  // anything. An existing folder (e.g. $TRAINCTL_STATE_DIR) keeps the mode its owner gave it.
  if (!fs::exists(root_, ec)) {
    fs::create_directories(fs::path(root_).parent_path(), ec);
    if (mkdir(root_.c_str(), 0700) != 0 && errno != EEXIST)
      return IoError("cannot create " + root_ + ": " + std::strerror(errno));
  }
  fs::create_directories(LogDir(), ec);
  if (ec) return IoError("cannot create " + LogDir() + ": " + ec.message());
  return Status::Ok();
}

Status JobDir::RemoveAll() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  if (ec) return IoError("cannot remove " + path_ + ": " + ec.message());
  return Status::Ok();
}

Status JobDir::WriteJob(const nlohmann::json& job) const {
  return WriteFileAtomically(path_ + "/job.json", job.dump(2) + "\n");
}
std::string JobDir::HostfilePath() const { return path_ + "/hostfile"; }
Status JobDir::WriteHostfile(const std::string& content) const {
  return WriteFileAtomically(HostfilePath(), content);
}
std::string JobDir::SshFolderPath() const { return path_ + "/ssh"; }
Status JobDir::WriteSshFolder(const std::string& private_pem, const std::string& authorized_key,
                              const std::string& config) const {
  TRAINCTL_RETURN_IF_ERROR(RemoveSshFolder());
  std::string folder = SshFolderPath();
  if (mkdir(folder.c_str(), 0700) != 0)
    return IoError("cannot create " + folder + ": " + std::strerror(errno));
  for (const auto& [name, content] :
       {std::pair<const char*, const std::string&>{"id_rsa", private_pem},
        {"id_rsa.pub", authorized_key},
        {"authorized_keys", authorized_key},
        {"config", config}}) {
    std::string path = folder + "/" + name;
    TRAINCTL_RETURN_IF_ERROR(WriteFileAtomically(path, content));
    if (chmod(path.c_str(), 0600) != 0)
      return IoError("cannot chmod " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}
Status JobDir::RemoveSshFolder() const {
  std::error_code ec;
  fs::remove_all(SshFolderPath(), ec);
  if (ec) return IoError("cannot remove " + SshFolderPath() + ": " + ec.message());
  return Status::Ok();
}
Status JobDir::WriteRuntime(const std::string& name) const {
  return WriteFileAtomically(path_ + "/runtime", name + "\n");
}
std::string JobDir::ReadRuntime() const {
  StatusOr<std::string> text = ReadFile(path_ + "/runtime");
  if (!text.ok()) return "";
  std::string name = *text;
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  return name;
}
Status JobDir::WriteDevices(const nlohmann::json& devices) const {
  return WriteFileAtomically(path_ + "/devices.json", devices.dump(2) + "\n");
}
StatusOr<nlohmann::json> JobDir::ReadDevices() const {
  const std::string path = path_ + "/devices.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nlohmann::json();
  return ReadJsonFile(path);
}
Status JobDir::WriteTrainerStatus(const nlohmann::json& trainer_status) const {
  return WriteFileAtomically(path_ + "/trainer_status.json", trainer_status.dump() + "\n");
}
StatusOr<nlohmann::json> JobDir::ReadTrainerStatus() const {
  const std::string path = path_ + "/trainer_status.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nlohmann::json();
  return ReadJsonFile(path);
}
StatusOr<nlohmann::json> JobDir::ReadJob() const {
  const std::string path = path_ + "/job.json";
  StatusOr<nlohmann::json> job = ReadJsonFile(path);
  if (!job.ok()) return job;
  const nlohmann::json& j = *job;
  bool shaped = j.is_object() && j.contains("kind") && j["kind"].is_string() &&
                j.contains("metadata") && j["metadata"].is_object() &&
                j["metadata"].contains("name") && j["metadata"]["name"].is_string();
  if (!shaped)
    return InternalError(path +
                         ": not a job (damaged state file): expected an object with "
                         "kind and metadata.name");
  return job;
}
Status JobDir::WriteReplicas(const nlohmann::json& replicas) const {
  return WriteFileAtomically(path_ + "/replicas.json", replicas.dump(2) + "\n");
}
StatusOr<nlohmann::json> JobDir::ReadReplicas() const {
  const std::string path = path_ + "/replicas.json";
  StatusOr<nlohmann::json> replicas = ReadJsonFile(path);
  if (replicas.ok() && !replicas->is_array())
    return InternalError(path + ": not a list of replicas (damaged state file)");
  return replicas;
}

Status JobDir::AppendEvent(const nlohmann::json& event) const {
  std::ofstream out(path_ + "/events.jsonl", std::ios::app);
  if (!out) return IoError("cannot append to " + path_ + "/events.jsonl");
  out << event.dump() << "\n";
  return Status::Ok();
}

StatusOr<std::vector<nlohmann::json>> JobDir::ReadEvents() const {
  return ReadJsonLines(path_ + "/events.jsonl");
}

Status JobDir::AppendMetricRecords(const std::vector<nlohmann::json>& records) const {
  std::string text;
  for (const nlohmann::json& r : records) text += r.dump() + "\n";
  std::ofstream out(path_ + "/metrics.jsonl", std::ios::app);
  if (!out || !(out << text)) return IoError("cannot append to " + path_ + "/metrics.jsonl");
  return Status::Ok();
}

std::vector<nlohmann::json> JobDir::ReadMetricRecords() const {
  return ReadJsonLines(path_ + "/metrics.jsonl");
}

Status JobDir::AcquireRunnerLock() {
  std::string lock_path = path_ + "/runner.lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return IoError("cannot open " + lock_path + ": " + std::strerror(errno));
  // A reader testing RunnerActive holds the lock shared for an instant: try again briefly.
  int tries = 0;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK || ++tries * kRunnerLockRetryStep >= kRunnerLockRetry) {
      close(fd);
      return AlreadyExistsError("another trainctl run is running this job");
    }
    std::this_thread::sleep_for(kRunnerLockRetryStep);
  }
  std::string pid = std::to_string(getpid()) + "\n";
  (void)!ftruncate(fd, 0);
  (void)!pwrite(fd, pid.data(), pid.size(), 0);
  lock_fd_ = fd;
  return Status::Ok();
}

void JobDir::ReleaseRunnerLock() {
  if (lock_fd_ >= 0) {
    close(lock_fd_);
    lock_fd_ = -1;
  }
}

bool JobDir::RunnerActive(int* pid) const {
  std::string lock_path = path_ + "/runner.lock";
  int fd = open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool active = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (!active) flock(fd, LOCK_UN);
  if (active && pid) {
    char buf[32] = {0};
    (void)!read(fd, buf, sizeof(buf) - 1);
    *pid = std::atoi(buf);
  }
  close(fd);
  return active;
}

Status JobDir::WriteMetadataPatch(const nlohmann::json& metadata) const {
  return WriteFileAtomically(path_ + "/metadata.json", metadata.dump(2));
}

StatusOr<nlohmann::json> JobDir::ReadMetadataPatch() const {
  if (!fs::exists(path_ + "/metadata.json")) return nlohmann::json::object();
  return ReadJsonFile(path_ + "/metadata.json");
}

int JobDir::LastRunnerPid() const {
  StatusOr<std::string> text = ReadFile(path_ + "/runner.lock");
  return text.ok() ? std::atoi(text->c_str()) : 0;
}

std::vector<JobKey> ListJobs(const std::string& root, const std::optional<std::string>& ns,
                             const char* marker) {
  std::vector<JobKey> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (const fs::directory_entry& nsdir : fs::directory_iterator(root, ec)) {
    if (!nsdir.is_directory()) continue;
    std::string namespace_name = nsdir.path().filename();
    if (ns && *ns != namespace_name) continue;
    for (const api::KindInfo& info : api::AllKinds()) {
      fs::path kdir = nsdir.path() / info.plural;
      if (!fs::is_directory(kdir, ec)) continue;
      for (const fs::directory_entry& jdir : fs::directory_iterator(kdir, ec))
        if (fs::exists(jdir.path() / marker))
          out.push_back({info.kind, namespace_name, jdir.path().filename()});
    }
  }
  std::sort(out.begin(), out.end(), [](const JobKey& a, const JobKey& b) {
    return std::tie(a.namespace_, a.name) < std::tie(b.namespace_, b.name);
  });
  return out;
}

}  // namespace trainctl::local
