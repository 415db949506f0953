"""Bad input as a new user would try it: every case exits 2 with a message that names the
file and the field path, and nothing is started or written to the state folder."""

import os
import unittest

from harness import TrainctlTestCase

HEADER = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: bad\n"


def pytorch(master="", worker=""):
    return HEADER + "spec:\n  pytorchReplicaSpecs:\n" + master + worker


def replica(type_, replicas="1", image="python:3", command="[python3, -c, 'print(1)']",
            extra=""):
    text = (f"    {type_}:\n      replicas: {replicas}\n      template:\n        spec:\n"
            f"          containers:\n          - name: pytorch\n            image: {image}\n")
    if command is not None:
        text += f"            command: {command}\n"
    return text + extra


class BadInputTest(TrainctlTestCase):

    def expect_invalid(self, text, *fragments, filename="job.yaml"):
        path = self.write(filename, text)
        proc = self.trainctl("run", filename)
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertEqual(proc.stdout, "", "nothing may start for invalid input")
        self.assertTrue(proc.stderr.startswith("error: " + filename), self.explain(proc))
        for fragment in fragments:
            self.assertIn(fragment, proc.stderr)
        self.assertNotIn("Running ", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.state, "default")),
                         "an invalid job left state behind")
        self.assertTrue(os.path.exists(path))
        return proc.stderr

    def test_not_yaml_names_line_and_column(self):
        self.expect_invalid("spec: [1, 2\nmore: {\n", "job.yaml:", "YAML syntax error")
        err = self.expect_invalid("a: 1\n\tb: 2\n", "YAML syntax error", filename="tab.yaml")
        self.assertRegex(err, r"tab\.yaml:\d+:\d+: ")

    def test_binary_file(self):
        self.expect_invalid("\x00\x01\x02 not text", "job.yaml")

    def test_empty_file(self):
        self.expect_invalid("", "job.yaml")

    def test_unknown_kind(self):
        self.expect_invalid(HEADER.replace("PyTorchJob", "TorchJob") + "spec: {}\n",
                            'kind: Unsupported value: "TorchJob"', "PyTorchJob")

    def test_unknown_api_version(self):
        self.expect_invalid(HEADER.replace("kubeflow.org/v1", "kubeflow.org/v2beta1") +
                            "spec: {}\n", 'apiVersion: Unsupported value: "kubeflow.org/v2beta1"')

    def test_missing_replica_specs(self):
        self.expect_invalid(HEADER + "spec: {}\n",
                            "spec.pytorchReplicaSpecs: Required value")

    def test_master_with_two_replicas(self):
        self.expect_invalid(pytorch(replica("Master", replicas="2")),
                            "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1")

    def test_empty_image(self):
        self.expect_invalid(pytorch(replica("Master", image='""')),
                            "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image:",
                            "Required value")

    def test_string_where_a_number_belongs(self):
        self.expect_invalid(pytorch(replica("Master"), replica("Worker", replicas='"three"')),
                            "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: \"three\"",
                            "integer")

    def test_all_errors_are_reported_together(self):
        err = self.expect_invalid(pytorch(replica("Master", replicas="2", image='""')))
        self.assertIn("[Master].replicas", err)
        self.assertIn("containers[0].image", err)

    def test_no_command_uses_image_entrypoint(self):
        self.expect_invalid(pytorch(replica("Master", command=None)),
                            "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].command:",
                            "entrypoint")

    def test_command_not_on_this_machine(self):
        self.expect_invalid(pytorch(replica("Master", command="[no-such-trainer-xyz, --fast]")),
                            "containers[0].command[0]", '"no-such-trainer-xyz" not found')

    def test_wrong_restart_policy(self):
        text = pytorch(replica("Master")).replace(
            "      template:", "      restartPolicy: Sometimes\n      template:", 1)
        self.expect_invalid(text, "spec.pytorchReplicaSpecs[Master].restartPolicy: "
                                  "Unsupported value: \"Sometimes\"")

    def test_duplicate_key_names_its_line(self):
        text = pytorch(replica("Master")).replace(
            "      template:", "      replicas: 1\n      template:", 1)
        self.expect_invalid(text, 'job.yaml:9:7: mapping key "replicas" already defined')

    def test_missing_file(self):
        proc = self.trainctl("run", "nowhere.yaml")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("nowhere.yaml", proc.stderr)

    def test_json_manifest_is_accepted_and_checked(self):
        self.expect_invalid('{"apiVersion": "kubeflow.org/v1", "kind": "TFJob",'
                            ' "metadata": {"name": "x"}, "spec": {"tfReplicaSpecs": {}}}',
                            "spec.tfReplicaSpecs", filename="job.json")


if __name__ == "__main__":
    unittest.main()
