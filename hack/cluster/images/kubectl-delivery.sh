#!/bin/sh
# The MPI launcher's init container in the test cluster's image
# ghcr.io/kubeflow/training-v1/kubectl-delivery (the operator's --mpi-kubectl-delivery-image),
# built by hack/cluster/images.sh: copies kubectl into $TARGET_DIR, where the launcher's
# kubexec.sh runs it, then waits until every worker pod named in /etc/mpi/hostfile is
# Running in $NAMESPACE, so mpirun starts only when each worker can be exec'd into. The
# launcher itself (listed first when it has GPUs) is skipped: it is this pod.
set -eu
cp /usr/local/bin/kubectl "$TARGET_DIR/kubectl"
for host in $(cut -d' ' -f1 /etc/mpi/hostfile); do
  pod="${host%%.*}"
  [ "$pod" = "$(hostname)" ] && continue
  waited=0
  until [ "$(kubectl get pod "$pod" -n "$NAMESPACE" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Running ]; do
    waited=$((waited + 1))
    [ $((waited % 30)) -eq 0 ] && echo "kubectl-delivery: still waiting for pod $pod to be Running (${waited}s)"
    sleep 1
  done
  echo "kubectl-delivery: pod $pod is Running"
done
