"""Unit tests of the soak's history checks (bench/soak_history.py), on pod histories recorded
by bench/soak.py runs: (revision, event, incarnation's create revision, phase)."""
import unittest

import soak_history

# retry-19 of a run on 2026-11-24: the operator deleted the second failed incarnation (37052)
# and was SIGKILLed before it wrote the restart count; the next one created 37088.
POD = [(36885, "PUT", 36885, "Pending"), (36889, "PUT", 36885, "Running"),
       (36941, "PUT", 36885, "Failed"), (36944, "PUT", 36885, "Failed (terminating)"),
       (36945, "DELETE", 0, ""),
       (36951, "PUT", 36951, "Pending"), (37044, "PUT", 36951, "Failed"),
       (37050, "PUT", 36951, "Failed (terminating)"), (37052, "DELETE", 0, ""),
       (37088, "PUT", 37088, "Pending"), (37174, "PUT", 37088, "Failed"),
       (37178, "DELETE", 0, ""),
       (37181, "PUT", 37181, "Pending"), (37285, "PUT", 37181, "Failed")]


def job_puts(*restarts_at):
    """Job history: a status PUT with `n` restarts at each (revision, n)."""
    return {("pytorchjobs", "retry-19"): [
        (rev, "PUT", 36880, {"replicaStatuses": {"Master": {"restarts": n}}})
        for rev, n in restarts_at]}


OWNERS = {"retry-19-master-0": "retry-19"}


class RestartsLostToKillsTest(unittest.TestCase):
    def test_a_kill_between_the_delete_and_the_count_is_one_lost_retry(self):
        jobs = job_puts((36880, 0), (36947, 1), (37180, 2))
        lost = soak_history.restarts_lost_to_kills({"retry-19-master-0": POD}, jobs, OWNERS,
                                                   [(37053, 37060)])
        self.assertEqual(lost, {"retry-19-master-0": 1})
        self.assertEqual(soak_history.unwarranted_creations({"retry-19-master-0": POD},
                                                            {"retry-19-master-0": 2 + 1}), [])

    def test_without_a_kill_the_fourth_incarnation_is_unwarranted(self):
        jobs = job_puts((36880, 0), (36947, 1), (37180, 2))
        self.assertEqual(soak_history.restarts_lost_to_kills({"retry-19-master-0": POD}, jobs,
                                                             OWNERS, []), {})
        bad = soak_history.unwarranted_creations({"retry-19-master-0": POD},
                                                 {"retry-19-master-0": 2})
        self.assertEqual(bad, [("retry-19-master-0", "4 incarnations, at most 3 expected")])

    def test_a_count_written_before_the_kill_is_not_lost(self):
        jobs = job_puts((36880, 0), (36947, 1), (37055, 2), (37180, 3))
        self.assertEqual(soak_history.restarts_lost_to_kills({"retry-19-master-0": POD}, jobs,
                                                             OWNERS, [(37053, 37060)]), {})

    def test_a_replacement_made_before_the_kill_is_not_excused(self):
        # The count never went up, but the replacement came before any kill: an operator bug.
        jobs = job_puts((36880, 0), (36947, 1), (37180, 2))
        self.assertEqual(soak_history.restarts_lost_to_kills({"retry-19-master-0": POD}, jobs,
                                                             OWNERS, [(37100, 37110)]), {})

    def test_a_kill_before_the_pod_is_gone_still_ended_after_its_deletion_was_asked(self):
        # retry-14 of CI's run on 2026-11-27: the operator asked the second failed incarnation's
        # deletion (6688) and was killed before it wrote the count; kwok removed the pod only
        # after the kill (6691), and the next operator made the replacement (6692).
        pod = [(6413, "PUT", 6413, "Pending"), (6421, "PUT", 6413, "Running"),
               (6468, "PUT", 6413, "Failed"), (6471, "PUT", 6413, "Failed (terminating)"),
               (6473, "DELETE", 0, ""),
               (6481, "PUT", 6481, "Pending"), (6687, "PUT", 6481, "Failed"),
               (6688, "PUT", 6481, "Failed (terminating)"), (6691, "DELETE", 0, ""),
               (6692, "PUT", 6692, "Pending"), (6750, "PUT", 6692, "Failed"),
               (6752, "PUT", 6692, "Failed (terminating)"), (6753, "DELETE", 0, ""),
               (6760, "PUT", 6760, "Pending"), (6800, "PUT", 6760, "Failed")]
        jobs = {("pytorchjobs", "retry-14"): [
            (rev, "PUT", 6400, {"replicaStatuses": {"Master": {"restarts": n}}})
            for rev, n in ((6400, 0), (6472, 1), (6754, 2))]}
        owners = {"retry-14-master-0": "retry-14"}
        lost = soak_history.restarts_lost_to_kills({"retry-14-master-0": pod}, jobs, owners,
                                                   [(6689, 6690)])
        self.assertEqual(lost, {"retry-14-master-0": 1})
        # A kill that ended before the deletion was asked excuses nothing.
        self.assertEqual(soak_history.restarts_lost_to_kills({"retry-14-master-0": pod}, jobs,
                                                             owners, [(6680, 6686)]), {})

    def test_an_incarnation_knows_when_its_deletion_was_asked(self):
        inc = soak_history.incarnations(POD)
        self.assertEqual(inc[1], (36951, "Failed (terminating)", 37052, 37050))
        self.assertEqual(inc[3], (37181, "Failed", None, None))


class UnwarrantedCreationsTest(unittest.TestCase):
    def test_a_pending_incarnation_deleted_and_made_again_is_reported(self):
        pod = [(1, "PUT", 1, "Pending"), (2, "PUT", 1, "Pending (terminating)"),
               (3, "DELETE", 0, ""), (4, "PUT", 4, "Pending")]
        self.assertEqual(soak_history.unwarranted_creations({"p": pod}, {"p": 2}),
                         [("p", "created again at revision 4 after an incarnation that was "
                                "Pending (terminating)")])


class TrainJobHistoryTest(unittest.TestCase):
    def test_a_jobset_made_again_is_a_duplicate_and_one_made_after_its_trainjob_went_is_late(self):
        history = soak_history.History("soak-1")
        for event in [(10, "PUT", "/registry/trainer.kubeflow.org/trainjobs/soak-1/tj-0", 10, None),
                      (12, "PUT", "/registry/jobset.x-k8s.io/jobsets/soak-1/tj-0", 12, None),
                      (20, "DELETE", "/registry/jobset.x-k8s.io/jobsets/soak-1/tj-0", 0, None),
                      (25, "DELETE", "/registry/trainer.kubeflow.org/trainjobs/soak-1/tj-0", 0, None),
                      (30, "PUT", "/registry/jobset.x-k8s.io/jobsets/soak-1/tj-0", 30, None),
                      (31, "PUT", "/registry/jobset.x-k8s.io/jobsets/other-ns/tj-0", 31, None)]:
            history.sink(event)
        self.assertEqual(sorted(history.trainjobs), ["tj-0"])
        self.assertEqual(len(history.jobsets["tj-0"]), 3, "the other namespace's is not recorded")
        self.assertEqual(soak_history.duplicate_services(history.jobsets), [("tj-0", 2)])
        late = soak_history.created_after_delete(
            history.jobsets, {"tj-0": "tj-0"},
            {("trainjobs", n): ev for n, ev in history.trainjobs.items()})
        self.assertEqual(late, ["tj-0"])


if __name__ == "__main__":
    unittest.main()


class GangAttemptsTest(unittest.TestCase):
    """attempt_overlaps / attempts_per_pod on pod histories with their attempt label."""

    OWNERS = {"g-master-0": "g", "g-worker-0": "g"}

    def test_a_pod_of_the_next_attempt_while_one_of_the_last_exists_is_an_overlap(self):
        master = [(10, "PUT", 10, "Running", "0"), (20, "PUT", 10, "Running (terminating)", "0"),
                  (25, "DELETE", 0, "", None), (30, "PUT", 30, "Pending", "1")]
        worker = [(11, "PUT", 11, "Failed", "0"), (19, "DELETE", 0, "", None),
                  (22, "PUT", 22, "Pending", "1")]  # created at 22, the master of attempt 0 goes at 25
        bad = soak_history.attempt_overlaps({"g-master-0": master, "g-worker-0": worker}, self.OWNERS, {"g"})
        self.assertEqual(bad, [("g-worker-0", "attempt 1 created at revision 22 while g-master-0 (attempt 0) existed")])
        self.assertEqual(soak_history.attempts_per_pod({"g-master-0": master}), {"g-master-0": [0, 1]})

    def test_attempts_in_order_are_no_overlap(self):
        master = [(10, "PUT", 10, "Running", "0"), (25, "DELETE", 0, "", None), (30, "PUT", 30, "Pending", "1")]
        worker = [(11, "PUT", 11, "Failed", "0"), (19, "DELETE", 0, "", None), (31, "PUT", 31, "Pending", "1")]
        self.assertEqual(soak_history.attempt_overlaps({"g-master-0": master, "g-worker-0": worker},
                                                       self.OWNERS, {"g"}), [])
        self.assertEqual(soak_history.attempt_overlaps({"g-master-0": master, "g-worker-0": worker},
                                                       self.OWNERS, set()), [], "only Gang jobs are checked")

    def test_the_attempt_label_is_read_from_the_stored_protobuf(self):
        def ld(number, payload):  # a length-delimited protobuf field
            return bytes([(number << 3) | 2, len(payload)]) + payload
        entry = ld(1, b"trainctl.dev/restart-attempt") + ld(2, b"3")
        other = ld(1, b"app") + ld(2, b"x")
        meta = ld(1, b"g-master-0") + ld(11, other) + ld(11, entry)
        stored = b"k8s\x00" + ld(2, ld(1, meta))
        self.assertEqual(soak_history.pod_label(stored, "trainctl.dev/restart-attempt"), "3")
        self.assertIsNone(soak_history.pod_label(stored, "missing"))
        self.assertEqual(soak_history.pod_label(b'{"metadata":{"labels":{"a":"b"}}}', "a"), "b")
