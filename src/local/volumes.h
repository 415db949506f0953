// A replica's volumes on this machine. Each volumeMount of the default container becomes a
// local folder:
//
//   emptyDir            <job folder>/volumes/<replica>/<volume>, made when the replica first
//                       starts and kept across its restarts in place, as a pod's is
//   hostPath            its path as is (type Directory/File must exist, DirectoryOrCreate and
//                       FileOrCreate are made)
//   configMap / secret  <job folder>/volumes/<replica>/<volume>, written from the --configmap /
//                       --secret folder (items, their paths and modes, and defaultMode
//                       honoured; optional ones may be missing)
//   persistentVolumeClaim  <state root>/.claims/<namespace>/<claimName> (ClaimFolder), made
//                       when first used and kept after the job, as a PVC outlives its pods:
//                       every replica and every job naming the claim shares it; `trainctl
//                       delete --delete-workspace` removes it
//   any volume named by --volume NAME=DIR: DIR (this wins over the kinds above)
//   anything else       refused before starting, naming volumes[i] and suggesting --volume
//
// subPath appends to the folder. A process here cannot see a folder at the mount's path, so
// the mount path is rewritten to the local folder where it appears in the command, args, env
// values and workingDir (as a whole path or a path prefix); a path written inside the program
// is not rewritten (give it on the command line, or use hostPath with the same path). readOnly
// cannot be enforced without a mount namespace and is not.
//
// PlanMounts and RewritePaths are pure; CheckMounts and MakeMounts do file I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/validation.h"
#include "common/status.h"
#include "local/local_config.h"

namespace trainctl::local {

struct LocalMount {
  enum class Kind { kEmptyDir, kHostPath, kConfigMap, kSecret, kClaim, kGiven };
  Kind kind = Kind::kEmptyDir;
  std::string volume;                // the volume's name
  std::string mount_path;            // in the container
  std::string local_path;            // on this machine (subPath included)
  std::string folder;                // the folder to make or fill (without subPath)
  std::string host_type;             // hostPath's type ("" = no check)
  KeyValues files;                   // configMap / secret: relative path → content
  std::map<std::string, int> modes;  // relative path → permission bits (defaultMode, items[].mode)
  std::string field;                 // e.g. spec.…template.spec.containers[0].volumeMounts[1]
  bool read_only = false;            // volumeMounts[].readOnly (enforced in containers only)
};

// The mounts of (type, index)'s default container (or of `container`, an init container),
// longest mount path first. `job_folder` is the job's state folder. Errors (kInvalid) name the
// field.
StatusOr<std::vector<LocalMount>> PlanMounts(const api::Job& job, const std::string& type,
                                             int index, const std::string& job_folder,
                                             const LocalConfig& config,
                                             const api::ContainerAt* container = nullptr);

// The folder standing in for PVC `claim` of `ns` under the state root.
std::string ClaimFolder(const std::string& state_root, const std::string& ns,
                        const std::string& claim);

// `text` with each mount path (whole, or followed by '/') that starts the text or follows a
// space, tab, newline or one of `=:,'"><();|&` and a backquote (or ends before one),
// replaced by its local path.
std::string RewritePaths(const std::string& text, const std::vector<LocalMount>& mounts);

// hostPath mounts of type Directory / File exist as such (kInvalid naming the field otherwise).
Status CheckMounts(const std::vector<LocalMount>& mounts);

// True when `path` lies inside a folder MakeMounts makes (emptyDir, claim, configMap, secret).
bool InMadeMount(const std::string& path, const std::vector<LocalMount>& mounts);

// Makes emptyDir and claim folders (kept when present), the hostPath ...OrCreate paths, writes the
// configMap / secret files (created with their mode: defaultMode or items[].mode, else 0644
// for a ConfigMap and 0600 for a Secret), and makes `working_dir` when it lies inside a made
// folder. Errors name the field and path.
Status MakeMounts(const std::vector<LocalMount>& mounts, const std::string& working_dir = "");

}  // namespace trainctl::local
