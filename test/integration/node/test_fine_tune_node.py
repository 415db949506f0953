"""Fine-tuning on the cluster for real: TrainingClient(backend="kubernetes").train() on the real
node, with the trainer and storage-initializer images built here from images/*/Dockerfile
(hack/cluster/images.sh trainer initializer) and the operator deployed from manifests/.

The workspace PVC that train() makes binds to a hostPath PersistentVolume this test creates
(the test cluster has no volume provisioner); the model (examples/fine-tuning/tiny_model.py)
and the dataset (examples/fine-tuning/train.jsonl) are put in it first, since nothing can be
downloaded from a pod. The storage initializer runs in the Master's and each Worker's pod, the
trainer (LoRA on a 2-layer GPT-2, torchrun over gloo) on 2 replicas; the loss falls and the
adapter is in the workspace.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

from node_harness import NodeTestCase, new_namespace, REPO, deploy_operator, get_json, kubectl, run_script, wait_for
from harness import KUBECONFIG  # noqa: E402  (on the path node_harness set)

sys.path.insert(0, os.path.join(REPO, "examples", "fine-tuning"))
from tiny_model import DATASET, make_tiny_model  # noqa: E402

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
MAX_STEPS = 30


class FineTuneOnTheNodeTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        deploy_operator()
        run_script("images.sh", "trainer", "initializer")
        run_script("node.sh", "forget-stale")
        cls.ns = new_namespace("ft")
        # The workspace: a folder on this machine (the node), as a PersistentVolume bound
        # in advance to the claim train() will make.
        cls.folder = tempfile.mkdtemp(prefix="trainctl-ft-workspace-")
        os.chmod(cls.folder, 0o777)
        make_tiny_model(os.path.join(cls.folder, "src", "model"))
        shutil.copy(DATASET, os.path.join(cls.folder, "src", "train.jsonl"))
        cls.pv = f"workspace-{cls.ns}"
        kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": cls.pv},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                     "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": cls.folder},
                     "claimRef": {"namespace": cls.ns, "name": "tiny"}}}))

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        kubectl("delete", "pv", cls.pv, "--wait=false", check=False)
        shutil.rmtree(cls.folder, ignore_errors=True)

    def test_lora_fine_tuning_on_two_replicas_in_real_containers(self):
        from peft import LoraConfig
        from transformers import TrainingArguments

        from trainctl import TrainingClient
        from trainctl.storage_initializer import (HuggingFaceDatasetParams, HuggingFaceModelParams,
                                                  HuggingFaceTrainerParams)

        client = TrainingClient(config_file=KUBECONFIG, namespace=self.ns)
        args = TrainingArguments(output_dir="out", max_steps=MAX_STEPS, per_device_train_batch_size=4,
                                 learning_rate=1e-2, logging_steps=1, save_steps=10, report_to="none",
                                 use_cpu=True, disable_tqdm=True, seed=1, ddp_find_unused_parameters=False)
        lora = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj", "c_fc"], lora_dropout=0.0)
        client.train(
            name="tiny", num_workers=2, num_procs_per_worker=1,
            trainer_image="docker.io/trainctl/trainer:dev",
            initializer_image="docker.io/trainctl/initializer:dev",
            model_provider_parameters=HuggingFaceModelParams(
                model_uri="file:///workspace/src/model", transformer_type="AutoModelForCausalLM"),
            dataset_provider_parameters=HuggingFaceDatasetParams(repo_id="/workspace/src/train.jsonl"),
            trainer_parameters=HuggingFaceTrainerParams(training_parameters=args, lora_config=lora),
            env_vars=OFFLINE, init_env_vars=OFFLINE)
        try:
            client.wait_for_job_conditions("tiny", wait_timeout=900, polling_interval=2)
        except RuntimeError as failed:  # the job failed: its replicas' output says why
            logs, _ = client.get_job_logs("tiny", is_master=False)
            self.fail(f"{failed}\n" + "\n".join(f"--- {k}\n{v[-4000:]}" for k, v in logs.items()))
        logs, _ = client.get_job_logs("tiny", is_master=False)
        self.assertRegex(logs["tiny-master-0"], r"trainer: 2 process\(es\), device cpu(:0)?, process group gloo")

        # The initializer ran in real init containers of both pods; one did the work.
        for pod in ("tiny-master-0", "tiny-worker-0"):
            init = get_json("pod", pod, "-n", self.ns)["status"]["initContainerStatuses"][0]
            self.assertEqual((init["name"], init["state"]["terminated"]["exitCode"]), ("storage-initializer", 0))
        init_logs = "".join(kubectl("logs", "-n", self.ns, p, "-c", "storage-initializer").stdout
                            for p in ("tiny-master-0", "tiny-worker-0"))
        self.assertIn("already there", init_logs, "the storage initializer did the work once")

        losses = [m["loss"] for m in client.get_job_metrics("tiny") if "loss" in m]
        self.assertEqual(len(losses), MAX_STEPS)
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        self.assertGreater(first - last, 0.1, f"first 5 {first:.3f}, last 5 {last:.3f}")
        out = os.path.join(self.folder, "out")
        self.assertTrue(os.path.isfile(os.path.join(out, "adapter_model.safetensors")), os.listdir(self.folder))
        self.assertEqual(client.get_job_workspace("tiny"), f"pvc://{self.ns}/tiny")


if __name__ == "__main__":
    unittest.main()
