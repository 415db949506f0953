"""`trainctl get|describe|logs|delete|wait` against the real control plane, with the real
operator running the jobs: the same commands and output shapes as for local jobs, selected
with --kubeconfig or with --backend kubernetes and $KUBECONFIG. Pod logs come through the API
server from kwok's kubelet-like server (hack/cluster/up.sh serves one fake log per container)."""
import http.client
import json
import os
import subprocess
import time

from harness import CLUSTER_DIR, KUBECONFIG, TRAINCTL, OperatorTestCase, make_job, run_for, wait_for

KWOK_LOG_LINE = "kwok fake container: this log is served by the kwok node through the API server"


class ClusterCli(OperatorTestCase):

    def cli(self, *args, env_kubeconfig=False, timeout=120):
        env = dict(os.environ)
        env.pop("KUBECONFIG", None)
        env.pop("TRAINCTL_BACKEND", None)
        if env_kubeconfig:
            env["KUBECONFIG"] = KUBECONFIG
            cmd = [TRAINCTL, "--backend", "kubernetes", "-n", self.ns, *args]
        else:
            cmd = [TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)

    def test_get_wait_describe_logs_delete(self):
        self.create(make_job("PyTorchJob", "cli", self.ns,
                             {"Master": (1, run_for(4)), "Worker": (2, run_for(4))}))
        waited = self.cli("wait", "pytorchjob/cli", "--for", "condition=Running", "--timeout", "60s")
        self.assertEqual(waited.returncode, 0, waited.stderr)
        self.assertEqual(waited.stdout.strip(), "pytorchjob.kubeflow.org/cli condition met")

        table = self.cli("get")
        self.assertEqual(table.returncode, 0, table.stderr)
        header, row = table.stdout.splitlines()[:2]
        self.assertEqual(header.split(), ["KIND", "NAME", "STATE", "AGE"])
        self.assertEqual(row.split()[:3], ["PyTorchJob", "cli", "Running"])
        as_json = json.loads(self.cli("get", "pytorchjobs", "cli", "-o", "json").stdout)
        self.assertEqual((as_json["kind"], as_json["metadata"]["name"]), ("PyTorchJob", "cli"))
        self.assertEqual(self.cli("get", "-o", "name").stdout.strip(), "pytorchjob.kubeflow.org/cli")

        done = self.cli("wait", "cli", "--timeout", "90s", env_kubeconfig=True)
        self.assertEqual(done.returncode, 0, done.stderr)

        described = self.cli("describe", "pytorchjob", "cli")
        self.assertEqual(described.returncode, 0, described.stderr)
        text = described.stdout
        self.assertIn("State:              Succeeded", text)
        self.assertIn("PyTorchJobSucceeded", text)
        for pod in ("cli-master-0", "cli-worker-0", "cli-worker-1"):
            self.assertRegex(text, rf"{pod}\s+Succeeded\s+0\s+0\s+kwok-node-")
        self.assertIn("SuccessfulCreatePod", text)  # the job's events, from the API

        logs = self.cli("logs", "cli")
        self.assertEqual(logs.returncode, 0, logs.stderr)
        for replica in ("master-0", "worker-0", "worker-1"):
            self.assertIn(f"[{replica}] {KWOK_LOG_LINE}", logs.stdout)
        one = self.cli("logs", "cli", "-r", "worker-1")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertIn(KWOK_LOG_LINE, one.stdout)
        self.assertNotIn("[", one.stdout, "one replica: no prefixes")
        missing = self.cli("logs", "cli", "-r", "worker-7")
        self.assertEqual(missing.returncode, 1)
        self.assertIn('no replica "worker-7"', missing.stderr)

        deleted = self.cli("delete", "cli")
        self.assertEqual(deleted.returncode, 0, deleted.stderr)
        self.assertEqual(deleted.stdout.strip(), 'pytorchjob.kubeflow.org "cli" deleted')
        gone = self.cli("get", "cli")
        self.assertEqual(gone.returncode, 1)
        self.assertIn('job "cli" not found in namespace ' + self.ns, gone.stderr)
        wait_for("pods removed by the garbage collector", lambda: not self.pods("cli"), timeout=60)

    def test_ui_lists_the_clusters_jobs_with_the_users_credentials(self):
        self.create(make_job("PyTorchJob", "shown", self.ns, {"Master": (1, run_for(30))}))
        env = dict(os.environ, TRAINCTL_STATE_DIR=os.path.join(CLUSTER_DIR, "ui-state-" + self.ns))
        env.pop("KUBECONFIG", None)
        ui = subprocess.Popen([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "ui"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            url = ui.stdout.readline().strip()
            port = int(url.split(":")[2].split("/")[0])
            cookie = "trainctl_ui=" + url.rsplit("=", 1)[1]

            def rows():
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/api/v1/jobs", headers={"Host": f"127.0.0.1:{port}",
                                                             "Cookie": cookie})
                body = json.loads(conn.getresponse().read())
                conn.close()
                return [r for r in body["items"] if r["name"] == "shown"]
            row = wait_for("the cluster job in the dashboard's list", rows, timeout=60)[0]
            self.assertEqual((row["source"], row["namespace"], row["kind"]),
                             ("kubernetes", self.ns, "PyTorchJob"))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", f"/api/v1/job?source=kubernetes&ns={self.ns}&kind=PyTorchJob&name=shown",
                         headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
            page = json.loads(conn.getresponse().read())
            conn.close()
            self.assertEqual(page["job"]["metadata"]["name"], "shown")
            self.assertIn("shown-master-0", [r["name"] for r in page["replicas"]])
        finally:
            ui.terminate()
            ui.wait(timeout=20)
            ui.stdout.close()
            ui.stderr.close()

    def test_logs_follow_ends_with_the_job(self):
        self.create(make_job("TFJob", "follow", self.ns, {"Worker": (2, run_for(6))}))
        started = time.monotonic()
        followed = self.cli("logs", "-f", "tfjob/follow", timeout=120)
        self.assertEqual(followed.returncode, 0, followed.stderr)
        self.assertEqual(self.conditions("TFJob", "follow")[-1], ("Succeeded", "True"),
                         "logs -f returned only once the job had finished")
        for replica in ("worker-0", "worker-1"):
            self.assertEqual(followed.stdout.count(f"[{replica}] {KWOK_LOG_LINE}"), 1, followed.stdout)
        self.assertLess(time.monotonic() - started, 60)

    def test_wait_reports_failure_and_bad_input(self):
        self.create(make_job("XGBoostJob", "bad", self.ns, {"Master": (1, run_for(1, exit_code=2))}))
        failed = self.cli("wait", "xgboostjob/bad", "--timeout", "60s")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("bad failed:", failed.stderr)
        # The data layer's document, as for a local job: the first failure the operator named,
        # with its exit code from the pod.
        described = self.cli("describe", "bad", "-o", "json")
        self.assertEqual(described.returncode, 0, described.stderr)
        doc = json.loads(described.stdout)
        self.assertEqual(doc["source"], "kubernetes")
        self.assertEqual(doc["failure"]["name"], "bad-master-0", doc["failure"])
        self.assertEqual(doc["failure"]["exitCode"], 2)
        self.assertIn("First failure: bad-master-0", doc["why"]["firstFailure"])
        unknown = self.cli("wait", "bad", "--for", "condition=Done")
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("unknown condition", unknown.stderr)
        timeout = self.cli("wait", "never-created", "--timeout", "2s")
        self.assertEqual(timeout.returncode, 1)
        self.assertIn("timed out", timeout.stderr)
        self.assertIn("not found", timeout.stderr)
        env = dict(os.environ, KUBECONFIG="/nonexistent/kubeconfig")
        broken = subprocess.run([TRAINCTL, "--backend", "kubernetes", "get"], capture_output=True,
                                text=True, env=env, timeout=30)
        self.assertEqual(broken.returncode, 1)
        self.assertIn("/nonexistent/kubeconfig", broken.stderr)
        run = self.cli("run", "whatever.yaml")
        self.assertEqual(run.returncode, 2)
        self.assertIn("kubectl apply -f whatever.yaml", run.stderr)
