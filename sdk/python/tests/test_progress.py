"""trainctl.progress against a real HTTPS server on 127.0.0.1 (http.server + ssl, a CA and a
server certificate made by the openssl CLI in the test's folder): the exact report sent, the
bearer token read again at each report, nothing done without the environment, arguments
refused before sending, failures that return False with one warning per kind, TLS verified
against the given CA; the Reporter's throttling and estimates on an injected clock."""

import datetime
import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import types

import pytest

from trainctl import progress

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")

PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/tj/status"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(folder, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
            "-subj", f"/CN={name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    return os.path.join(folder, f"{name}.pem")


def make_server_cert(folder, ca):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=folder)
    with open(os.path.join(folder, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext",
            cwd=folder)
    return os.path.join(folder, "server.pem"), os.path.join(folder, "server.key")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("certs"))
    ca = make_ca(folder, "ca")
    other_ca = make_ca(folder, "other-ca")
    cert, key = make_server_cert(folder, "ca")
    return types.SimpleNamespace(ca=ca, other_ca=other_ca, cert=cert, key=key)


class StatusServer:
    """An HTTPS status endpoint that records each request and answers with ``answer``
    (status, body); 200 echoes the report as upstream's does."""

    def __init__(self, certs):
        self.requests = []
        self.answer = None
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "body": body})
                status, text = server.answer or (200, body.decode())
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certs.cert, certs.key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, host="127.0.0.1"):
        return f"https://{host}:{self.port}{PATH}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(certs):
    s = StatusServer(certs)
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def fresh_warnings():
    progress._warned.clear()
    yield
    progress._warned.clear()


@pytest.fixture
def env(server, certs, tmp_path):
    token = tmp_path / "token"
    token.write_text("token-one\n")
    return {progress.URL_ENV: server.url(), progress.CA_CERT_ENV: certs.ca,
            progress.TOKEN_ENV: str(token)}


def sent(server, i=-1):
    return json.loads(server.requests[i]["body"])


def warnings_in(capsys):
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("trainctl.progress: warning:")]


# -- report() ---------------------------------------------------------------------------------

def test_a_report_is_the_exact_body_with_the_bearer_token(server, env, capsys):
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    assert progress.report(42, 90, {"loss": 0.25, "step": 7, "phase": "warmup"}, environ=env)
    after = datetime.datetime.now(datetime.timezone.utc)
    (req,) = server.requests
    assert req["path"] == PATH
    assert req["headers"]["Authorization"] == "Bearer token-one"
    assert req["headers"]["Content-Type"] == "application/json"
    body = json.loads(req["body"])
    when = body["trainerStatus"].pop("lastUpdatedTime")
    assert body == {"trainerStatus": {
        "progressPercentage": 42, "estimatedRemainingSeconds": 90,
        "metrics": [{"name": "loss", "value": "0.25"}, {"name": "step", "value": "7"},
                    {"name": "phase", "value": "warmup"}]}}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", when)
    parsed = datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)
    assert before <= parsed <= after
    assert warnings_in(capsys) == []


def test_fields_left_out_and_metrics_as_pairs(server, env):
    assert progress.report(environ=env)
    assert set(sent(server)["trainerStatus"]) == {"lastUpdatedTime"}
    assert progress.report(metrics=[("acc", 0.5), ("acc", 0.75)], environ=env)
    assert sent(server)["trainerStatus"]["metrics"] == [{"name": "acc", "value": "0.5"},
                                                        {"name": "acc", "value": "0.75"}]
    assert progress.report(99.9, 12.6, {}, environ=env)
    status = sent(server)["trainerStatus"]
    assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (99, 13)
    assert "metrics" not in status


def test_the_hostname_is_verified_too(server, env):
    assert progress.report(1, environ=dict(env, **{progress.URL_ENV: server.url("localhost")}))


def test_the_token_file_is_read_again_at_each_report(server, env):
    assert progress.report(10, environ=env)
    with open(env[progress.TOKEN_ENV], "w") as f:
        f.write("token-two")
    assert progress.report(20, environ=env)
    assert [r["headers"]["Authorization"] for r in server.requests] == [
        "Bearer token-one", "Bearer token-two"]


def test_nothing_happens_without_the_environment(server, monkeypatch, capsys):
    for name in (progress.URL_ENV, progress.CA_CERT_ENV, progress.TOKEN_ENV):
        monkeypatch.delenv(name, raising=False)
    assert not progress.enabled()
    assert progress.report(50, 10, {"loss": 1.0}) is False
    assert progress.report(50, environ={}) is False
    assert server.requests == []
    assert capsys.readouterr().err == ""


def test_the_process_environment_is_read_by_default(server, env, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert progress.enabled()
    assert progress.report(5)
    assert sent(server)["trainerStatus"]["progressPercentage"] == 5


@pytest.mark.parametrize("kwargs, message", [
    ({"progress_percentage": 101}, "progress_percentage: expected 0 to 100, got 101"),
    ({"progress_percentage": -1}, "progress_percentage: expected 0 to 100, got -1"),
    ({"progress_percentage": "50"}, "progress_percentage: expected a number, got str '50'"),
    ({"progress_percentage": True}, "progress_percentage: expected a number, got bool"),
    ({"progress_percentage": float("nan")}, "progress_percentage: expected a finite number"),
    ({"estimated_remaining_seconds": -5},
     "estimated_remaining_seconds: expected 0 to 2147483647, got -5"),
    ({"estimated_remaining_seconds": 2**31}, "estimated_remaining_seconds: expected 0 to"),
    ({"metrics": {"x" * 65: 1}}, "metrics[0] name: expected 1 to 64 characters, got 65"),
    ({"metrics": {"": 1}}, "metrics[0] name: expected 1 to 64 characters, got 0"),
    ({"metrics": {3: 1}}, "metrics[0] name: expected a string, got int 3"),
    ({"metrics": {"note": "y" * 65}},
     "metrics['note'] value: expected 1 to 64 characters, got 65"),
    ({"metrics": {"note": ""}}, "metrics['note'] value: expected 1 to 64 characters, got 0"),
    ({"metrics": {"loss": None}}, "metrics['loss']: expected a value, got None"),
    ({"metrics": {f"m{i}": i for i in range(257)}}, "metrics: expected at most 256, got 257"),
    ({"metrics": [("a", 1, 2)]}, "metrics[0]: expected a (name, value) pair"),
    ({"metrics": "loss"}, "metrics: expected a dict of name -> value or (name, value) pairs"),
    ({"metrics": 7}, "metrics: expected a dict of name -> value or (name, value) pairs"),
])
def test_bad_arguments_raise_before_anything_is_sent(server, env, kwargs, message):
    with pytest.raises(ValueError) as e:
        progress.report(environ=env, **kwargs)
    assert message in str(e.value)
    with pytest.raises(ValueError):  # the same without an endpoint: a script fails alike
        progress.report(environ={}, **kwargs)
    assert server.requests == []


def test_the_limits_themselves_are_accepted(server, env):
    metrics = {f"m{i:03d}": "v" * 64 for i in range(256)}
    metrics["n" * 64] = metrics.pop("m000")
    assert progress.report(100, 2**31 - 1, metrics, environ=env)
    assert progress.report(0, 0, environ=env)
    assert len(sent(server, 0)["trainerStatus"]["metrics"]) == 256


def test_values_are_formatted_compactly():
    assert progress.format_value(0.1) == "0.1"
    assert progress.format_value(1e-5) == "1e-05"
    assert progress.format_value(2.0) == "2.0"
    assert progress.format_value(10**70) == "1e+70"
    assert progress.format_value(12) == "12"
    assert progress.format_value(float("nan")) == "nan"
    assert progress.format_value(True) == "True"
    assert progress.format_value("fast") == "fast"

    class Scalar:  # a 0-d tensor's way: the number from .item()
        def item(self):
            return 0.5
    assert progress.format_value(Scalar()) == "0.5"
    np = pytest.importorskip("numpy")
    assert progress.format_value(np.float64(0.1)) == "0.1"
    assert progress.format_value(np.float32(0.1)) == "0.1"
    assert progress.format_value(np.int64(3)) == "3"
    assert progress.format_value(np.array(0.25)) == "0.25"


@pytest.mark.parametrize("status, kind", [(401, "HTTP 401"), (403, "HTTP 403"),
                                          (500, "HTTP 500")])
def test_an_error_answer_is_false_and_one_warning_with_the_servers_message(
        server, env, capsys, status, kind):
    message = f"the server says no ({status})"
    server.answer = (status, json.dumps({"kind": "Status", "status": "Failure",
                                         "message": message, "code": status}))
    assert progress.report(10, environ=env) is False
    assert progress.report(20, environ=env) is False
    assert len(server.requests) == 2
    (line,) = warnings_in(capsys)
    assert f"{kind} " in line and message in line and server.url() in line
    assert "token-one" not in line
    server.answer = (503, "busy, plain text")  # another kind: its own line, once
    assert progress.report(30, environ=env) is False
    assert progress.report(30, environ=env) is False
    (line,) = warnings_in(capsys)
    assert "HTTP 503" in line and "busy, plain text" in line


def test_tls_with_another_ca_is_refused(server, env, certs, capsys):
    env[progress.CA_CERT_ENV] = certs.other_ca
    assert progress.report(10, environ=env) is False
    assert progress.report(11, environ=env) is False
    (line,) = warnings_in(capsys)
    assert "TLS" in line and "certificate" in line
    assert server.requests == []


def test_missing_files_and_a_closed_port_are_false_with_a_warning(server, env, capsys):
    os.remove(env[progress.TOKEN_ENV])
    assert progress.report(1, environ=env) is False
    assert "cannot read the token file" in warnings_in(capsys)[0]
    with open(env[progress.TOKEN_ENV], "w") as f:
        f.write("t")
    assert progress.report(1, environ=dict(env, **{progress.CA_CERT_ENV: "/nonexistent"})) \
        is False
    assert "cannot load the CA file /nonexistent" in warnings_in(capsys)[0]
    port = server.port
    server.stop()
    closed = dict(env, **{progress.URL_ENV: f"https://127.0.0.1:{port}{PATH}"})
    assert progress.report(1, environ=closed) is False
    assert "ConnectionRefusedError" in warnings_in(capsys)[0]


def test_plain_http_only_to_this_machine(env, capsys):
    remote = dict(env, **{progress.URL_ENV: "http://10.1.2.3:8443" + PATH})
    assert progress.report(1, environ=remote) is False
    assert "https is required" in warnings_in(capsys)[0]


def test_importing_it_loads_neither_the_clients_nor_heavy_packages():
    code = ("import sys, trainctl.progress\n"
            "assert trainctl.progress.report(1, environ={}) is False\n"
            "heavy = ('kubernetes', 'torch', 'transformers', 'trainctl.models', 'trainctl.api')\n"
            "print([m for m in heavy if m in sys.modules])")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=here, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# -- Reporter ---------------------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_reporter_sends_at_first_then_at_most_every_interval(server, env):
    clock = Clock()
    r = progress.Reporter(min_interval=5.0, clock=clock, environ=env)
    assert r.update(0, 100, {"loss": 2.0})  # the first update reports at once
    sent_at = []
    for step in range(1, 31):
        clock.now += 0.5
        if r.update(step, 100):
            sent_at.append((step, clock.now - 1000.0))
    assert sent_at == [(10, 5.0), (20, 10.0), (30, 15.0)]
    assert len(server.requests) == 4
    status = sent(server)["trainerStatus"]
    # 30 steps in 15 s: 2 steps a second, 70 left -> 35 s.
    assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (30, 35)
    assert status["metrics"] == [{"name": "loss", "value": "2.0"}]


def test_reporter_eta_is_from_the_rate_since_the_first_update(server, env):
    clock = Clock()
    r = progress.Reporter(min_interval=0, clock=clock, environ=env)
    r.update(500, 1000)  # resumed at step 500: the rate counts only steps made here
    assert (r.percentage, r.remaining_seconds) == (50, None)
    clock.now += 100.0
    r.update(600, 1000)  # 100 steps in 100 s, 400 left
    assert (r.percentage, r.remaining_seconds) == (60, 400)
    clock.now += 20.0
    r.update(700, 1000)  # 200 steps in 120 s, 300 left -> 180 s
    assert (r.percentage, r.remaining_seconds) == (70, 180)
    r.update(999, 1000)
    assert r.percentage == 99
    r.update(1000, 1000)
    assert (r.percentage, r.remaining_seconds) == (100, 0)
    assert [sent(server, i)["trainerStatus"].get("estimatedRemainingSeconds")
            for i in range(5)] == [None, 400, 180, 0, 0]


def test_reporter_without_a_total_sends_metrics_only(server, env):
    r = progress.Reporter(clock=Clock(), environ=env)
    assert r.update(3, None, {"loss": 1.5})
    assert set(sent(server)["trainerStatus"]) == {"metrics", "lastUpdatedTime"}


def test_reporter_keeps_metrics_between_updates(server, env):
    clock = Clock()
    r = progress.Reporter(min_interval=0, clock=clock, environ=env)
    r.update(1, 10, {"loss": 3.0, "lr": 0.1})
    r.update(2, 10, {"loss": 2.5})
    assert sent(server)["trainerStatus"]["metrics"] == [{"name": "loss", "value": "2.5"},
                                                        {"name": "lr", "value": "0.1"}]
    with pytest.raises(ValueError, match="step: expected an int >= 0"):
        r.update(-1, 10)
    with pytest.raises(ValueError, match="total_steps: expected None or an int >= 0"):
        r.update(1, 2.5)
    with pytest.raises(ValueError, match="metrics: expected at most 256 names in all"):
        r.update(3, 10, {f"m{i}": i for i in range(255)})


def test_finish_sends_the_last_state_whatever_the_interval(server, env):
    clock = Clock()
    r = progress.Reporter(min_interval=60.0, clock=clock, environ=env)
    assert not r.finish()  # nothing yet
    r.update(0, 40)
    clock.now += 1.0
    assert not r.update(40, 40, {"loss": 0.5})  # within the interval: kept
    assert r.finish()
    status = sent(server)["trainerStatus"]
    assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (100, 0)
    assert status["metrics"] == [{"name": "loss", "value": "0.5"}]
    assert not r.close()  # already finished
    assert len(server.requests) == 2


def test_finish_of_a_loop_cut_short_says_where_it_stopped(server, env):
    clock = Clock()
    with progress.Reporter(clock=clock, environ=env) as r:
        r.update(0, 10)
        clock.now += 1.0
        r.update(4, 10)
    assert sent(server)["trainerStatus"]["progressPercentage"] == 40


def test_reporter_backs_off_after_failures(server, env, capsys):
    server.answer = (500, "{}")
    clock = Clock()
    r = progress.Reporter(min_interval=5.0, clock=clock, environ=env)
    tried = []
    for second in range(0, 61):
        clock.now = 1000.0 + second
        before = len(server.requests)
        r.update(second, 100)
        if len(server.requests) > before:
            tried.append(second)
    assert tried == [0, 10, 30]  # waits of 10 s then 20 s (then 40 s)
    server.answer = None
    clock.now = 1000.0 + 70
    assert r.update(70, 100)
    clock.now += 5.0
    assert r.update(71, 100)  # back to the interval once a report went through
    assert len(warnings_in(capsys)) == 1


def test_reporter_without_the_environment_sends_nothing(server):
    r = progress.Reporter(clock=Clock(), environ={})
    assert r.update(1, 10, {"loss": 1.0}) is False
    assert r.finish() is False
    assert r.percentage == 10 and server.requests == []


# -- the Hugging Face callback -----------------------------------------------------------------

@pytest.fixture
def transformers(monkeypatch):
    # As the fine-tuning trainer does: transformers would import TensorFlow and JAX (seconds).
    monkeypatch.setenv("USE_TF", "0")
    monkeypatch.setenv("USE_FLAX", "0")
    return pytest.importorskip("transformers")


def test_trainer_status_callback_reports_on_rank_0(server, env, transformers):
    from transformers import TrainerCallback, TrainerControl
    clock = Clock()
    callback = progress.TrainerStatusCallback(
        progress.Reporter(min_interval=5.0, clock=clock, environ=env))
    assert isinstance(callback, TrainerCallback)
    state = types.SimpleNamespace(global_step=0, max_steps=20, is_world_process_zero=True)
    other = types.SimpleNamespace(global_step=0, max_steps=20, is_world_process_zero=False)
    control = TrainerControl()
    callback.on_train_begin(None, other, control)
    callback.on_train_begin(None, state, control)
    for step in range(1, 21):
        clock.now += 1.0
        state.global_step = other.global_step = step
        callback.on_step_end(None, other, control)
        callback.on_step_end(None, state, control)
        if step % 10 == 0:
            logs = {"loss": 1.0 / step, "learning_rate": 5e-05, "epoch": step / 20,
                    "grad_norm": 0.3, "note": "x"}
            callback.on_log(None, other, control, logs=logs)
            callback.on_log(None, state, control, logs=logs)
    callback.on_train_end(None, other, control)
    callback.on_train_end(None, state, control)
    bodies = [json.loads(r["body"])["trainerStatus"] for r in server.requests]
    assert [b.get("progressPercentage") for b in bodies] == [0, 25, 50, 75, 100, 100]
    assert bodies[-1]["estimatedRemainingSeconds"] == 0
    assert bodies[-1]["metrics"] == [{"name": "loss", "value": "0.05"},
                                     {"name": "learning_rate", "value": "5e-05"},
                                     {"name": "epoch", "value": "1.0"}]


def test_the_fine_tuning_trainer_reports_a_real_trainers_progress(server, env, tmp_path,
                                                                  transformers):
    """hf_llm_training.report_progress on a real transformers.Trainer (a one-weight model on
    CPU): transformers' own KubeflowCallback (here a stand-in of that name) is taken out,
    ours reports 0 % when training begins and 100 % with the last loss when it ends."""
    torch = pytest.importorskip("torch")
    from trainctl.trainer import hf_llm_training

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Linear(1, 1)

        def forward(self, x, labels):
            return {"loss": torch.nn.functional.mse_loss(self.w(x), labels)}

    class KubeflowCallback(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            raise AssertionError("transformers' own callback still runs")

    data = [{"x": torch.tensor([float(i)]), "labels": torch.tensor([2.0 * i])}
            for i in range(8)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=2,
        logging_steps=2, report_to=[], save_strategy="no", disable_tqdm=True, use_cpu=True)
    trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=data,
                                   callbacks=[KubeflowCallback()])
    assert hf_llm_training.report_progress(trainer, {}) is None  # no endpoint: no change
    assert any(type(c) is KubeflowCallback for c in trainer.callback_handler.callbacks)
    ours = hf_llm_training.report_progress(trainer, env)
    names = [type(c).__name__ for c in trainer.callback_handler.callbacks]
    assert "KubeflowCallback" not in names and names.count("TrainerStatusCallback") == 1
    trainer.train()
    bodies = [json.loads(r["body"])["trainerStatus"] for r in server.requests]
    assert bodies[0]["progressPercentage"] == 0
    last = bodies[-1]
    assert (last["progressPercentage"], last["estimatedRemainingSeconds"]) == (100, 0)
    assert [m["name"] for m in last["metrics"]] == ["loss", "learning_rate", "epoch"]
    assert ours.reporter.metrics["epoch"] == progress.format_value(trainer.state.epoch)
