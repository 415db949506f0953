#!/usr/bin/env python3
"""Executes a notebook headless (nbclient, the project venv's ipykernel) and fails on the first
cell error, printing that cell's error. Outputs are not written back (the stored notebook stays
clean); pass --save OUT to keep an executed copy."""

import argparse
import json
import os
import shutil
import sys
import tempfile

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebook")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--save", help="write the executed notebook here")
    args = p.parse_args()
    # The kernel is this interpreter (the project venv, which sees the SDK and Debian's
    # packages), not whatever "python3" kernel a system folder declares.
    kernels = tempfile.mkdtemp(prefix="trainctl-kernels-")
    os.makedirs(os.path.join(kernels, "kernels", "python3"))
    with open(os.path.join(kernels, "kernels", "python3", "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "Python 3 (trainctl)", "language": "python"}, f)
    os.environ["JUPYTER_PATH"] = kernels + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    nb = nbformat.read(args.notebook, as_version=4)
    client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                            resources={"metadata": {"path": "."}})
    try:
        client.execute()
    except CellExecutionError as e:
        print(f"{args.notebook}: a cell failed:\n{e}", file=sys.stderr)
        return 1
    finally:
        if args.save:
            nbformat.write(nb, args.save)
        shutil.rmtree(kernels, ignore_errors=True)  # nothing left in /tmp
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    print(f"{args.notebook}: {cells} code cells executed without error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
