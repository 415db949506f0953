"""The Trainer v2 notebook (examples/notebooks/trainer-v2.ipynb) end to end on the real node: its
local cells, then its cluster cells, whose `TrainerClient(backend="kubernetes")` trains the same
function on 2 nodes of Trainer v2.3.0's own torch-distributed ClusterTrainingRuntime (applied
unchanged from the Go module) through `trainctl operator` and the real JobSet controller.

Environment: see node_harness.py.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from node_harness import UpstreamRuntimeTestCase, get_json, kubectl
from harness import KUBECONFIG, REPO, TRAINCTL


class TrainerNotebookOnTheNode(UpstreamRuntimeTestCase):
    runtime = "torch-distributed"
    runtime_file = "torch_distributed.yaml"
    namespace_prefix = "nb-v2"

    def test_the_notebooks_cluster_cells_train_on_two_nodes(self):
        notebooks = os.path.join(REPO, "examples", "notebooks")
        with tempfile.TemporaryDirectory(prefix="trainctl-nb-v2-") as tmp:
            kubeconfig = os.path.join(tmp, "kubeconfig")
            with open(KUBECONFIG) as src, open(kubeconfig, "w") as dst:
                dst.write(src.read())
            kubectl("--kubeconfig", kubeconfig, "config", "set-context", "--current",
                    f"--namespace={self.ns}")
            env = dict(os.environ, TRAINCTL_NOTEBOOK_KUBECONFIG=kubeconfig,
                       TRAINCTL_STATE_DIR=os.path.join(tmp, "state"), TRAINCTL_BIN=TRAINCTL)
            env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
            saved = os.path.join(tmp, "executed.ipynb")
            run = subprocess.run(
                [sys.executable, os.path.join(notebooks, "run_notebook.py"),
                 os.path.join(notebooks, "trainer-v2.ipynb"), "--save", saved], cwd=notebooks,
                env=env, capture_output=True, text=True, timeout=900)
            self.assertEqual(run.returncode, 0,
                             run.stdout[-3000:] + run.stderr[-3000:] + self.op.log()[-3000:])
            with open(saved) as f:
                cells = json.load(f)["cells"]
        printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                          for o in c.get("outputs", []))
        self.assertNotIn("no cluster configured", printed)
        # Once for the local job, once for the cluster's: both nodes Succeeded, node-1's log live.
        self.assertEqual(printed.count("Complete [('node-0', 'Succeeded'), ('node-1', 'Succeeded')]"),
                         2, printed[-2000:])
        self.assertGreaterEqual(printed.count("epoch=39 rank=1 loss="), 2, printed[-2000:])
        # The cluster cell deleted its TrainJob.
        self.assertEqual((get_json("trainjobs", "-n", self.ns) or {}).get("items", []), [])


if __name__ == "__main__":
    unittest.main()
