"""The operator's in-cluster dashboard (--dashboard-bind-address) against the real control
plane: a user is whoever their bearer token names (TokenReview) and sees only the jobs,
history rows, pages and logs of namespaces where RBAC lets them read them (a
SubjectAccessReview per namespace and verb); no token or a bad one gets 401, another
namespace's job page 403."""
import http.client
import json
import os
import tempfile
import uuid

from harness import (FOREVER, OperatorTestCase, free_port, get_json, kubectl, make_job, run_for,
                     wait_for)

PORT = free_port()
HISTORY = os.path.join(tempfile.mkdtemp(prefix="trainctl-dashboard-"), "history.db")


class ClusterDashboard(OperatorTestCase):

    operator_args = ("--dashboard-bind-address", f"127.0.0.1:{PORT}", "--history",
                     "sqlite:" + HISTORY)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.other = "dash-" + uuid.uuid4().hex[:8]
        kubectl("create", "namespace", cls.other)
        # A viewer of jobs and their logs in the test namespace only.
        kubectl("create", "serviceaccount", "viewer", "-n", cls.ns)
        kubectl("create", "role", "job-viewer", "-n", cls.ns, "--verb=get,list",
                "--resource=pytorchjobs.kubeflow.org,pods,pods/log")
        kubectl("create", "rolebinding", "job-viewer", "-n", cls.ns, "--role=job-viewer",
                f"--serviceaccount={cls.ns}:viewer")
        cls.token = kubectl("create", "token", "viewer", "-n", cls.ns, "--duration", "1h").stdout.strip()

    @classmethod
    def tearDownClass(cls):
        kubectl("delete", "namespace", cls.other, "--wait=false", check=False)
        super().tearDownClass()

    def get(self, path, token=None):
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        headers = {"Host": f"127.0.0.1:{PORT}"}
        if token:
            headers["Authorization"] = "Bearer " + token
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        return response.status, body

    def names(self, token):
        status, body = self.get("/api/v1/jobs", token)
        self.assertEqual(status, 200, body)
        return {(row["name"], row["live"]) for row in json.loads(body)["items"]}

    def test_a_user_sees_only_the_namespaces_rbac_lets_them_read(self):
        self.create(make_job("PyTorchJob", "mine", self.ns, {"Master": (1, FOREVER)}))
        self.create(make_job("PyTorchJob", "theirs", self.other, {"Master": (1, FOREVER)}))
        self.create(make_job("PyTorchJob", "done", self.ns, {"Master": (1, run_for(1, exit_code=4))},
                             run_policy={"ttlSecondsAfterFinished": 0}))
        wait_for("theirs to exist", lambda: get_json("pytorchjobs", "theirs", "-n", self.other))
        seen = wait_for("the viewer's list", lambda: (lambda n: n if ("mine", True) in n else None)(
            self.names(self.token)), timeout=60)
        self.assertNotIn("theirs", {name for name, _ in seen}, "another namespace's job leaked")

        # The finished job, deleted by its TTL, is a history row the viewer may see.
        wait_for("done in the history", lambda: ("done", False) in self.names(self.token), timeout=90)
        rows = json.loads(self.get("/api/v1/jobs", self.token)[1])["items"]
        done = next(r for r in rows if r["name"] == "done")
        status, body = self.get("/api/v1/job?uid=" + done["uid"], self.token)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["failure"]["exitCode"], 4)

        page = f"/api/v1/job?source=kubernetes&ns={self.ns}&kind=PyTorchJob&name=mine"
        status, body = self.get(page, self.token)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["job"]["metadata"]["name"], "mine")
        status, body = self.get(f"/api/v1/job?source=kubernetes&ns={self.other}&kind=PyTorchJob"
                                "&name=theirs", self.token)
        self.assertEqual(status, 403, body)
        status, _ = self.get(f"/api/v1/logs?source=kubernetes&ns={self.other}&kind=PyTorchJob"
                             "&name=theirs&replica=master-0", self.token)
        self.assertEqual(status, 403)

        self.assertEqual(self.get("/api/v1/jobs")[0], 401)
        self.assertEqual(self.get("/api/v1/jobs", "not-a-token")[0], 401)
        self.assertEqual(self.get("/", self.token)[0], 200)
