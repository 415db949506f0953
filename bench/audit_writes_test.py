"""Unit tests of bench/audit_writes.py on a hand-made audit log: runs told apart by namespace,
status writes by what they changed, events by reason with their counts."""
import json
import os
import tempfile
import unittest

import audit_writes


def status_write(ns, job, conditions, active=0, verb="update", audit_id=None, waiting=None):
    listed = [{"type": c, "status": "True"} for c in conditions]
    if waiting is not None:  # ReplicasReady False with this reason
        listed.insert(0, {"type": "ReplicasReady", "status": "False", "reason": waiting})
    return {"kind": "Event",
            "auditID": audit_id or f"{ns}-{job}-{len(conditions)}-{active}-{waiting}",
            "stage": "ResponseComplete", "verb": verb,
            "objectRef": {"apiGroup": "kubeflow.org", "resource": "pytorchjobs",
                          "subresource": "status", "namespace": ns, "name": job},
            "requestObject": {"status": {
                "conditions": listed, "replicaStatuses": {"Worker": {"active": active}}}}}


def event_write(ns, reason, count=1, verb="create", audit_id=None):
    return {"kind": "Event", "auditID": audit_id or f"{ns}-{reason}-{count}-{verb}",
            "stage": "ResponseComplete", "verb": verb,
            "objectRef": {"resource": "events", "namespace": ns},
            "requestObject": {"reason": reason, "count": count} if verb == "create" else
            {"count": count}}


def stamped(write, when):
    write["requestReceivedTimestamp"] = when
    return write


class AuditWritesTest(unittest.TestCase):
    def runs(self, lines, **options):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
            f.write("not json\n")
        self.addCleanup(os.unlink, f.name)
        return audit_writes.read_runs(f.name, **options)

    def test_writes_are_told_by_what_they_changed(self):
        runs = self.runs([
            status_write("a", "j1", ["Created"]),
            status_write("a", "j1", ["Created", "Running"]),
            status_write("a", "j1", ["Created", "Running"], active=1),
            status_write("a", "j2", ["Created", "Running"]),
            status_write("a", "j2", ["Created", "Running"]),  # the same auditID: counted once
            status_write("a", "j2", ["Created", "Succeeded"], active=0, audit_id="x"),
            event_write("a", "SuccessfulCreatePod", count=3),
            event_write("a", "SuccessfulCreatePod", count=1, audit_id="y"),
            event_write("a", "SuccessfulCreatePod", count=4, verb="patch"),
            status_write("b", "j1", ["Created", "Running"]),
        ])
        self.assertEqual([r["namespace"] for r in runs], ["a", "b"])
        a = runs[0]
        self.assertEqual(dict(a["per_job"]), {"j1": 3, "j2": 2})
        self.assertEqual(dict(a["writes"]),
                         {"Created": 1, "Running": 1, "counts": 1, "Created+Running": 1,
                          "Succeeded": 1})
        self.assertEqual(a["events"]["SuccessfulCreatePod"], [2, 4, 0])
        self.assertEqual(a["events"]["(patch)"], [0, 0, 1])
        self.assertEqual(dict(runs[1]["writes"]), {"Created+Running": 1})

    def test_a_new_reason_for_waiting_is_told_from_counts(self):
        runs = self.runs([
            status_write("a", "j", ["Created"], waiting="Starting"),
            status_write("a", "j", ["Created"], waiting="Unschedulable"),
            status_write("a", "j", ["Created"], active=1, waiting="Unschedulable"),
            status_write("a", "j", ["Created"], active=1, waiting="Starting"),
            status_write("a", "j", ["Created", "Running"], active=1, waiting="Starting"),
            status_write("a", "j", ["Created", "ReplicasReady", "Running"], active=2),
        ])
        self.assertEqual(dict(runs[0]["writes"]),
                         {"Created": 1, "waiting: Unschedulable": 1, "counts": 1,
                          "waiting: Starting": 1, "Running": 1, "ReplicasReady": 1})

    def test_a_pause_in_one_namespace_starts_another_run(self):
        first = stamped(status_write("a", "j", ["Created"]), "2026-11-27T09:00:00.5Z")
        close = stamped(status_write("a", "k", ["Created"]), "2026-11-27T09:00:40Z")
        later = stamped(status_write("a", "j", ["Created"], audit_id="later"),
                        "2026-11-27T09:01:30Z")
        runs = self.runs([first, close, later])
        self.assertEqual([len(r["per_job"]) for r in runs], [2, 1])
        # A longer gap, or none, keeps a run of long quiet spells whole.
        self.assertEqual([len(r["per_job"]) for r in self.runs([first, close, later], gap=60)], [2])
        self.assertEqual([len(r["per_job"]) for r in self.runs([first, close, later], gap=0)], [2])

    def test_a_write_elsewhere_in_between_does_not_split_a_run(self):
        # The end of a long watch in another namespace lands in the middle of a run's log.
        runs = self.runs([status_write("a", "j", ["Created"]),
                          status_write("kubeflow", "w", ["Created"]),
                          status_write("a", "j", ["Created", "Running"])])
        self.assertEqual([r["namespace"] for r in runs], ["a", "kubeflow"])
        self.assertEqual(dict(runs[0]["writes"]), {"Created": 1, "Running": 1})

    def test_the_same_namespace_after_a_pause_is_another_run(self):
        runs = self.runs([
            stamped(status_write("a", "j", ["Created"]), "2026-11-27T09:00:00Z"),
            stamped(status_write("b", "j", ["Created"]), "2026-11-27T09:01:00Z"),
            stamped(status_write("a", "j", ["Created"], audit_id="again"), "2026-11-27T09:02:00Z")])
        self.assertEqual([r["namespace"] for r in runs], ["a", "b", "a"])
        self.assertEqual(dict(runs[2]["writes"]), {"Created": 1})

    def test_jobs_written_running_are_told_from_those_never_written_so(self):
        runs = self.runs([
            status_write("a", "j1", ["Created"]),
            status_write("a", "j1", ["Created", "Running"]),
            status_write("a", "j1", ["Created", "Succeeded"]),
            status_write("a", "j2", ["Created"]),
            status_write("a", "j2", ["Created", "Succeeded"]),
        ])
        self.assertEqual(runs[0]["ran"], {"j1"})

    def test_sequences_give_each_order_of_causes_and_the_median_gaps(self):
        def at(write, second):
            write["requestReceivedTimestamp"] = f"2026-11-28T05:00:{second:02d}Z"
            return write

        lines = []
        # Two jobs written Created > Running > ReplicasReady, 4 and 6 s apart, then 1 and 3 s.
        for job, (running, ready) in {"j1": (4, 5), "j2": (6, 9)}.items():
            lines += [at(status_write("a", job, ["Created"]), 0),
                      at(status_write("a", job, ["Created", "Running"]), running),
                      at(status_write("a", job, ["Created", "ReplicasReady", "Running"]), ready)]
        # One job with both conditions in one write, then a count change with no time.
        lines += [at(status_write("a", "j3", ["Created"]), 1),
                  at(status_write("a", "j3", ["Created", "ReplicasReady", "Running"]), 2),
                  status_write("a", "j3", ["Created", "ReplicasReady", "Running"], active=1)]
        run = self.runs(lines)[0]
        rows = audit_writes.sequences(run, 5)
        self.assertEqual(rows[0], (("Created", "Running", "ReplicasReady"), 2, [5.0, 2.0]))
        self.assertEqual(rows[1], (("Created", "ReplicasReady+Running", "counts"), 1, [1.0, None]))
        self.assertEqual(len(audit_writes.sequences(run, 1)), 1)


if __name__ == "__main__":
    unittest.main()
