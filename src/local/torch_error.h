// torchelastic's structured error file (TORCHELASTIC_ERROR_FILE): torchrun, and any script whose
// entry point has torch's @record, write the root cause of a failure there as JSON
//   {"message": {"message": "RuntimeError: …", "extraInfo": {"py_callstack": "…", …}}}
// (or {"message": "<text>"}). The runner points each replica at a file in its state folder and,
// when the replica fails, reports the root cause instead of the end of its log.
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace trainctl::local {

inline constexpr const char* kTorchElasticErrorFileEnv = "TORCHELASTIC_ERROR_FILE";

// The end of the Python call stack followed by the message (the root cause last, at most
// `max_bytes`), or nullopt when `text` is not such a file.
std::optional<std::string> TorchElasticErrorText(const std::string& text, size_t max_bytes);

// A replica run by torchrun whose worker failed without writing the error file ends its log
// with torchrun's own report: the agent's Python traceback, then a ChildFailedError box (about
// 2 KiB) naming the failed rank and its exit code. The worker's own last lines come before it.
// Given the end of such a log, returns those lines (at most `max_bytes` in all) followed by one
// line "torchrun: rank R (local_rank: L) exited with code C"; nullopt when `log_end` does not
// end with that report.
std::optional<std::string> WorkerOutputBeforeTorchrunReport(const std::string& log_end,
                                                            size_t max_bytes);

}  // namespace trainctl::local
