/* A real MPI all-reduce for the MPIJob tests with an MPI other than Open MPI (mpi4py is built
 * for Open MPI only): every rank contributes a vector of its rank + 1, MPI_Allreduce sums it,
 * and each rank prints
 *
 *   RESULT {"rank": R, "world_size": N, "sum": S, "processor": "HOST"}
 *
 * where S must be N * (N + 1) / 2 on every rank. Exit 3 when a sum is wrong. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, len = 0;
  char host[MPI_MAX_PROCESSOR_NAME];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  double local[1024], total[1024];
  for (int i = 0; i < 1024; ++i) local[i] = rank + 1;
  MPI_Allreduce(local, total, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double expected = size * (size + 1) / 2.0;
  int ok = 1;
  for (int i = 0; i < 1024; ++i) ok &= total[i] == expected;
  printf("RESULT {\"rank\": %d, \"world_size\": %d, \"sum\": %.0f, \"processor\": \"%s\"}\n", rank,
         size, total[0], host);
  fflush(stdout);
  MPI_Finalize();
  return ok ? 0 : 3;
}
