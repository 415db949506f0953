"""trainctl.checkpoint: reading the notice, reporting done, finding the checkpoint to resume
from, and the Hugging Face callback's save-on-notice (one process, no process group)."""
import json
import os
import tempfile
import types
import unittest

from trainctl import checkpoint

NOTICE = {"reason": "Suspended", "stopAt": "2026-11-27T05:00:00Z", "attempt": 0, "seconds": 30}


class NoticeFilesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.env = {checkpoint.NOTICE_FILE_ENV: os.path.join(self.dir.name, "notice.json"),
                    checkpoint.NOTICE_DONE_FILE_ENV: os.path.join(self.dir.name, "done")}

    def tearDown(self):
        self.dir.cleanup()

    def write(self, text):
        with open(self.env[checkpoint.NOTICE_FILE_ENV], "w") as f:
            f.write(text)

    def test_no_notice_until_the_file_has_one(self):
        self.assertIsNone(checkpoint.notice({}))
        self.assertIsNone(checkpoint.notice(self.env))  # absent
        for text in ("", "\n", "{", "[]", '{"reason": "x"}', '{"reason": 1, "stopAt": "t"}'):
            self.write(text)  # empty: a downward-API file without the annotation
            self.assertIsNone(checkpoint.notice(self.env), text)
        self.write(json.dumps(NOTICE) + "\n")
        self.assertEqual(checkpoint.notice(self.env), NOTICE)

    def test_report_done_creates_the_done_file_and_is_false_without_one(self):
        self.assertFalse(checkpoint.report_done({}))
        self.assertTrue(checkpoint.report_done(self.env))
        self.assertTrue(os.path.exists(self.env[checkpoint.NOTICE_DONE_FILE_ENV]))
        self.assertEqual(os.listdir(self.dir.name), ["done"], "no temporary file left")

    def test_resume_from_skips_a_checkpoint_cut_short(self):
        with tempfile.TemporaryDirectory() as out:
            for step, files in ((10, ["trainer_state.json", "model.safetensors", "optimizer.pt"]),
                                (30, ["trainer_state.json", "model.safetensors"])):
                os.makedirs(os.path.join(out, f"checkpoint-{step}"))
                for f in files:
                    open(os.path.join(out, f"checkpoint-{step}", f), "w").close()
            self.assertEqual(checkpoint.resume_from(out), os.path.join(out, "checkpoint-10"))
        self.assertIsNone(checkpoint.resume_from("/nonexistent"))


class CheckpointOnNoticeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.env = {checkpoint.NOTICE_FILE_ENV: os.path.join(self.dir.name, "notice.json"),
                    checkpoint.NOTICE_DONE_FILE_ENV: os.path.join(self.dir.name, "done")}
        self.lines = []
        self.callback = checkpoint.CheckpointOnNotice(
            self.env, log=lambda line, flush=False: self.lines.append(line))

    def tearDown(self):
        self.dir.cleanup()

    def step(self, n):
        from transformers import TrainerControl
        control = TrainerControl()
        state = types.SimpleNamespace(global_step=n, is_world_process_zero=True)
        self.callback.on_step_end(None, state, control)
        if control.should_save:
            self.callback.on_save(None, state, control)
        return control.should_save

    def test_it_is_a_trainer_callback(self):
        from transformers import TrainerCallback
        self.assertIsInstance(self.callback, TrainerCallback)

    def test_saves_once_per_notice_then_reports_done(self):
        self.assertFalse(self.step(1))
        with open(self.env[checkpoint.NOTICE_FILE_ENV], "w") as f:
            f.write(json.dumps(NOTICE))
        self.assertTrue(self.step(2))
        self.assertTrue(os.path.exists(self.env[checkpoint.NOTICE_DONE_FILE_ENV]))
        self.assertFalse(self.step(3), "the same notice is not saved for twice")
        self.assertIn("checkpoint notice (Suspended", self.lines[0])
        # A new notice (trainctl removed the done file when it told it) is saved for again.
        os.remove(self.env[checkpoint.NOTICE_DONE_FILE_ENV])
        with open(self.env[checkpoint.NOTICE_FILE_ENV], "w") as f:
            f.write(json.dumps(dict(NOTICE, reason="ActiveDeadline")))
        self.assertTrue(self.step(4))
        self.assertTrue(os.path.exists(self.env[checkpoint.NOTICE_DONE_FILE_ENV]))



def _two_ranks(rank, world, store, folder, out):
    """One rank of CheckpointOnNotice over gloo: rank 0 reads the notice before step 2, rank 1
    only before step 3 (its file refreshed later); records the steps it saved at."""
    import torch.distributed as dist
    from transformers import TrainerControl
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    env = {checkpoint.NOTICE_FILE_ENV: os.path.join(folder, f"notice-{rank}.json"),
           checkpoint.NOTICE_DONE_FILE_ENV: os.path.join(folder, f"done-{rank}")}
    callback = checkpoint.CheckpointOnNotice(env, log=lambda *a, **k: None)
    saved = []
    for step in range(1, 6):
        if step == 2 + rank:
            with open(env[checkpoint.NOTICE_FILE_ENV], "w") as f:
                f.write(json.dumps(NOTICE))
        control = TrainerControl()
        state = types.SimpleNamespace(global_step=step, is_world_process_zero=rank == 0)
        callback.on_step_end(None, state, control)
        if control.should_save:
            saved.append(step)
            callback.on_save(None, state, control)
    with open(os.path.join(out, f"rank-{rank}.json"), "w") as f:
        json.dump(saved, f)
    dist.destroy_process_group()


class TwoRanksTest(unittest.TestCase):
    def test_every_rank_saves_together_once_when_one_reads_the_notice_first(self):
        import torch.multiprocessing as mp
        with tempfile.TemporaryDirectory() as folder:
            mp.spawn(_two_ranks, args=(2, os.path.join(folder, "store"), folder, folder), nprocs=2)
            saved = [json.load(open(os.path.join(folder, f"rank-{r}.json"))) for r in (0, 1)]
        self.assertEqual(saved, [[2], [2]], "both at step 2, and rank 1 not again at step 3")


if __name__ == "__main__":
    unittest.main()
