#include "api/kinds.h"

#include <cctype>

namespace trainctl::api {

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo> kKinds = {
      {Kind::kPyTorchJob, "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", {"Master", "Worker"},
       "pytorch", "pytorchjob-port", 23456, "OnFailure", "pytorch", "pytorchjob-controller", true,
       true},
      {Kind::kTFJob, "TFJob", "tfjobs", "tfReplicaSpecs",
       {"PS", "Worker", "Chief", "Master", "Evaluator"}, "tensorflow", "tfjob-port", 2222, "Never",
       "tensorflow", "tfjob-controller", true, true},
      {Kind::kXGBoostJob, "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", {"Master", "Worker"},
       "xgboost", "xgboostjob-port", 9999, "Never", "xgboost", "xgboostjob-controller", true, true},
      {Kind::kMPIJob, "MPIJob", "mpijobs", "mpiReplicaSpecs", {"Launcher", "Worker"}, "mpi",
       "mpi-port", 9999, "Never", "mpi", "mpijob-controller", false, false},
      {Kind::kPaddleJob, "PaddleJob", "paddlejobs", "paddleReplicaSpecs", {"Master", "Worker"},
       "paddle", "master", 36543, "OnFailure", "paddle", "paddlejob-controller", true, true},
      {Kind::kJAXJob, "JAXJob", "jaxjobs", "jaxReplicaSpecs", {"Worker"}, "jax", "jaxjob-port", 6666,
       "Never", "jax", "jaxjob-controller", true, true},
      {Kind::kMXJob, "MXJob", "mxjobs", "mxReplicaSpecs",
       {"Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"}, "mxnet",
       "mxjob-port", 9091, "Never", "mxnet", "mxjob-controller", true, true},
  };
  return kKinds;
}

const KindInfo& Info(Kind kind) { return AllKinds()[static_cast<size_t>(kind)]; }

std::optional<Kind> KindFromName(std::string_view name) {
  for (const KindInfo& k : AllKinds())
    if (name == k.name) return k.kind;
  return std::nullopt;
}

std::optional<Kind> KindFromCliName(std::string_view name) {
  std::string lower = ToLower(name);
  for (const KindInfo& k : AllKinds()) {
    if (lower == ToLower(k.name) || lower == k.plural) return k.kind;
  }
  return std::nullopt;
}

}  // namespace trainctl::api
