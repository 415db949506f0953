"""The operator's in-cluster dashboard (--dashboard-bind-address) against the real control
plane: a user is whoever their bearer token names (TokenReview) and sees only the jobs,
history rows, pages and logs of namespaces where RBAC lets them read them (a
SubjectAccessReview per namespace and verb); no token or a bad one gets 401, another
namespace's job page 403. A browser (Debian's chromium) signs in on the page with a token,
sees what that token may read, and signs out; the sign-in and sign-out refuse other origins,
form posts and a missing CSRF token."""
import http.client
import json
import os
import shutil
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

    def request(self, method, path, token=None, headers=None, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        sent = {"Host": f"127.0.0.1:{PORT}", **(headers or {})}
        if token:
            sent["Authorization"] = "Bearer " + token
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        return response.status, text, response.getheader("Set-Cookie") or ""

    def get(self, path, token=None, headers=None):
        status, body, _ = self.request("GET", path, token, headers)
        return status, body

    def login(self, token, headers=None):
        return self.request("POST", "/api/v1/login",
                            headers={"Content-Type": "application/json", **(headers or {})},
                            body=json.dumps({"token": token}))

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

    def test_signing_in_with_a_token_gives_a_session_cookie_and_signing_out_ends_it(self):
        self.create(make_job("PyTorchJob", "seen", self.ns, {"Master": (1, FOREVER)}))
        status, body, cookie = self.login(self.token)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["user"], f"system:serviceaccount:{self.ns}:viewer")
        self.assertRegex(cookie, r"^trainctl_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict$")
        self.assertNotIn(self.token, body + cookie, "the token never goes back to the browser")
        session = {"Cookie": cookie.split(";")[0]}
        me = json.loads(self.get("/api/v1/whoami", headers=session)[1])
        self.assertEqual(me["user"], f"system:serviceaccount:{self.ns}:viewer")
        self.assertTrue(me["session"])
        rows = wait_for("the session's list", lambda: (lambda r: r if r[0] == 200 and '"seen"' in r[1]
                                                        else None)(self.get("/api/v1/jobs", headers=session)))
        self.assertTrue(all(row["namespace"] == self.ns for row in json.loads(rows[1])["items"]
                            if row["live"]), "the session sees what the token may read, no more")

        # Refused: a bad token, another site, a form post, sign-out without the CSRF token.
        self.assertEqual(self.login("not-a-token")[0], 401)
        self.assertEqual(self.login(self.token, {"Origin": "http://evil.example"})[0], 403)
        form = self.request("POST", "/api/v1/login",
                            headers={"Content-Type": "application/x-www-form-urlencoded"},
                            body="token=" + self.token)
        self.assertEqual(form[0], 400, form[1])
        self.assertEqual(self.request("POST", "/api/v1/logout", headers=session)[0], 403)
        self.assertEqual(self.get("/api/v1/jobs", headers=session)[0], 200, "still signed in")

        status, body, cleared = self.request("POST", "/api/v1/logout",
                                             headers={**session, "X-CSRF-Token": me["csrf"]})
        self.assertEqual(status, 200, body)
        self.assertIn("Max-Age=0", cleared)
        status, body = self.get("/api/v1/jobs", headers=session)
        self.assertEqual(status, 401)
        self.assertTrue(json.loads(body)["login"])

    def test_a_browser_signs_in_on_the_page_and_sees_the_jobs(self):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        self.create(make_job("PyTorchJob", "browsed", self.ns, {"Master": (1, FOREVER)}))
        options = Options()
        options.binary_location = "/usr/bin/chromium"
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.get(f"http://127.0.0.1:{PORT}/")
            form = wait_for("the sign-in form",
                            lambda: driver.find_element(By.ID, "login-view").is_displayed() or None)
            self.assertTrue(form)
            driver.find_element(By.ID, "login-token").send_keys("not-a-token")
            driver.find_element(By.ID, "login-submit").click()
            error = wait_for("the refusal", lambda: driver.find_element(By.ID, "login-error").text or None)
            self.assertIn("token", error)
            box = driver.find_element(By.ID, "login-token")
            box.clear()
            box.send_keys(self.token)
            driver.find_element(By.ID, "login-submit").click()
            wait_for("the job in the list", lambda: "browsed" in driver.find_element(By.ID, "jobs").text,
                     timeout=60)
            self.assertIn(f"system:serviceaccount:{self.ns}:viewer",
                          driver.find_element(By.ID, "user").text)
            cookies = {c["name"]: c for c in driver.get_cookies()}
            self.assertTrue(cookies["trainctl_session"]["httpOnly"])
            driver.find_element(By.ID, "logout").click()
            wait_for("the sign-in form again",
                     lambda: driver.find_element(By.ID, "login-view").is_displayed() or None)
        finally:
            driver.quit()


def tearDownModule():
    shutil.rmtree(os.path.dirname(HISTORY), ignore_errors=True)  # nothing left in /tmp
