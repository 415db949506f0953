"""Trainer v2 on the control plane: `trainctl operator` turns a TrainJob into a JobSet that the real
JobSet controller (fixture `jobset`) runs on the kwok nodes, keeps the runtime's snapshot, mirrors
the JobSet's status as upstream's controller does, keeps suspend in step, and says with a Warning
event what stops a TrainJob (a runtime that does not exist). With trainctl.dev/checkpoint-notice-
seconds, a suspend or a deletion first tells every node (its pod annotation, shown by the notice
volume) and waits until each reported done. With --history, each finished
TrainJob is a record (its nodes, first failure, log tails; one that finished before the operator
started too) that `trainctl history` and the in-cluster dashboard show, to a user whose RBAC
names trainer.kubeflow.org's trainjobs.

Environment: as harness.py; TRAINCTL_PORT_BASE (the JobSet controller's health port is base+92).
"""
import http.client
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request
import uuid

from harness import (KUBECONFIG, TRAINCTL, Operator, free_port, get_json, install_crds, kubectl,
                     run_for, wait_for)

HEALTH_PORT = int(os.environ.get("TRAINCTL_PORT_BASE", "29400")) + 92
# kwok's stage that ends a running pod takes pods with this label (hack/cluster/kwok).
KWOK_FINISHES = {"training.kubeflow.org/job-name": "trainjob"}
NOTICE = "trainctl.dev/checkpoint-notice"
NOTICE_SECONDS = "trainctl.dev/checkpoint-notice-seconds"


def jobset_controller_ready():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HEALTH_PORT}/readyz", timeout=2) as r:
            return r.read().decode() == "ok"
    except OSError:
        return False


def torch_runtime(name, namespace, seconds=2, exit_code=0):
    """A TrainingRuntime like upstream's torch-distributed whose pods kwok runs for `seconds`,
    then ends with `exit_code`."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {
                    "metadata": {"labels": dict(KWOK_FINISHES),
                                 "annotations": run_for(seconds, exit_code)},
                    "spec": {"containers": [{"name": "node", "image": "example.invalid/torch:1",
                                             "command": ["torchrun"]}]}}}}}]}}},
    }


def trainjob(name, namespace, runtime, **trainer):
    spec = {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime"}}
    if trainer:
        spec["trainer"] = trainer
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def env_of(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


class TrainJobOnJobSet(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not jobset_controller_ready():
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}: start "
                                 "it with hack/cluster/jobset.sh up (fixture jobset)")
        install_crds()
        cls.ns = "tj-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.op = Operator(cls.ns)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        # TrainJobs that hold the notice finalizer go while the operator still runs to release it.
        kubectl("delete", "trainjobs.trainer.kubeflow.org", "--all", "-n", cls.ns, "--timeout=90s",
                check=False)
        cls.op.stop()
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def apply(self, obj):
        kubectl("apply", "--server-side", "-f", "-", input=json.dumps(obj))

    def get(self, kind, name):
        return get_json(kind, name, "-n", self.ns)

    def conditions(self, name):
        tj = self.get("trainjobs.trainer.kubeflow.org", name) or {}
        return {c["type"]: c for c in tj.get("status", {}).get("conditions", [])}

    def wait(self, what, predicate, timeout=90):
        try:
            return wait_for(what, predicate, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\noperator log:\n{self.op.log()}")

    def test_a_trainjob_runs_as_a_jobset_to_complete(self):
        self.apply(torch_runtime("torch", self.ns))
        self.apply(trainjob("digits", self.ns, "torch", numNodes=2, numProcPerNode=2,
                            command=["torchrun", "train.py"]))
        js = self.wait("the JobSet", lambda: self.get("jobsets.jobset.x-k8s.io", "digits"))
        owner = js["metadata"]["ownerReferences"][0]
        self.assertEqual((owner["kind"], owner["name"], owner["controller"]),
                         ("TrainJob", "digits", True))
        node = js["spec"]["replicatedJobs"][0]
        self.assertEqual(node["name"], "node")
        self.assertEqual(node["template"]["spec"]["parallelism"], 2)
        self.assertEqual(node["template"]["spec"]["completions"], 2)
        container = node["template"]["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(container["command"], ["torchrun", "train.py"])
        env = env_of(container)
        self.assertEqual(env["PET_NNODES"], "2")
        self.assertEqual(env["PET_NPROC_PER_NODE"], "2")
        self.assertEqual(env["PET_MASTER_ADDR"], "digits-node-0-0.digits")
        self.assertEqual(env["PET_MASTER_PORT"], "29500")
        self.assertEqual(env["PET_NODE_RANK"]["fieldRef"]["fieldPath"],
                         "metadata.annotations['batch.kubernetes.io/job-completion-index']")
        snapshot = self.get("configmap", "digits-runtime-snapshot")
        self.assertEqual(json.loads(snapshot["data"]["runtime"])["metadata"]["name"], "torch")
        pods = self.wait("two pods", lambda: [
            p for p in (get_json("pods", "-n", self.ns, "-l",
                                 "jobset.sigs.k8s.io/jobset-name=digits") or {}).get("items", [])
        ] if len((get_json("pods", "-n", self.ns, "-l", "jobset.sigs.k8s.io/jobset-name=digits")
                  or {}).get("items", [])) == 2 else None)
        self.assertEqual(sorted(p["spec"]["hostname"] for p in pods),
                         ["digits-node-0-0", "digits-node-0-1"])
        done = self.wait("TrainJob Complete", lambda: self.conditions("digits").get("Complete"))
        self.assertEqual(done["status"], "True")
        self.assertEqual(done["reason"], "AllJobsCompleted")
        # Only upstream's condition once it is done (upstream's e2e suite compares the list).
        self.assertEqual(list(self.conditions("digits")), ["Complete"])
        status = self.get("trainjobs.trainer.kubeflow.org", "digits")["status"]
        self.assertEqual(status["jobsStatus"][0]["name"], "node")
        self.assertEqual(status["jobsStatus"][0]["succeeded"], 1)
        # The CLI reads it from the cluster like every kind: state, replicas (the JobSet's pods).
        def cli(*args):
            out = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, *args],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout
        self.assertRegex(cli("get", "tj", "digits"), r"digits +Complete")
        self.assertIn("TrainJob", cli("get"))
        described = cli("describe", "trainjob", "digits")
        self.assertIn("digits-node-0-0", described)
        self.assertIn("digits-node-0-1", described)

    def test_a_runtime_edit_after_creation_does_not_change_the_job(self):
        self.apply(torch_runtime("snap", self.ns, seconds=60))
        self.apply(trainjob("snapped", self.ns, "snap", numNodes=1))
        self.wait("the JobSet", lambda: self.get("jobsets.jobset.x-k8s.io", "snapped"))
        edited = torch_runtime("snap", self.ns)
        edited["spec"]["mlPolicy"]["numNodes"] = 3
        self.apply(edited)
        snapshot = self.get("configmap", "snapped-runtime-snapshot")
        self.assertEqual(json.loads(snapshot["data"]["runtime"])["spec"]["mlPolicy"]["numNodes"], 1)

    def test_suspend_is_kept_in_step_with_the_jobset(self):
        self.apply(torch_runtime("long", self.ns, seconds=600))
        job = trainjob("paused", self.ns, "long")
        job["spec"]["suspend"] = True
        self.apply(job)
        suspended = self.wait("Suspended", lambda: self.conditions("paused").get("Suspended"))
        self.assertEqual((suspended["status"], suspended["reason"]), ("True", "Suspended"))
        self.assertTrue(self.get("jobsets.jobset.x-k8s.io", "paused")["spec"]["suspend"])
        kubectl("patch", "trainjobs.trainer.kubeflow.org", "paused", "-n", self.ns, "--type=merge",
                "-p", '{"spec": {"suspend": false}}')
        resumed = self.wait("Resumed", lambda: (
            self.conditions("paused").get("Suspended", {}).get("reason") == "Resumed"
            and self.conditions("paused")["Suspended"]))
        self.assertEqual(resumed["status"], "False")
        self.wait("JobSet resumed",
                  lambda: not self.get("jobsets.jobset.x-k8s.io", "paused")["spec"].get("suspend"))

    def test_a_gang_trainjob_restarts_every_node_through_jobset(self):
        runtime = torch_runtime("failing", self.ns, seconds=1, exit_code=3)
        node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        node["template"]["metadata"]["annotations"]["trainctl.dev/kwok-termination-message"] = (
            "RuntimeError: NCCL communicator was aborted")
        node["backoffLimit"] = 1  # the TrainJob's backoff limit: JobSet's maxRestarts
        self.apply(runtime)
        job = trainjob("gang", self.ns, "failing", numNodes=2)
        job["metadata"]["annotations"] = {"trainctl.dev/restart-scope": "Gang"}
        self.apply(job)
        js = self.wait("the JobSet", lambda: self.get("jobsets.jobset.x-k8s.io", "gang"))
        self.assertEqual(js["spec"]["failurePolicy"]["maxRestarts"], 1)
        failed = self.wait("TrainJob Failed", lambda: self.conditions("gang").get("Failed"),
                           timeout=120)
        self.assertEqual(failed["reason"], "ReachedMaxRestarts")
        # Upstream's message, then which node failed first, how, and its last output.
        self.assertRegex(failed["message"],
                         r"\nFirst failure: gang-node-0-[01]-\S+ \(node [01]\) exited with code 3")
        self.assertIn("RuntimeError: NCCL communicator was aborted", failed["message"])
        self.assertNotIn("ReplicasReady", self.conditions("gang"), "none once finished")

        def restarting():
            events = (get_json("events", "-n", self.ns, "--field-selector",
                               "involvedObject.name=gang") or {}).get("items", [])
            return [e for e in events if e["reason"] == "TrainJobRestarting"]
        said = self.wait("the restart said", restarting)
        self.assertIn("restarted every node together: restart 1 of 1", said[0]["message"])

    def test_why_its_nodes_do_not_run_is_on_the_trainjob(self):
        self.apply(torch_runtime("big", self.ns, seconds=600))
        self.apply(trainjob("toobig", self.ns, "big", numNodes=2,
                            resourcesPerNode={"requests": {"cpu": "100000"}}))
        ready = self.wait("ReplicasReady Unschedulable", lambda: (
            self.conditions("toobig").get("ReplicasReady", {}).get("reason") == "Unschedulable"
            and self.conditions("toobig")["ReplicasReady"]))
        self.assertEqual(ready["status"], "False")
        self.assertIn("Insufficient cpu", ready["message"])
        self.assertRegex(ready["message"], r"^[12]/2 replicas are unschedulable \(node [01]")
        tj = self.get("trainjobs.trainer.kubeflow.org", "toobig")
        self.assertEqual(tj["status"]["conditions"][0]["type"], "ReplicasReady")
        # The CLI's REASON column reads it, as for every kind.
        out = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "get", "tj",
                              "toobig", "-o", "wide"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Unschedulable", out.stdout)

    def pods_of(self, name):
        return (get_json("pods", "-n", self.ns, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
                or {}).get("items", [])

    def running_pods(self, name, count):
        return self.wait(f"{count} pods of {name} Running", lambda: (
            pods if len(pods := [p for p in self.pods_of(name)
                                 if not p["metadata"].get("deletionTimestamp")]) == count
            and all(p.get("status", {}).get("phase") == "Running" for p in pods) else None))

    def notice_job(self, name, runtime, seconds):
        job = trainjob(name, self.ns, runtime, numNodes=2)
        job["metadata"]["annotations"] = {NOTICE_SECONDS: str(seconds)}
        self.apply(job)
        return self.running_pods(name, 2)

    def told(self, name, reason):
        pods = [p for p in self.pods_of(name) if not p["metadata"].get("deletionTimestamp")]
        said = [json.loads(p["metadata"].get("annotations", {}).get(NOTICE, "null") or "null")
                for p in pods]
        return pods if pods and all(n and n["reason"] == reason for n in said) else None

    def report_done(self, pods):
        for p in pods:
            kubectl("annotate", "pod", p["metadata"]["name"], "-n", self.ns,
                    "trainctl.dev/checkpoint-done=true")

    def test_a_checkpoint_notice_holds_a_suspend_until_every_node_is_done(self):
        self.apply(torch_runtime("noticed", self.ns, seconds=600))
        pods = self.notice_job("ckpt", "noticed", 120)
        volume = [v for v in pods[0]["spec"]["volumes"] if v["name"] == "trainctl-checkpoint-notice"]
        self.assertEqual(volume[0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"],
                         f"metadata.annotations['{NOTICE}']")
        env = env_of(pods[0]["spec"]["containers"][0])
        self.assertEqual(env["TRAINCTL_NOTICE_FILE"], "/etc/trainctl/notice/notice.json")
        tj = self.get("trainjobs.trainer.kubeflow.org", "ckpt")
        self.assertIn(NOTICE, tj["metadata"].get("finalizers", []))
        kubectl("patch", "trainjobs.trainer.kubeflow.org", "ckpt", "-n", self.ns, "--type=merge",
                "-p", '{"spec": {"suspend": true}}')
        pods = self.wait("both nodes told", lambda: self.told("ckpt", "Suspended"), timeout=30)
        tj = self.get("trainjobs.trainer.kubeflow.org", "ckpt")
        recorded = json.loads(tj["metadata"]["annotations"][NOTICE])
        self.assertEqual((recorded["reason"], recorded["seconds"]), ("Suspended", 120))
        for p in pods:
            self.assertEqual(p["metadata"]["annotations"][NOTICE], tj["metadata"]["annotations"][NOTICE])
        time.sleep(2)
        self.assertFalse(self.get("jobsets.jobset.x-k8s.io", "ckpt")["spec"].get("suspend"),
                         "the JobSet keeps running while its nodes checkpoint")
        self.assertEqual(len(self.running_pods("ckpt", 2)), 2)
        events = (get_json("events", "-n", self.ns, "--field-selector",
                           "involvedObject.name=ckpt") or {}).get("items", [])
        self.assertTrue([e for e in events if e["reason"] == "CheckpointNotice"], events)
        self.report_done(pods)
        reported = time.monotonic()
        self.wait("the JobSet suspended once both are done",
                  lambda: self.get("jobsets.jobset.x-k8s.io", "ckpt")["spec"].get("suspend"))
        self.wait("the pods gone", lambda: not [p for p in self.pods_of("ckpt")
                                                if not p["metadata"].get("deletionTimestamp")])
        self.assertLess(time.monotonic() - reported, 60, "well before the notice's 120 s")
        # Nothing left alive to tell: its deletion is not held.
        kubectl("delete", "trainjobs.trainer.kubeflow.org", "ckpt", "-n", self.ns, "--timeout=30s")

    def test_a_deleted_trainjob_with_a_notice_waits_for_its_nodes(self):
        self.apply(torch_runtime("noticed-del", self.ns, seconds=600))
        self.notice_job("ckpt-del", "noticed-del", 120)
        kubectl("delete", "trainjobs.trainer.kubeflow.org", "ckpt-del", "-n", self.ns, "--wait=false")
        pods = self.wait("both nodes told", lambda: self.told("ckpt-del", "Deleted"), timeout=30)
        time.sleep(2)
        tj = self.get("trainjobs.trainer.kubeflow.org", "ckpt-del")
        self.assertIsNotNone(tj, "held by its finalizer while the nodes checkpoint")
        self.assertTrue(tj["metadata"].get("deletionTimestamp"))
        self.assertEqual(len(self.running_pods("ckpt-del", 2)), 2)
        self.report_done(pods)
        self.wait("the TrainJob gone", lambda: self.get("trainjobs.trainer.kubeflow.org",
                                                        "ckpt-del") is None)
        self.wait("its JobSet gone", lambda: self.get("jobsets.jobset.x-k8s.io", "ckpt-del") is None)

    def test_a_runtime_pod_group_policy_makes_the_pod_group_first(self):
        kubectl("apply", "--server-side", "-f",
                os.path.join(os.path.dirname(__file__), "podgroup-crds.yaml"))
        runtime = torch_runtime("grouped", self.ns, seconds=600)
        runtime["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 90}}
        node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        node["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
        self.apply(runtime)
        self.apply(trainjob("gang-group", self.ns, "grouped", numNodes=2))
        group = self.wait("the PodGroup",
                          lambda: self.get("podgroups.scheduling.x-k8s.io", "gang-group"))
        self.assertEqual(group["spec"]["minMember"], 2)
        self.assertEqual(group["spec"]["minResources"], {"cpu": "500m"})
        self.assertEqual(group["spec"]["scheduleTimeoutSeconds"], 90)
        owner = group["metadata"]["ownerReferences"][0]
        self.assertEqual((owner["kind"], owner["name"], owner["controller"]),
                         ("TrainJob", "gang-group", True))
        pods = self.running_pods("gang-group", 2)
        for p in pods:
            self.assertEqual(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "gang-group")

    def test_a_runtime_that_does_not_exist_is_said_in_an_event(self):
        self.apply(trainjob("orphan", self.ns, "no-such-runtime"))

        def warning():
            events = (get_json("events", "-n", self.ns, "--field-selector",
                               "involvedObject.name=orphan") or {}).get("items", [])
            return [e for e in events if e["reason"] == "TrainJobResourcesCreationFailed"]
        found = self.wait("the Warning event", warning)
        self.assertIn("TrainingRuntime " + self.ns + "/no-such-runtime not found",
                      found[0]["message"])
        self.assertIsNone(self.get("jobsets.jobset.x-k8s.io", "orphan"))


class TrainJobHistory(unittest.TestCase):
    """--history and --dashboard-bind-address with the TrainJob controller: one TrainJob finished
    under an operator without a history (so it is recorded after the restart, from its runtime
    snapshot), one fails under this one."""

    KWOK_LOG_LINE = "kwok fake container"

    @classmethod
    def setUpClass(cls):
        if not jobset_controller_ready():
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}")
        install_crds()
        cls.ns = "tjh-" + uuid.uuid4().hex[:8]
        cls.dir = tempfile.mkdtemp(prefix="trainctl-tj-history-")
        cls.history_path = os.path.join(cls.dir, "history.db")
        cls.port = free_port()
        kubectl("create", "namespace", cls.ns)
        # A viewer of TrainJobs (their API group, not kubeflow.org's) and their pods' logs.
        kubectl("create", "serviceaccount", "viewer", "-n", cls.ns)
        kubectl("create", "role", "trainjob-viewer", "-n", cls.ns, "--verb=get,list",
                "--resource=trainjobs.trainer.kubeflow.org,pods,pods/log")
        kubectl("create", "rolebinding", "trainjob-viewer", "-n", cls.ns,
                "--role=trainjob-viewer", f"--serviceaccount={cls.ns}:viewer")
        cls.token = kubectl("create", "token", "viewer", "-n", cls.ns,
                            "--duration", "1h").stdout.strip()
        kubectl("apply", "--server-side", "-f", "-",
                input=json.dumps(torch_runtime("torch", cls.ns, seconds=1)))
        before = Operator(cls.ns)  # no history
        before.start()
        try:
            kubectl("apply", "--server-side", "-f", "-",
                    input=json.dumps(trainjob("before", cls.ns, "torch", numNodes=2)))
            wait_for("before Complete", lambda: "Complete" in [
                c["type"] for c in ((get_json("trainjobs.trainer.kubeflow.org", "before", "-n",
                                              cls.ns) or {}).get("status") or {})
                .get("conditions", [])], timeout=90)
        finally:
            before.stop()
        cls.op = Operator(cls.ns, "--history", "sqlite:" + cls.history_path,
                          "--dashboard-bind-address", f"127.0.0.1:{cls.port}")
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def history(self, *args):
        out = subprocess.run([TRAINCTL, "-n", self.ns, "history", "--file", self.history_path,
                              *args], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return out.stdout

    def recorded(self, name):
        try:
            return wait_for(f"{name}'s record", lambda: name in self.history(), timeout=90)
        except AssertionError as e:
            raise AssertionError(f"{e}\noperator log:\n{self.op.log()}")

    def dashboard(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", path, headers={"Authorization": "Bearer " + self.token})
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        self.assertEqual(response.status, 200, body)
        return json.loads(body)

    def test_one_that_finished_before_the_operator_started_is_recorded_from_its_snapshot(self):
        self.recorded("before")
        record = json.loads(self.history("show", "before", "-o", "json"))
        self.assertEqual((record["kind"], record["source"]), ("TrainJob", "kubernetes"))
        self.assertEqual(record["job"]["apiVersion"], "trainer.kubeflow.org/v1alpha1")
        self.assertEqual(record["job"]["status"]["conditions"][-1]["type"], "Complete")
        self.assertEqual(sorted((r["type"], r["index"], r["state"]) for r in record["replicas"]),
                         [("node", 0, "Succeeded"), ("node", 1, "Succeeded")])
        # Node 0's tail, from its `node` container; a node that did not fail is not read.
        tails = {k: v["tail"] for k, v in record["logs"].items()}
        self.assertEqual([k for k in tails if k.startswith("node-0-0-")], list(tails), tails)
        self.assertIn(self.KWOK_LOG_LINE, next(iter(tails.values())))
        self.assertRegex(self.history(), r"TrainJob +before +Complete")

    def test_a_failed_trainjob_is_recorded_and_the_dashboard_shows_it(self):
        runtime = torch_runtime("failing", self.ns, seconds=1, exit_code=3)
        node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
        node["template"]["metadata"]["annotations"]["trainctl.dev/kwok-termination-message"] = (
            "ValueError: loss is nan")
        # Pods that are not restarted in place stay once their Job fails (it deletes only the
        # running ones): the record has their rows and tails.
        node["template"]["spec"]["restartPolicy"] = "Never"
        node["backoffLimit"] = 0
        kubectl("apply", "--server-side", "-f", "-", input=json.dumps(runtime))
        kubectl("apply", "--server-side", "-f", "-",
                input=json.dumps(trainjob("broken", self.ns, "failing", numNodes=2)))
        self.recorded("broken")
        self.recorded("before")
        record = json.loads(self.history("show", "broken", "-o", "json"))
        self.assertEqual(record["job"]["status"]["conditions"][-1]["type"], "Failed")
        self.assertIsNotNone(record["failure"], record["job"]["status"])
        failed = record["failure"]["name"]
        self.assertRegex(failed, r"^broken-node-0-[01]-")
        self.assertEqual(record["failure"]["exitCode"], 3)
        self.assertIn("First failure: " + failed, record["why"]["firstFailure"])
        self.assertIn(self.KWOK_LOG_LINE, record["logs"][failed.removeprefix("broken-")]["tail"])
        self.assertTrue(any(k.startswith("node-0-0-") for k in record["logs"]), record["logs"])
        found = json.loads(self.history("search", "loss is nan", "-o", "json"))
        self.assertIn("broken", [row["name"] for row in found["items"]])

        # The dashboard: the live TrainJobs and the history's rows, to a TrainJob viewer.
        def trainjobs_listed():
            rows = self.dashboard("/api/v1/jobs")["items"]
            names = {r["name"] for r in rows if r["kind"] == "TrainJob"}
            return rows if {"before", "broken"} <= names else None
        listed = wait_for("the TrainJobs in the dashboard's list", trainjobs_listed, timeout=30)
        self.assertTrue(all(r["namespace"] == self.ns for r in listed))
        rows = {r["name"]: r for r in self.dashboard("/api/v1/history?kind=TrainJob")["items"]}
        self.assertEqual(rows["broken"]["state"], "Failed")
        self.assertEqual(rows["broken"]["firstFailure"], failed)
        self.assertEqual(rows["before"]["state"], "Complete")
        page = self.dashboard("/api/v1/job?uid=" + rows["broken"]["uid"])
        self.assertEqual(page["failure"]["exitCode"], 3)
        # `trainctl history` of the cluster reads the same through the dashboard.
        out = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "history",
                              "--dashboard", f"http://127.0.0.1:{self.port}", "-o", "json"],
                             capture_output=True, text=True, timeout=60,
                             env={**os.environ, "TRAINCTL_TOKEN": self.token})
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual({r["name"] for r in json.loads(out.stdout)["items"]}, {"before", "broken"})


def register_webhook(kind, config, hook, port, path, namespace):
    """A webhook configuration sending this namespace's TrainJob creates and updates to the
    operator's webhook server on 127.0.0.1:port at `path`."""
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": config},
        "webhooks": [{
            "name": hook,
            "clientConfig": {"url": f"https://127.0.0.1:{port}{path}"},
            "rules": [{"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["trainjobs"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "failurePolicy": "Fail", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 10}]}))


class TrainJobAdmission(unittest.TestCase):
    """The operator's webhook at upstream's path, registered for TrainJobs of this namespace:
    the real API server refuses a TrainJob that names no runtime, or sets an env its runtime's
    policy reserves, with the field path; a good one is admitted and runs."""

    @classmethod
    def setUpClass(cls):
        if not jobset_controller_ready():
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}")
        install_crds()
        cls.ns = "tja-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.port = free_port()
        cls.config = f"trainer-validator-{cls.ns}.trainctl.test"
        cls.mutating = f"trainer-mutator-{cls.ns}.trainctl.test"
        register_webhook("ValidatingWebhookConfiguration", cls.config,
                         "trainjob.validator.trainctl.test", cls.port,
                         "/validate-trainer-kubeflow-org-v1alpha1-trainjob", cls.ns)
        register_webhook("MutatingWebhookConfiguration", cls.mutating,
                         "trainjob.mutator.trainctl.test", cls.port,
                         "/mutate-trainer-kubeflow-org-v1alpha1-trainjob", cls.ns)
        cls.op = Operator(cls.ns, "--webhook-server-port", str(cls.port),
                          "--webhook-bind-host", "127.0.0.1", "--webhook-host", "127.0.0.1",
                          "--webhook-config-name", cls.config,
                          "--mutating-webhook-config-name", cls.mutating,
                          "--webhook-secret-name", f"webhook-cert-{cls.ns}",
                          "--leader-election-namespace", cls.ns)
        cls.op.start()
        wait_for("caBundle injected", lambda: all(
            w["clientConfig"].get("caBundle") for w in
            (get_json("validatingwebhookconfiguration", cls.config) or {"webhooks": [{}]})["webhooks"]
            + (get_json("mutatingwebhookconfiguration", cls.mutating) or {"webhooks": [{}]})["webhooks"]))

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        kubectl("delete", "validatingwebhookconfiguration", cls.config, "--ignore-not-found",
                check=False)
        kubectl("delete", "mutatingwebhookconfiguration", cls.mutating, "--ignore-not-found",
                check=False)
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def create(self, obj):
        return kubectl("create", "-f", "-", input=json.dumps(obj), check=False)

    def test_bad_trainjobs_are_refused_by_the_api_server(self):
        kubectl("apply", "--server-side", "-f", "-",
                input=json.dumps(torch_runtime("torch", self.ns)))
        out = self.create(trainjob("nowhere", self.ns, "no-such"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('admission webhook "trainjob.validator.trainctl.test" denied the request: '
                      'spec.runtimeRef: Invalid value: "no-such": TrainingRuntime '
                      f"{self.ns}/no-such not found: specified trainingRuntime must be created "
                      "before the TrainJob is created", out.stderr)
        out = self.create(trainjob("reserved", self.ns, "torch",
                                   env=[{"name": "PET_NNODES", "value": "9"}]))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("spec.trainer.env", out.stderr)
        self.assertIn("must not have reserved envs, invalid envs configured: [PET_NNODES]",
                      out.stderr)
        self.assertIsNone(get_json("trainjobs.trainer.kubeflow.org", "reserved", "-n", self.ns))
        out = self.create(trainjob("fine", self.ns, "torch", numNodes=1))
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_runtime_patches_get_their_time_as_upstream(self):
        kubectl("apply", "--server-side", "-f", "-",
                input=json.dumps(torch_runtime("torch", self.ns)))
        job = trainjob("patched", self.ns, "torch", numNodes=1)
        job["spec"]["suspend"] = True
        job["spec"]["runtimePatches"] = [
            {"manager": "test.io/one", "time": "2026-01-01T00:00:00Z"},
            {"manager": "test.io/two", "trainingRuntimeSpec": {"template": {"spec": {
                "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                    "spec": {"nodeSelector": {"zone": "a"}}}}}}]}}}}]
        out = self.create(job)
        self.assertEqual(out.returncode, 0, out.stderr)
        patches = get_json("trainjobs.trainer.kubeflow.org", "patched", "-n", self.ns)["spec"]["runtimePatches"]
        self.assertEqual(patches[0]["time"], "2026-01-01T00:00:00Z")
        stamped = patches[1].get("time", "")
        self.assertRegex(stamped, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        # An update: the unchanged entry keeps its time; the changed one gets the update's.
        time.sleep(1.1)
        patches[1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"][
            "spec"]["template"]["spec"]["nodeSelector"]["zone"] = "b"
        kubectl("patch", "trainjobs.trainer.kubeflow.org", "patched", "-n", self.ns,
                "--type=merge", "-p", json.dumps({"spec": {"runtimePatches": [
                    {"manager": "test.io/one", "time": "2026-01-01T00:00:00Z"}, {
                        "manager": "test.io/two",
                        "trainingRuntimeSpec": patches[1]["trainingRuntimeSpec"]}]}}))
        after = get_json("trainjobs.trainer.kubeflow.org", "patched", "-n", self.ns)["spec"]["runtimePatches"]
        self.assertEqual(after[0]["time"], "2026-01-01T00:00:00Z")
        self.assertGreater(after[1]["time"], stamped)


class TrainerStatusEndpoint(unittest.TestCase):
    """Trainer v2.3's runtime status endpoint served by the operator (--status-server-port) on its
    webhook certificate: the JobSet's trainer pods get the URL, CA and token files, the ConfigMap
    <job>-tls-config holds the CA, and a report with the pod's projected token (here one the API
    server issues for the same audience: kwok runs no containers) lands on status.trainerStatus;
    bad tokens, another job's token and hostile bodies are refused, a burst of reports is written
    coalesced, and a PyTorchJob reports the same way."""

    @classmethod
    def setUpClass(cls):
        if not jobset_controller_ready():
            raise AssertionError(f"no JobSet controller answers on 127.0.0.1:{HEALTH_PORT}")
        install_crds()
        cls.ns = "tjs-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.port, cls.status_port = free_port(), free_port()
        cls.op = Operator(cls.ns, "--webhook-server-port", str(cls.port),
                          "--status-server-port", str(cls.status_port),
                          "--status-server-url", f"https://127.0.0.1:{cls.status_port}",
                          "--webhook-bind-host", "127.0.0.1", "--webhook-host", "127.0.0.1",
                          "--webhook-config-name", f"none-{cls.ns}",
                          "--mutating-webhook-config-name", f"none-m-{cls.ns}",
                          "--webhook-secret-name", f"webhook-cert-{cls.ns}",
                          "--leader-election-namespace", cls.ns)
        cls.op.start()
        kubectl("apply", "--server-side", "-f", "-",
                input=json.dumps(torch_runtime("torch", cls.ns, seconds=600)))
        for name in ("reporter", "neighbour", "burster"):
            kubectl("create", "-f", "-",
                    input=json.dumps(trainjob(name, cls.ns, "torch", numNodes=1)))
        wait_for("the default service account", lambda: get_json(
            "serviceaccount", "default", "-n", cls.ns) is not None)
        cm = wait_for("ConfigMap reporter-tls-config", lambda: get_json(
            "configmap", "reporter-tls-config", "-n", cls.ns), timeout=60)
        cls.ca_dir = tempfile.mkdtemp()
        cls.ca = os.path.join(cls.ca_dir, "ca.crt")
        with open(cls.ca, "w") as f:
            f.write(cm["data"]["ca.crt"])

    @classmethod
    def tearDownClass(cls):
        cls.op.stop()
        shutil.rmtree(cls.ca_dir, ignore_errors=True)
        kubectl("delete", "namespace", cls.ns, "--wait=false", check=False)

    def token(self, job):
        return kubectl("create", "token", "default", "-n", self.ns, "--duration=10m",
                       f"--audience=trainer.kubeflow.org/v1alpha1/namespaces/{self.ns}/trainjobs/"
                       f"{job}/status").stdout.strip()

    def post(self, job, body, token, conn=None):
        import ssl
        own = conn is None
        if own:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", self.status_port, timeout=10,
                context=ssl.create_default_context(cafile=self.ca))
        try:
            conn.request("POST", f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{self.ns}/"
                                 f"trainjobs/{job}/status",
                         body=body if isinstance(body, (bytes, str)) else json.dumps(body),
                         headers={"Authorization": f"Bearer {token}",
                                  "Content-Type": "application/json"})
            r = conn.getresponse()
            return r.status, json.loads(r.read() or b"{}")
        finally:
            if own:
                conn.close()

    @staticmethod
    def report(progress, **extra):
        return {"trainerStatus": {"progressPercentage": progress, "lastUpdatedTime":
                                  time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}}

    def trainer_status(self, job):
        tj = get_json("trainjobs.trainer.kubeflow.org", job, "-n", self.ns) or {}
        return tj.get("status", {}).get("trainerStatus")

    def test_the_trainer_pods_are_given_the_endpoint(self):
        js = wait_for("the JobSet", lambda: get_json("jobsets.jobset.x-k8s.io", "reporter", "-n",
                                                     self.ns), timeout=60)
        pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        env = env_of(pod["containers"][0])
        self.assertEqual(env["KUBEFLOW_TRAINER_SERVER_URL"],
                         f"https://127.0.0.1:{self.status_port}/apis/trainer.kubeflow.org/"
                         f"v1alpha1/namespaces/{self.ns}/trainjobs/reporter/status")
        self.assertEqual(env["KUBEFLOW_TRAINER_SERVER_TOKEN"],
                         "/var/run/secrets/kubeflow/trainer/token")
        volume = [v for v in pod["volumes"] if v["name"] == "kubeflow-trainer-token"][0]
        self.assertEqual(volume["projected"]["sources"][0]["serviceAccountToken"]["audience"],
                         f"trainer.kubeflow.org/v1alpha1/namespaces/{self.ns}/trainjobs/"
                         "reporter/status")

    def test_a_report_lands_on_the_trainjob(self):
        code, echo = self.post("reporter", self.report(
            42, estimatedRemainingSeconds=120,
            metrics=[{"name": "loss", "value": "0.123"}, {"name": "accuracy", "value": "0.95"}]),
            self.token("reporter"))
        self.assertEqual(code, 200, echo)
        self.assertEqual(echo["trainerStatus"]["progressPercentage"], 42)
        status = wait_for("trainerStatus", lambda: (self.trainer_status("reporter") or {}).get(
            "progressPercentage") == 42 and self.trainer_status("reporter"), timeout=20)
        self.assertEqual(status["estimatedRemainingSeconds"], 120)
        self.assertEqual([m["name"] for m in status["metrics"]], ["loss", "accuracy"])

    def test_bad_tokens_other_jobs_and_hostile_bodies_are_refused(self):
        mine = self.token("reporter")
        self.assertEqual(self.post("reporter", self.report(1), "not-a-token")[0], 401)
        self.assertEqual(self.post("reporter", self.report(1), "")[0], 401)
        code, body = self.post("neighbour", self.report(1), mine)
        self.assertEqual(code, 403, body)
        self.assertIn(f"not for TrainJob {self.ns}/neighbour", body["message"])
        self.assertEqual(self.post("reporter", b"x" * 70000, mine)[0], 413)
        self.assertEqual(self.post("reporter", "[" * 5000 + "]" * 5000, mine)[0], 400)
        code, body = self.post("reporter", self.report(101), mine)
        self.assertEqual(code, 422)
        self.assertIn("trainerStatus.progressPercentage", body["message"])
        self.assertEqual(self.post("nobody", self.report(1), self.token("nobody"))[0], 404)
        self.assertIsNone((self.trainer_status("neighbour") or {}).get("progressPercentage"))

    def test_a_v1_job_reports_too_and_the_cli_shows_it(self):
        # Beyond upstream: a PyTorchJob's pods are given its own endpoint
        # (/apis/kubeflow.org/v1/…), the namespace's CA ConfigMap is made before them, and the
        # report is kept in the job's annotation (its CRD has no trainerStatus) that the CLI
        # shows as status.trainerStatus.
        from harness import make_job
        job = make_job("PyTorchJob", "v1-reporter", self.ns, {"Master": (1, {})})
        kubectl("create", "-f", "-", input=json.dumps(job))
        pod = wait_for("the worker's pod", lambda: get_json(
            "pod", "v1-reporter-master-0", "-n", self.ns), timeout=60)
        path = f"kubeflow.org/v1/namespaces/{self.ns}/pytorchjobs/v1-reporter/status"
        env = env_of(pod["spec"]["containers"][0])
        self.assertEqual(env["KUBEFLOW_TRAINER_SERVER_URL"],
                         f"https://127.0.0.1:{self.status_port}/apis/{path}")
        volume = [v for v in pod["spec"]["volumes"] if v["name"] == "kubeflow-trainer-token"][0]
        self.assertEqual(volume["projected"]["sources"][0]["serviceAccountToken"]["audience"],
                         path)
        cm = get_json("configmap", "trainctl-trainer-status-ca", "-n", self.ns)
        self.assertEqual(cm["data"]["ca.crt"], open(self.ca).read())
        token = kubectl("create", "token", "default", "-n", self.ns, "--duration=10m",
                        f"--audience={path}").stdout.strip()
        import ssl
        conn = http.client.HTTPSConnection("127.0.0.1", self.status_port, timeout=10,
                                           context=ssl.create_default_context(cafile=self.ca))
        conn.request("POST", "/apis/" + path, body=json.dumps(self.report(
            64, metrics=[{"name": "loss", "value": "0.25"}])),
            headers={"Authorization": f"Bearer {token}"})
        self.assertEqual(conn.getresponse().status, 200)
        conn.close()
        # A TrainJob's token is not this job's.
        self.assertEqual(self.post("reporter", self.report(1), token)[0], 403)
        kept = wait_for("the annotation", lambda: ((get_json(
            "pytorchjobs", "v1-reporter", "-n", self.ns) or {}).get("metadata", {}).get(
            "annotations", {}).get("trainctl.dev/trainer-status")), timeout=20)
        self.assertEqual(json.loads(kept)["progressPercentage"], 64)
        out = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "describe",
                              "pytorchjob", "v1-reporter"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"Progress:\s+64%")
        self.assertIn("loss=0.25", out.stdout)

    def test_a_burst_of_reports_is_written_coalesced(self):
        import ssl
        token = self.token("burster")
        conn = http.client.HTTPSConnection("127.0.0.1", self.status_port, timeout=10,
                                           context=ssl.create_default_context(cafile=self.ca))
        writes_before = self.op.gauge("trainctl_trainer_status_writes_total")
        began = time.monotonic()
        for i in range(500):
            code, _ = self.post("burster", self.report(i // 5), token, conn)
            self.assertEqual(code, 200)
        took = time.monotonic() - began
        conn.close()
        wait_for("the last report", lambda: (self.trainer_status("burster") or {}).get(
            "progressPercentage") == 99, timeout=20)
        writes = self.op.gauge("trainctl_trainer_status_writes_total") - writes_before
        # One write per second per TrainJob at most, and the last one after the burst.
        print(f"500 reports in {took:.2f} s: {writes:.0f} status writes")
        self.assertLessEqual(writes, took + 2, f"{writes} writes for 500 reports in {took:.1f} s")
        self.assertGreaterEqual(self.op.gauge("trainctl_trainer_status_reports_total"), 500)


if __name__ == "__main__":
    unittest.main()
