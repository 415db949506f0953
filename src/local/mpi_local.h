// How an MPIJob (kubeflow.org/v1) runs on this machine: the Launcher's mpirun starts every rank
// locally, Workers are idle placeholders.
//
// Upstream, Worker pods only keep a container alive (sshd or sleep) for mpirun to start ranks
// in through kubexec.sh, and the Launcher gets a hostfile listing `<job>-worker-<i>
// slots=<slotsPerWorker>`. Locally there is no kubexec.sh and no sshd: the Launcher gets a
// hostfile `localhost slots=<workers × slotsPerWorker>` and the env that makes Open MPI (4.x)
// fork all ranks here (plm isolated, no rsh agent), and each Worker runs `sleep infinity`
// instead of its command, stopped as soon as the job finishes. Intel MPI gets
// I_MPI_HYDRA_BOOTSTRAP=fork in place of rsh + kubexec.sh.
//
// With a container runtime (`trainctl run --runtime podman|docker`) a v2beta1 MPIJob runs as
// on a cluster instead (LocalMpiMode::kSsh): each worker runs its own command, sshd, with the
// job's key pair mounted at sshAuthMountPath, and the launcher's mpirun logs in to the workers
// over SSH with mpi-operator's env unchanged. All containers share this machine's network, so
// each worker's sshd listens on a port of its own (`-p <port>` added to an sshd command), and an
// ssh `config` beside the keys maps every worker's host name (`<job>-worker-<i>.<job>.<ns>.svc`,
// as in the cluster's hostfile) to 127.0.0.1 and that port. A launcher that is a worker too is
// `localhost` in the hostfile: mpirun starts its ranks itself.
//
// A TrainJob on an MPI runtime (deepspeed-distributed, mlx-distributed) runs the same way,
// with v2beta1's mechanics (api::Job::UsesMpiV2Mechanics): its trainer step (`launcher`) is the
// Launcher, its `node` job the Workers (host names `<job>-node-0-<i>.<job>`, as the JobSet's
// pods), runLauncherAsNode the launcher-as-worker, numProcPerNode the slots.
//
// Pure: no I/O. The runner writes the hostfile and the key folder and spawns the processes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"

namespace trainctl::local {

// How the launcher's mpirun reaches the workers here: kFork (every rank forked by mpirun on
// this machine; v1 jobs, and v2beta1 jobs as processes) or kSsh (v2beta1 jobs with workers, in
// containers: `containers` is whether a container runtime runs the replicas); kNone without a
// launcher.
enum class LocalMpiMode { kNone, kFork, kSsh };
// kSsh: each worker's sshd port, in its env.
inline constexpr char kLocalSshPortEnv[] = "TRAINCTL_SSH_PORT";
LocalMpiMode LocalMpiModeOf(const api::Job& job, bool containers);

// True for replicas whose command is not run locally (MPIJob Workers under kFork): they run
// IdleArgv().
bool IsIdleReplica(const api::Job& job, const std::string& type, bool containers);

// True for the replicas that only serve the launcher (MPIJob Workers, idle or sshd): they are
// stopped, without a drain, once the job has finished.
bool ServesLauncherOnly(const api::Job& job, const std::string& type);

// The command an idle replica runs until it is stopped.
std::vector<std::string> IdleArgv();

// Total MPI slots: Workers × slotsPerWorker (slotsPerWorker alone without Workers); a v2beta1
// launcher that runs as a worker adds its slots.
int LocalMpiSlots(const api::Job& job);

// The local hostfile's content. kFork: `localhost slots=<LocalMpiSlots>` (Open MPI rejects one
// host listed several times with slot counts, so the workers' slots are summed on one line);
// `localhost:<LocalMpiSlots>` for a v2beta1 job of Intel MPI or MPICH. kSsh: each worker's
// host name in the implementation's format, after `localhost` for a launcher that is a worker.
std::string LocalMpiHostfile(const api::Job& job, LocalMpiMode mode);

// kSsh: worker `index`'s host name in the hostfile and the ssh config,
// `<job>-worker-<index>.<job>.<namespace>.svc` (mpi-operator's, without a cluster domain).
std::string LocalMpiWorkerHost(const api::Job& job, int index);

// kSsh: the ssh client configuration beside the keys (`<sshAuthMountPath>/config`): each
// worker's host name and short name to 127.0.0.1 and its port (`worker_ports`, by index); the
// workers' host keys are not checked (they are the image's own) and not recorded.
std::string LocalSshConfig(const api::Job& job, const std::vector<int>& worker_ports);

// kSsh: a worker's command and args with its sshd on `port`: `/usr/sbin/sshd -De -p <port>`
// when it has neither (mpi-operator's default command), `-p <port>` added to the args of a
// command whose program is sshd; unchanged (false) otherwise, and LocalMpiWorkerNote says that
// such a worker must listen on its port itself.
bool SetLocalSshdPort(int port, std::vector<std::string>* command, std::vector<std::string>* args);

// The Launcher's framework env rewritten for this machine. kSsh: upstream's, with the hostfile
// at `hostfile_path` (whichever variable names it). kFork: the same hostfile,
// OMPI_MCA_plm=isolated, the rsh agent, ssh's arguments and I_MPI_HYDRA_BOOTSTRAP_EXEC dropped,
// I_MPI_HYDRA_BOOTSTRAP rsh → fork (v2beta1: added for Intel MPI, HYDRA_LAUNCHER=fork for MPICH),
// Open MPI's allow-run-as-root env only when `as_root`, oversubscription allowed when the slots
// exceed `cores`.
std::vector<api::EnvVar> LocalMpiLauncherEnv(const api::Job& job, std::vector<api::EnvVar> upstream,
                                             const std::string& hostfile_path, bool as_root,
                                             int cores, LocalMpiMode mode);

// The note `trainctl run` prints once for a v2beta1 MPIJob with workers. kFork: their command is
// replaced by a placeholder, and why. kSsh: they run sshd on ports of their own, with where the
// launcher's ssh finds them (and a warning for a worker command that is not sshd). nullopt
// otherwise (v1 jobs' workers have no command of their own that upstream runs either).
std::optional<std::string> LocalMpiWorkerNote(const api::Job& job, LocalMpiMode mode);

// The note `trainctl run` prints once when it runs an MPI launcher as root: mpirun refuses
// root unless told, and a cluster's pods usually do not run as root, so the runner allows it
// (OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM); nullopt when not root or the job
// has no launcher.
// kSsh: none (the launcher runs as its image's user, as on a cluster).
std::optional<std::string> LocalMpiRootNote(const api::Job& job, bool as_root, LocalMpiMode mode);

}  // namespace trainctl::local
