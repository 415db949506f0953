"""The kubernetes backend's log following without a cluster: line splitting (blank lines and
UTF-8 split across chunks), and streams a node never closes ending once the pod finished."""

import socket
import threading
import time

import pytest

pytest.importorskip("kubernetes")

from trainctl.backends import kubernetes as kb  # noqa: E402


class FakeResponse:
    """A followed log response: yields the given chunks, then blocks on a real socket (as a
    stream kwok never closes does) until shut down."""

    def __init__(self, chunks, hang=True, delay=0.0):
        self.chunks = chunks
        self.hang = hang
        self.delay = delay
        self.mine, self.theirs = socket.socketpair()
        self.connection = type("Conn", (), {"sock": self.mine})()
        self.released = False

    def stream(self, amt=None, decode_content=False):
        time.sleep(self.delay)  # the first bytes come a moment after the stream opens
        yield from self.chunks
        if self.hang:
            self.mine.recv(1)  # returns b"" once shut down
            raise OSError("connection shut down")

    def release_conn(self):
        self.released = True


class FakeCoreApi:
    def __init__(self, responses):
        self.responses = responses

    def read_namespaced_pod_log(self, name, namespace, container, follow, _preload_content):
        assert follow and not _preload_content
        return self.responses[name]


def backend(responses):
    b = object.__new__(kb.KubernetesBackend)
    b.core_api = FakeCoreApi(responses)
    return b


def test_lines_keep_blank_lines_and_utf8_split_across_chunks():
    resp = FakeResponse([b"a\n\nb", "é".encode()[:1], "é".encode()[1:] + b"\nlast"], hang=False)
    assert list(kb._lines(resp)) == ["a", "", "bé", "last"]


def test_follow_ends_a_stream_the_node_keeps_open_once_the_pod_finished():
    responses = {"p-0": FakeResponse([b"one\n", b"two\n"]), "p-1": FakeResponse([b"three\n"])}
    phases = {"p-0": "Running", "p-1": "Running"}
    got = []

    def consume():
        for item in backend(responses).follow(["p-0", "p-1"], "ns", "c", phases.get,
                                              grace=0.2):
            got.append(item)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    time.sleep(2.5)
    assert t.is_alive(), "follow returned while the pods were still running"
    phases.update({"p-0": "Succeeded", "p-1": "Gone"})
    t.join(timeout=10)
    assert not t.is_alive(), "follow did not end after the pods finished"
    assert sorted(got) == [("p-0", "one"), ("p-0", "two"), ("p-1", "three")]


def test_follow_waits_for_a_pending_pod():
    responses = {"p-0": FakeResponse([b"hello\n"], hang=False)}
    phases = iter(["Pending", "Pending", "Running", "Succeeded"])
    got = list(backend(responses).follow(["p-0"], "ns", "c", lambda _: next(phases, "Succeeded")))
    assert got == [("p-0", "hello")]


def test_a_stream_that_opened_late_gets_its_quiet_period_from_when_it_opened():
    # The pod stays Pending past the grace period, then has finished by the time its stream
    # opens; its first line comes 1 s later. The quiet period must count from the open, not
    # from when following began, or the line is dropped (seen in CI as a flaky test above).
    start = time.monotonic()
    responses = {"p-0": FakeResponse([b"late\n"], hang=False, delay=1.0)}

    def phase(_):
        return "Pending" if time.monotonic() - start < 2.5 else "Succeeded"

    got = list(backend(responses).follow(["p-0"], "ns", "c", phase, grace=2.0))
    assert got == [("p-0", "late")]


def test_expected_pods_from_the_spec_for_each_selection():
    from trainctl.api.training_client import _pod_selector
    from trainctl.backends.kubernetes import expected_pods as _expected_pods
    job = {"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}}}
    assert _expected_pods(job, _pod_selector("j", False, None, None)) == 4
    assert _expected_pods(job, _pod_selector("j", True, None, None)) == 1
    assert _expected_pods(job, _pod_selector("j", False, "worker", None)) == 3
    assert _expected_pods(job, _pod_selector("j", False, "worker", 2)) == 1
    assert _expected_pods(job, _pod_selector("j", False, "worker", 5)) == 0
    assert _expected_pods({"spec": {}}, _pod_selector("j", False, None, None)) is None
