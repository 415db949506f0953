"""Function → job: script text, container shape, replica layout (no processes, no cluster)."""

import subprocess
import sys
import tempfile
import unittest

from trainctl import constants, job_builder, models


def train_dollar(params):
    price = "$5 and $HOME `date`"
    print(price, params["lr"])


def train_kwargs(lr, epochs=1):
    print(lr, epochs)


class FunctionSourceTest(unittest.TestCase):
    def test_positional_dict_as_upstream(self):
        src = job_builder.function_source(train_dollar, {"lr": 0.1})
        self.assertTrue(src.rstrip().endswith("train_dollar({'lr': 0.1})"), src)

    def test_keyword_arguments_when_the_signature_names_them(self):
        src = job_builder.function_source(train_kwargs, {"lr": 0.1, "epochs": 3})
        self.assertTrue(src.rstrip().endswith("train_kwargs(**{'lr': 0.1, 'epochs': 3})"), src)

    def test_no_parameters(self):
        self.assertTrue(job_builder.function_source(train_kwargs).rstrip().endswith(
            "train_kwargs()"))

    def test_not_callable_or_no_source(self):
        with self.assertRaisesRegex(ValueError, "callable"):
            job_builder.function_source("nope")
        with self.assertRaisesRegex(ValueError, "train_func: cannot read the source"):
            job_builder.function_source(len)

    def test_dollar_and_backticks_survive_the_container_script(self):
        src = job_builder.function_source(train_dollar, {"lr": 0.5})
        script = job_builder.container_script(src, "python -u")
        with tempfile.TemporaryDirectory() as d:
            # Run the script exactly as a container would, with python -u → this interpreter.
            script = script.replace("python -u", f"{sys.executable} -u")
            out = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                 cwd=d, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "$5 and $HOME `date` 0.5")

    def test_package_specs_are_quoted(self):
        script = job_builder.container_script("print(1)\n", "python -u", ["torch>=2.0", "a b"],
                                              "https://example.invalid/simple")
        self.assertIn("'torch>=2.0'", script)
        self.assertIn("'a b'", script)


class TemplateTest(unittest.TestCase):
    def template(self):
        return job_builder.pod_template("pytorch", "img", ["python"], None,
                                        {"CPU": "1", "gpu": 2}, {"A": "1"})

    def test_resources_lowered_gpu_renamed_requests_equal_limits(self):
        c = self.template().spec.containers[0]
        self.assertEqual(c.resources.limits, {"cpu": "1", "nvidia.com/gpu": 2})
        self.assertEqual(c.resources.requests, c.resources.limits)
        self.assertEqual(c.env[0].name, "A")
        self.assertEqual(self.template().metadata.annotations,
                         {constants.ISTIO_SIDECAR_INJECTION: "false"})

    def test_env_list_forms(self):
        self.assertEqual(job_builder.env_list([{"name": "X", "value": "1"}])[0].value, "1")
        self.assertIsNone(job_builder.env_list(None))
        with self.assertRaisesRegex(ValueError, "env_vars"):
            job_builder.env_list("X=1")

    def test_pytorch_master_plus_workers_and_nproc(self):
        job = job_builder.job_from_template(constants.PYTORCHJOB_KIND, "j", "ns",
                                            self.template(), 3, num_procs_per_worker=2)
        specs = job.spec.pytorch_replica_specs
        self.assertEqual(specs["Master"].replicas, 1)
        self.assertEqual(specs["Worker"].replicas, 2)
        self.assertEqual(job.spec.nproc_per_node, "2")
        d = models.serialize(job)
        self.assertEqual(d["spec"]["nprocPerNode"], "2")
        self.assertEqual(d["apiVersion"], "kubeflow.org/v1")

    def test_pytorch_single_worker_is_master_only(self):
        job = job_builder.job_from_template(constants.PYTORCHJOB_KIND, "j", "ns",
                                            self.template(), 1)
        self.assertEqual(list(job.spec.pytorch_replica_specs), ["Master"])

    def test_tf_chief_ps_workers(self):
        job = job_builder.job_from_template(constants.TFJOB_KIND, "j", "ns", self.template(), 2,
                                            num_chief_replicas=1, num_ps_replicas=1)
        self.assertEqual({k: v.replicas for k, v in job.spec.tf_replica_specs.items()},
                         {"Chief": 1, "PS": 1, "Worker": 2})

    def test_invalid_combinations(self):
        with self.assertRaisesRegex(ValueError, "num_procs_per_worker"):
            job_builder.job_from_template(constants.TFJOB_KIND, "j", "ns", self.template(), 1,
                                          num_procs_per_worker=2)
        with self.assertRaisesRegex(ValueError, "num_chief_replicas"):
            job_builder.job_from_template(constants.PYTORCHJOB_KIND, "j", "ns",
                                          self.template(), 1, num_ps_replicas=1)
        with self.assertRaisesRegex(ValueError, "can't be created using function"):
            job_builder.job_from_template(constants.PADDLEJOB_KIND, "j", "ns",
                                          self.template(), 1)

    def test_entrypoint_as_upstream(self):
        self.assertEqual(job_builder.entrypoint_for("PyTorchJob", 2, None), "torchrun")
        self.assertEqual(job_builder.entrypoint_for("PyTorchJob", 1, 2), "torchrun")
        self.assertEqual(job_builder.entrypoint_for("PyTorchJob", 1, None), "python -u")
        self.assertEqual(job_builder.entrypoint_for("TFJob", 3, None), "python -u")


if __name__ == "__main__":
    unittest.main()
