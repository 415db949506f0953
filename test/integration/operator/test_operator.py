"""The real `trainctl operator` against the real control plane (kube-apiserver + etcd +
kube-controller-manager + kube-scheduler + kwok nodes): every kind from Created to Succeeded with
the pods, services and env of reference §3, failure and restart rules, deadlines, TTL,
cleanPodPolicy, suspend/resume, managedBy, bad input, and an operator restart mid-job."""
import base64
import json
import re
import time
import unittest
import uuid

from harness import (FOREVER, KIND_INFO, Operator, OperatorTestCase, elastic_pytorch_job, env_of, get_json,
                     install_crds, kubectl, make_job, run_for, wait_for)


class EveryKindSucceeds(OperatorTestCase):

    def check_children(self, name, expected_pods, with_services=True):
        pods = wait_for(f"{expected_pods} pods of {name}",
                        lambda: (lambda p: p if len(p) == len(expected_pods) else None)(self.pods(name)))
        by_name = {p["metadata"]["name"]: p for p in pods}
        self.assertEqual(sorted(by_name), sorted(expected_pods))
        job = self.job(self.kind, name)
        for pod in pods:
            meta = pod["metadata"]
            self.assertEqual(meta["labels"]["training.kubeflow.org/job-name"], name)
            self.assertEqual(meta["labels"]["team"], "ml", "pod-template labels reach the pod")
            owner = meta["ownerReferences"][0]
            self.assertEqual((owner["kind"], owner["name"], owner["uid"], owner["controller"],
                              owner["blockOwnerDeletion"]),
                             (self.kind, name, job["metadata"]["uid"], True, True))
            self.assertEqual(pod["spec"]["restartPolicy"], "Never")
        if with_services:
            services = wait_for("services", lambda: (lambda s: s if len(s) == len(expected_pods) else None)(
                self.services(name)))
            for s in services:
                self.assertEqual(s["spec"]["clusterIP"], "None")
        return by_name

    def run_kind(self, kind, name, replicas, expected_pods, with_services=True):
        self.kind = kind
        self.create(make_job(kind, name, self.ns, replicas))
        pods = self.check_children(name, expected_pods, with_services)
        job = self.wait_condition(kind, name, "Succeeded", timeout=90)
        conds = [(c["type"], c["status"], c["reason"]) for c in job["status"]["conditions"]]
        self.assertEqual([c[:2] for c in conds],
                         [("Created", "True"), ("Running", "False"), ("Succeeded", "True")], conds)
        self.assertEqual(conds[0][2], f"{kind}Created")
        self.assertIn("startTime", job["status"])
        self.assertIn("completionTime", job["status"])
        return pods, job

    def test_pytorchjob(self):
        pods, job = self.run_kind("PyTorchJob", "pt", {"Master": (1, run_for(2)), "Worker": (2, run_for(2))},
                                  ["pt-master-0", "pt-worker-0", "pt-worker-1"])
        env = env_of(pods["pt-worker-1"])
        self.assertEqual((env["MASTER_ADDR"], env["MASTER_PORT"], env["WORLD_SIZE"], env["RANK"]),
                         ("pt-master-0", "23456", "3", "2"))
        self.assertEqual(env["PET_NNODES"], "3")
        init = pods["pt-worker-0"]["spec"]["initContainers"][0]
        self.assertEqual((init["name"], init["image"]), ("init-pytorch", "alpine:3.10"))
        self.assertNotIn("initContainers", pods["pt-master-0"]["spec"])
        self.assertEqual(pods["pt-master-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"], "master")
        rs = job["status"]["replicaStatuses"]
        self.assertEqual(rs["Master"]["succeeded"], 1)
        self.assertIn("training.kubeflow.org/replica-type=master", rs["Master"]["selector"])
        reasons = {e[1] for e in self.events("pt")}
        self.assertTrue({"SuccessfulCreatePod", "SuccessfulCreateService", "PyTorchJobSucceeded"} <= reasons,
                        reasons)
        self.assertEqual(self.op.counter("training_operator_jobs_created_total",
                                         job_namespace=self.ns, framework="pytorch"), 1)
        self.assertEqual(self.op.counter("training_operator_jobs_successful_total",
                                         job_namespace=self.ns, framework="pytorch"), 1)
        table = kubectl("get", "pytorchjobs", "-n", self.ns).stdout
        self.assertIn("STATE", table.splitlines()[0])
        self.assertIn("Succeeded", table)

    def test_tfjob(self):
        pods, _ = self.run_kind("TFJob", "tf", {"PS": (1, run_for(10)), "Worker": (2, run_for(2))},
                                ["tf-ps-0", "tf-worker-0", "tf-worker-1"])
        tf_config = json.loads(env_of(pods["tf-worker-1"])["TF_CONFIG"])
        self.assertEqual(tf_config["task"], {"type": "worker", "index": 1})
        self.assertEqual(tf_config["cluster"]["ps"], [f"tf-ps-0.{self.ns}.svc:2222"])

    def test_xgboostjob(self):
        pods, _ = self.run_kind("XGBoostJob", "xgb", {"Master": (1, run_for(2)), "Worker": (2, run_for(2))},
                                ["xgb-master-0", "xgb-worker-0", "xgb-worker-1"])
        env = env_of(pods["xgb-worker-0"])
        self.assertEqual((env["MASTER_ADDR"], env["RANK"], env["WORLD_SIZE"], env["WORKER_ADDRS"]),
                         ("xgb-master-0", "1", "3", "xgb-worker-0,xgb-worker-1"))

    def test_paddlejob(self):
        pods, _ = self.run_kind("PaddleJob", "pd", {"Worker": (2, run_for(2))}, ["pd-worker-0", "pd-worker-1"])
        self.assertEqual(env_of(pods["pd-worker-1"])["PADDLE_MASTER"], "pd-worker-0:36543")
        self.assertEqual(env_of(pods["pd-worker-0"])["POD_IP_DUMMY"]["fieldRef"]["fieldPath"], "status.podIP")

    def test_jaxjob(self):
        pods, _ = self.run_kind("JAXJob", "jx", {"Worker": (2, run_for(2))}, ["jx-worker-0", "jx-worker-1"])
        env = env_of(pods["jx-worker-1"])
        self.assertEqual((env["COORDINATOR_ADDRESS"], env["COORDINATOR_PORT"], env["NUM_PROCESSES"],
                          env["PROCESS_ID"]), ("jx-worker-0", "6666", "2", "1"))

    def test_mxjob(self):
        pods, _ = self.run_kind("MXJob", "mx", {"Scheduler": (1, run_for(2)), "Server": (1, run_for(2)),
                                                 "Worker": (1, run_for(2))},
                                ["mx-scheduler-0", "mx-server-0", "mx-worker-0"])
        env = env_of(pods["mx-worker-0"])
        self.assertEqual((env["DMLC_ROLE"], env["DMLC_PS_ROOT_URI"], env["DMLC_NUM_WORKER"]),
                         ("worker", "mx-scheduler-0", "1"))



class FailuresAndPolicies(OperatorTestCase):

    def test_never_failing_replica_fails_the_job(self):
        self.create(make_job("PyTorchJob", "never", self.ns,
                             {"Master": (1, FOREVER), "Worker": (1, run_for(1, exit_code=3))},
                             run_policy={"cleanPodPolicy": "None"}))
        job = self.wait_condition("PyTorchJob", "never", "Failed")
        failed = job["status"]["conditions"][-1]
        self.assertEqual(failed["reason"], "PyTorchJobFailed")
        self.assertIn("Worker replica(s) failed", failed["message"])

    def test_exit_code_137_restarts_until_backoff_limit(self):
        self.create(make_job("PyTorchJob", "retry", self.ns,
                             {"Master": (1, run_for(1, exit_code=137))},
                             run_policy={"backoffLimit": 2}, restart_policy="ExitCode"))
        job = self.wait_condition("PyTorchJob", "retry", "Failed", timeout=90)
        # Restarting was set and later replaced by Running (list semantics); the events remain.
        restarts = [e for e in self.events("retry") if e[1] == "PyTorchJobRestarting"]
        self.assertTrue(restarts, "137 is retryable: the pod was recreated first")
        self.assertIn("backoff limit", job["status"]["conditions"][-1]["message"])
        self.assertEqual(job["status"]["replicaStatuses"]["Master"]["restarts"], 2)
        self.assertGreaterEqual(self.op.counter("training_operator_jobs_restarted_total",
                                                job_namespace=self.ns, framework="pytorch"), 2)

    def test_exit_code_1_fails_without_restart(self):
        self.create(make_job("PyTorchJob", "perm", self.ns, {"Master": (1, run_for(1, exit_code=1))},
                             restart_policy="ExitCode"))
        job = self.wait_condition("PyTorchJob", "perm", "Failed")
        self.assertNotIn("Restarting", [c["type"] for c in job["status"]["conditions"]])

    def test_active_deadline_fails_a_quiet_job_on_time(self):
        start = time.monotonic()
        self.create(make_job("PyTorchJob", "deadline", self.ns, {"Master": (1, FOREVER)},
                             run_policy={"activeDeadlineSeconds": 4, "cleanPodPolicy": "Running"}))
        self.wait_condition("PyTorchJob", "deadline", "Running")
        job = self.wait_condition("PyTorchJob", "deadline", "Failed", timeout=30)
        elapsed = time.monotonic() - start
        self.assertIn("active longer than specified deadline", job["status"]["conditions"][-1]["message"])
        self.assertLess(elapsed, 12, "the timed requeue fires without any other event")
        wait_for("pods removed", lambda: not self.live_pods("deadline"))

    def test_ttl_deletes_the_job_and_gc_removes_pods(self):
        self.create(make_job("PyTorchJob", "ttl", self.ns, {"Master": (1, run_for(1))},
                             run_policy={"ttlSecondsAfterFinished": 2, "cleanPodPolicy": "None"}))
        self.wait_condition("PyTorchJob", "ttl", "Succeeded")
        self.assertEqual(len(self.pods("ttl")), 1)
        wait_for("job deleted", lambda: self.job("PyTorchJob", "ttl") is None, timeout=30)
        wait_for("pods garbage-collected", lambda: not self.pods("ttl"), timeout=60)

    def clean_pod_policy_case(self, policy):
        name = f"clean-{policy.lower()}"
        self.create(make_job("PyTorchJob", name, self.ns,
                             {"Master": (1, run_for(2)), "Worker": (1, FOREVER)},
                             run_policy={"cleanPodPolicy": policy}))
        self.wait_condition("PyTorchJob", name, "Succeeded")
        time.sleep(2)
        return {p["metadata"]["name"] for p in self.live_pods(name)}

    def test_clean_pod_policy_all(self):
        remaining = self.clean_pod_policy_case("All")
        wait_for("all pods removed", lambda: not self.live_pods("clean-all"))
        self.assertTrue(remaining <= {"clean-all-master-0", "clean-all-worker-0"})

    def test_clean_pod_policy_running(self):
        remaining = self.clean_pod_policy_case("Running")
        self.assertEqual(remaining, {"clean-running-master-0"})

    def test_clean_pod_policy_none(self):
        remaining = self.clean_pod_policy_case("None")
        self.assertEqual(remaining, {"clean-none-master-0", "clean-none-worker-0"})


class SuspendAndManagedBy(OperatorTestCase):

    def cond_list(self, name):
        return [(c["type"], c["status"]) for c in self.job("PyTorchJob", name)["status"]["conditions"]]

    def test_suspend_at_creation_then_resume(self):
        self.create(make_job("PyTorchJob", "sus", self.ns, {"Master": (1, FOREVER)},
                             run_policy={"suspend": True}))
        self.wait_condition("PyTorchJob", "sus", "Suspended")
        time.sleep(1)
        # ReplicasReady (trainctl's, first so it is never the state) says why nothing runs.
        self.assertEqual(self.cond_list("sus"),
                         [("ReplicasReady", "False"), ("Created", "True"), ("Suspended", "True")])
        self.assertEqual(self.pods("sus"), [])
        kubectl("patch", "pytorchjob", "sus", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
        self.wait_condition("PyTorchJob", "sus", "Running")
        self.assertEqual(self.cond_list("sus"),
                         [("ReplicasReady", "True"), ("Created", "True"), ("Suspended", "False"),
                          ("Running", "True")])

    def test_suspend_while_running(self):
        self.create(make_job("PyTorchJob", "sus2", self.ns, {"Master": (1, FOREVER), "Worker": (1, FOREVER)}))
        self.wait_condition("PyTorchJob", "sus2", "Running")
        kubectl("patch", "pytorchjob", "sus2", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
        self.wait_condition("PyTorchJob", "sus2", "Suspended")
        self.assertEqual(self.cond_list("sus2"),
                         [("ReplicasReady", "False"), ("Created", "True"), ("Running", "False"),
                          ("Suspended", "True")])
        wait_for("pods deleted", lambda: not self.pods("sus2"))
        wait_for("services deleted", lambda: not self.services("sus2"))

    def test_managed_by_multikueue_is_left_alone(self):
        self.create(make_job("PyTorchJob", "mk", self.ns, {"Master": (1, FOREVER)},
                             run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
        self.create(make_job("PyTorchJob", "mine", self.ns, {"Master": (1, FOREVER)}))
        self.wait_condition("PyTorchJob", "mine", "Created")  # the operator has seen both by now
        time.sleep(2)
        self.assertNotIn("status", self.job("PyTorchJob", "mk") or {})
        self.assertEqual(self.pods("mk"), [])


class BadInput(OperatorTestCase):

    def test_invalid_job_gets_a_condition_and_an_event(self):
        job = make_job("PyTorchJob", "bad", self.ns, {"Worker": (1, FOREVER)})
        job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "other"
        self.create(job)  # the schema cannot tell; the operator's validation can
        def created_false():
            j = self.job("PyTorchJob", "bad") or {}
            for c in j.get("status", {}).get("conditions", []):
                if c["type"] == "Created" and c["status"] == "False":
                    return c
        cond = wait_for("Created=False", created_false)
        self.assertEqual(cond["reason"], "PyTorchJobFailedValidation")
        self.assertIn("spec.pytorchReplicaSpecs", cond["message"])
        wait_for("FailedValidation event",
                 lambda: any(e[1] == "PyTorchJobFailedValidation" for e in self.events("bad")))
        self.assertEqual(self.pods("bad"), [])
        # Fixing the job clears the mark and the job runs.
        kubectl("patch", "pytorchjob", "bad", "-n", self.ns, "--type=json", "-p", json.dumps(
            [{"op": "replace", "path": "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/name",
              "value": "pytorch"}]))
        self.wait_condition("PyTorchJob", "bad", "Running", timeout=60)

    def test_pod_the_api_rejects_surfaces_on_the_job(self):
        job = make_job("PyTorchJob", "rejected", self.ns, {"Master": (1, FOREVER)})
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "not-a-quantity"}}
        self.create(job)
        def failed_create():
            j = self.job("PyTorchJob", "rejected") or {}
            for c in j.get("status", {}).get("conditions", []):
                if c["type"] == "Created" and c["reason"] == "FailedCreatePod":
                    return c
        cond = wait_for("FailedCreatePod condition", failed_create)
        self.assertIn("rejected-master-0", cond["message"])
        self.assertTrue(self.op.proc.poll() is None, "the operator keeps running")

    def test_pod_deleted_by_hand_is_recreated(self):
        self.create(make_job("PyTorchJob", "byhand", self.ns, {"Master": (1, FOREVER), "Worker": (1, FOREVER)}))
        self.wait_condition("PyTorchJob", "byhand", "Running")
        old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in self.pods("byhand")}
        kubectl("delete", "pod", "byhand-worker-0", "-n", self.ns, "--wait=true")
        def recreated():
            for p in self.live_pods("byhand"):
                if p["metadata"]["name"] == "byhand-worker-0" and p["metadata"]["uid"] != old["byhand-worker-0"]:
                    return True
        wait_for("worker recreated", recreated)


class OperatorRestart(OperatorTestCase):

    def test_killed_mid_job_converges_without_duplicates(self):
        self.create(make_job("PyTorchJob", "crash", self.ns,
                             {"Master": (1, run_for(8)), "Worker": (4, run_for(8))}))
        wait_for("some pods", lambda: len(self.pods("crash")) >= 1, timeout=30)
        self.op.kill()
        time.sleep(1)
        self.op.start()
        job = self.wait_condition("PyTorchJob", "crash", "Succeeded", timeout=90)
        names = [p["metadata"]["name"] for p in self.pods("crash")]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(len(names), 5)
        creates = [e for e in self.events("crash") if e[1] == "SuccessfulCreatePod"]
        self.assertLessEqual(len(creates), 5, creates)
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"]["succeeded"], 4)


if __name__ == "__main__":
    unittest.main()


class ApiServerCrash(OperatorTestCase):

    def test_operator_survives_an_api_server_crash_mid_job(self):
        import os
        import subprocess
        from harness import CLUSTER_DIR, REPO
        self.create(make_job("PyTorchJob", "crashapi", self.ns,
                             {"Master": (1, run_for(12)), "Worker": (2, run_for(12))}))
        self.wait_condition("PyTorchJob", "crashapi", "Running")
        pid_file = os.path.join(CLUSTER_DIR, "run/kube-apiserver.pid")
        subprocess.run(["bash", "-c", f'kill -9 $(cat "{pid_file}"); '
                        f'while kill -0 $(cat "{pid_file}") 2>/dev/null; do sleep 0.1; done; '
                        f'"{REPO}/hack/cluster/up.sh" -q'], check=True, timeout=180)
        # The pods finish while the operator's watches are re-established; it catches up.
        job = self.wait_condition("PyTorchJob", "crashapi", "Succeeded", timeout=90)
        self.assertIsNone(self.op.proc.poll(), "the operator is still running")
        self.assertEqual(len(self.pods("crashapi")), 3, "no duplicate pods")
        self.assertEqual(job["status"]["replicaStatuses"]["Master"]["succeeded"], 1)
        # And it still takes new work.
        self.create(make_job("PyTorchJob", "afterwards", self.ns, {"Master": (1, run_for(1))}))
        self.wait_condition("PyTorchJob", "afterwards", "Succeeded")


class UpstreamExamplesAndLeaderElection(OperatorTestCase):
    """Manifests shaped like upstream's examples apply unchanged; two operators share a Lease."""

    @classmethod
    def setUpClass(cls):
        cls.operator_args = ("--leader-elect", "--leader-election-namespace", "default",
                             "--leader-election-id", "trainctl-test-" + str(id(cls)))
        super().setUpClass()

    def test_examples_apply_unchanged_and_run(self):
        import glob
        import os
        from harness import REPO
        files = sorted(glob.glob(os.path.join(REPO, "examples/*/*.yaml")))
        # MPIJob kubeflow.org/v2beta1 needs the conversion webhook, which this class's operator
        # does not serve: MpiJobBothVersions applies the first, the node's test_mpi_v2 both.
        v2 = [f for f in files if "apiVersion: kubeflow.org/v2beta1" in open(f).read()]
        self.assertEqual([os.path.basename(f) for f in v2], ["mpijob-v2beta1.yaml", "pi-v2beta1.yaml"])
        files = [f for f in files if f not in v2]
        # Trainer v2's TrainJobs run on the JobSet controller: test_trainjob_cluster runs the
        # torch one, test_trainjob_mpi_node an MPI one on upstream's runtime.
        trainer = [f for f in files if "apiVersion: trainer.kubeflow.org/" in open(f).read()]
        self.assertEqual([os.path.relpath(f, os.path.join(REPO, "examples")) for f in trainer],
                         ["mpi/trainjob.yaml", "pytorch/trainjob.yaml"])
        files = [f for f in files if f not in trainer]
        for f in files:
            kubectl("apply", "-n", self.ns, "-f", f)
        for f in files:
            with open(f) as fh:
                doc = fh.read()
            kind = next(l.split(":")[1].strip() for l in doc.splitlines() if l.startswith("kind:"))
            name = next(l.split(":")[1].strip() for l in doc.splitlines() if l.startswith("  name:"))
            self.wait_condition(kind, name, "Succeeded", timeout=90)
        table = kubectl("get", "pytorchjobs", "-n", self.ns).stdout.splitlines()
        self.assertEqual(table[0].split()[:3], ["NAME", "STATE", "AGE"])
        self.assertTrue(all(" Succeeded " in row for row in table[1:]), table)

    def test_standby_takes_over_when_the_leader_dies(self):
        standby = Operator(self.ns, *self.operator_args)
        standby.log_path += ".standby"
        standby.start()  # ready as a standby: it does nothing while the leader lives
        try:
            self.assertIn("waiting to lead", standby.log())
            self.assertNotIn("became leader", standby.log())
            self.op.kill()  # no clean release: the standby must wait out the lease
            self.create(make_job("PyTorchJob", "after-failover", self.ns, {"Master": (1, run_for(1))}))
            self.wait_condition_with(standby, "PyTorchJob", "after-failover", "Succeeded", timeout=60)
            self.assertIn("became leader", standby.log())
            wait_for("the standby's events written", lambda: standby.gauge("trainctl_events_written_total") >= 2,
                     timeout=30)
            self.assertEqual(standby.gauge("trainctl_events_lost_total"), 0)
            standby.stop()  # at its stop it says what its events came to
            said = re.search(r"events: (\d+) created, \d+ patched, \d+ folded into another's write, "
                             r"none lost", standby.log())
            self.assertTrue(said, standby.log()[-1500:])
            self.assertGreaterEqual(int(said.group(1)), 2, "the pod's and the service's creations at least")
        finally:
            standby.stop()
            self.op.start()  # for tearDownClass and later tests

    def wait_condition_with(self, op, kind, name, ctype, timeout):
        try:
            return wait_for(f"{kind} {name} {ctype}",
                            lambda: (ctype, "True") in self.conditions(kind, name), timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\nstandby log:\n{op.log()}")


class MpiJobOnTheOperator(OperatorTestCase):
    """MPIJob as upstream v1 (reference §3.4 MPIJob, §4.17) with the fixes of issue #5: the launcher
    waits for Running workers, worker counts stay true, the failure reason is MPIJobFailed."""

    def get(self, resource, name):
        return get_json(resource, name, "-n", self.ns)

    def test_launcher_waits_for_workers_and_the_job_succeeds(self):
        late = dict(FOREVER, **{"trainctl.dev/kwok-start-seconds": "6"})
        self.create(make_job("MPIJob", "mpi", self.ns,
                             {"Launcher": (1, run_for(3)), "Worker": (2, late)},
                             extra_spec={"slotsPerWorker": 2}))
        wait_for("worker pods", lambda: len(self.pods("mpi")) == 2)
        for kind, name in (("serviceaccount", "mpi-launcher"), ("role", "mpi-launcher"),
                           ("rolebinding", "mpi-launcher"), ("configmap", "mpi-config")):
            obj = wait_for(f"{kind} {name}", lambda: self.get(kind, name))
            self.assertEqual(obj["metadata"]["ownerReferences"][0]["kind"], "MPIJob", kind)
        config = self.get("configmap", "mpi-config")["data"]
        self.assertEqual(config["hostfile"], "mpi-worker-0 slots=2\nmpi-worker-1 slots=2\n")
        self.assertEqual(config["discover_hosts.sh"], "#!/bin/sh\n", "no worker is Running yet")
        role = self.get("role", "mpi-launcher")
        self.assertEqual(role["rules"][1]["resourceNames"], ["mpi-worker-0", "mpi-worker-1"])
        time.sleep(3)
        self.assertIsNone(self.get("pod", "mpi-launcher"), "the launcher waits for Running workers")

        launcher = wait_for("launcher pod", lambda: self.get("pod", "mpi-launcher"), timeout=30)
        workers = [self.get("pod", f"mpi-worker-{i}") for i in range(2)]
        self.assertTrue(all(w["status"]["phase"] == "Running" for w in workers))
        env = env_of(launcher)
        self.assertEqual(env["OMPI_MCA_plm_rsh_agent"], "/etc/mpi/kubexec.sh")
        self.assertEqual(launcher["spec"]["serviceAccountName"], "mpi-launcher")
        self.assertEqual(launcher["spec"]["initContainers"][0]["name"], "kubectl-delivery")
        self.assertEqual(self.get("configmap", "mpi-config")["data"]["discover_hosts.sh"],
                         "#!/bin/sh\necho mpi-worker-0:2\necho mpi-worker-1:2\n")
        self.assertEqual(self.services("mpi"), [], "MPIJob has no services")

        job = self.wait_condition("MPIJob", "mpi", "Succeeded", timeout=60)
        self.assertEqual(job["status"]["conditions"][-1]["reason"], "MPIJobSucceeded")
        rs = job["status"]["replicaStatuses"]
        self.assertEqual(rs["Launcher"]["succeeded"], 1)
        # Upstream reports 0 workers once the launcher has ended; on success the still running
        # workers count as succeeded, as for every kind.
        self.assertEqual(rs["Worker"].get("succeeded"), 2, rs)

    def test_failed_launcher_fails_the_job_with_one_prefix(self):
        self.create(make_job("MPIJob", "mpifail", self.ns,
                             {"Launcher": (1, run_for(1, exit_code=1)), "Worker": (1, FOREVER)}))
        job = self.wait_condition("MPIJob", "mpifail", "Failed", timeout=60)
        self.assertEqual(job["status"]["conditions"][-1]["reason"], "MPIJobFailed")


class Kueue(OperatorTestCase):
    """Kueue admits a job by resuming it: created suspended with a queue label, it gets no pods
    until resumed, and the queue label reaches its pods (reference §4.13, §4.14)."""

    def test_suspended_queued_job_waits_then_runs_with_the_label(self):
        job = make_job("PyTorchJob", "queued", self.ns,
                       {"Master": (1, run_for(2)), "Worker": (1, run_for(2))},
                       run_policy={"suspend": True})
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a"}
        self.create(job)
        self.wait_condition("PyTorchJob", "queued", "Suspended")
        time.sleep(2)
        self.assertEqual(self.pods("queued"), [], "a suspended job has no pods")
        kubectl("patch", "pytorchjob", "queued", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
        pods = wait_for("pods after admission", lambda: (lambda p: p if len(p) == 2 else None)(
            self.pods("queued")))
        for p in pods:
            self.assertEqual(p["metadata"]["labels"].get("kueue.x-k8s.io/queue-name"), "team-a")
        self.wait_condition("PyTorchJob", "queued", "Succeeded", timeout=60)


class ElasticPyTorchHpa(OperatorTestCase):
    """Elastic PyTorchJob with elasticPolicy.metrics gets an autoscaling/v2 HPA on its scale
    subresource: created, updated when the policy changes, deleted while suspended (§4.16)."""

    def hpa(self, name):
        return get_json("horizontalpodautoscalers.v2.autoscaling", name, "-n", self.ns)

    def test_hpa_created_updated_and_deleted_while_suspended(self):
        self.create(elastic_pytorch_job("elastic", self.ns))
        hpa = wait_for("the HPA", lambda: self.hpa("elastic"))
        self.assertEqual(hpa["spec"]["scaleTargetRef"],
                         {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "elastic"})
        self.assertEqual((hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]), (1, 3))
        self.assertEqual(hpa["metadata"]["ownerReferences"][0]["kind"], "PyTorchJob")
        env = {e["name"]: e.get("value") for e in
               wait_for("pods", lambda: self.pods("elastic"))[0]["spec"]["containers"][0]["env"]}
        self.assertEqual(env["PET_NNODES"], "1:3")

        kubectl("patch", "pytorchjob", "elastic", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"elasticPolicy":{"maxReplicas":5}}}')
        wait_for("maxReplicas 5", lambda: (self.hpa("elastic") or {}).get("spec", {}).get("maxReplicas") == 5)

        kubectl("patch", "pytorchjob", "elastic", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
        wait_for("HPA deleted while suspended", lambda: self.hpa("elastic") is None)
        kubectl("patch", "pytorchjob", "elastic", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
        wait_for("HPA back after resume", lambda: self.hpa("elastic"))
        scale = get_json("pytorchjob", "elastic", "-n", self.ns, "--subresource=scale")
        self.assertEqual(scale["spec"]["replicas"], 2, "the HPA's target: the Worker replicas")


def install_podgroup_crds():
    import os
    kubectl("apply", "--server-side", "-f", os.path.join(os.path.dirname(__file__), "podgroup-crds.yaml"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s",
            "crd/podgroups.scheduling.volcano.sh", "crd/podgroups.scheduling.x-k8s.io")


class VolcanoGang(OperatorTestCase):
    """--gang-scheduler-name volcano (§4.15): a PodGroup per job, pods held until Volcano admits the
    gang, decorated pods, the PodGroup updated in place and deleted on suspend."""

    operator_args = ("--gang-scheduler-name", "volcano")

    @classmethod
    def setUpClass(cls):
        install_podgroup_crds()
        super().setUpClass()

    def pod_group(self, name):
        return get_json("podgroups.scheduling.volcano.sh", name, "-n", self.ns)

    def test_pods_wait_for_admission_and_the_group_follows_the_job(self):
        self.create(make_job("PyTorchJob", "gang", self.ns,
                             {"Master": (1, FOREVER), "Worker": (2, FOREVER)},
                             run_policy={"schedulingPolicy": {"minAvailable": 3, "queue": "q1"}}))
        pg = wait_for("PodGroup", lambda: self.pod_group("gang"))
        self.assertEqual((pg["spec"]["minMember"], pg["spec"]["queue"]), (3, "q1"))
        self.assertEqual(pg["metadata"]["ownerReferences"][0]["name"], "gang")
        time.sleep(3)
        self.assertEqual(self.pods("gang"), [], "no pods before Volcano admits the gang")
        why = wait_for("GangNotAdmitted", lambda: next(
            (c for c in (self.job("PyTorchJob", "gang") or {}).get("status", {}).get("conditions", [])
             if c["type"] == "ReplicasReady" and c["reason"] == "GangNotAdmitted"), None))
        self.assertIn("PodGroup gang is", why["message"])
        self.assertIn("Volcano admits the whole gang", why["message"])
        kubectl("patch", "podgroups.scheduling.volcano.sh", "gang", "-n", self.ns, "--subresource=status",
                "--type=merge", "-p", '{"status":{"phase":"Inqueue"}}')
        pods = wait_for("pods after admission", lambda: (lambda p: p if len(p) == 3 else None)(self.pods("gang")))
        for p in pods:
            self.assertEqual(p["spec"]["schedulerName"], "volcano")
            self.assertEqual(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "gang")
        uid = pg["metadata"]["uid"]
        kubectl("patch", "pytorchjob", "gang", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"schedulingPolicy":{"minAvailable":2,"queue":"q1"}}}}')
        pg = wait_for("minMember 2", lambda: (lambda g: g if g and g["spec"]["minMember"] == 2 else None)(
            self.pod_group("gang")))
        self.assertEqual(pg["metadata"]["uid"], uid, "updated in place")
        kubectl("patch", "pytorchjob", "gang", "-n", self.ns, "--type=merge",
                "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
        wait_for("PodGroup deleted on suspend", lambda: self.pod_group("gang") is None)
        self.assertIn("JobTerminated", {e[1] for e in self.events("gang")})


class SchedulerPluginsGang(OperatorTestCase):
    """--gang-scheduler-name <scheduler-plugins scheduler>: scheduling.x-k8s.io PodGroups, pods
    labelled and created at once."""

    operator_args = ("--gang-scheduler-name", "scheduler-plugins-scheduler")

    @classmethod
    def setUpClass(cls):
        install_podgroup_crds()
        super().setUpClass()

    def test_pod_group_and_labelled_pods(self):
        job = make_job("TFJob", "sp", self.ns, {"PS": (1, FOREVER), "Worker": (2, FOREVER)},
                       run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 30}})
        job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "250m", "memory": "1Gi"}}
        self.create(job)
        pg = wait_for("PodGroup", lambda: get_json("podgroups.scheduling.x-k8s.io", "sp", "-n", self.ns))
        self.assertEqual((pg["spec"]["minMember"], pg["spec"]["scheduleTimeoutSeconds"]), (3, 30))
        self.assertEqual(pg["spec"]["minResources"], {"cpu": "500m", "memory": "2Gi"})
        pods = wait_for("pods", lambda: (lambda p: p if len(p) == 3 else None)(self.pods("sp")))
        for p in pods:
            self.assertEqual(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "sp")
            self.assertEqual(p["spec"]["schedulerName"], "scheduler-plugins-scheduler")


class YuniKornGang(OperatorTestCase):
    """--gang-scheduler-name yunikorn: no PodGroup; YuniKorn's gang annotations on the pods."""

    operator_args = ("--gang-scheduler-name", "yunikorn")

    def test_pods_carry_task_groups(self):
        self.create(make_job("PyTorchJob", "yk", self.ns, {"Master": (1, FOREVER), "Worker": (2, FOREVER)},
                             run_policy={"schedulingPolicy": {"queue": "root.ml"}}))
        pods = wait_for("pods", lambda: (lambda p: p if len(p) == 3 else None)(self.pods("yk")))
        uid = self.job("PyTorchJob", "yk")["metadata"]["uid"]
        for p in pods:
            md = p["metadata"]
            self.assertEqual(p["spec"]["schedulerName"], "yunikorn")
            self.assertEqual((md["labels"]["applicationId"], md["labels"]["queue"]), (uid, "root.ml"))
            groups = json.loads(md["annotations"]["yunikorn.apache.org/task-groups"])
            self.assertEqual([(g["name"], g["minMember"]) for g in groups], [("master", 1), ("worker", 2)])
            self.assertEqual(md["annotations"]["yunikorn.apache.org/task-group-name"],
                             md["labels"]["training.kubeflow.org/replica-type"])


def create_validating_config(name, port, namespace, kinds):
    """A ValidatingWebhookConfiguration sending `kinds` (v1, create and update) in `namespace`
    to the operator's webhooks on 127.0.0.1:`port`."""
    hooks = [{
        "name": f"{kind}.validator.trainctl.test",
        "clientConfig": {"url": f"https://127.0.0.1:{port}/validate-kubeflow-org-v1-{kind}"},
        "rules": [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"],
                   "operations": ["CREATE", "UPDATE"], "resources": [kind + "s"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10} for kind in kinds]
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name}, "webhooks": hooks}))


class AdmissionWebhooks(OperatorTestCase):
    """The operator serves the validating webhooks over TLS with its own CA (kept in a Secret and
    injected as caBundle); the real API server rejects a bad job with the field-path message and
    accepts a good one — MPIJob included, which upstream does not validate."""

    @classmethod
    def setUpClass(cls):
        from harness import free_port
        install_crds()
        cls.ns = "op-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.port = free_port()
        cls.config = f"validator-{cls.ns}.trainctl.test"
        cls.secret = f"webhook-cert-{cls.ns}"
        create_validating_config(cls.config, cls.port, cls.ns, ("pytorchjob", "mpijob"))
        cls.op = Operator(cls.ns, "--webhook-server-port", str(cls.port), "--webhook-bind-host", "127.0.0.1",
                          "--webhook-host", "127.0.0.1", "--webhook-config-name", cls.config,
                          "--webhook-secret-name", cls.secret, "--leader-election-namespace", cls.ns)
        cls.op.start()

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "validatingwebhookconfiguration", cls.config, "--ignore-not-found", check=False)
        super().tearDownClass()

    def test_bad_jobs_are_rejected_by_the_api_server(self):
        config = wait_for("caBundle injected", lambda: (lambda c: c if c and all(
            w["clientConfig"].get("caBundle") for w in c["webhooks"]) else None)(
            get_json("validatingwebhookconfiguration", self.config)))
        secret = get_json("secret", self.secret, "-n", self.ns)
        self.assertEqual(sorted(secret["data"]), ["ca.crt", "tls.crt", "tls.key"])
        self.assertEqual(config["webhooks"][0]["clientConfig"]["caBundle"], secret["data"]["ca.crt"])

        bad = make_job("PyTorchJob", "badjob", self.ns, {"Master": (2, run_for(1))})
        out = kubectl("create", "-f", "-", input=json.dumps(bad), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn('admission webhook "pytorchjob.validator.trainctl.test" denied the request: '
                      "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1", out.stderr)
        self.assertIsNone(self.job("PyTorchJob", "badjob"))

        good = make_job("PyTorchJob", "goodjob", self.ns, {"Master": (1, run_for(1))})
        kubectl("create", "-f", "-", input=json.dumps(good))
        self.wait_condition("PyTorchJob", "goodjob", "Succeeded")

        mpi = make_job("MPIJob", "badmpi", self.ns, {"Launcher": (2, run_for(1)), "Worker": (1, run_for(1))})
        out = kubectl("create", "-f", "-", input=json.dumps(mpi), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("mpijob.validator.trainctl.test", out.stderr)
        self.assertIn("spec.mpiReplicaSpecs[Launcher].replicas", out.stderr)


CONVERSION_PATH = "/convert-kubeflow-org-mpijob"
# The conversion webhook as manifests/crds ships it (restored after the class).
SHIPPED_CLIENT_CONFIG = {"service": {"name": "trainctl-operator", "namespace": "trainctl-system",
                                     "path": CONVERSION_PATH, "port": 443}}


def v2beta1(name, namespace, **spec):
    """An MPIJob of kubeflow.org/v2beta1 whose pods run 2 s on kwok."""
    template = {"metadata": {"annotations": run_for(2)},
                "spec": {"containers": [{"name": "mpi", "image": "example.invalid/mpi:1"}]}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**spec, "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": template}}}}


class MpiJobBothVersions(OperatorTestCase):
    """mpijobs.kubeflow.org serves v1 and v2beta1 from one CRD: the API server converts through the
    operator's conversion webhook (TLS, its CA injected into the CRD by the operator), fields the
    other version lacks survive a round trip, and a v2beta1 job is validated and reconciled."""

    @classmethod
    def setUpClass(cls):
        from harness import free_port
        install_crds()
        cls.ns = "op-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.ns)
        cls.port = free_port()
        cls.config = f"validator-{cls.ns}.trainctl.test"
        # The CRD's conversion webhook pointed at this process (the shipped one names the
        # operator's Service, which this cluster does not run).
        cls.patch_client_config({"service": None, "url": f"https://127.0.0.1:{cls.port}{CONVERSION_PATH}"})
        create_validating_config(cls.config, cls.port, cls.ns, ("mpijob",))
        cls.op = Operator(cls.ns, "--webhook-server-port", str(cls.port), "--webhook-bind-host", "127.0.0.1",
                          "--webhook-host", "127.0.0.1", "--webhook-config-name", cls.config,
                          "--webhook-secret-name", f"webhook-cert-{cls.ns}",
                          "--leader-election-namespace", cls.ns)
        cls.op.start()
        secret = get_json("secret", f"webhook-cert-{cls.ns}", "-n", cls.ns)
        wait_for("the CA in the CRD's conversion webhook", lambda: get_json(
            "crd", "mpijobs.kubeflow.org")["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle")
            == secret["data"]["ca.crt"])

    @classmethod
    def patch_client_config(cls, client_config):
        kubectl("patch", "crd", "mpijobs.kubeflow.org", "--type", "merge", "-p", json.dumps(
            {"spec": {"conversion": {"webhook": {"clientConfig": client_config}}}}))

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "validatingwebhookconfiguration", cls.config, "--ignore-not-found", check=False)
        super().tearDownClass()
        cls.patch_client_config({"url": None, **SHIPPED_CLIENT_CONFIG})

    def read(self, version, name):
        return get_json(f"mpijobs.{version}.kubeflow.org", name, "-n", self.ns)

    def test_crd_serves_both_versions_with_the_operators_webhook(self):
        crd = get_json("crd", "mpijobs.kubeflow.org")
        self.assertEqual([(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]],
                         [("v1", True, True), ("v2beta1", True, False)])
        self.assertEqual(crd["spec"]["conversion"]["strategy"], "Webhook")
        # The operator's log says where the CA went.
        self.assertIn("CA bundle injected", self.op.log())

    def test_a_v2beta1_job_round_trips_and_runs(self):
        self.create(v2beta1("v2", self.ns, slotsPerWorker=2, runLauncherAsWorker=True,
                            sshAuthMountPath="/home/mpiuser/.ssh",
                            launcherCreationPolicy="WaitForWorkersReady", mpiImplementation="MPICH",
                            runPolicy={"cleanPodPolicy": "Running", "backoffLimit": 3}))
        back = self.read("v2beta1", "v2")
        self.assertEqual(back["apiVersion"], "kubeflow.org/v2beta1")
        spec = back["spec"]
        self.assertEqual((spec["slotsPerWorker"], spec["runLauncherAsWorker"], spec["sshAuthMountPath"],
                          spec["launcherCreationPolicy"], spec["mpiImplementation"]),
                         (2, True, "/home/mpiuser/.ssh", "WaitForWorkersReady", "MPICH"))
        self.assertEqual(spec["runPolicy"]["backoffLimit"], 3)
        self.assertNotIn("mpi.trainctl.dev/v2beta1-fields", back["metadata"].get("annotations", {}),
                         "the carrier annotation is removed on the way back")
        # Stored as v1: the fields v1 lacks ride in one annotation, the rest are v1's own.
        stored = self.read("v1", "v2")
        self.assertEqual(stored["apiVersion"], "kubeflow.org/v1")
        self.assertEqual(stored["spec"]["slotsPerWorker"], 2)
        self.assertNotIn("mpiImplementation", stored["spec"])
        carried = json.loads(stored["metadata"]["annotations"]["mpi.trainctl.dev/v2beta1-fields"])
        self.assertEqual(carried["mpiImplementation"], "MPICH")
        self.assertEqual(carried["launcherCreationPolicy"], "WaitForWorkersReady")
        # Reconciled: the operator reads v1; the status reads in both versions.
        self.wait_condition("MPIJob", "v2", "Succeeded", timeout=90)
        self.assertEqual(self.read("v2beta1", "v2")["status"]["conditions"][-1]["type"], "Succeeded")

    def test_a_v2beta1_job_gets_mpi_operators_children_and_its_launcher_job_decides(self):
        self.create(v2beta1("kids", self.ns, slotsPerWorker=2,
                            runPolicy={"cleanPodPolicy": "None", "backoffLimit": 2}))
        uid = self.read("v1", "kids")["metadata"]["uid"]

        def owned(obj):
            refs = obj["metadata"].get("ownerReferences", [])
            return [(r["kind"], r["uid"], r.get("controller")) for r in refs] == [("MPIJob", uid, True)]

        secret = wait_for("the SSH key Secret", lambda: get_json("secret", "kids-ssh", "-n", self.ns))
        self.assertEqual(secret["type"], "kubernetes.io/ssh-auth")
        self.assertTrue(owned(secret))
        self.assertIn("BEGIN EC PRIVATE KEY", base64.b64decode(secret["data"]["ssh-privatekey"]).decode())
        config = get_json("configmap", "kids-config", "-n", self.ns)
        self.assertTrue(owned(config))
        self.assertEqual(config["data"]["hostfile"],
                         f"kids-worker-0.kids.{self.ns}.svc slots=2\nkids-worker-1.kids.{self.ns}.svc slots=2\n")
        service = get_json("service", "kids", "-n", self.ns)
        self.assertEqual(service["spec"]["clusterIP"], "None")
        self.assertEqual(service["spec"]["selector"], {"training.kubeflow.org/job-name": "kids",
                                                       "training.kubeflow.org/operator-name": "mpi-operator"})
        # The launcher is a batch Job (AtStartup: at once), not a pod of the MPIJob's own.
        launcher = wait_for("the launcher's batch Job", lambda: get_json("job.batch", "kids-launcher", "-n", self.ns))
        self.assertTrue(owned(launcher))
        self.assertEqual(launcher["spec"]["backoffLimit"], 2)
        volumes = {v["name"] for v in launcher["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(volumes, {"ssh-auth", "mpi-job-config"})
        self.assertEqual(launcher["spec"]["template"]["metadata"]["labels"]["training.kubeflow.org/job-role"],
                         "launcher")
        self.wait_condition("MPIJob", "kids", "Succeeded", timeout=90)
        # Its pods: the workers the operator made, the launcher the Job made.
        pods = get_json("pods", "-n", self.ns, "-l", "training.kubeflow.org/job-name=kids")["items"]
        by_role = {}
        for pod in pods:
            by_role.setdefault(pod["metadata"]["labels"]["training.kubeflow.org/job-role"], []).append(pod)
        self.assertEqual(sorted(p["metadata"]["name"] for p in by_role["worker"]), ["kids-worker-0", "kids-worker-1"])
        self.assertTrue(all(owned(p) for p in by_role["worker"]))
        self.assertEqual([p["metadata"]["ownerReferences"][0]["kind"] for p in by_role["launcher"]], ["Job"])
        worker = by_role["worker"][0]["spec"]
        self.assertEqual(worker["hostname"], by_role["worker"][0]["metadata"]["name"])
        self.assertEqual(worker["subdomain"], "kids")
        self.assertIn({"name": "ssh-auth", "mountPath": "/root/.ssh"}, worker["containers"][0]["volumeMounts"])
        status = self.read("v2beta1", "kids")["status"]
        self.assertEqual(status["replicaStatuses"]["Launcher"].get("succeeded"), 1)
        # `trainctl describe` shows the launcher (its Job's pod) beside the workers.
        import subprocess
        from harness import KUBECONFIG, TRAINCTL
        described = subprocess.run([TRAINCTL, "--kubeconfig", KUBECONFIG, "-n", self.ns, "describe", "mpijob",
                                    "kids", "-o", "json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(described.returncode, 0, described.stderr)
        rows = json.loads(described.stdout)["replicas"]
        self.assertEqual([(r["type"], r["name"]) for r in rows],
                         [("Launcher", by_role["launcher"][0]["metadata"]["name"]),
                          ("Worker", "kids-worker-0"), ("Worker", "kids-worker-1")])

    def test_a_deleted_ssh_secret_is_made_again_for_the_next_pod(self):
        job = v2beta1("keys", self.ns)
        for spec in job["spec"]["mpiReplicaSpecs"].values():
            spec["template"] = {"metadata": {"annotations": FOREVER},
                                "spec": {"containers": [{"name": "mpi", "image": "example.invalid/mpi:1"}]}}
        self.create(job)
        first = wait_for("the SSH key Secret", lambda: get_json("secret", "keys-ssh", "-n", self.ns))
        wait_for("both workers", lambda: len(get_json("pods", "-n", self.ns, "-l",
                                                      "training.kubeflow.org/job-name=keys,"
                                                      "training.kubeflow.org/job-role=worker")["items"]) == 2)
        kubectl("delete", "secret", "keys-ssh", "-n", self.ns)
        # A worker deleted: the operator makes it again, and the Secret its pod mounts with it.
        kubectl("delete", "pod", "keys-worker-1", "-n", self.ns, "--wait=false")
        again = wait_for("the Secret made again", lambda: get_json("secret", "keys-ssh", "-n", self.ns))
        self.assertNotEqual(again["metadata"]["uid"], first["metadata"]["uid"])
        self.assertNotEqual(again["data"]["ssh-privatekey"], first["data"]["ssh-privatekey"], "new keys")
        self.assertEqual(again["metadata"]["ownerReferences"][0]["kind"], "MPIJob")
        events = wait_for("the Warning event", lambda: [
            e for e in get_json("events", "-n", self.ns, "--field-selector", "involvedObject.name=keys")["items"]
            if e["reason"] == "SSHAuthSecretRecreated"])
        self.assertIn("Secret keys-ssh was gone", events[0]["message"])
        self.assertEqual(events[0]["type"], "Warning")

    def test_a_failed_launcher_job_fails_the_v2beta1_job_with_the_jobs_reason(self):
        job = v2beta1("lfail", self.ns, runPolicy={"backoffLimit": 0})
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]
        launcher["template"] = {"metadata": {"annotations": run_for(1, exit_code=3)},
                                "spec": {"containers": [{"name": "mpi", "image": "example.invalid/mpi:1"}]}}
        launcher["restartPolicy"] = "Never"
        self.create(job)
        self.wait_condition("MPIJob", "lfail", "Failed", timeout=90)
        failed = [c for c in self.read("v1", "lfail")["status"]["conditions"] if c["type"] == "Failed"][0]
        self.assertTrue(failed["reason"].startswith("BackoffLimitExceeded"), failed)
        self.assertIn("backoff limit", failed["message"])

    def test_a_v1_job_read_and_written_as_v2beta1_keeps_its_v1_fields(self):
        job = make_job("MPIJob", "v1job", self.ns, {"Launcher": (1, FOREVER), "Worker": (1, FOREVER)},
                       extra_spec={"mainContainer": "mpi", "slotsPerWorker": 3})
        self.create(job)
        as_v2 = self.read("v2beta1", "v1job")
        self.assertNotIn("mainContainer", as_v2["spec"])
        self.assertEqual(as_v2["spec"]["slotsPerWorker"], 3)
        # An edit through v2beta1 (a label, as kubectl would) does not lose v1's mainContainer.
        kubectl("label", "mpijobs.v2beta1.kubeflow.org", "v1job", "-n", self.ns, "edited=through-v2beta1")
        stored = self.read("v1", "v1job")
        self.assertEqual(stored["metadata"]["labels"]["edited"], "through-v2beta1")
        self.assertEqual(stored["spec"]["mainContainer"], "mpi")
        self.assertEqual(stored["spec"]["slotsPerWorker"], 3)
        self.assertNotIn("mpi.trainctl.dev/v1-fields", stored["metadata"].get("annotations", {}))

    def test_bad_v2beta1_jobs_are_refused_with_the_field(self):
        bad_enum = v2beta1("badimpl", self.ns, mpiImplementation="LAM")
        out = kubectl("create", "-f", "-", input=json.dumps(bad_enum), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("spec.mpiImplementation", out.stderr)
        # Converted to v1 for the validating webhook (matchPolicy Equivalent), which names the field.
        two_launchers = v2beta1("twolaunchers", self.ns)
        two_launchers["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
        out = kubectl("create", "-f", "-", input=json.dumps(two_launchers), check=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("mpijob.validator.trainctl.test", out.stderr)
        self.assertIn("spec.mpiReplicaSpecs[Launcher].replicas", out.stderr)
        self.assertIsNone(self.read("v1", "twolaunchers"))

    def test_the_v2beta1_example_applies_unchanged_and_runs(self):
        import os
        from harness import REPO
        path = os.path.join(REPO, "examples/mpi/mpijob-v2beta1.yaml")
        kubectl("apply", "-n", self.ns, "-f", path)
        self.assertEqual(self.read("v2beta1", "mpi-digits-v2")["spec"]["launcherCreationPolicy"],
                         "WaitForWorkersReady")
        self.wait_condition("MPIJob", "mpi-digits-v2", "Succeeded", timeout=90)
