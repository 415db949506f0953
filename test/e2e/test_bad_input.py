"""Bad input as a new user would try it: every case exits 2 with a message that names the
file and the field path, and nothing is started or written to the state folder."""

import os
import subprocess
import unittest

from harness import TRAINCTL, TrainctlTestCase

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


class HostileInputTest(TrainctlTestCase):
    """Manifests a hostile or careless source can produce (issue #16): bounded work and memory,
    exit 2 with the exact message, nothing written anywhere."""

    def expect_refused(self, filename, text, message):
        self.write(filename, text)
        proc = self.trainctl("run", filename, timeout=60)
        self.assertEqual(proc.returncode, 2, self.explain(proc))
        self.assertEqual(proc.stderr, message + "\n")
        self.assertFalse(os.path.exists(self.state), "state was written for refused input")

    def test_deeply_nested_yaml(self):
        self.expect_refused("deep.yaml", "[" * 100000 + "]" * 100000 + "\n",
                            "error: deep.yaml:1:257: collections nested deeper than 256 levels")

    def test_deeply_nested_json(self):
        self.expect_refused("deep.json", '{"a":' * 100000 + "1" + "}" * 100000 + "\n",
                            "error: deep.json:1:1281: collections nested deeper than 256 levels")

    def test_billion_laughs(self):
        text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 9))
        self.expect_refused("laughs.yaml", text,
                            "error: laughs.yaml:6:45: the document expands to more than 1000000 "
                            "values (aliases that refer to aliases multiply: refused)")

    def test_namespace_that_would_escape_the_state_folder(self):
        text = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
                "metadata: {name: x, namespace: ../../escape}\nspec:\n  pytorchReplicaSpecs:\n"
                "    Master: {replicas: 1, template: {spec: {containers: "
                "[{name: pytorch, image: i, command: [\"true\"]}]}}}\n")
        self.expect_refused(
            "ns.yaml", text,
            "error: ns.yaml: PyTorchJob \"x\" is invalid: metadata.namespace: Invalid value: "
            "\"../../escape\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
            "characters or '-', and must start and end with an alphanumeric character (e.g. "
            "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape")))
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.tmp), "escape")))

    def test_endless_input_is_cut_at_the_manifest_limit(self):
        for source, args in (("/dev/zero", ["/dev/zero"]), ("<stdin>", ["-"])):
            with open("/dev/zero") as zero:
                proc = subprocess.run([TRAINCTL, "run", *args], stdin=zero, cwd=self.work,
                                      env=self.env, capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 2, self.explain(proc))
            self.assertEqual(proc.stderr, f"error: {source}: more than 16777216 bytes: manifests "
                             "larger than 16 MiB are refused\n")

    @staticmethod
    def with_workers(count):
        return ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: many}\nspec:\n"
                "  pytorchReplicaSpecs:\n"
                "    Master: {replicas: 1, template: {spec: {containers: "
                "[{name: pytorch, image: i, command: [\"true\"]}]}}}\n"
                f"    Worker: {{replicas: {count}, template: {{spec: {{containers: "
                "[{name: pytorch, image: i, command: [\"true\"]}]}}}\n")

    def test_absurd_replica_count(self):
        # Two billion replicas once hung `trainctl run` silently; the operator would hold a
        # record for each. Validation refuses it on both substrates.
        self.expect_refused(
            "many.yaml", self.with_workers(2000000000),
            "error: many.yaml: PyTorchJob \"many\" is invalid: "
            "spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 2000000000: must be less "
            "than or equal to 100000")

    def test_more_replicas_than_one_machine_runs(self):
        self.expect_refused(
            "many.yaml", self.with_workers(5000),
            "error: many.yaml: spec.pytorchReplicaSpecs[Worker].replicas: 5000: the job has 5001 "
            "replicas; trainctl run starts a process group for each and takes at most 1024 in "
            "one job")
