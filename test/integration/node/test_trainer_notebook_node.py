"""The Trainer v2 notebook (examples/notebooks/trainer-v2.ipynb) end to end on the real node: its
local cells, then its cluster cells, whose `TrainerClient(backend="kubernetes")` trains the same
function on 2 nodes of Trainer v2.3.0's own torch-distributed ClusterTrainingRuntime (applied
unchanged from the Go module) through `trainctl operator` and the real JobSet controller.

Environment: see node_harness.py.
"""
import unittest

from node_harness import UpstreamRuntimeTestCase, get_json
from harness import run_example_notebook


class TrainerNotebookOnTheNode(UpstreamRuntimeTestCase):
    runtime = "torch-distributed"
    runtime_file = "torch_distributed.yaml"
    namespace_prefix = "nb-v2"

    def test_the_notebooks_cluster_cells_train_on_two_nodes(self):
        rc, output, printed = run_example_notebook("trainer-v2.ipynb", self.ns, timeout=900)
        self.assertEqual(rc, 0, output[-3000:] + self.op.log()[-3000:])
        self.assertNotIn("no cluster configured", printed)
        # Once for the local job, once for the cluster's: both nodes Succeeded, node-1's log live.
        self.assertEqual(printed.count("Complete [('node-0', 'Succeeded'), ('node-1', 'Succeeded')]"),
                         2, printed[-2000:])
        self.assertGreaterEqual(printed.count("epoch=39 rank=1 loss="), 2, printed[-2000:])
        # The cluster cell deleted its TrainJob.
        self.assertEqual((get_json("trainjobs", "-n", self.ns) or {}).get("items", []), [])


if __name__ == "__main__":
    unittest.main()
