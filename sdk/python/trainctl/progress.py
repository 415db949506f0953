"""Progress reports from a training process to its job's status (Kubeflow Trainer v2.3's runtime
status endpoint), for the training program itself: no client, no cluster access.

Where the job is run by a server of that endpoint (upstream's controller with the TrainJobStatus
feature, ``trainctl operator``, the local runner ``trainctl run``), the process finds:

* ``KUBEFLOW_TRAINER_SERVER_URL``: where to POST (``https://…/apis/trainer.kubeflow.org/v1alpha1/
  namespaces/<ns>/trainjobs/<name>/status``);
* ``KUBEFLOW_TRAINER_SERVER_CA_CERT``: a PEM file of the CA that signed the server's certificate;
* ``KUBEFLOW_TRAINER_SERVER_TOKEN``: a file holding the bearer token, read again at each report
  (it is rotated).

A report is ``{"trainerStatus": {"progressPercentage", "estimatedRemainingSeconds", "metrics":
[{"name", "value"}], "lastUpdatedTime"}}``; what the server accepts replaces the job's
``status.trainerStatus``. Limits, checked here before anything is sent: a percentage of 0-100, a
non-negative int32 of seconds, at most 256 metrics whose names and values are texts of 1-64
characters.

- :func:`report` sends one report. Without ``KUBEFLOW_TRAINER_SERVER_URL`` it does nothing and
  returns False, so the same script runs anywhere.
- :class:`Reporter` turns steps into percentage and remaining time, and sends at most every
  ``min_interval`` seconds.
- ``TrainerStatusCallback`` is a Hugging Face ``TrainerCallback`` that reports through a
  ``Reporter`` on rank 0 (importing it imports transformers). transformers 5.4 and later have
  their own (``KubeflowCallback``), which they add by themselves when the URL is set.

A failure to report never raises into the training loop: it returns False and prints one line
to stderr per kind of failure (an HTTP status, TLS, the connection, the token file), the first
time that kind happens. Call these from one process (rank 0): every report replaces the last.

Standard library only.
"""

import datetime
import http.client
import ipaddress
import json
import math
import numbers
import os
import ssl
import sys
import threading
import time
import urllib.parse

URL_ENV = "KUBEFLOW_TRAINER_SERVER_URL"
CA_CERT_ENV = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
TOKEN_ENV = "KUBEFLOW_TRAINER_SERVER_TOKEN"

MAX_METRICS = 256
MAX_TEXT = 64
MAX_SECONDS = 2**31 - 1  # the field is an int32
_MESSAGE_CHARS = 300

_warned = set()
_warned_lock = threading.Lock()


def enabled(environ=None):
    """Whether this process has a status endpoint to report to (its URL is set)."""
    environ = os.environ if environ is None else environ
    return bool(environ.get(URL_ENV))


# -- checking and shaping a report -------------------------------------------------------------

def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what}: expected a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{what}: expected a finite number, got {value!r}")
    return value


def _percentage(value):
    if value is None:
        return None
    value = _number(value, "progress_percentage")
    if not 0 <= value <= 100:
        raise ValueError(f"progress_percentage: expected 0 to 100, got {value!r}")
    return int(math.floor(value))  # 99.9 is not done yet


def _seconds(value):
    if value is None:
        return None
    value = _number(value, "estimated_remaining_seconds")
    if not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"estimated_remaining_seconds: expected 0 to {MAX_SECONDS}, got "
                         f"{value!r}")
    return int(round(value))


def format_value(value):
    """A metric's value as the text a report carries: a number in its shortest exact form (a
    NumPy scalar or a one-value tensor as the number it holds), anything else as ``str()``."""
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (str, bytes, numbers.Number)):
        try:
            value = item()  # a 0-d tensor or array; one with several values stays as it is
        except (TypeError, ValueError, RuntimeError):
            pass
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        text = str(int(value))
        return text if len(text) <= MAX_TEXT else float.__repr__(float(value))
    if isinstance(value, float):  # also NumPy's float64, whose repr names its type
        return float.__repr__(value)
    if isinstance(value, numbers.Real):  # NumPy's float32 (str is its own shortest form)...
        text = str(value)
        return text if 1 <= len(text) <= MAX_TEXT else float.__repr__(float(value))
    return str(value)


def _text(text, what):
    if not isinstance(text, str):
        raise ValueError(f"{what}: expected a string, got {type(text).__name__} {text!r}")
    if not 1 <= len(text) <= MAX_TEXT:
        shown = text if len(text) <= 20 else text[:20] + "…"
        raise ValueError(f"{what}: expected 1 to {MAX_TEXT} characters, got {len(text)} "
                         f"({shown!r})")
    return text


def metric_items(metrics):
    """``metrics`` (a dict name -> value, or (name, value) pairs) as [(name, text)], checked."""
    if metrics is None:
        return []
    if isinstance(metrics, dict):
        pairs = list(metrics.items())
    elif isinstance(metrics, (str, bytes)):
        raise ValueError("metrics: expected a dict of name -> value or (name, value) pairs, "
                         f"got {type(metrics).__name__}")
    else:
        try:
            pairs = [tuple(p) for p in metrics]
        except TypeError:
            raise ValueError("metrics: expected a dict of name -> value or (name, value) pairs, "
                             f"got {type(metrics).__name__}") from None
        for i, p in enumerate(pairs):
            if len(p) != 2:
                raise ValueError(f"metrics[{i}]: expected a (name, value) pair, got {p!r}")
    if len(pairs) > MAX_METRICS:
        raise ValueError(f"metrics: expected at most {MAX_METRICS}, got {len(pairs)}")
    out = []
    for i, (name, value) in enumerate(pairs):
        _text(name, f"metrics[{i}] name")
        if value is None:
            raise ValueError(f"metrics[{name!r}]: expected a value, got None")
        out.append((name, _text(format_value(value), f"metrics[{name!r}] value")))
    return out


def _now_text():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def report_body(progress_percentage=None, estimated_remaining_seconds=None, metrics=None):
    """The JSON object a report sends (checked: ValueError names the argument and what was
    expected). Fields that are None are left out; ``lastUpdatedTime`` is now, in UTC."""
    status = {}
    pct = _percentage(progress_percentage)
    if pct is not None:
        status["progressPercentage"] = pct
    eta = _seconds(estimated_remaining_seconds)
    if eta is not None:
        status["estimatedRemainingSeconds"] = eta
    items = metric_items(metrics)
    if items:
        status["metrics"] = [{"name": n, "value": v} for n, v in items]
    status["lastUpdatedTime"] = _now_text()
    return {"trainerStatus": status}


# -- sending -------------------------------------------------------------------------------

class _Failure(Exception):
    """A report that did not go through; ``kind`` says which kind (one warning per kind)."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def _warn_once(kind, url, message):
    with _warned_lock:
        if kind in _warned:
            return
        _warned.add(kind)
    print(f"trainctl.progress: warning: could not report progress to {url}: {message} "
          "(further failures of this kind are not shown)", file=sys.stderr, flush=True)


def _server_message(raw):
    """The server's words from an error answer: a Kubernetes Status' ``message``, else the
    body's text, on one line and bounded."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("message"), str):
        text = doc["message"]
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "…"


def _is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _connection(url, environ, timeout):
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("https", "http") or not parts.hostname or port == -1:
        raise _Failure("the URL", f"{URL_ENV} is not an https URL: {url!r}")
    if parts.scheme == "http":
        # Plain HTTP carries the token in the clear: only to this machine.
        if not _is_loopback(parts.hostname):
            raise _Failure("the URL", f"{URL_ENV} is plain http to another machine; "
                                      "https is required")
        return http.client.HTTPConnection(parts.hostname, port, timeout=timeout)
    ca = environ.get(CA_CERT_ENV)
    if not ca:
        raise _Failure("the CA", f"{CA_CERT_ENV} is not set")
    try:
        context = ssl.create_default_context(cafile=ca)
    except (OSError, ssl.SSLError) as e:
        raise _Failure("the CA", f"cannot load the CA file {ca} ({CA_CERT_ENV}): {e}") from e
    return http.client.HTTPSConnection(parts.hostname, port, timeout=timeout, context=context)


def _token(environ):
    path = environ.get(TOKEN_ENV)
    if not path:
        raise _Failure("the token", f"{TOKEN_ENV} is not set")
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise _Failure("the token", f"cannot read the token file {path} ({TOKEN_ENV}): "
                                    f"{e}") from e
    if not token:
        raise _Failure("the token", f"the token file {path} ({TOKEN_ENV}) is empty")
    return token


def _post(url, body, environ, timeout):
    """POSTs ``body`` with a fresh token; returns normally on a 2xx answer, else _Failure.
    Connects directly (no proxy) and follows no redirect: the token goes to this URL only."""
    token = _token(environ)
    conn = _connection(url, environ, timeout)
    parts = urllib.parse.urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    data = json.dumps(body, separators=(",", ":")).encode("utf-8")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json"}
    try:
        conn.request("POST", target, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read(64 << 10)
    except ssl.SSLError as e:
        raise _Failure("TLS", f"TLS: {getattr(e, 'verify_message', None) or e}") from e
    except (OSError, http.client.HTTPException) as e:
        raise _Failure("the connection", f"{type(e).__name__}: {e}") from e
    finally:
        conn.close()
    if not 200 <= resp.status < 300:
        said = _server_message(raw)
        raise _Failure(f"HTTP {resp.status}", f"HTTP {resp.status} {resp.reason}"
                                              + (f": {said}" if said else ""))


def report(progress_percentage=None, estimated_remaining_seconds=None, metrics=None, *,
           timeout=5.0, environ=None):
    """Reports the training's progress to its job's status: ``progress_percentage`` (0-100; a
    float is rounded down), ``estimated_remaining_seconds`` (>= 0), ``metrics`` (a dict name
    -> value, or (name, value) pairs; values are sent as text, numbers in their shortest exact
    form). Arguments left None are left out of the report. The report replaces the job's last.

    Returns True when the server took it. Without ``KUBEFLOW_TRAINER_SERVER_URL`` it does
    nothing and returns False. ValueError for arguments out of the endpoint's limits (always,
    with or without the endpoint). Never raises for the network or the server's answer: returns
    False and prints one warning line per kind of failure."""
    environ = os.environ if environ is None else environ
    body = report_body(progress_percentage, estimated_remaining_seconds, metrics)
    url = environ.get(URL_ENV)
    if not url:
        return False
    try:
        _post(url, body, environ, timeout)
    except _Failure as e:
        _warn_once(e.kind, url, str(e))
        return False
    return True


# -- steps into reports --------------------------------------------------------------------

class Reporter:
    """Reports a loop's progress from its steps: ``update(step, total_steps, metrics)`` at each
    step (cheap), a report at the first update and then at most every ``min_interval``
    seconds; ``finish()`` (or ``close()``, or leaving a ``with`` block) sends the last state
    whatever the interval. Metrics are kept between updates (a later update changes the names
    it gives), so every report carries the latest of each.

    Percentage: ``floor(100 * step / total_steps)``, 100 once ``step >= total_steps``. Remaining
    seconds: the steps left at the rate measured since the first update (steps done since then
    over the time since then), 0 once done; none before a step was made. Without a total
    (None or 0) reports carry metrics only. After a report fails the next waits twice as long
    (up to 64 intervals), so an endpoint that does not answer slows training little."""

    MAX_BACKOFF = 64

    def __init__(self, min_interval=5.0, clock=time.monotonic, *, timeout=5.0, environ=None):
        _number(min_interval, "min_interval")
        if min_interval < 0:
            raise ValueError(f"min_interval: expected >= 0 seconds, got {min_interval!r}")
        self.min_interval = float(min_interval)
        self.timeout = timeout
        self._clock = clock
        self._environ = environ
        self._start = None  # (clock, step) of the first update
        self._last_try = None  # clock of the last report sent or tried
        self._backoff = 1
        self._metrics = {}  # name -> text, in the order first given
        self._state = None  # (step, total_steps, percentage, seconds)
        self._finished = False

    @property
    def percentage(self):
        return self._state[2] if self._state else None

    @property
    def remaining_seconds(self):
        return self._state[3] if self._state else None

    @property
    def metrics(self):
        return dict(self._metrics)

    def _estimate(self, step, total, now):
        if not total:
            return None, None
        if step >= total:
            return 100, 0
        pct = int(100 * step // total)
        t0, step0 = self._start
        elapsed, done = now - t0, step - step0
        if elapsed <= 0 or done <= 0:
            return pct, None
        return pct, min(MAX_SECONDS, int(round((total - step) * elapsed / done)))

    def update(self, step, total_steps, metrics=None):
        """Records ``step`` of ``total_steps`` (and ``metrics``); reports when due. Returns True
        when a report was sent and taken."""
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"step: expected an int >= 0, got {step!r}")
        if total_steps is not None and (isinstance(total_steps, bool) or not isinstance(
                total_steps, numbers.Integral) or total_steps < 0):
            raise ValueError(f"total_steps: expected None or an int >= 0, got {total_steps!r}")
        items = metric_items(metrics)
        merged = dict(self._metrics)
        merged.update(items)
        if len(merged) > MAX_METRICS:
            raise ValueError(f"metrics: expected at most {MAX_METRICS} names in all, got "
                             f"{len(merged)}")
        self._metrics = merged
        now = self._clock()
        if self._start is None or step < self._start[1]:
            self._start = (now, int(step))  # the first update, or a loop started again
        self._state = (int(step), total_steps) + self._estimate(int(step), total_steps, now)
        self._finished = False
        wait = self.min_interval * self._backoff
        if self._last_try is not None and now - self._last_try < wait:
            return False
        return self._send(now)

    def _send(self, now):
        if not enabled(self._environ):
            return False
        _, _, pct, eta = self._state
        self._last_try = now
        ok = report(pct, eta, list(self._metrics.items()), timeout=self.timeout,
                    environ=self._environ)
        self._backoff = 1 if ok else min(self.MAX_BACKOFF, self._backoff * 2)
        return ok

    def finish(self):
        """Sends the last state now (100 % and no time left when the last step was the total).
        Returns True when it was taken; False with nothing to send or already finished."""
        if self._state is None or self._finished:
            return False
        self._finished = True
        return self._send(self._clock())

    close = finish

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finish()
        return False


# -- Hugging Face Trainer ------------------------------------------------------------------

def _make_callback_class():
    from transformers import TrainerCallback

    class TrainerStatusCallback(TrainerCallback):
        """Reports a Hugging Face Trainer's progress on rank 0 through a :class:`Reporter`:
        ``state.global_step`` of ``state.max_steps`` when training begins (the time left is
        measured from there, so a resumed run counts only its own steps) and at each step end,
        the logged ``metric_names`` (loss, learning rate, epoch, evaluation loss) when the
        Trainer logs, the last state when training ends. Does nothing on other ranks, nor
        without the endpoint."""

        metric_names = ("loss", "learning_rate", "epoch", "eval_loss")

        def __init__(self, reporter=None, metric_names=None):
            self.reporter = reporter if reporter is not None else Reporter()
            if metric_names is not None:
                self.metric_names = tuple(metric_names)

        @staticmethod
        def _total(state):
            total = getattr(state, "max_steps", None)
            return total if isinstance(total, int) and total > 0 else None

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                self.reporter.update(state.global_step, self._total(state))

        def on_step_end(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                self.reporter.update(state.global_step, self._total(state))

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero or not logs:
                return
            found = {k: logs[k] for k in self.metric_names
                     if isinstance(logs.get(k), numbers.Real)
                     and not isinstance(logs.get(k), bool)}
            if found:
                self.reporter.update(state.global_step, self._total(state), found)

        def on_train_end(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                self.reporter.finish()

    return TrainerStatusCallback


def __getattr__(name):
    if name == "TrainerStatusCallback":
        cls = _make_callback_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
