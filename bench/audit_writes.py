#!/usr/bin/env python3
"""What each benchmark run wrote, from the API server's audit log of bench/operator_scale.sh:
job status writes by cause and events by reason, one table per run.

    bench/audit_writes.py [--gap SECONDS] [build/release/bench-cluster/audit.log]

The benchmark's audit policy logs the audited identity's job status writes and event writes with
their bodies (bench/operator_bench_cluster.sh). Runs are told apart by namespace (each side and
round runs in a namespace of its own, one after another; a write in another namespace in
between, such as the end of a long watch elsewhere, does not split a run), and by a pause of
more than --gap seconds (default 45; 0: none) in one namespace (a namespace deleted and made
again between rounds; runs of 1,000 jobs have quiet spells longer than 45 s). A status write's
cause is what it changed against the same job's previous write: the condition types that became
True ("Created", "Running+Created" for both at once), else the new reason of a ReplicasReady
that is still False ("waiting: Unschedulable": why the replicas are not all running changed),
else "counts" when only replicaStatuses or other fields (such as that condition's message)
changed. Each run also says how many of its jobs were never written with `Running`
True (a job whose pods ran and finished between two of its writes). Events: per reason, the
creates, the occurrences they carry (their `count`) and the count patches. --sequences K adds,
per run, the K most common orders of causes a job's writes took, with the median seconds between
one write and the next: whether two causes were one sync apart (and could share a write) or far
apart.
"""
import argparse
import collections
import json
import sys
from datetime import datetime

GAP_SECONDS = 45


def stamp(text):
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        return None


def true_conditions(status):
    return tuple(sorted(c.get("type", "") for c in status.get("conditions") or []
                        if c.get("status") == "True"))


def waiting_reason(status):
    """ReplicasReady's reason while it is False (why the replicas are not all running), else None."""
    for c in status.get("conditions") or []:
        if c.get("type") == "ReplicasReady" and c.get("status") == "False":
            return c.get("reason", "")
    return None


def body_status(event):
    body = event.get("requestObject") or {}
    return body.get("status") if isinstance(body.get("status"), dict) else None


def new_run(namespace):
    return {"namespace": namespace, "writes": collections.Counter(),
            "per_job": collections.Counter(), "last": {}, "waiting": {}, "ran": set(),
            "sequence": collections.defaultdict(list),
            "events": collections.defaultdict(lambda: [0, 0, 0])}


def read_runs(path, gap=GAP_SECONDS):
    runs, seen, last_time, current = [], set(), {}, {}
    with open(path) as log:
        for line in log:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("kind") != "Event" or event.get("auditID") in seen:
                continue
            ref = event.get("objectRef") or {}
            namespace = ref.get("namespace")
            if not namespace:
                continue
            if event.get("stage") not in (None, "ResponseComplete"):
                continue
            seen.add(event.get("auditID"))
            when = stamp(event.get("requestReceivedTimestamp"))
            before = last_time.get(namespace)
            paused = gap > 0 and when is not None and before is not None and when - before > gap
            if when is not None:
                last_time[namespace] = when
            if namespace not in current or paused:
                current[namespace] = new_run(namespace)
                runs.append(current[namespace])
            run, verb = current[namespace], event.get("verb")
            if ref.get("apiGroup") == "kubeflow.org" and ref.get("subresource") == "status" and \
                    verb in ("update", "patch"):
                status = body_status(event)
                job = ref.get("name", "")
                run["per_job"][job] += 1
                if status is None:
                    run["writes"]["(no body)"] += 1
                    continue
                before = run["last"].get(job, ())
                now = true_conditions(status) if "conditions" in status else before
                added = [c for c in now if c not in before]
                reason = waiting_reason(status) if "conditions" in status else \
                    run["waiting"].get(job)
                if added:
                    cause = "+".join(added)
                elif reason is not None and job in run["waiting"] and \
                        reason != run["waiting"][job]:
                    cause = f"waiting: {reason}"
                else:
                    cause = "counts"
                run["waiting"][job] = reason
                run["writes"][cause] += 1
                run["sequence"][job].append((cause, when))
                run["last"][job] = now
                if "Running" in now:
                    run["ran"].add(job)
            elif ref.get("resource") == "events" and verb in ("create", "patch"):
                body = event.get("requestObject") or {}
                reason = body.get("reason", "(patch)" if verb == "patch" else "?")
                row = run["events"][reason]
                if verb == "create":
                    row[0] += 1
                    row[1] += int(body.get("count") or 1)
                else:
                    row[2] += 1
    return runs


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def sequences(run, top):
    """The `top` most common orders of causes among the run's jobs: (order, jobs, the median
    seconds before each write after the first, None where a time is missing)."""
    by_order = collections.defaultdict(list)
    for writes in run["sequence"].values():
        by_order[tuple(cause for cause, _ in writes)].append([when for _, when in writes])
    rows = []
    for order, times in sorted(by_order.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]:
        gaps = []
        for step in range(1, len(order)):
            known = [t[step] - t[step - 1] for t in times
                     if t[step] is not None and t[step - 1] is not None]
            gaps.append(median(known) if known else None)
        rows.append((order, len(times), gaps))
    return rows


def main():
    parser = argparse.ArgumentParser(description="What each benchmark run wrote, from its audit log.")
    parser.add_argument("--gap", type=float, default=GAP_SECONDS,
                        help="a pause of more seconds in one namespace starts another run (0: never)")
    parser.add_argument("--sequences", type=int, default=0, metavar="K",
                        help="also print the K most common orders of causes of a job's writes")
    parser.add_argument("log", nargs="?", default="build/release/bench-cluster/audit.log")
    args = parser.parse_args()
    if args.gap < 0:
        parser.error(f"--gap must not be negative, got {args.gap}")
    if args.sequences < 0:
        parser.error(f"--sequences must not be negative, got {args.sequences}")
    try:
        runs = [r for r in read_runs(args.log, args.gap) if r["per_job"] or r["events"]]
    except OSError as e:
        sys.exit(f"audit_writes: cannot read {args.log}: {e.strerror}")
    for i, run in enumerate(runs, 1):
        jobs = len(run["per_job"])
        total = sum(run["per_job"].values())
        print(f"\n### run {i}: {run['namespace']}\n")
        if jobs:
            spread = sorted(collections.Counter(run["per_job"].values()).items())
            print(f"job status writes: {total} for {jobs} jobs ({total / jobs:.2f} a job); "
                  "jobs by writes: " + ", ".join(f"{n}: {count}" for n, count in spread))
            silent = jobs - len(run["ran"])  # "ran" only holds jobs with writes
            print(f"jobs never written Running: {silent} of {jobs} ({100 * silent / jobs:.0f} %)")
            print("\n| cause | writes | per job |\n|---|---|---|")
            for cause, n in run["writes"].most_common():
                print(f"| {cause} | {n} | {n / jobs:.2f} |")
            if args.sequences:
                print("\n| a job's writes in order | jobs | median s between writes |\n|---|---|---|")
                for order, count, gaps in sequences(run, args.sequences):
                    shown = ", ".join("?" if g is None else f"{g:.1f}" for g in gaps)
                    print(f"| {' > '.join(order)} | {count} | {shown or '-'} |")
        if run["events"]:
            creates = sum(r[0] for r in run["events"].values())
            carried = sum(r[1] for r in run["events"].values())
            print(f"\nevents: {creates} created carrying {carried} occurrences\n")
            print("| reason | created | occurrences | count patches |\n|---|---|---|---|")
            for reason, (created, occurrences, patches) in sorted(
                    run["events"].items(), key=lambda kv: -kv[1][0]):
                print(f"| {reason} | {created} | {occurrences} | {patches} |")


if __name__ == "__main__":
    main()
