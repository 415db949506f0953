#include "local/notice_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "local/state_store.h"

namespace trainctl::local {
namespace {

Status Remove(const std::string& path) {
  std::error_code error;
  std::filesystem::remove(path, error);
  if (error) return InternalError("could not remove " + path + ": " + error.message());
  return Status::Ok();
}

}  // namespace

std::string NoticeFilePath(const std::string& folder) { return folder + "/notice.json"; }
std::string NoticeDonePath(const std::string& folder) { return folder + "/done"; }

Status PrepareNoticeFolder(const std::string& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) return InternalError("could not create " + folder + ": " + error.message());
  TRAINCTL_RETURN_IF_ERROR(Remove(NoticeFilePath(folder)));
  return Remove(NoticeDonePath(folder));
}

Status WriteNotice(const std::string& folder, const std::string& notice) {
  TRAINCTL_RETURN_IF_ERROR(Remove(NoticeDonePath(folder)));
  if (notice.empty()) return Remove(NoticeFilePath(folder));
  return WriteFileAtomically(NoticeFilePath(folder), notice + "\n");
}

bool NoticeDoneReported(const std::string& folder) {
  std::error_code error;
  return std::filesystem::exists(NoticeDonePath(folder), error);
}

}  // namespace trainctl::local
