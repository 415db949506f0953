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
// Pure: no I/O. The runner writes the hostfile and spawns the processes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/job.h"
#include "api/replica_env.h"

namespace trainctl::local {

// True for replicas whose command is not run locally (MPIJob Workers): they run IdleArgv().
bool IsIdleReplica(const api::Job& job, const std::string& type);

// The command an idle replica runs until it is stopped.
std::vector<std::string> IdleArgv();

// Total MPI slots: Workers × slotsPerWorker (slotsPerWorker alone without Workers); a v2beta1
// launcher that runs as a worker adds its slots.
int LocalMpiSlots(const api::Job& job);

// The local hostfile's content: `localhost slots=<LocalMpiSlots>` (Open MPI rejects one host
// listed several times with slot counts, so the workers' slots are summed on one line);
// `localhost:<LocalMpiSlots>` for a v2beta1 job of Intel MPI or MPICH.
std::string LocalMpiHostfile(const api::Job& job);

// The Launcher's framework env rewritten for this machine: the hostfile at `hostfile_path`
// (whichever variable names it), OMPI_MCA_plm=isolated, the rsh agent, ssh's arguments and
// I_MPI_HYDRA_BOOTSTRAP_EXEC dropped, I_MPI_HYDRA_BOOTSTRAP rsh → fork (v2beta1: added for
// Intel MPI, HYDRA_LAUNCHER=fork for MPICH), Open MPI's allow-run-as-root env only when `as_root`,
// oversubscription allowed when the slots exceed `cores`.
std::vector<api::EnvVar> LocalMpiLauncherEnv(const api::Job& job,
                                             std::vector<api::EnvVar> upstream,
                                             const std::string& hostfile_path, bool as_root,
                                             int cores);

// True while a v2beta1 launcher under launcherCreationPolicy WaitForWorkersReady must not
// start yet: fewer than all of its workers run (`workers_running`).
bool LocalLauncherWaits(const api::Job& job, const std::string& type, int workers_running);

// The note `trainctl run` prints once for a v2beta1 MPIJob with workers: their command is
// replaced by a placeholder, and why; nullopt otherwise (v1 jobs' workers have no command of
// their own that upstream runs either).
std::optional<std::string> LocalMpiWorkerNote(const api::Job& job);

// The note `trainctl run` prints once when it runs an MPI launcher as root: mpirun refuses
// root unless told, and a cluster's pods usually do not run as root, so the runner allows it
// (OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM); nullopt when not root or the job
// has no launcher.
std::optional<std::string> LocalMpiRootNote(const api::Job& job, bool as_root);

}  // namespace trainctl::local
