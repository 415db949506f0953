#!/usr/bin/env python3
"""pi by the midpoint rule, split over MPI ranks (mpi4py): the shape of mpi-operator's `pi`
example, in Python.

Each rank sums 4 / (1 + x^2) over its share of the intervals (every size-th one, starting at
its rank); MPI Reduce adds the shares on rank 0, which prints exactly one line

    RESULT {"pi": .., "error": .., "ranks": .., "hosts": [..]}

hosts: each rank's host name, by rank (the worker it ran on).
"""

import argparse
import json
import math
import socket

from mpi4py import MPI


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--intervals", type=int, default=10_000_000)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    width = 1.0 / args.intervals
    share = 0.0
    for i in range(rank, args.intervals, size):
        x = (i + 0.5) * width
        share += 4.0 / (1.0 + x * x)
    pi = comm.reduce(share * width, op=MPI.SUM, root=0)
    hosts = comm.gather(socket.gethostname(), root=0)
    if rank == 0:
        print("RESULT " + json.dumps({"pi": pi, "error": abs(pi - math.pi), "ranks": size,
                                      "hosts": hosts}), flush=True)


if __name__ == "__main__":
    main()
