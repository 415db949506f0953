"""What the chaos soak (bench/soak.py) records and how it judges it: a gapless history of pods,
services and kubeflow.org jobs read from etcd's own watch, and the invariants computed from it.

Recording goes to etcd, not to the API server, because the soak restarts the API server and
expires its watches on purpose: an API watch would lose events across those faults, an etcd
watch (on the same revision numbers) does not. Values are decoded only as far as needed: a
pod's phase from the API server's protobuf encoding, a job's status from its JSON.

Nothing here starts or kills anything; soak.py does that."""
import base64
import http.client
import json
import threading
import urllib.parse


# ---------------------------------------------------------------------------------------------
# etcd's JSON gateway (/v3/kv/range, /v3/watch, /v3/kv/compaction).

def _b64(text):
    return base64.b64encode(text.encode()).decode()


def _prefix_end(prefix):
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class Etcd:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port

    def _post(self, path, body, timeout=30):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"etcd {path}: HTTP {resp.status}: {data[:200]!r}")
            return json.loads(data)
        finally:
            conn.close()

    def revision(self):
        out = self._post("/v3/kv/range", {"key": _b64("/registry/namespaces/default"), "keys_only": True})
        return int(out["header"]["revision"])

    def compact(self, revision):
        """Drops history before `revision`: API watches older than it can only end with 410 Gone."""
        try:
            self._post("/v3/kv/compaction", {"revision": str(revision), "physical": True}, timeout=120)
        except RuntimeError as e:
            if "required revision has been compacted" not in str(e):  # nothing written since
                raise


class EtcdWatch(threading.Thread):
    """Streams every change under `prefix` from `start_revision` into `sink(event)`, where event
    is (revision, type, key, create_revision, value bytes or None). A cancelled watch (compacted
    before it caught up) is recorded in `gaps`: the history is then incomplete."""

    def __init__(self, etcd, prefix, start_revision, sink):
        super().__init__(daemon=True)
        self.etcd, self.prefix, self.start_revision, self.sink = etcd, prefix, start_revision, sink
        self.gaps = []
        self.error = None
        self._conn = None
        self.ready = threading.Event()

    def run(self):
        body = {"create_request": {"key": _b64(self.prefix), "range_end": _b64(_prefix_end(self.prefix)),
                                   "start_revision": str(self.start_revision)}}
        try:
            self._conn = http.client.HTTPConnection(self.etcd.host, self.etcd.port, timeout=None)
            self._conn.request("POST", "/v3/watch", json.dumps(body), {"Content-Type": "application/json"})
            resp = self._conn.getresponse()
            decoder = json.JSONDecoder()
            buf = ""
            while True:
                chunk = resp.read1(1 << 16)
                if not chunk:
                    break
                buf += chunk.decode()
                while True:
                    buf = buf.lstrip()
                    if not buf:
                        break
                    try:
                        msg, end = decoder.raw_decode(buf)
                    except ValueError:
                        break
                    buf = buf[end:]
                    self._handle(msg.get("result", {}))
        except Exception as e:  # the stream is closed by stop(), or etcd went away
            if self._conn is not None:
                self.error = repr(e)
        finally:
            self.ready.set()

    def _handle(self, result):
        if result.get("created"):
            self.ready.set()
        if result.get("canceled"):
            self.gaps.append(result.get("compact_revision") or result.get("cancel_reason") or "canceled")
        for ev in result.get("events", []):
            kv = ev["kv"]
            key = base64.b64decode(kv["key"]).decode()
            value = base64.b64decode(kv["value"]) if "value" in kv else None
            self.sink((int(kv["mod_revision"]), ev.get("type", "PUT"), key, int(kv.get("create_revision", 0)), value))

    def stop(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.sock.shutdown(2)
            except Exception:
                pass
            conn.close()


# ---------------------------------------------------------------------------------------------
# Decoding what the API server stored.

def _varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(data):
    """(field number, wire type, value) of one protobuf message; bytes for length-delimited."""
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {wire}")
        yield number, wire, value


def _field(data, number):
    for n, wire, value in _fields(data):
        if n == number and wire == 2:
            return value
    return None


def pod_phase(value):
    """status.phase of a Pod as the API server stores it (k8s protobuf envelope), '' if unset,
    with " (terminating)" appended once it has a deletionTimestamp."""
    if value is None:
        return ""
    if value.startswith(b"k8s\x00"):
        raw = _field(value[4:], 2) or b""  # runtime.Unknown.raw: the Pod message
        meta = _field(raw, 1) or b""  # Pod.metadata
        status = _field(raw, 3) or b""  # Pod.status
        phase = (_field(status, 1) or b"").decode()  # PodStatus.phase
        terminating = _field(meta, 9) is not None  # ObjectMeta.deletionTimestamp
    else:  # a JSON-storing API server
        pod = json.loads(value)
        phase = pod.get("status", {}).get("phase", "")
        terminating = "deletionTimestamp" in pod.get("metadata", {})
    return phase + (" (terminating)" if terminating else "")


ATTEMPT_LABEL = "trainctl.dev/restart-attempt"


def pod_label(value, key):
    """metadata.labels[key] of a Pod as the API server stores it; None when absent."""
    if value is None:
        return None
    if value.startswith(b"k8s\x00"):
        raw = _field(value[4:], 2) or b""
        meta = _field(raw, 1) or b""
        for number, wire, entry in _fields(meta):
            if number == 11 and wire == 2 and (_field(entry, 1) or b"").decode() == key:  # labels
                return (_field(entry, 2) or b"").decode()
        return None
    return json.loads(value).get("metadata", {}).get("labels", {}).get(key)


def job_status(value):
    return json.loads(value).get("status", {}) if value else {}


def true_conditions(status):
    return {c["type"] for c in status.get("conditions", []) or [] if c.get("status") == "True"}


def total_restarts(status):
    return sum(int(rs.get("restarts", 0) or 0) for rs in (status.get("replicaStatuses") or {}).values())


# ---------------------------------------------------------------------------------------------
# The history and the invariants.

class History:
    """Every recorded change, by key, in revision order. Thread-safe appends."""

    def __init__(self, namespace):
        self.ns = namespace
        self.lock = threading.Lock()
        self.pods, self.services, self.jobs = {}, {}, {}  # name or (plural, name) → [events]
        self.trainjobs, self.jobsets = {}, {}  # name → [events]

    def sink(self, event):
        rev, typ, key, create_rev, value = event
        parts = key.split("/")
        with self.lock:
            if key.startswith(f"/registry/pods/{self.ns}/"):
                self.pods.setdefault(parts[-1], []).append(
                    (rev, typ, create_rev, pod_phase(value), pod_label(value, ATTEMPT_LABEL)))
            elif key.startswith(f"/registry/services/specs/{self.ns}/"):
                self.services.setdefault(parts[-1], []).append((rev, typ, create_rev))
            elif key.startswith("/registry/kubeflow.org/") and parts[-2] == self.ns:
                self.jobs.setdefault((parts[-3], parts[-1]), []).append(
                    (rev, typ, create_rev, job_status(value) if typ == "PUT" else None))
            elif key.startswith(f"/registry/trainer.kubeflow.org/trainjobs/{self.ns}/"):
                self.trainjobs.setdefault(parts[-1], []).append((rev, typ, create_rev))
            elif key.startswith(f"/registry/jobset.x-k8s.io/jobsets/{self.ns}/"):
                self.jobsets.setdefault(parts[-1], []).append((rev, typ, create_rev))


def incarnations(events):
    """[(create_revision, last phase seen, deleted at revision or None, deletion asked at
    revision or None)] of one pod name. The deletion is asked (the deleter's call: the pod gets a
    deletionTimestamp, its phase " (terminating)") before the pod is gone (the kubelet, or kwok,
    removes it): its DELETE can come after the deleter was killed."""
    out = {}
    for rev, typ, create_rev, *rest in sorted(events, key=lambda e: e[0]):
        if typ == "PUT":
            phase = rest[0] if rest else ""
            cur = out.setdefault(create_rev, [create_rev, "", None, None])
            cur[1] = phase or cur[1]
            if phase.endswith("(terminating)") and cur[3] is None:
                cur[3] = rev
        elif out:
            last = max(out)
            out[last][2] = rev
    return [tuple(v) for _, v in sorted(out.items())]


def unwarranted_creations(pod_events, allowed_extra):
    """Pod creations that replaced an incarnation which had not failed, or beyond
    `allowed_extra[name]` replacements: [(pod, why)]."""
    bad = []
    for name, events in sorted(pod_events.items()):
        inc = incarnations(events)
        for prev, cur in zip(inc, inc[1:]):
            if not prev[1].startswith("Failed"):
                bad.append((name, f"created again at revision {cur[0]} after an incarnation that was "
                                  f"{prev[1] or 'never started'}"))
        if len(inc) - 1 > allowed_extra.get(name, 0):
            bad.append((name, f"{len(inc)} incarnations, at most {allowed_extra.get(name, 0) + 1} expected"))
    return bad


def restart_counts(job_events):
    """{job name: [(revision, restarts in its status)]} of every status PUT, by revision."""
    return {name: sorted((rev, total_restarts(status))
                         for rev, typ, _, status in events if typ == "PUT")
            for (_, name), events in job_events.items()}


def restarts_lost_to_kills(pod_events, job_events, owners, kills):
    """Retries whose count an operator SIGKILL lost. The operator deletes a failed pod, then
    writes the job's restart count, then creates the replacement; a kill between the delete and
    the count leaves the count unwritten, and the next operator, finding no failed pod, runs one
    incarnation more than backoffLimit allows (a known limit: docs/reliability.md). `kills`:
    (etcd revision read before, revision read after) of each kill. Counted when the deletion of
    a failed incarnation was asked before a kill ended (the pod itself may be gone only after
    the kill), its replacement was created only after that kill, and the job's restart count
    did not go up in between. {pod name: lost retries}."""
    restarts_by_job = restart_counts(job_events)

    def restarts_at(history, rev):
        value = 0
        for r, n in history:
            if r > rev:
                break
            value = n
        return value

    lost = {}
    for pod, events in pod_events.items():
        history = restarts_by_job.get(owners.get(pod), [])
        inc = incarnations(events)
        for (_, phase, deleted, asked), (created, *_) in zip(inc, inc[1:]):
            if deleted is None or not phase.startswith("Failed"):
                continue
            asked = deleted if asked is None else asked
            ended = [after for _, after in kills if after >= asked]
            if ended and created > min(ended) and \
                    restarts_at(history, created - 1) == restarts_at(history, asked):
                lost[pod] = lost.get(pod, 0) + 1
    return lost


def attempt_overlaps(pod_events, owners, gang_jobs):
    """Pods of a Gang job created while a pod of an earlier attempt of the same job still
    existed (issue #38: attempts never overlap): [(pod, why)]. Pod events carry the attempt
    label as their fifth element."""
    timeline = {}
    for pod, events in pod_events.items():
        job = owners.get(pod)
        if job not in gang_jobs:
            continue
        attempts = {}
        for rev, typ, create_rev, *rest in sorted(events, key=lambda e: e[0]):
            if typ == "PUT" and create_rev not in attempts:
                attempts[create_rev] = int((rest[1] if len(rest) > 1 else None) or 0)
                timeline.setdefault(job, []).append((rev, 1, pod, create_rev, attempts[create_rev]))
            elif typ == "DELETE" and attempts:
                timeline.setdefault(job, []).append((rev, 0, pod, max(attempts), None))
    bad = []
    for job, items in sorted(timeline.items()):
        alive = {}
        for rev, created, pod, create_rev, attempt in sorted(items, key=lambda x: (x[0], x[1])):
            if not created:
                alive.pop((pod, create_rev), None)
                continue
            earlier = sorted(f"{p} (attempt {a})" for (p, _), a in alive.items() if a < attempt)
            if earlier:
                bad.append((pod, f"attempt {attempt} created at revision {rev} while "
                                 f"{', '.join(earlier)} existed"))
            alive[(pod, create_rev)] = attempt
    return bad


def attempts_per_pod(pod_events):
    """{pod: [attempt label of each incarnation, in order]}."""
    out = {}
    for pod, events in pod_events.items():
        seen = {}
        for rev, typ, create_rev, *rest in sorted(events, key=lambda e: e[0]):
            if typ == "PUT" and create_rev not in seen:
                seen[create_rev] = int((rest[1] if len(rest) > 1 else None) or 0)
        out[pod] = [seen[k] for k in sorted(seen)]
    return out


def duplicate_services(service_events):
    """Names created more than once (services; a TrainJob's JobSets, which the operator makes
    once and never again): [(name, incarnations)]."""
    return [(name, len(incarnations(ev))) for name, ev in sorted(service_events.items())
            if len(incarnations(ev)) > 1]


def created_after_delete(child_events, owners, job_events):
    """Children (pods or services; `owners` maps a child's name to its job's) created after
    their job was deleted."""
    deleted_at = {name: max(e[0] for e in ev if e[1] == "DELETE")
                  for (_, name), ev in job_events.items() if any(e[1] == "DELETE" for e in ev)}
    return [child for child, ev in sorted(child_events.items())
            if owners.get(child) in deleted_at and
            any(typ == "PUT" and create_rev == rev and rev > deleted_at[owners[child]]
                for rev, typ, create_rev, *_ in ev)]


def transitions_after(job_events, after_revision, before_revision):
    """What the operator changed on the jobs between two revisions, as its counters count it:
    created/successful/failed (a condition first True), restarted (restarts going up),
    deleted (the job removed)."""
    counts = {"created": 0, "successful": 0, "failed": 0, "restarted": 0, "deleted": 0}
    for _, events in job_events.items():
        prev = {}
        for rev, typ, _, status in sorted(events, key=lambda e: e[0]):
            if typ == "DELETE":
                if after_revision < rev < before_revision:
                    counts["deleted"] += 1
                prev = {}
                continue
            if after_revision < rev < before_revision:
                before, now = true_conditions(prev), true_conditions(status)
                counts["created"] += "Created" in now and "Created" not in before
                counts["successful"] += "Succeeded" in now and "Succeeded" not in before
                counts["failed"] += "Failed" in now and "Failed" not in before
                counts["restarted"] += max(0, total_restarts(status) - total_restarts(prev))
            prev = status
    return counts
