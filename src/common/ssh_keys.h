// An SSH key pair for an MPIJob's launcher and workers (kubeflow.org/v2beta1): the launcher's
// mpirun logs in to every worker with it, and each worker accepts it (authorized_keys). ECDSA
// on P-521, as mpi-operator makes them: the private key as a PEM "EC PRIVATE KEY" (what
// OpenSSH reads as id_rsa/id_ecdsa), the public key in OpenSSH's one-line authorized_keys form.
// Made with OpenSSL's libcrypto; no I/O besides its random source; thread-safe.
#pragma once

#include <string>

#include "common/status.h"

namespace trainctl {

struct SshKeyPair {
  std::string private_pem;     // -----BEGIN EC PRIVATE KEY----- ...
  std::string authorized_key;  // "ecdsa-sha2-nistp521 AAAA...\n"
};

StatusOr<SshKeyPair> GenerateSshKeyPair();

}  // namespace trainctl
