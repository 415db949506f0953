"""Shared helpers for the end-to-end tests: they drive the real `trainctl` binary.

The binary comes from $TRAINCTL_BIN (CTest sets it to the built target). Every test case
gets its own state folder and working folder under a temporary directory, so tests never
see each other's jobs and never touch the user's ~/.local/state/trainctl.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAINCTL = os.environ.get("TRAINCTL_BIN", os.path.join(REPO, "build", "release", "trainctl"))


def results(output):
    """The `RESULT {json}` lines a training script printed, as dicts, in order."""
    found = []
    for line in output.splitlines():
        at = line.find("RESULT {")
        if at >= 0:
            found.append(json.loads(line[at + len("RESULT "):]))
    return found


def condition_types(job):
    return [c["type"] for c in job.get("status", {}).get("conditions", [])]


def last_condition(job):
    conditions = job.get("status", {}).get("conditions", [])
    return conditions[-1] if conditions else {}


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes (it only waits to be reaped by its parent).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone between the open and the read
        return False


class TrainctlTestCase(unittest.TestCase):
    """A test case with a private state dir and work dir, and helpers to run trainctl."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="trainctl-e2e-")
        self.state = os.path.join(self.tmp, "state")
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(self.work)
        self.env = dict(os.environ, TRAINCTL_STATE_DIR=self.state)
        self.env.pop("KUBECONFIG", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text).lstrip())
        return path

    def trainctl(self, *args, timeout=300, cwd=None):
        """Runs trainctl to completion; returns the CompletedProcess (text mode)."""
        return subprocess.run([TRAINCTL, *args], cwd=cwd or self.work, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def start(self, *args, cwd=None):
        """Starts trainctl in the background (its own session, so signals reach only it)."""
        return subprocess.Popen([TRAINCTL, *args], cwd=cwd or self.work, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def run_json(self, manifest, *extra, expect_code=None, timeout=300):
        """`trainctl run -o json`; returns (job dict, CompletedProcess)."""
        proc = self.trainctl("run", manifest, "-o", "json", *extra, timeout=timeout)
        if expect_code is not None:
            self.assertEqual(proc.returncode, expect_code, self.explain(proc))
        self.assertTrue(proc.stdout.strip(), self.explain(proc))
        return json.loads(proc.stdout), proc

    def stored_replicas(self, namespace, plural, name):
        path = os.path.join(self.state, namespace, plural, name, "replicas.json")
        with open(path) as f:
            return json.load(f)

    def wait_for(self, predicate, timeout, message):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)
        self.fail(f"timed out after {timeout}s waiting for {message}")

    @staticmethod
    def explain(proc):
        return (f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
                f"\n--- stderr\n{proc.stderr[-4000:]}")

    @staticmethod
    def stop(popen):
        if popen.poll() is None:
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
        for stream in (popen.stdout, popen.stderr):
            if stream:
                stream.close()
