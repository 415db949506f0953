"""`trainctl ui` in a real browser (Debian's chromium and chromedriver, driven by Debian's
python3-selenium): the list updates live, a job's name is a link to its own address (opened
with the keyboard, in a new tab from the address alone, and left with the back button), the
failing job's page shows its first failure and last output, a log line printed after the page
opened appears, the chart has the printed points with the loss and the learning rate on
charts of their own, deleted jobs stay in the history and are found by a word of their output,
and requests without the token or from another origin or host are refused. Without the browser:
reading the list, a job, its log and a stream writes nothing to the state folder, and the
dashboard's sweep (its timer) records the lost runner and removes the job past its TTL.
Screenshots of the two pages go to $TRAINCTL_SCREENSHOT_DIR (docs/images when refreshing the
docs), else the temp folder."""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import REPO, TRAINCTL, TrainctlTestCase

CURVE = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: curve
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [python3, -u, SCRIPT, "30", "0.4"]
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "worker up"; sleep 1']
"""

# curve's master prints its steps and reports its progress to the run's status endpoint.
CURVE = CURVE.replace("SCRIPT", os.path.join(REPO, "test", "e2e", "scripts",
                                             "curve_with_progress.py"))

CRASH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: crash
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "step=1 loss=9.5"; sleep 60']
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "loading shard 3"; sleep 3; echo "RuntimeError: CUDA error: device-side assert triggered"; exit 3']
"""


SMALL = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  runPolicy:
    ttlSecondsAfterFinished: {ttl}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
          - name: pytorch
            image: unused-locally
            command: [sh, -c, 'echo "step=1 loss=2.5"; sleep {sleep}']
"""


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


class DashboardTest(TrainctlTestCase):

    def setUp(self):
        super().setUp()
        self.ui = None
        self.driver = None
        self.start_ui()

    def start_ui(self, *args):
        if self.ui:
            self.stop_ui()
        self.ui = subprocess.Popen([TRAINCTL, "ui", *args], env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.url = self.ui.stdout.readline().strip()
        self.assertRegex(self.url, r"^http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}$")
        self.port = int(re.search(r":(\d+)/", self.url).group(1))
        self.token = self.url.rsplit("=", 1)[1]

    def stop_ui(self):
        self.ui.terminate()
        self.assertEqual(self.ui.wait(timeout=10), 0, "trainctl ui stops on SIGTERM")
        self.ui.stdout.close()
        self.ui = None

    def tearDown(self):
        if self.driver:
            self.driver.quit()
        if self.ui:
            self.stop_ui()
        super().tearDown()

    def api(self, path):
        """GET path with the session cookie; the JSON answer (asserting 200)."""
        status, body = self.get(path, {"Host": f"127.0.0.1:{self.port}",
                                       "Cookie": "trainctl_ui=" + self.token})
        self.assertEqual(status, 200, body)
        return json.loads(body)

    def get(self, path, headers):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        return response.status, body

    def test_requests_without_the_token_or_from_elsewhere_are_refused(self):
        cookie = "trainctl_ui=" + self.token
        here = f"127.0.0.1:{self.port}"
        self.assertEqual(self.get("/api/v1/jobs", {"Host": here})[0], 401)
        self.assertEqual(self.get("/", {"Host": here})[0], 401)
        self.assertEqual(self.get("/?token=" + "0" * 64, {"Host": here})[0], 401)
        self.assertEqual(self.get("/api/v1/jobs", {"Host": here, "Cookie": cookie})[0], 200)
        status, body = self.get("/api/v1/jobs", {"Host": here, "Cookie": cookie,
                                                 "Origin": "http://evil.example"})
        self.assertEqual(status, 403)
        self.assertIn("evil.example", body)
        self.assertEqual(self.get("/api/v1/stream", {"Host": here, "Cookie": cookie,
                                                     "Origin": "http://evil.example"})[0], 403)
        self.assertEqual(self.get("/api/v1/jobs", {"Host": f"rebound.example:{self.port}",
                                                   "Cookie": cookie})[0], 403)

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
                if last:
                    return last
            except Exception as e:  # the page is re-rendering: try again
                last = e
            time.sleep(0.1)
        shot = os.path.join(self.tmp, "failure.png")
        self.driver.save_screenshot(shot)
        self.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r}; screenshot "
                  f"{shot}; page text: {self.driver.find_element(By.TAG_NAME, 'body').text[:2000]})")

    def row(self, name):
        rows = self.driver.find_elements(By.CSS_SELECTOR, f'#jobs tbody tr[data-name="{name}"]')
        return rows[0] if rows else None

    def link(self, name):
        """The <a> a row's name is, and its address (absolute, as a copied link is)."""
        a = self.row(name).find_element(By.CSS_SELECTOR, "td a")
        return a, a.get_attribute("href")

    def follow(self, name):
        """Clicks a row's link; the list re-renders on every live update (curve reports its
        progress each step), so a link found a moment before may be gone: found again."""
        def click():
            self.link(name)[0].click()
            return True
        self.wait(click, 10, f"a click on {name}'s link")

    def state_of(self, name):
        r = self.row(name)
        return r.get_attribute("data-state") if r else None

    def screenshot(self, name):
        folder = os.environ.get("TRAINCTL_SCREENSHOT_DIR") or self.tmp
        os.makedirs(folder, exist_ok=True)
        self.driver.save_screenshot(os.path.join(folder, name))

    def test_live_jobs_failures_logs_curves_and_history_in_a_browser(self):
        for name, text in (("curve.yaml", CURVE), ("crash.yaml", CRASH)):
            started = self.trainctl("run", self.write(name, text), "--detach")
            self.assertEqual(started.returncode, 0, self.explain(started))
        self.driver = browser()
        self.driver.get(self.url)
        self.wait(lambda: self.state_of("curve") == "Running" and self.state_of("crash") == "Running",
                  30, "both jobs listed as Running")
        self.driver.execute_script("window.__samePage = 1")
        self.wait(lambda: self.state_of("crash") == "Failed", 30, "crash to turn Failed live")
        self.assertEqual(self.driver.execute_script("return window.__samePage"), 1, "no reload")
        self.wait(lambda: "First failure: crash-worker-0" in self.row("crash").text, 10,
                  "crash's first failure in its row")
        # The state filter keeps the failed job only, and every state again.
        from selenium.webdriver.support.ui import Select
        Select(self.driver.find_element(By.ID, "filter-state")).select_by_value("Failed")
        self.wait(lambda: self.row("crash") and not self.row("curve"), 10, "the Failed filter")
        Select(self.driver.find_element(By.ID, "filter-state")).select_by_value("")
        self.wait(lambda: self.row("crash") and self.row("curve"), 10, "every state again")
        self.screenshot("dashboard-list.png")

        # A job's name is a link to the job's own address.
        base = f"http://127.0.0.1:{self.port}/"
        tag, href = self.wait(lambda: (lambda a: (a[0].tag_name, a[1]))(self.link("crash")), 10,
                              "crash's link")
        self.assertEqual(tag, "a")
        self.assertEqual(href, base + "#/job/local/default/PyTorchJob/crash")
        self.assertEqual(self.wait(lambda: self.link("curve")[1], 10, "curve's link"),
                         base + "#/job/local/default/PyTorchJob/curve")

        # The keyboard: Tab from the search box reaches the link, Enter opens the job's page.
        self.driver.find_element(By.ID, "search").click()
        for _ in range(30):
            if self.driver.execute_script("return document.activeElement.getAttribute('href')") \
                    == "#/job/local/default/PyTorchJob/crash":
                break
            ActionChains(self.driver).send_keys(Keys.TAB).perform()
        else:
            self.fail("Tab never reached crash's link")
        ActionChains(self.driver).send_keys(Keys.ENTER).perform()
        self.wait(lambda: self.driver.current_url == href, 10, "Enter to follow the link")

        # The failing job's page: its first failure and last output.
        failure = self.wait(lambda: self.driver.find_element(By.ID, "failure").is_displayed()
                            and self.driver.find_element(By.ID, "failure"), 20, "the failure box")
        self.assertIn("First failure: crash-worker-0 (Worker 0) exited with code 3", failure.text)
        self.assertIn("RuntimeError: CUDA error: device-side assert triggered",
                      self.driver.find_element(By.ID, "failure-lines").text)
        self.assertEqual(self.driver.title, "crash · trainctl")

        # The back button returns to the list.
        self.driver.back()
        self.wait(lambda: self.driver.current_url == base + "#/"
                  or self.driver.current_url == base, 10, "the list's address again")
        self.wait(lambda: self.driver.find_element(By.ID, "list-view").is_displayed()
                  and self.row("crash"), 10, "the list again")

        # The copied link in a new tab: the page loads from its address and the cookie alone.
        first_tab = self.driver.current_window_handle
        self.driver.switch_to.new_window("tab")
        self.driver.get(href)
        self.wait(lambda: "device-side assert" in self.driver.find_element(By.ID, "failure-lines").text,
                  20, "the job's page in a new tab")
        self.driver.close()
        self.driver.switch_to.window(first_tab)

        # The running job's page: a line printed after it opened appears, and the chart.
        self.follow("curve")
        self.wait(lambda: self.driver.current_url == base + "#/job/local/default/PyTorchJob/curve",
                  10, "a click to follow the link")
        log = lambda: self.driver.find_element(By.ID, "log").text
        first = self.wait(lambda: re.findall(r"step=(\d+) ", log()), 20, "curve's log")
        opened_at = int(first[-1])
        self.wait(lambda: int(re.findall(r"step=(\d+) ", log())[-1]) > opened_at + 2, 20,
                  "lines printed after the page opened")
        self.wait(lambda: self.state_of("curve") == "Succeeded" or
                  "Succeeded" == self.driver.find_element(By.ID, "job-state").text, 40,
                  "curve to finish")
        # The progress curve's master reported: on its page and in its row of the list.
        progress = self.wait(lambda: "100%" in self.driver.find_element(By.ID, "progress").text
                             and self.driver.find_element(By.ID, "progress"), 20,
                             "the reported progress on the job's page")
        self.assertIn("loss=0.0667", progress.text)
        chart = self.driver.find_element(By.ID, "chart")
        self.wait(lambda: chart.get_attribute("data-points") == "30", 20, "30 loss points")
        self.assertIn("loss", chart.get_attribute("data-series").split(","))
        # A loss and a learning rate 10,000 times smaller: each on a chart (an axis) of its own.
        charts = {c.get_attribute("data-axis"): c.get_attribute("data-series")
                  for c in self.driver.find_elements(By.CSS_SELECTOR, "#chart .chart")}
        self.assertEqual(charts, {"loss": "loss", "lr": "lr"})
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#chart .chart canvas")), 2)
        # Its values read as printed, not rounded to 0 (uPlot's default keeps three decimals).
        ActionChains(self.driver).move_to_element(self.driver.find_element(
            By.CSS_SELECTOR, '#chart .chart[data-axis="lr"] .u-over')).perform()
        self.wait(lambda: [v.text for v in self.driver.find_elements(
            By.CSS_SELECTOR, '#chart .chart[data-axis="lr"] .u-legend .u-value')][-1] == "0.00005",
                  10, "the learning rate's value under the cursor")
        self.assertIn("step=30 loss=0.0667", log())
        self.screenshot("dashboard-job.png")

        # Deleted, both stay in the history; a word of the failing output finds the crash.
        for name in ("curve", "crash"):
            deleted = self.trainctl("delete", name)
            self.assertEqual(deleted.returncode, 0, self.explain(deleted))
        self.driver.get(f"http://127.0.0.1:{self.port}/#/")
        self.wait(lambda: self.row("crash") and "history" in self.row("crash").text
                  and self.row("curve") and "history" in self.row("curve").text, 20,
                  "both jobs as history rows")
        self.driver.find_element(By.ID, "search").send_keys("device-side")
        self.wait(lambda: self.row("crash") and not self.row("curve"), 20,
                  "the search to keep only crash")
        href = self.wait(lambda: self.link("crash")[1], 10, "crash's link")
        self.assertRegex(href, r"/#/history/[\w.-]+$")
        self.follow("crash")
        self.wait(lambda: "device-side assert" in self.driver.find_element(By.ID, "failure-lines").text,
                  20, "the archived failure")
        self.assertEqual(self.driver.current_url, href)
        self.driver.find_element(By.CSS_SELECTOR, '#replica-select option[value="worker-0"]').click()
        self.wait(lambda: "loading shard 3" in self.driver.find_element(By.ID, "log").text, 20,
                  "the archived log tail")


    def files(self):
        """Every file and folder under the state folder but the history's: (mtime_ns, size)."""
        out = {}
        for folder, dirs, names in os.walk(self.state):
            for name in dirs + names:
                path = os.path.join(folder, name)
                if not name.startswith("history.db"):
                    st = os.stat(path)
                    out[os.path.relpath(path, self.state)] = (st.st_mtime_ns, st.st_size)
        return out

    def stream_for(self, seconds, query):
        """What /api/v1/stream?query sends in `seconds`."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall((f"GET /api/v1/stream?{query} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                          f"Cookie: trainctl_ui={self.token}\r\n\r\n").encode())
            sock.settimeout(0.2)
            text, deadline = b"", time.monotonic() + seconds
            while time.monotonic() < deadline:
                try:
                    text += sock.recv(65536)
                except socket.timeout:
                    pass
        self.assertTrue(text.startswith(b"HTTP/1.1 200"), text[:200])
        return text.decode()

    def test_reads_and_streams_write_nothing_and_the_sweep_does_the_upkeep(self):
        # A job past its TTL (its runner recorded it and exited), and a job whose runner was
        # killed: what a read used to write for.
        self.stop_ui()
        done = self.trainctl("run", self.write("expired.yaml", SMALL.format(
            name="expired", ttl=1, sleep=0)), "-q")
        self.assertEqual(done.returncode, 0, self.explain(done))
        lost_dir = os.path.join(self.state, "default", "pytorchjobs", "lost")
        runner = self.start("run", self.write("lost.yaml", SMALL.format(
            name="lost", ttl=3600, sleep=60)), "-q")
        try:
            def running():
                with open(os.path.join(lost_dir, "job.json")) as f:
                    return "Running" in [c["type"] for c in json.load(f)["status"]["conditions"]]
            self.wait_for(lambda: os.path.exists(os.path.join(lost_dir, "job.json")) and running(),
                          30, "lost to run")
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        finally:
            self.stop(runner)
        time.sleep(1.5)  # expired's TTL passes
        self.assertTrue(os.path.isdir(os.path.join(self.state, "default", "pytorchjobs", "expired")))

        self.start_ui("--sweep-every", "0")
        before = self.files()
        recorded = self.api("/api/v1/history?limit=100")["total"]
        rows = {r["name"]: r for r in self.api("/api/v1/jobs")["items"] if r["live"]}
        self.assertEqual(rows["expired"]["state"], "Succeeded", "listed until the sweep")
        self.assertEqual(rows["lost"]["state"], "Failed", "shown as it is: its runner is gone")
        page = self.api("/api/v1/job?source=local&ns=default&kind=PyTorchJob&name=lost")
        self.assertEqual(page["job"]["status"]["conditions"][-1]["reason"], "RunnerLost")
        self.api("/api/v1/job?source=local&ns=default&kind=PyTorchJob&name=expired")
        self.api("/api/v1/logs?source=local&ns=default&kind=PyTorchJob&name=lost&replica=master-0")
        sent = self.stream_for(2.5, "source=local&ns=default&kind=PyTorchJob&name=lost&replica=master-0")
        self.assertIn("event: jobs", sent)
        self.assertIn("RunnerLost", sent)
        self.assertEqual(self.files(), before, "a read or a stream wrote to the state folder")
        self.assertEqual(self.api("/api/v1/history?limit=100")["total"], recorded,
                         "a read or a stream recorded history")

        # The dashboard's timer does the upkeep: the lost runner recorded (and kept in the
        # history), the job past its TTL removed.
        self.start_ui("--sweep-every", "200ms")
        self.wait_for(lambda: "expired" not in [r["name"] for r in self.api("/api/v1/jobs")["items"]
                                                if r["live"]], 10, "the sweep to remove expired")
        self.assertFalse(os.path.exists(os.path.join(self.state, "default", "pytorchjobs", "expired")))
        self.wait_for(lambda: self.api("/api/v1/history?name=lost")["total"] == 1, 10,
                      "the sweep to record lost in the history")
        with open(os.path.join(lost_dir, "job.json")) as f:
            self.assertEqual(json.load(f)["status"]["conditions"][-1]["reason"], "RunnerLost")


if __name__ == "__main__":
    unittest.main()
