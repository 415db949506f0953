#!/usr/bin/env python3
"""Chaos soak for `trainctl operator` on the test control plane (bench/soak.sh starts a private
one; `integration.soak` runs the short version on the test suite's).

A few hundred jobs of every kind with mixed outcomes (success, permanent failure, retryable
failure until the backoff limit, active deadline, TTL, suspended then resumed, a Gang job whose
every attempt fails) are submitted
while the operator is SIGKILLed at random moments and restarted, and the API server is killed
after etcd's history was compacted (so every watch resumes into 410 Gone). A last kill ends the
fault window; the operator that starts then runs undisturbed. The report gives each invariant as
a number, from a history recorded by etcd's own watch (gapless across the faults):

  jobs_wrong_terminal_state     jobs whose end differs from what their spec implies
  pods_created_unwarranted      pod creations that replaced an incarnation that had not failed,
                                or beyond the backoff limit's replacements (plus one for each
                                retry whose count a kill lost, reported as
                                retries_lost_to_operator_kills: see soak_history)
  services_created_twice        services created more than once
  children_created_after_delete pods or services created after their job was deleted
  children_left_after_delete    pods, services and JobSets still there CLEANUP_SECONDS (240) after
                                every job was deleted (details.left_after_delete: what holds each)
  gang_attempt_overlaps         pods of a Gang job (trainctl.dev/restart-scope: Gang) created
                                while a pod of an earlier attempt of that job still existed
  gang_restarts_miscounted      Gang jobs (every attempt fails) whose final attempt is not their
                                backoffLimit, or whose pods were not created once per attempt:
                                each gang restart counted exactly once across the kills
  counter_mismatches            the last operator's job counters minus the transitions it made
                                (created, successful, failed, restarted, deleted), per counter
  history_gaps                  etcd watches cancelled before the end (then nothing above holds)
  converge_seconds              from the last fault until every job reached its end

With --trainjobs N (the cluster must run the JobSet controller: bench/soak.sh starts it), N
Trainer v2 TrainJobs of 2 nodes (success, failure, suspended then resumed, active deadline) go
in beside them, and three more invariants are counted:

  trainjobs_wrong_terminal_state  TrainJobs whose end (Complete, Failed) differs from their spec's
  jobsets_created_twice           JobSets made more than once (the operator makes a TrainJob's
                                  once; none is deleted from outside here)
  jobsets_created_after_delete    JobSets made after their TrainJob was deleted

Exit status 0 when every invariant holds, 1 when one does not, 2 on a setup error.
"""
import argparse
import atexit
import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "integration", "operator"))
sys.path.insert(0, HERE)

import soak_history  # noqa: E402
from harness import (CLUSTER_DIR, FOREVER, KIND_INFO, REPO, Operator, get_json, install_crds,  # noqa: E402
                     kubectl, make_job, run_for)

# kind → replica types of a successful job (the last one carries the outcome for failures).
SHAPES = {
    "PyTorchJob": [("Master", 1), ("Worker", 2)],
    "TFJob": [("PS", 1), ("Worker", 2)],
    "XGBoostJob": [("Master", 1), ("Worker", 1)],
    "PaddleJob": [("Worker", 2)],
    "JAXJob": [("Worker", 2)],
    "MXJob": [("Scheduler", 1), ("Server", 1), ("Worker", 1)],
    "MPIJob": [("Launcher", 1), ("Worker", 2)],
}
# Replicas that run until the job ends (PS, MPI workers) and the operator removes them.
LONG_LIVED = {("TFJob", "PS"), ("MPIJob", "Worker")}
# The replica whose non-zero exit fails the job under restartPolicy Never.
FAILS_JOB = {"PyTorchJob": "Master", "XGBoostJob": "Master", "MPIJob": "Launcher", "JAXJob": "Worker",
             "PaddleJob": "Worker", "TFJob": "Worker"}

OUTCOMES = [("succeed", 40), ("fail", 15), ("retry", 15), ("deadline", 10), ("ttl", 10), ("suspend", 10),
            ("gang", 10)]
GANG_BACKOFF_LIMIT = 2


def plan_jobs(n, rng, ns):
    """[(job manifest, expected end, {pod name: allowed replacements})]."""
    kinds = list(SHAPES)
    weights = [w for _, w in OUTCOMES]
    jobs = []
    for i in range(n):
        outcome = rng.choices([o for o, _ in OUTCOMES], weights)[0]
        kind = rng.choice(list(FAILS_JOB) if outcome == "fail" else kinds)
        if outcome in ("retry", "deadline", "gang"):
            kind = "PyTorchJob"
        name = f"{outcome}-{i}"
        secs = rng.randint(1, 5)
        replicas, run_policy, restart = {}, {"cleanPodPolicy": "Running"}, "Never"
        allowed = {}
        if outcome == "retry":
            replicas["Master"] = (1, run_for(secs, exit_code=137))
            run_policy["backoffLimit"] = 2
            restart = "ExitCode"
            allowed[f"{name}-master-0"] = 2
        elif outcome == "gang":  # every attempt's Workers fail: a gang restart each time
            replicas["Master"] = (1, FOREVER)
            replicas["Worker"] = (2, run_for(secs, exit_code=1))
            run_policy["backoffLimit"] = GANG_BACKOFF_LIMIT
            restart = "OnFailure"
        elif outcome == "deadline":
            replicas["Master"] = (1, FOREVER)
            run_policy["activeDeadlineSeconds"] = rng.randint(5, 15)
        else:
            for rtype, count in SHAPES[kind]:
                ann = FOREVER if (kind, rtype) in LONG_LIVED else run_for(secs)
                if outcome == "fail" and rtype == FAILS_JOB[kind]:
                    ann = run_for(secs, exit_code=1)
                replicas[rtype] = (count, ann)
        if outcome == "ttl":
            run_policy["ttlSecondsAfterFinished"] = 2
        if outcome == "suspend":
            run_policy["suspend"] = True
        job = make_job(kind, name, ns, replicas, run_policy=run_policy, restart_policy=restart)
        if outcome == "gang":
            job["metadata"].setdefault("annotations", {})["trainctl.dev/restart-scope"] = "Gang"
        expected = {"succeed": "Succeeded", "suspend": "Succeeded", "ttl": "Deleted"}.get(outcome, "Failed")
        jobs.append((job, expected, allowed))
    return jobs


TRAINJOB_OUTCOMES = [("succeed", 50), ("fail", 20), ("suspend", 15), ("deadline", 15)]


def soak_runtimes(ns):
    """The TrainingRuntimes the soak's TrainJobs run on: nodes that kwok runs 3 s and ends with
    0 (soak-ok) or 1 (soak-fail, no retry), or runs until they are stopped (soak-forever)."""
    out = []
    for name, ann in (("soak-ok", run_for(3)), ("soak-fail", run_for(2, exit_code=1)),
                      ("soak-forever", FOREVER)):
        # kwok plays a pod's run and end only for pods with this label (hack/cluster/kwok).
        node = {"template": {"metadata": {"annotations": dict(ann),
                                          "labels": {"training.kubeflow.org/job-name": "trainjob"}},
                             "spec": {"restartPolicy": "Never", "containers": [
                                 {"name": "node", "image": "example.invalid/torch:1",
                                  "command": ["torchrun"]}]}}}
        if name == "soak-fail":
            node["backoffLimit"] = 0
        out.append({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
                    "metadata": {"name": name, "namespace": ns,
                                 "labels": {"trainer.kubeflow.org/framework": "torch"}},
                    "spec": {"mlPolicy": {"numNodes": 2, "torch": {}}, "template": {"spec": {
                        "replicatedJobs": [{"name": "node", "template": {
                            "metadata": {"labels": {
                                "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                            "spec": node}}]}}}})
    return out


def plan_trainjobs(n, rng, ns):
    """[(TrainJob manifest, expected end)]."""
    out = []
    for i in range(n):
        outcome = rng.choices([o for o, _ in TRAINJOB_OUTCOMES], [w for _, w in TRAINJOB_OUTCOMES])[0]
        runtime = {"fail": "soak-fail", "deadline": "soak-forever"}.get(outcome, "soak-ok")
        spec = {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime"}, "trainer": {"numNodes": 2}}
        if outcome == "suspend":
            spec["suspend"] = True
        if outcome == "deadline":
            spec["activeDeadlineSeconds"] = rng.randint(5, 15)
        out.append(({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                     "metadata": {"name": f"tj-{outcome}-{i}", "namespace": ns}, "spec": spec},
                    "Failed" if outcome in ("fail", "deadline") else "Complete"))
    return out


# The garbage collector's time to remove every child once the jobs are deleted. Generous: in CI,
# beside the sanitized build, one child was still there at 120 s (2026-11-30); which one and what
# held it is in the report's details.
CLEANUP_SECONDS = 240

def describe_left(kind, obj):
    """One line for a child still there after its job's deletion: what holds it."""
    meta, status = obj.get("metadata", {}), obj.get("status", {})
    owners = ",".join(f"{o.get('kind')}/{o.get('name')}" for o in meta.get("ownerReferences", []))
    return (f"{kind}/{meta.get('name')} owners={owners or '-'} "
            f"deleting={meta.get('deletionTimestamp') or '-'} "
            f"finalizers={','.join(meta.get('finalizers', [])) or '-'} "
            f"phase={status.get('phase', '-')} node={obj.get('spec', {}).get('nodeName', '-')}")


def trainjob_end(trainjob):
    if trainjob is None:
        return "Deleted"
    conds = soak_history.true_conditions(trainjob.get("status", {}))
    for c in ("Complete", "Failed", "Suspended"):
        if c in conds:
            return c
    return "Running"


def pod_names(job):
    field = KIND_INFO[job["kind"]][1]
    return [f"{job['metadata']['name']}-{rtype.lower()}-{i}"
            for rtype, spec in job["spec"][field].items() for i in range(spec["replicas"])]


def list_jobs(ns):
    out = {}
    for kind, info in KIND_INFO.items():
        items = (get_json(info[0], "-n", ns) or {}).get("items", [])
        for j in items:
            out[j["metadata"]["name"]] = j
    return out


def end_of(job):
    if job is None:
        return "Deleted"
    conds = soak_history.true_conditions(job.get("status", {}))
    for c in ("Succeeded", "Failed"):
        if c in conds:
            return c
    return "Suspended" if "Suspended" in conds else "Running" if "Running" in conds else "Pending"


def kill_apiserver_after_compaction(etcd):
    """Compacts etcd at the current revision, then kills the API server and starts it again:
    every watch resumes from a revision that is gone and gets 410."""
    etcd.compact(etcd.revision())
    # kwok (the stand-in for every kubelet) goes with it: kwok v0.8 does not resume its pod watch
    # after an API server restart and would leave pods unplayed for minutes, where a kubelet
    # reconnects by itself.
    pids = " ".join(f'$(cat "{os.path.join(CLUSTER_DIR, "run", c + ".pid")}")' for c in ("kube-apiserver", "kwok"))
    # up.sh finds the cluster by its state folder and port base (etcd listens on base + 79).
    env = dict(os.environ, TRAINCTL_CLUSTER_DIR=CLUSTER_DIR, TRAINCTL_PORT_BASE=str(etcd.port - 79))
    subprocess.run(["bash", "-c", f"kill -9 {pids}; while kill -0 {pids} 2>/dev/null; do sleep 0.1; done; "
                    f'"{REPO}/hack/cluster/up.sh" -q'], check=True, timeout=300, env=env)


def scrape_counters(op, ns):
    names = {"created": "training_operator_jobs_created_total",
             "successful": "training_operator_jobs_successful_total",
             "failed": "training_operator_jobs_failed_total",
             "restarted": "training_operator_jobs_restarted_total",
             "deleted": "training_operator_jobs_deleted_total"}
    text = op.metrics()
    out = {k: 0 for k in names}
    relists = 0.0
    for line in text.splitlines():
        for k, metric in names.items():
            if line.startswith(metric + "{") and f'job_namespace="{ns}"' in line:
                out[k] += int(float(line.split()[-1]))
        if line.startswith("trainctl_watch_relists_after_gone_total "):
            relists = float(line.split()[-1])
    return out, int(relists)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--kills", type=int, default=40, help="operator SIGKILLs, the last one ends the faults")
    p.add_argument("--apiserver-restarts", type=int, default=3)
    p.add_argument("--window", type=float, default=240, help="seconds of faults")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trainjobs", type=int, default=0,
                   help="Trainer v2 TrainJobs beside the v1 jobs (needs the JobSet controller)")
    p.add_argument("--converge-timeout", type=float, default=300)
    p.add_argument("--report", help="also write the report here (JSON)")
    p.add_argument("--operator-args", default="--controller-threads 4 --kube-api-qps 100 --kube-api-burst 200")
    a = p.parse_args()
    rng = random.Random(a.seed)

    env = {}
    try:
        with open(os.path.join(CLUSTER_DIR, "env")) as f:
            for line in f:
                if line.startswith("export TRAINCTL_ETCD_URL="):
                    env["etcd"] = line.split("=", 1)[1].strip().strip("'")
    except OSError as e:
        print(f"soak: {e.filename}: {e.strerror} (TRAINCTL_CLUSTER_DIR must name a started test cluster: "
              "hack/cluster/up.sh, or use bench/soak.sh)", file=sys.stderr)
        return 2
    if "etcd" not in env:
        print(f"soak: no TRAINCTL_ETCD_URL in {CLUSTER_DIR}/env (is the cluster up?)", file=sys.stderr)
        return 2
    etcd = soak_history.Etcd(env["etcd"])
    install_crds()
    ns = "soak-" + uuid.uuid4().hex[:6]
    kubectl("create", "namespace", ns)
    history = soak_history.History(ns)
    start_rev = etcd.revision() + 1
    prefixes = ["/registry/pods/", "/registry/services/specs/", "/registry/kubeflow.org/"]
    if a.trainjobs:
        prefixes += ["/registry/trainer.kubeflow.org/trainjobs/", "/registry/jobset.x-k8s.io/jobsets/"]
        for runtime in soak_runtimes(ns):
            kubectl("apply", "--server-side", "-f", "-", input=json.dumps(runtime))
    watches = [soak_history.EtcdWatch(etcd, prefix, start_rev, history.sink) for prefix in prefixes]
    for w in watches:
        w.start()
        w.ready.wait(10)

    plan = plan_jobs(a.jobs, rng, ns)
    tj_plan = plan_trainjobs(a.trainjobs, rng, ns)
    tj_expected = {tj["metadata"]["name"]: e for tj, e in tj_plan}
    expected = {j["metadata"]["name"]: e for j, e, _ in plan}
    allowed = {}
    for _, _, al in plan:
        allowed.update(al)
    suspended = [j["metadata"]["name"] for j, _, _ in plan if j["spec"]["runPolicy"].get("suspend")]
    kinds_of = {j["metadata"]["name"]: j["kind"] for j, _, _ in plan}
    gang = {j["metadata"]["name"] for j, _, _ in plan
            if j["metadata"].get("annotations", {}).get("trainctl.dev/restart-scope") == "Gang"}

    # The timeline: submissions over the first 60 % of the window in batches, resumes in the
    # second half, kills and API server restarts anywhere in it, the last kill at its end.
    t0 = time.monotonic()
    actions = []
    batch = max(1, a.jobs // 20)
    # The last batch goes to the operator that starts after the last fault, so that its counters
    # have transitions to match.
    submitted_at = {}
    starts = list(range(0, a.jobs, batch))
    for k in starts:
        at = a.window * 0.6 * k / a.jobs if k != starts[-1] or len(starts) == 1 else a.window + 0.5
        actions.append((at, "submit", [j for j, _, _ in plan[k:k + batch]]))
        for j, _, _ in plan[k:k + batch]:
            submitted_at[j["metadata"]["name"]] = at
    for name in suspended:  # resumed 2 s or more after it was submitted
        at = submitted_at[name] + 2
        actions.append((at + rng.uniform(0, max(0.0, a.window * 0.95 - at)), "resume", name))
    # TrainJobs in batches over the same 60 %; the suspended ones resumed later.
    tj_batch = max(1, a.trainjobs // 10)
    for k in range(0, a.trainjobs, tj_batch):
        at = a.window * 0.6 * k / a.trainjobs
        chunk = [tj for tj, _ in tj_plan[k:k + tj_batch]]
        actions.append((at, "submit-trainjobs", chunk))
        for tj in chunk:
            if tj["spec"].get("suspend"):
                resume_at = at + 2 + rng.uniform(0, max(0.0, a.window * 0.95 - at - 2))
                actions.append((resume_at, "resume-trainjob", tj["metadata"]["name"]))
    for _ in range(max(0, a.kills - 1)):
        actions.append((rng.uniform(0.02, 0.98) * a.window, "kill", None))
    for _ in range(a.apiserver_restarts):
        actions.append((rng.uniform(0.1, 0.9) * a.window, "apiserver", None))
    actions.append((a.window, "kill", None))
    actions.sort(key=lambda x: x[0])

    op = Operator(ns, *a.operator_args.split())
    op.log_path = os.path.join(CLUSTER_DIR, f"soak-operator-{ns}.log")
    atexit.register(op.kill)  # nothing left running when the soak itself fails
    op.start()
    faults = {"operator_kills": 0, "apiserver_restarts": 0}
    print(f"soak: namespace {ns}, {a.jobs} jobs, {a.kills} operator kills, "
          f"{a.apiserver_restarts} API server restarts over {a.window:.0f} s", flush=True)
    action_errors = []
    state = {"last_fault": None, "final_start_rev": None}

    def act(what, arg):
        if what == "submit":
            kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": arg}))
        elif what == "submit-trainjobs":
            kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": arg}))
        elif what == "resume-trainjob":
            kubectl("patch", "trainjobs.trainer.kubeflow.org", arg, "-n", ns, "--type=merge",
                    "-p", '{"spec":{"suspend":false}}')
        elif what == "resume":
            kubectl("patch", KIND_INFO[kinds_of[arg]][0], arg, "-n", ns, "--type=merge",
                    "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
        elif what == "apiserver":
            kill_apiserver_after_compaction(etcd)
            faults["apiserver_restarts"] += 1
            state["last_fault"] = time.monotonic()
        elif what == "kill":
            counters, relists = scrape_counters(op, ns)
            state["relists"] = state.get("relists", 0) + relists
            before = etcd.revision()
            op.kill()
            state.setdefault("kills", []).append((before, etcd.revision()))
            faults["operator_kills"] += 1
            time.sleep(rng.uniform(0.2, 2.0))
            state["last_fault"] = time.monotonic()
            state["final_start_rev"] = etcd.revision()
            op.start()

    for at, what, arg in actions:
        delay = at - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        try:
            act(what, arg)
        except Exception as e:  # a failed action is a finding, not the end of the run
            action_errors.append(f"{time.monotonic() - t0:.1f} s {what}: {e}")
        print(f"soak: {time.monotonic() - t0:6.1f} s {what}", flush=True)
    last_fault, final_start_rev = state["last_fault"], state["final_start_rev"]
    relists_seen = state.get("relists", 0)

    # The last operator runs undisturbed until every job reached its end.
    deadline = time.monotonic() + a.converge_timeout
    ends = {}
    tj_ends = {}
    while time.monotonic() < deadline:
        current = list_jobs(ns)
        ends = {name: end_of(current.get(name)) for name in expected}
        if tj_expected:
            items = (get_json("trainjobs.trainer.kubeflow.org", "-n", ns) or {}).get("items", [])
            by_name = {t["metadata"]["name"]: t for t in items}
            tj_ends = {name: trainjob_end(by_name.get(name)) for name in tj_expected}
        if (all(ends[n] == e for n, e in expected.items()) and
                all(tj_ends[n] == e for n, e in tj_expected.items())):
            break
        time.sleep(1)
    converge_s = time.monotonic() - last_fault
    final_attempts = {name: (current.get(name) or {}).get("metadata", {}).get("annotations", {}).get(
        "trainctl.dev/restart-attempt") for name in gang}
    wrong = {n: (ends.get(n), e) for n, e in expected.items() if ends.get(n) != e}
    tj_wrong = {n: (tj_ends.get(n), e) for n, e in tj_expected.items() if tj_ends.get(n) != e}
    time.sleep(2)  # the last status writes' events reach the history
    end_rev = etcd.revision() + 1
    counters, relists = scrape_counters(op, ns)
    relists_seen += relists

    # Delete every job; the garbage collector removes the children, the operator creates none.
    for kind, info in KIND_INFO.items():
        kubectl("delete", info[0], "--all", "-n", ns, "--wait=false", check=False)
    if tj_expected:
        kubectl("delete", "trainjobs.trainer.kubeflow.org", "--all", "-n", ns, "--wait=false", check=False)
    t_del = time.monotonic()
    left, left_items = None, []
    while time.monotonic() - t_del < CLEANUP_SECONDS:
        pods = (get_json("pods", "-n", ns) or {}).get("items", [])
        services = (get_json("services", "-n", ns) or {}).get("items", [])
        jobsets = ((get_json("jobsets.jobset.x-k8s.io", "-n", ns) or {}).get("items", [])
                   if tj_expected else [])
        left = len(pods) + len(services) + len(jobsets)
        left_items = [describe_left(kind, o) for kind, objs in
                      (("pod", pods), ("service", services), ("jobset", jobsets)) for o in objs]
        if left == 0:
            break
        time.sleep(1)
    cleanup_s = time.monotonic() - t_del
    time.sleep(1)
    rc = op.stop()
    for w in watches:
        w.stop()

    with history.lock:
        transitions = soak_history.transitions_after(history.jobs, final_start_rev, end_rev)
        owners = {pod: j["metadata"]["name"] for j, _, _ in plan for pod in pod_names(j)}
        # A gang restart replaces pods that did not fail, by design: its pods have checks of their own.
        replica_pods = {pod: ev for pod, ev in history.pods.items() if owners.get(pod) not in gang}
        lost = soak_history.restarts_lost_to_kills(replica_pods, history.jobs, owners,
                                                   state.get("kills", []))
        for pod, n in lost.items():
            allowed[pod] = allowed.get(pod, 0) + n
        unwarranted = soak_history.unwarranted_creations(replica_pods, allowed)
        overlaps = soak_history.attempt_overlaps(history.pods, owners, gang)
        per_pod = soak_history.attempts_per_pod({pod: ev for pod, ev in history.pods.items()
                                                 if owners.get(pod) in gang})
        miscounted = [(name, f"final attempt {final_attempts[name]!r}, expected {GANG_BACKOFF_LIMIT}")
                      for name in sorted(gang) if final_attempts[name] != str(GANG_BACKOFF_LIMIT)]
        miscounted += [(pod, f"incarnations of attempts {attempts}")
                       for pod, attempts in sorted(per_pod.items())
                       if attempts != list(range(GANG_BACKOFF_LIMIT + 1))]
        dup_services = soak_history.duplicate_services(history.services)
        dup_jobsets = soak_history.duplicate_services(history.jobsets)
        late_jobsets = soak_history.created_after_delete(
            history.jobsets, {name: name for name in history.jobsets},
            {("trainjobs", name): ev for name, ev in history.trainjobs.items()})
        late = (soak_history.created_after_delete(history.pods, owners, history.jobs) +
                soak_history.created_after_delete(history.services, owners, history.jobs))
        # One line an event (revision, event, incarnation, phase[, attempt]), with the owning
        # job's restart count by revision, and the kills: enough to tell a lost count from a bug.
        suspicious = {name: [" ".join(str(x) for x in e if x is not None) for e in history.pods[name]]
                      for name, _ in unwarranted}
        counts = soak_history.restart_counts(history.jobs)
        suspicious_jobs = {owners.get(name): [f"{rev} restarts {n}"
                                              for rev, n in counts.get(owners.get(name), [])]
                           for name, _ in unwarranted}
        pod_creations = sum(len(soak_history.incarnations(ev)) for ev in history.pods.values())
        recorded_jobs = len(history.jobs)
    mismatch = {k: counters[k] - transitions[k] for k in counters if counters[k] != transitions[k]}
    gaps = sum(len(w.gaps) for w in watches) + sum(1 for w in watches if w.error)

    report = {
        "jobs": a.jobs, "expected": {e: sum(1 for v in expected.values() if v == e) for e in set(expected.values())},
        "faults": faults, "watch_relists_after_410_seen_by_operator": relists_seen,
        "fault_window_seconds": a.window,
        "jobs_wrong_terminal_state": len(wrong),
        "pods_created_unwarranted": len(unwarranted),
        "retries_lost_to_operator_kills": sum(lost.values()),
        "services_created_twice": len(dup_services),
        "children_created_after_delete": len(late),
        "children_left_after_delete": left,
        "trainjobs": a.trainjobs,
        "trainjobs_wrong_terminal_state": len(tj_wrong),
        "jobsets_created_twice": len(dup_jobsets),
        "jobsets_created_after_delete": len(late_jobsets),
        "gang_jobs": len(gang),
        "gang_attempt_overlaps": len(overlaps),
        "gang_restarts_miscounted": len(miscounted),
        "counter_mismatches": mismatch,
        "last_operator_counters": counters, "last_operator_transitions": transitions,
        "history_gaps": gaps,
        "action_errors": len(action_errors),
        "converge_seconds": round(converge_s, 1),
        "cleanup_seconds": round(cleanup_s, 1),
        "pod_creations_recorded": pod_creations, "jobs_recorded": recorded_jobs,
        "operator_exit_status": rc,
        "details": {"wrong": dict(list(wrong.items())[:20]), "unwarranted": unwarranted[:20],
                    "trainjobs_wrong": dict(list(tj_wrong.items())[:20]),
                    "jobsets_twice": dup_jobsets[:20], "jobsets_late": late_jobsets[:20],
                    "retries_lost": lost,
                    "unwarranted_history": {k: v for k, v in list(suspicious.items())[:5]},
                    "unwarranted_job_restarts": {k: v for k, v in list(suspicious_jobs.items())[:5]},
                    "kills_revisions": [f"{b}..{a}" for b, a in state.get("kills", [])],
                    "services_twice": dup_services[:20], "late": late[:20],
                    "gang_overlaps": overlaps[:20], "gang_miscounted": miscounted[:20],
                    "watch_errors": [w.error for w in watches if w.error],
                    "action_errors": action_errors[:20],
                    "left_after_delete": left_items[:20]},
    }
    text = json.dumps(report, indent=2, sort_keys=True)
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    ok = (not wrong and not unwarranted and not dup_services and not late and left == 0 and not mismatch
          and not tj_wrong and not dup_jobsets and not late_jobsets
          and not overlaps and not miscounted
          and gaps == 0 and not action_errors and rc == 0 and (faults["apiserver_restarts"] == 0 or relists_seen > 0))
    print("soak: every invariant holds" if ok else "soak: INVARIANT BROKEN (see the report above)")
    kubectl("delete", "namespace", ns, "--wait=false", check=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
