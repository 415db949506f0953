// A local replica's checkpoint-notice files (api/checkpoint_notice.h): its folder
// <job folder>/notice/<replica>/ holds notice.json (TRAINCTL_NOTICE_FILE: the notice it was
// told, absent when none) and done (TRAINCTL_NOTICE_DONE_FILE: created by the replica once it
// has checkpointed). In a container the folder is mounted at the same path.
// I/O only; thread-compatible.
#pragma once

#include <string>

#include "common/status.h"

namespace trainctl::local {

std::string NoticeFilePath(const std::string& folder);
std::string NoticeDonePath(const std::string& folder);

// Makes the folder with neither file (a new pod was told nothing yet).
Status PrepareNoticeFolder(const std::string& folder);

// Writes `notice` to the notice file atomically ("" removes it) and removes the done file: a
// done report answers the notice it came after.
Status WriteNotice(const std::string& folder, const std::string& notice);

// Whether the replica created its done file.
bool NoticeDoneReported(const std::string& folder);

}  // namespace trainctl::local
