"""Upstream's own unit tests for ``TrainerClient`` (the ``kubeflow`` SDK 0.5.0, unmodified, from the
project's venv of it: hack/upstream-sdk/venv.sh trainer) run against ``trainctl.TrainerClient``.

No upstream code is copied here (cases are named by their names only). Upstream's test modules
are imported as installed, and every parametrized case (its inputs, its expected output or
exception) and every helper that makes a case's data is read from them at run time:

* ``kubeflow/trainer/api/trainer_client_test.py``: which backend a backend config selects;
* ``kubeflow/trainer/backends/kubernetes/backend_test.py``: runtimes, the TrainJob ``train()``
  creates, jobs, steps, status, logs, events, waiting, deleting, and their errors;
* ``kubeflow/trainer/backends/localprocess/backend_test.py``: what the local backend refuses.

Upstream tests its backend classes directly with ``unittest.mock`` objects in place of the
kubernetes client. Here the same questions go to our public client: on the kubernetes backend the
``kubernetes`` package's API classes are replaced by an in-memory API (``World``) whose answers
are upstream's own mock handlers' answers, sent as an API server sends them (JSON, timestamps in
UTC, errors when the asynchronous call's result is read) and read back by the ``kubernetes``
client's deserialiser; on the local backend the real ``trainctl`` binary runs against a private
state folder (skipped without the binary). Where our client asks the API something else than
upstream's (runtimes: we list both scopes where upstream gets one by name), the world answers
the list with what upstream's handlers give for the names involved: an error of a get becomes
the error of that scope's list.

What upstream asserts only on its mocks (calls made, private helpers) is not run: see
``docs/sdk.md`` ("Upstream's unit tests against ours"), which counts every case. A difference
in behaviour is an entry of ``DIFFERENCES`` (the case must fail: strict xfail, so a fix shows
up as XPASS and the entry goes).

Run, from sdk/python/tests_upstream with the SDK on PYTHONPATH (CTest ``sdk.upstream_unit``):
``"$(../../../hack/upstream-sdk/venv.sh trainer)" test_upstream_trainer_client.py [-k ...]``.
The venv holds no pytest: Debian's (python3-pytest, the project's test dependency) is taken
from the end of ``sys.path``, after everything upstream's venv holds.
"""

import copy
import dataclasses
import datetime
import enum
import importlib
import json
import os
import signal
import sys
import tempfile
from unittest import mock

try:
    import pytest
except ImportError:  # upstream's venv: Debian's pytest, after the venv's own packages
    sys.path.append("/usr/lib/python3/dist-packages")
    import pytest

kubeflow_trainer = pytest.importorskip("kubeflow.trainer")
kubernetes = pytest.importorskip("kubernetes")

import yaml  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

import trainctl  # noqa: E402
from trainctl.backends import local as local_backend_module  # noqa: E402

UPSTREAM_API = importlib.import_module("kubeflow.trainer.api.trainer_client_test")
UPSTREAM_K8S = importlib.import_module("kubeflow.trainer.backends.kubernetes.backend_test")
UPSTREAM_LOCAL = importlib.import_module("kubeflow.trainer.backends.localprocess.backend_test")
from kubeflow.common.types import KubernetesBackendConfig  # noqa: E402
from kubeflow.trainer.constants import constants as UC  # noqa: E402
from kubeflow.trainer.types import types as UT  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# Where our client differs from upstream's, on purpose or not yet fixed: {case id: why}.
# Each of these cases must still fail (strict xfail); docs/sdk.md says why for each.
DIFFERENCES = {
    "k8s::test_train[valid flow with custom trainer]":
        "a lambda: ours refuses it (ValueError) before anything is created; upstream writes "
        "its source line into the script, which cannot run (test_train_named_function checks "
        "the rest of this case's TrainJob)",
    "k8s::test_train[valid flow with custom trainer that has env and image]":
        "a lambda, as above",
    "local::test_get_job[get_nonexistent_job]":
        "a job that does not exist: RuntimeError on both our backends (as upstream's "
        "kubernetes backend); upstream's local backend raises ValueError",
    "local::test_get_job_logs[get_logs_nonexistent_job]": "as get_nonexistent_job",
    "local::test_wait_for_job_status[wait_for_nonexistent_job]": "as get_nonexistent_job",
    "local::test_delete_job[delete_nonexistent_job]": "as get_nonexistent_job",
    "local::test_train[train fails without runtime]":
        "ours defaults to torch-distributed on both backends (upstream's TrainerClient "
        "documents that default; its local backend refuses instead)",
    "local::test_train[train fails without custom trainer]":
        "ours runs the runtime's own command locally too (upstream's local backend needs a "
        "CustomTrainer)",
    "local::test_train[train rejects kubernetes labels option]":
        "ours honours Labels locally (trainctl run keeps them); upstream's local backend takes "
        "Name only",
    "local::test_train[train rejects kubernetes annotations option]": "as Labels",
    "local::test_train[train rejects pod template overrides option]":
        "as Labels: ours honours the RuntimePatch fields trainctl run can (this one is empty)",
    "local::test_get_runtime_packages[get_packages_for_existing_runtime]":
        "ours prints the packages (as upstream's kubernetes backend does) and returns None; "
        "upstream's local backend returns its runtime's list of package names",
}

# Upstream's backend class name → our backend's name (``TrainerClient.backend_name``).
BACKEND_NAMES = {"KubernetesBackend": "kubernetes", "LocalProcessBackend": "local"}


# ---------------------------------------------------------------------------------------------
# Upstream's cases, read from its modules


def upstream_cases(prefix, test_fn, argname="test_case"):
    """pytest params of one upstream test function's parametrized cases, each with its id
    (``prefix::function[case name]``) and the marks DIFFERENCES gives it."""
    params = []
    for mark in getattr(test_fn, "pytestmark", []):
        if mark.name != "parametrize" or mark.args[0] != argname:
            continue
        for case in mark.args[1]:
            name = case["name"] if isinstance(case, dict) else case.name
            case_id = f"{prefix}::{test_fn.__name__}[{name}]"
            marks = []
            if case_id in DIFFERENCES:
                marks.append(pytest.mark.xfail(strict=True, reason=DIFFERENCES[case_id]))
            params.append(pytest.param(case_id, copy.deepcopy(case), id=name, marks=marks))
    assert params, f"no parametrized cases found in upstream's {test_fn.__name__}"
    return params


# ---------------------------------------------------------------------------------------------
# Comparing our results with upstream's expected ones

_COMMANDS = {  # upstream's RuntimeTrainer.command (a bash template) → ours (the entrypoint)
    tuple(UC.TORCH_COMMAND): ("torchrun",),
    tuple(UC.MPI_COMMAND): ("mpirun",),
    tuple(UC.DEFAULT_COMMAND): ("python",),
    tuple(UC.TORCH_TUNE_COMMAND): ("tune", "run"),
}


def _utc(value):
    if value.tzinfo is None:
        return value
    return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def differences(ours, theirs, path="result"):
    """Where ``ours`` differs from upstream's expected ``theirs``: dataclasses by upstream's
    fields (ours may have more), enums by value, times in UTC (upstream's mock times are naive),
    RuntimeTrainer.command as the entrypoint it stands for (ours holds that, docs/sdk.md)."""
    if dataclasses.is_dataclass(theirs) and not isinstance(theirs, type):
        out = []
        for f in dataclasses.fields(theirs):
            if f.name.endswith("__command"):
                want = _COMMANDS.get(tuple(theirs.command), tuple(theirs.command))
                got = tuple(getattr(ours, "command", ()))
                if got != want:
                    out.append(f"{path}.command: {got!r} != {want!r}")
                continue
            if not hasattr(ours, f.name):
                out.append(f"{path}.{f.name}: missing")
                continue
            out += differences(getattr(ours, f.name), getattr(theirs, f.name),
                               f"{path}.{f.name}")
        return out
    if isinstance(theirs, enum.Enum):
        got = getattr(ours, "value", ours)
        return [] if got == theirs.value else [f"{path}: {got!r} != {theirs.value!r}"]
    if isinstance(theirs, datetime.datetime) and isinstance(ours, datetime.datetime):
        return [] if _utc(ours) == _utc(theirs) else [f"{path}: {ours} != {theirs}"]
    if isinstance(theirs, (list, tuple)) and isinstance(ours, (list, tuple)):
        if len(ours) != len(theirs):
            return [f"{path}: {len(ours)} items != {len(theirs)}: {ours!r} vs {theirs!r}"]
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    return [] if ours == theirs else [f"{path}: {ours!r} != {theirs!r}"]


def assert_same(ours, theirs):
    found = differences(ours, theirs)
    assert not found, "ours differs from upstream's expected result:\n  " + "\n  ".join(found)


def _crd_defaults():
    """spec.runtimeRef's defaults from our TrainJob CRD (as Trainer v2.3.0 serves it): what the
    API server fills in, so that a field one SDK leaves to the default compares equal."""
    path = os.path.join(REPO, "manifests", "crds", "trainer.kubeflow.org_trainjobs.yaml")
    with open(path) as f:
        crd = yaml.safe_load(f)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    ref = schema["properties"]["spec"]["properties"]["runtimeRef"]["properties"]
    return {k: v["default"] for k, v in ref.items() if "default" in v}


RUNTIME_REF_DEFAULTS = _crd_defaults()


def _quantities(resources):
    """A resourcesPerNode with its quantities as numbers where they are (upstream's model gives
    5.0, ours "5")."""
    def number(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return v
    return {part: {k: number(v) for k, v in (values or {}).items()}
            for part, values in (resources or {}).items()}


def stored(manifest):
    """A TrainJob as the API server would store it: runtimeRef defaults filled in, quantities
    as numbers."""
    manifest = copy.deepcopy(manifest)
    ref = manifest.get("spec", {}).get("runtimeRef")
    if ref is not None:
        for k, v in RUNTIME_REF_DEFAULTS.items():
            ref.setdefault(k, v)
    trainer = manifest.get("spec", {}).get("trainer")
    if trainer and "resourcesPerNode" in trainer:
        trainer["resourcesPerNode"] = _quantities(trainer["resourcesPerNode"])
    return manifest


def check_function_command(command, expected_command, trainer):
    """Our CustomTrainer command does what upstream's does, in our own script: ``bash -c``, the
    packages installed from the index, the function called with its arguments as keywords
    under the entrypoint upstream's script ends with."""
    assert command[:2] == ["bash", "-c"] and len(command) == 3, command
    script = command[2]
    for package in trainer.packages_to_install or []:
        assert package in script, f"package {package!r} not installed by {script!r}"
    if trainer.packages_to_install:
        assert f"--index-url {trainer.pip_index_urls[0]}" in script, script
    if trainer.func_args is not None:
        assert f"(**{trainer.func_args!r})" in script, script
    entrypoint = expected_command[2].strip().splitlines()[-1].split()[0]
    assert any(line.startswith(entrypoint + " ") for line in script.splitlines()), \
        f"{entrypoint!r} does not start the function in {script!r}"


# ---------------------------------------------------------------------------------------------
# The in-memory API: upstream's mock handlers' answers, delivered as an API server's


def _wire(value):
    """An upstream API model (or a dict of them) as the JSON an API server sends: camelCase,
    no nulls, times in RFC 3339 UTC."""
    def encode(o):
        if isinstance(o, datetime.datetime):
            return (o if o.tzinfo else o.replace(tzinfo=datetime.timezone.utc)).isoformat() \
                .replace("+00:00", "Z")
        raise TypeError(type(o).__name__)
    data = value.to_dict() if hasattr(value, "to_dict") else value
    return json.loads(json.dumps(data, default=encode))


class _Response:
    def __init__(self, data):
        self.data = json.dumps(data)


def _deserialize(data, klass):
    """What the kubernetes client makes of ``data`` (JSON) for a method returning ``klass``."""
    return kubernetes.client.ApiClient().deserialize(_Response(data), klass)


class _Thread:
    """An ``async_req=True`` call's result: its error comes when the result is read."""

    def __init__(self, produce):
        self.produce = produce

    def get(self, timeout=None):
        return self.produce()


def _call(async_req, produce):
    return _Thread(produce) if async_req else produce()


def _ask(handler, *args, **kwargs):
    """The value upstream's mock handler gives (a thread's value, or the value itself)."""
    result = handler(*args, **kwargs)
    getter = getattr(result, "get", None)
    if getter is not None and isinstance(result, mock.Mock):
        return getter()
    return result


class World:
    """The API server upstream's kubernetes fixture describes, for our client.

    Answers come from upstream's handlers (``get_namespaced_custom_object_response`` …),
    called with the same arguments our client's request carries. Runtimes: upstream gets one by
    name, we list both scopes; a list answers with upstream's list handler's items plus what its
    get handlers give for every runtime name in ``runtime_names`` (the names a case asks for and
    those served TrainJobs refer to); a get that fails (other than 404) fails the list of its
    scope. ``given_runtimes``: {name: a Runtime object a case hands the client}; upstream uses
    the object as it is, ours reads the runtime of that name from the API, so the API's says
    what the object says (its framework label). ``list_faults``: {plural: a thread whose get()
    raises}, as upstream's list_runtimes test injects them. ``trainjob_conditions``: {name:
    conditions} replacing a served TrainJob's.
    """

    def __init__(self):
        self.runtime_names = set()
        self.given_runtimes = {}
        self.list_faults = {}
        self.trainjob_conditions = {}
        self.created, self.deleted = [], []
        self.custom, self.core = _CustomObjects(self), _Core(self)

    def served_trainjob(self, obj):
        ref = ((obj.get("spec") or {}).get("runtimeRef") or {}).get("name")
        if ref:
            self.runtime_names.add(ref)
        name = (obj.get("metadata") or {}).get("name")
        if name in self.trainjob_conditions:
            obj.setdefault("status", {})["conditions"] = self.trainjob_conditions[name]
        return obj

    def runtimes(self, group, version, namespace, plural):
        """The items of a runtime list (namespace None: the cluster's)."""
        if plural in self.list_faults:
            return self.list_faults[plural].get()
        if namespace is None:
            items = _wire(_ask(UPSTREAM_K8S.list_cluster_custom_object, group, version, plural))
        else:
            items = _wire(_ask(UPSTREAM_K8S.list_namespaced_custom_object_response,
                               group, version, namespace, plural))
        items = list((items or {}).get("items") or [])
        have = {i["metadata"]["name"] for i in items}
        for name in sorted(self.runtime_names - have):
            try:
                if namespace is None:
                    item = _ask(UPSTREAM_K8S.get_cluster_custom_object_response,
                                group, version, plural, name)
                else:
                    item = _ask(UPSTREAM_K8S.get_namespaced_custom_object_response,
                                group, version, namespace, plural, name)
            except ApiException as e:
                if e.status == 404:
                    continue
                raise
            if item is not None and not isinstance(item, mock.Mock):
                items.append(_wire(item))
        for item in items:
            given = self.given_runtimes.get(item["metadata"]["name"])
            if given is not None:
                item["metadata"].setdefault("labels", {})[UC.RUNTIME_FRAMEWORK_LABEL] = \
                    given.trainer.framework
        return {"items": items}


class _CustomObjects:
    def __init__(self, world):
        self.world = world

    def list_cluster_custom_object(self, group, version, plural, async_req=False, **kw):
        return _call(async_req, lambda: self.world.runtimes(group, version, None, plural))

    def get_cluster_custom_object(self, group, version, plural, name, async_req=False, **kw):
        return _call(async_req, lambda: _wire(_ask(
            UPSTREAM_K8S.get_cluster_custom_object_response, group, version, plural, name)))

    def list_namespaced_custom_object(self, group, version, namespace, plural,
                                      async_req=False, **kw):
        def produce():
            if plural == UC.TRAINING_RUNTIME_PLURAL:
                return self.world.runtimes(group, version, namespace, plural)
            data = _wire(_ask(UPSTREAM_K8S.list_namespaced_custom_object_response,
                              group, version, namespace, plural))
            for item in data.get("items") or []:
                self.world.served_trainjob(item)
            return data
        return _call(async_req, produce)

    def get_namespaced_custom_object(self, group, version, namespace, plural, name,
                                     async_req=False, **kw):
        def produce():
            data = _wire(_ask(UPSTREAM_K8S.get_namespaced_custom_object_response,
                              group, version, namespace, plural, name))
            return self.world.served_trainjob(data) if plural == UC.TRAINJOB_PLURAL else data
        return _call(async_req, produce)

    def create_namespaced_custom_object(self, group, version, namespace, plural, body,
                                        async_req=False, **kw):
        def produce():
            UPSTREAM_K8S.conditional_error_handler(group, version, namespace, plural, body)
            self.world.created.append((group, version, namespace, plural, copy.deepcopy(body)))
            return body
        return _call(async_req, produce)

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name,
                                        async_req=False, **kw):
        def produce():
            UPSTREAM_K8S.conditional_error_handler(group, version, namespace, plural, name)
            self.world.deleted.append((group, version, namespace, plural, name))
            return {}
        return _call(async_req, produce)


class _Core:
    def __init__(self, world):
        self.world = world

    def list_namespaced_pod(self, namespace, async_req=False, **kw):
        return _call(async_req, lambda: _deserialize(
            _wire(_ask(UPSTREAM_K8S.list_namespaced_pod_response, namespace, **kw)),
            "V1PodList"))

    def read_namespaced_pod_log(self, name, namespace, async_req=False, **kw):
        return _call(async_req, lambda: _ask(UPSTREAM_K8S.mock_read_namespaced_pod_log,
                                             name=name, namespace=namespace, **kw))

    def list_namespaced_event(self, namespace, async_req=False, **kw):
        return _call(async_req, lambda: _deserialize(
            _wire(_ask(UPSTREAM_K8S.mock_list_namespaced_event, namespace=namespace, **kw)),
            "CoreV1EventList"))


class TookTooLong(BaseException):
    """A case ran past its time (not an Exception: no pytest.raises(...) of a case takes it)."""


@pytest.fixture(autouse=True)
def time_limit():
    """60 s a case: a wait that upstream's case expects to end at once (its job is Complete
    from the start) would otherwise sit out wait_for_job_status's default 600 s timeout."""
    def expire(signum, frame):
        raise TookTooLong("the case ran for more than 60 s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def world():
    return World()


@pytest.fixture
def k8s(world):
    """Our TrainerClient on our kubernetes backend, its API the world's; upstream's fixture's
    config (KubernetesBackendConfig, its namespace made explicit)."""
    with mock.patch("kubernetes.config.load_kube_config", return_value=None), \
            mock.patch("kubernetes.client.CustomObjectsApi", return_value=world.custom), \
            mock.patch("kubernetes.client.CoreV1Api", return_value=world.core):
        client = trainctl.TrainerClient(
            backend_config=KubernetesBackendConfig(namespace=UPSTREAM_K8S.DEFAULT_NAMESPACE))
    assert client.backend_name == "kubernetes"
    return client


def outcome(case, call):
    """Runs ``call``; checks it against upstream's case: its expected exception type, or success
    (returns the result)."""
    if case.expected_status == UPSTREAM_K8S.FAILED or case.expected_error is not None:
        with pytest.raises(case.expected_error) as raised:
            call()
        assert type(raised.value) is case.expected_error, \
            f"{type(raised.value).__name__} is not {case.expected_error.__name__}: {raised.value}"
        return None
    return call()


# ---------------------------------------------------------------------------------------------
# api/trainer_client_test.py


@pytest.mark.parametrize("case_id,case", upstream_cases("api", UPSTREAM_API.test_backend_selection))
def test_backend_selection(case_id, case, monkeypatch, tmp_path):
    """The backend a config selects (upstream compares its backend class's name: ours are named
    otherwise, so BACKEND_NAMES maps them). Upstream's test patches loading the kubeconfig, as
    here; without a config ours picks kubernetes only where a kubeconfig exists, so one does."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setattr("kubernetes.config.load_kube_config", lambda *a, **kw: None)
    monkeypatch.setenv("TRAINCTL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("TRAINCTL_BACKEND", raising=False)
    wanted = BACKEND_NAMES[case["expected_backend"]]
    if wanted == "local":
        _need_trainctl()
    config = case["backend_config"]
    client = trainctl.TrainerClient(backend_config=config) if config else trainctl.TrainerClient()
    assert client.backend_name == wanted


# ---------------------------------------------------------------------------------------------
# backends/kubernetes/backend_test.py


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_get_runtime))
def test_get_runtime(case_id, case, k8s, world):
    world.runtime_names.add(case.config["name"])
    runtime = outcome(case, lambda: k8s.get_runtime(**case.config))
    if runtime is not None:
        assert_same(runtime, case.expected_output)


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_list_runtimes))
def test_list_runtimes(case_id, case, k8s, world):
    """Upstream sets a failing thread on a scope's list (``namespace``/``namespace_error``,
    ``cluster_error``); here the world's list of that scope gets the same thread."""
    ns = case.config.get("namespace_error", case.config.get("namespace", "default"))
    if ns in {UPSTREAM_K8S.TIMEOUT, UPSTREAM_K8S.RUNTIME} or isinstance(ns, Exception):
        world.list_faults[UC.TRAINING_RUNTIME_PLURAL] = UPSTREAM_K8S.make_error_thread(ns)
    else:
        k8s.namespace = ns
    if "cluster_error" in case.config:
        world.list_faults[UC.CLUSTER_TRAINING_RUNTIME_PLURAL] = \
            UPSTREAM_K8S.make_error_thread(case.config["cluster_error"])
    runtimes = outcome(case, k8s.list_runtimes)
    if case.expected_error is None:
        assert_same(runtimes, case.expected_output)


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("k8s", UPSTREAM_K8S.test_get_runtime_packages))
def test_get_runtime_packages(case_id, case, k8s, world):
    """Upstream asserts its mock's delete call: here, that the TrainJob made to list the
    packages is gone afterwards (and, for a BuiltinTrainer runtime, that none was made)."""
    world.runtime_names.add(case.config["runtime"].name)
    world.given_runtimes[case.config["runtime"].name] = case.config["runtime"]
    outcome(case, lambda: k8s.get_runtime_packages(**case.config))
    made = [c[4]["metadata"]["name"] for c in world.created]
    if case.expected_error is None:
        assert len(made) == 1 and [d[4] for d in world.deleted] == made, (made, world.deleted)
    else:
        assert made == [] and world.deleted == []


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_train))
def test_train(case_id, case, k8s, world):
    """The TrainJob our train() creates is the one upstream's test expects, as the API server
    stores it; a CustomTrainer's command is checked for what it does (check_function_command),
    each SDK writing its own script."""
    k8s.namespace = case.config.get("namespace", UPSTREAM_K8S.DEFAULT_NAMESPACE)
    runtime_name = case.config.get("runtime", UPSTREAM_K8S.TORCH_RUNTIME)
    world.runtime_names.add(runtime_name)
    trainer = case.config.get("trainer")
    name = outcome(case, lambda: k8s.train(runtime=k8s.get_runtime(runtime_name),
                                           trainer=trainer,
                                           options=case.config.get("options", [])))
    if case.expected_error is not None:
        assert world.created == []
        return
    _check_created(world, name, case.expected_output, trainer)


def _check_created(world, name, expected_output, trainer):
    (group, version, namespace, plural, body), = world.created
    assert (group, version, namespace, plural) == (
        UC.GROUP, UC.VERSION, UPSTREAM_K8S.DEFAULT_NAMESPACE, UC.TRAINJOB_PLURAL)
    expected = expected_output.to_dict()
    expected["metadata"]["name"] = name
    ours, theirs = stored(body), stored(expected)
    if type(trainer).__name__ == "CustomTrainer":
        check_function_command(ours["spec"]["trainer"].pop("command"),
                               theirs["spec"]["trainer"].pop("command"), trainer)
    assert ours == theirs


def hello_world(**kwargs):
    print("Hello World")


def _lambda_cases():
    return [pytest.param(*p.values, id=p.id)
            for p in upstream_cases("k8s", UPSTREAM_K8S.test_train)
            if getattr(p.values[1].config.get("trainer"), "func", None) is not None
            and p.values[1].config["trainer"].func.__name__ == "<lambda>"]


@pytest.mark.parametrize("case_id,case", _lambda_cases())
def test_train_named_function(case_id, case, k8s, world):
    """Upstream's CustomTrainer cases, their lambda replaced by a named function of the same
    body (ours refuses lambdas, DIFFERENCES): the rest of each case holds, its error included
    (a runtime that takes no CustomTrainer)."""
    runtime_name = case.config.get("runtime", UPSTREAM_K8S.TORCH_RUNTIME)
    world.runtime_names.add(runtime_name)
    trainer = dataclasses.replace(case.config["trainer"], func=hello_world)
    name = outcome(case, lambda: k8s.train(runtime=k8s.get_runtime(runtime_name),
                                           trainer=trainer))
    if case.expected_error is not None:
        assert world.created == []
        return
    _check_created(world, name, case.expected_output, trainer)


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_get_job))
def test_get_job(case_id, case, k8s):
    job = outcome(case, lambda: k8s.get_job(**case.config))
    if job is not None:
        assert_same(job, case.expected_output)


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_list_jobs))
def test_list_jobs(case_id, case, k8s):
    k8s.namespace = case.config.get("namespace", UPSTREAM_K8S.DEFAULT_NAMESPACE)
    jobs = outcome(case, k8s.list_jobs)
    if jobs is not None:
        assert_same(jobs, case.expected_output)


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_get_job_logs))
def test_get_job_logs(case_id, case, k8s):
    k8s.namespace = case.config.get("namespace", UPSTREAM_K8S.DEFAULT_NAMESPACE)
    logs = outcome(case, lambda: list(k8s.get_job_logs(case.config.get("name"))))
    if logs is not None:
        assert logs == case.expected_output


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("k8s", UPSTREAM_K8S.test_wait_for_job_status))
def test_wait_for_job_status(case_id, case, k8s, world):
    """Upstream's test wraps get_job so that the job named ``failed-job`` reads as Failed: here
    that TrainJob carries a Failed condition."""
    world.trainjob_conditions["failed-job"] = [
        {"type": UC.TRAINJOB_FAILED, "status": "True", "reason": "Failed", "message": "failed",
         "lastTransitionTime": "2025-06-01T10:31:00Z"}]
    job = outcome(case, lambda: k8s.wait_for_job_status(**case.config))
    if job is not None:
        assert job.status in case.config.get("status", {UC.TRAINJOB_COMPLETE})


@pytest.mark.parametrize("case_id,case", upstream_cases("k8s", UPSTREAM_K8S.test_delete_job))
def test_delete_job(case_id, case, k8s, world):
    k8s.namespace = case.config.get("namespace", UPSTREAM_K8S.DEFAULT_NAMESPACE)
    outcome(case, lambda: k8s.delete_job(case.config.get("name")))
    if case.expected_error is None:
        assert [d[4] for d in world.deleted] == [case.config.get("name")]


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("k8s", UPSTREAM_K8S.test_get_job_events))
def test_get_job_events(case_id, case, k8s):
    k8s.namespace = case.config.get("namespace", UPSTREAM_K8S.DEFAULT_NAMESPACE)
    events = outcome(case, lambda: k8s.get_job_events(case.config.get("name")))
    if events is not None:
        assert_same(events, case.expected_output)


# ---------------------------------------------------------------------------------------------
# backends/localprocess/backend_test.py, against our local backend (the trainctl binary)


def _need_trainctl():
    try:
        return local_backend_module.find_trainctl()
    except RuntimeError as e:
        pytest.skip(f"the local backend needs the trainctl binary: {e}")


@pytest.fixture
def local():
    _need_trainctl()
    with tempfile.TemporaryDirectory(prefix="trainctl-upstream-unit-") as state:
        client = trainctl.TrainerClient(backend="local", state_dir=state)
        yield client
        for job in client.list_jobs():
            client.delete_job(job.name)


@pytest.fixture
def nothing_starts():
    """Upstream patches LocalJob.start so that train() starts nothing; ours: the local backend's
    create_job records the TrainJob instead of handing it to the runner."""
    created = []
    with mock.patch.object(local_backend_module.LocalBackend, "create_job",
                           lambda self, body, *a, **kw: created.append(body)):
        yield created


def _is_runtime(value):
    return {f.name for f in dataclasses.fields(UT.Runtime)} <= set(vars(value))


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("local", UPSTREAM_LOCAL.test_list_runtimes))
def test_local_list_runtimes(case_id, case, local):
    runtimes = local.list_runtimes()
    assert len(runtimes) > 0 and all(_is_runtime(r) for r in runtimes)


@pytest.mark.parametrize("case_id,case", upstream_cases("local", UPSTREAM_LOCAL.test_get_runtime))
def test_local_get_runtime(case_id, case, local):
    runtime = outcome(case, lambda: local.get_runtime(case.config["runtime_name"]))
    if case.expected_error is None:
        assert runtime.name == case.config["runtime_name"]


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("local", UPSTREAM_LOCAL.test_get_runtime_packages))
def test_local_get_runtime_packages(case_id, case, local):
    packages = outcome(case, lambda: local.get_runtime_packages(case.config["runtime"]))
    if case.expected_error is None:
        assert isinstance(packages, list)


_LOCAL_TRAIN_MOCK_COUPLED = ("train with basic custom trainer - no options",
                             "train with custom trainer and environment variables")


@pytest.mark.parametrize("case_id,case", [
    p for p in upstream_cases("local", UPSTREAM_LOCAL.test_train)
    if p.values[1].name not in _LOCAL_TRAIN_MOCK_COUPLED])
def test_local_train_refuses(case_id, case, local, nothing_starts):
    """Upstream's failing train() cases, the message part included; its two succeeding ones
    assert calls on its patched helpers only (docs/sdk.md)."""
    with pytest.raises(case.expected_error) as raised:
        local.train(runtime=case.config.get("runtime"), trainer=case.config.get("trainer"),
                    options=case.config.get("options", []))
    if "rejects kubernetes" in case.name:
        assert "not compatible with" in str(raised.value)
    assert nothing_starts == []


@pytest.mark.parametrize("case_id,case", upstream_cases("local", UPSTREAM_LOCAL.test_get_job))
def test_local_get_job(case_id, case, local):
    outcome(case, lambda: local.get_job(case.config["job_name"]))


@pytest.mark.parametrize("case_id,case", upstream_cases("local", UPSTREAM_LOCAL.test_list_jobs))
def test_local_list_jobs(case_id, case, local):
    assert isinstance(local.list_jobs(runtime=case.config.get("runtime")), list)


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("local", UPSTREAM_LOCAL.test_get_job_logs))
def test_local_get_job_logs(case_id, case, local):
    outcome(case, lambda: list(local.get_job_logs(case.config["job_name"],
                                                  step=case.config.get("step", "train"))))


@pytest.mark.parametrize("case_id,case",
                         upstream_cases("local", UPSTREAM_LOCAL.test_wait_for_job_status))
def test_local_wait_for_job_status(case_id, case, local):
    outcome(case, lambda: local.wait_for_job_status(**case.config))


@pytest.mark.parametrize("case_id,case", upstream_cases("local", UPSTREAM_LOCAL.test_delete_job))
def test_local_delete_job(case_id, case, local):
    outcome(case, lambda: local.delete_job(case.config["job_name"]))


def test_local_name_option_sets_job_name(local, nothing_starts):
    """Upstream's test_name_option_sets_job_name: its Name option (read from its module's
    imports) names the job."""
    name_option = UPSTREAM_LOCAL.Name
    runtime = local.get_runtime(UPSTREAM_LOCAL.TORCH_RUNTIME)
    name = local.train(runtime=runtime, trainer=UT.CustomTrainer(func=hello_world),
                       options=[name_option(name="my-custom-job-name")])
    assert name == "my-custom-job-name"
    assert [b["metadata"]["name"] for b in nothing_starts] == [name]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v", "-p", "no:cacheprovider", "-rxXs"] + sys.argv[1:]))
