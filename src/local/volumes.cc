#include "local/volumes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "api/json_fields.h"
#include "api/replica_env.h"
#include "api/validation.h"

namespace trainctl::local {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool SafeRelative(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (const fs::path& part : fs::path(path))
    if (part == "..") return false;
  return true;
}

// The files a configMap / secret volume shows: all keys, or its items at their paths.
StatusOr<KeyValues> VolumeFiles(const json& source, const KeyValues* data, const std::string& name,
                                const std::string& field, const std::string& flag,
                                int fallback_mode, std::map<std::string, int>* modes) {
  const int default_mode =
      static_cast<int>(api::IntAt(source, "defaultMode", fallback_mode)) & 0777;

  bool optional = api::BoolAt(source, "optional", false);
  if (!data) {
    if (optional) return KeyValues();
    return InvalidError(field + ": \"" + name + "\": not on this machine; give it with " + flag +
                        " " + name + "=FOLDER (a file per key)");
  }
  if (!source.contains("items") || !source["items"].is_array()) {
    for (const auto& [key, value] : *data) (*modes)[key] = default_mode;
    return *data;
  }
  KeyValues files;
  const json& items = source["items"];
  for (size_t i = 0; i < items.size(); ++i) {
    std::string key = api::StringAt(items[i], "key"), path = api::StringAt(items[i], "path");
    std::string item_field =
        field.substr(0, field.rfind('.')) + ".items[" + std::to_string(i) + "]";
    if (!SafeRelative(path))
      return InvalidError(item_field + ".path: Invalid value: \"" + path +
                          "\": must be a relative path without '..'");
    auto it = data->find(key);
    if (it == data->end()) {
      if (optional) continue;
      return InvalidError(item_field + ".key: \"" + key + "\": " + name + " (" + flag +
                          ") has no such key");
    }
    files[path] = it->second;
    (*modes)[path] = static_cast<int>(api::IntAt(items[i], "mode", default_mode)) & 0777;
  }
  return files;
}

bool DnsLabel(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool Boundary(char c) {
  static const std::string kBoundaries = " \t\n=:,'\"><();|&`";
  return kBoundaries.find(c) != std::string::npos;
}

}  // namespace

StatusOr<std::vector<LocalMount>> PlanMounts(const api::Job& job, const std::string& type,
                                             int index, const std::string& job_folder,
                                             const LocalConfig& config,
                                             const api::ContainerAt* container) {
  std::vector<LocalMount> mounts;
  const api::ReplicaSpec& spec = job.replica_specs.at(type);
  api::ContainerAt at = container ? *container : api::DefaultContainerAt(job, type);
  if (!at.container) return mounts;
  const json& c = *at.container;
  if (!c.is_object() || !c.contains("volumeMounts") || !c["volumeMounts"].is_array()) return mounts;
  const std::string pod = api::ReplicaSpecPath(job, type) + ".template.spec";
  const std::string& cpath = at.path;
  const json& pod_spec = spec.pod_template["spec"];
  const json volumes = pod_spec.contains("volumes") && pod_spec["volumes"].is_array()
                           ? pod_spec["volumes"]
                           : json::array();
  const std::string replica = api::ReplicaName(job, type, index);
  const json& list = c["volumeMounts"];
  for (size_t m = 0; m < list.size(); ++m) {
    LocalMount mount;
    mount.field = cpath + ".volumeMounts[" + std::to_string(m) + "]";
    mount.volume = api::StringAt(list[m], "name");
    mount.mount_path = api::StringAt(list[m], "mountPath");
    mount.read_only = api::BoolAt(list[m], "readOnly", false);
    if (mount.mount_path.empty() || mount.mount_path[0] != '/')
      return InvalidError(mount.field + ".mountPath: Invalid value: \"" + mount.mount_path +
                          "\": must be an absolute path");
    while (mount.mount_path.size() > 1 && mount.mount_path.back() == '/')
      mount.mount_path.pop_back();
    if (mount.mount_path == "/")
      return InvalidError(mount.field +
                          ".mountPath: Invalid value: \"/\": trainctl run cannot "
                          "stand a folder in for the whole file system");
    std::string sub_path = api::StringAt(list[m], "subPath");
    if (!sub_path.empty() && !SafeRelative(sub_path))
      return InvalidError(mount.field + ".subPath: Invalid value: \"" + sub_path +
                          "\": must be a relative path without '..'");
    size_t vi = volumes.size();
    for (size_t v = 0; v < volumes.size(); ++v)
      if (api::StringAt(volumes[v], "name") == mount.volume) vi = v;
    if (vi == volumes.size())
      return InvalidError(mount.field + ".name: Not found: \"" + mount.volume +
                          "\": no volume of that name in " + pod + ".volumes");
    const json& volume = volumes[vi];
    const std::string vfield = pod + ".volumes[" + std::to_string(vi) + "]";
    // The name becomes a folder name: a DNS label, as the API server requires.
    if (!DnsLabel(mount.volume))
      return InvalidError(vfield + ".name: Invalid value: \"" + mount.volume +
                          "\": must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63)");
    const std::string own = job_folder + "/volumes/" + replica + "/" + mount.volume;
    if (auto given = config.volume_dirs.find(mount.volume); given != config.volume_dirs.end()) {
      mount.kind = LocalMount::Kind::kGiven;
      mount.folder = given->second;
    } else if (volume.contains("emptyDir")) {
      mount.kind = LocalMount::Kind::kEmptyDir;
      mount.folder = own;
    } else if (volume.contains("hostPath") && volume["hostPath"].is_object()) {
      mount.kind = LocalMount::Kind::kHostPath;
      mount.folder = api::StringAt(volume["hostPath"], "path");
      mount.host_type = api::StringAt(volume["hostPath"], "type");
      if (mount.folder.empty() || mount.folder[0] != '/')
        return InvalidError(vfield + ".hostPath.path: Invalid value: \"" + mount.folder +
                            "\": must be an absolute path");
    } else if (volume.contains("persistentVolumeClaim") &&
               volume["persistentVolumeClaim"].is_object() && !config.claims_dir.empty()) {
      mount.kind = LocalMount::Kind::kClaim;
      std::string claim = api::StringAt(volume["persistentVolumeClaim"], "claimName");
      if (!api::IsDnsSubdomain(claim))
        return InvalidError(vfield + ".persistentVolumeClaim.claimName: Invalid value: \"" + claim +
                            "\": must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.')");
      mount.folder = config.claims_dir + "/" + claim;
    } else if (volume.contains("configMap") && volume["configMap"].is_object()) {
      mount.kind = LocalMount::Kind::kConfigMap;
      mount.folder = own;
      std::string name = api::StringAt(volume["configMap"], "name");
      auto it = config.config_maps.find(name);
      StatusOr<KeyValues> files =
          VolumeFiles(volume["configMap"], it == config.config_maps.end() ? nullptr : &it->second,
                      name, vfield + ".configMap.name", "--configmap", 0644, &mount.modes);
      if (!files.ok()) return files.status();
      mount.files = std::move(files).value();
    } else if (volume.contains("secret") && volume["secret"].is_object()) {
      mount.kind = LocalMount::Kind::kSecret;
      mount.folder = own;
      std::string name = api::StringAt(volume["secret"], "secretName");
      auto it = config.secrets.find(name);
      StatusOr<KeyValues> files =
          VolumeFiles(volume["secret"], it == config.secrets.end() ? nullptr : &it->second, name,
                      vfield + ".secret.secretName", "--secret", 0600, &mount.modes);
      if (!files.ok()) return files.status();
      mount.files = std::move(files).value();
    } else {
      std::string kind = "(no source)";
      for (const auto& [k, v] : volume.items())
        if (k != "name") kind = k;
      return InvalidError(vfield + "." + kind + ": Unsupported value: volume \"" + mount.volume +
                          "\": trainctl run makes emptyDir, hostPath, persistentVolumeClaim, "
                          "configMap and secret volumes; give this one as a folder with --volume " +
                          mount.volume + "=FOLDER");
    }
    mount.local_path = sub_path.empty() ? mount.folder : mount.folder + "/" + sub_path;
    mounts.push_back(std::move(mount));
  }
  std::stable_sort(mounts.begin(), mounts.end(), [](const LocalMount& a, const LocalMount& b) {
    return a.mount_path.size() > b.mount_path.size();
  });
  return mounts;
}

std::string ClaimFolder(const std::string& state_root, const std::string& ns,
                        const std::string& claim) {
  return state_root + "/.claims/" + ns + "/" + claim;  // no namespace starts with "."
}

std::string RewritePaths(const std::string& text, const std::vector<LocalMount>& mounts) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    bool replaced = false;
    if (i == 0 || Boundary(text[i - 1])) {
      for (const LocalMount& m : mounts) {  // longest first
        const std::string& p = m.mount_path;
        if (p == m.local_path || text.compare(i, p.size(), p) != 0) continue;
        size_t end = i + p.size();
        if (end < text.size() && text[end] != '/' && !Boundary(text[end])) continue;
        out += m.local_path;
        i = end;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

Status CheckMounts(const std::vector<LocalMount>& mounts) {
  for (const LocalMount& m : mounts) {
    if (m.kind != LocalMount::Kind::kHostPath) continue;
    struct stat st;
    bool exists = stat(m.folder.c_str(), &st) == 0;
    if (m.host_type == "Directory" && !(exists && S_ISDIR(st.st_mode)))
      return InvalidError(m.field + ": hostPath \"" + m.folder +
                          "\" (type Directory) is not a folder on this machine");
    if (m.host_type == "File" && !(exists && S_ISREG(st.st_mode)))
      return InvalidError(m.field + ": hostPath \"" + m.folder +
                          "\" (type File) is not a file on this machine");
  }
  return Status::Ok();
}

bool InMadeMount(const std::string& path, const std::vector<LocalMount>& mounts) {
  for (const LocalMount& m : mounts) {
    if (m.kind != LocalMount::Kind::kEmptyDir && m.kind != LocalMount::Kind::kConfigMap &&
        m.kind != LocalMount::Kind::kSecret && m.kind != LocalMount::Kind::kClaim)
      continue;
    if (path == m.folder || path.rfind(m.folder + "/", 0) == 0) return true;
  }
  return false;
}

Status MakeMounts(const std::vector<LocalMount>& mounts, const std::string& working_dir) {
  std::error_code ec;
  for (const LocalMount& m : mounts) {
    bool make_dir = m.kind == LocalMount::Kind::kEmptyDir || m.kind == LocalMount::Kind::kClaim ||
                    m.kind == LocalMount::Kind::kConfigMap || m.kind == LocalMount::Kind::kSecret ||
                    (m.kind == LocalMount::Kind::kHostPath && m.host_type == "DirectoryOrCreate");
    if (make_dir && !fs::create_directories(m.folder, ec) && ec)
      return IoError(m.field + ": cannot make \"" + m.folder + "\": " + ec.message());
    // As the kubelet does, a subPath inside a folder it makes is made too.
    if (make_dir && m.local_path != m.folder && !fs::exists(m.local_path, ec) &&
        !fs::create_directories(m.local_path, ec) && ec)
      return IoError(m.field + ": cannot make \"" + m.local_path + "\": " + ec.message());
    if (m.kind == LocalMount::Kind::kHostPath && m.host_type == "FileOrCreate" &&
        !fs::exists(m.folder, ec)) {
      std::ofstream touch(m.folder, std::ios::app);
      if (!touch) return IoError(m.field + ": cannot create \"" + m.folder + "\"");
    }
    for (const auto& [path, content] : m.files) {
      fs::path file = fs::path(m.folder) / path;
      fs::create_directories(file.parent_path(), ec);
      auto mode_it = m.modes.find(path);
      mode_t mode = mode_it != m.modes.end() ? static_cast<mode_t>(mode_it->second) : 0600;
      // Created with its mode (never readable by others in between), then set exactly.
      int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
      bool ok = fd >= 0 && fchmod(fd, mode & 0600) == 0;
      for (size_t done = 0; ok && done < content.size();) {
        ssize_t n = write(fd, content.data() + done, content.size() - done);
        ok = n > 0;
        if (ok) done += static_cast<size_t>(n);
      }
      ok = ok && fchmod(fd, mode) == 0;
      if (fd >= 0) ok = close(fd) == 0 && ok;
      if (!ok)
        return IoError(m.field + ": cannot write \"" + file.string() +
                       "\": " + std::strerror(errno));
    }
  }
  if (!working_dir.empty() && InMadeMount(working_dir, mounts) &&
      !fs::create_directories(working_dir, ec) && ec)
    return IoError("workingDir: cannot make \"" + working_dir + "\": " + ec.message());
  return Status::Ok();
}

}  // namespace trainctl::local
