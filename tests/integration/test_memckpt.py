#!/usr/bin/python3
"""Checkpoints kept in the host's memory (docs/checkpoints.md, "Copies in
memory"; trainagent --memory-checkpoint-mb).

Embedded local cluster (trainctld --local-hosts 1; its agent inherits
TRAINCTL_MEMORY_CHECKPOINT_MB and a folder of its own under /dev/shm):
  (m1) ft_trainer.py checkpoints every 10 steps and fails at step 45 of
       attempt 1: attempt 2 on the same host restores step 40 from memory
       (the agent's line in the job's log says "source: memory"), resumes
       from 40 and Completes; the store still holds the checkpoints, whole
  (m2) the same on a host that keeps no copies (--memory-checkpoint-mb 0,
       as a host that restarted has none): attempt 2 restores from the
       store ("source: store") and resumes from 40 all the same

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_memckpt.py
"""
import glob
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import expect, short  # noqa: E402

fl.sc.hermetic_env()

ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0", "-v"]
HPS = {"steps": 60, "ckpt_every": 10, "step_sleep": 0.03, "ckpt_pad_kb": 512}


def job_text(cl, name):
    """Everything the job and its host's agent logged."""
    parts = []
    for path in sorted(glob.glob(os.path.join(cl.logs_dir(name), "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                parts.append(f.read())
    return "\n".join(parts)


def run(cl, sm, name, hps):
    req = fl.job_request(name, 1, dict(HPS, **hps), retries=1)
    sm.create_training_job(**req)
    d, _ = fl.wait_job(sm, name, fl.terminal, 120)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%s)\n%s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), cl.log_tail(15)))
    restarts = [m for st, m in fl.transitions(d) if st == "Restarting"]
    expect(len(restarts) == 1, "restarts: %s" % short(fl.transitions(d), 800))
    text = job_text(cl, name)
    resumed = [ln for ln in text.splitlines() if "ft-resume" in ln and "attempt=2" in ln]
    expect(resumed and "resumed_from=40" in resumed[0], "attempt 2 did not resume from 40: %s" % resumed)
    probs, names = fl.store_problems(cl.s3_path(fl.ckpt_uri(name)))
    expect(not probs, "torn checkpoints in the store: %s" % probs)
    expect(names, "nothing in the store")
    return text


def restore_lines(text):
    return [ln for ln in text.splitlines() if "checkpoint:" in ln and "(source:" in ln]


def case_m1(cl, sm):
    text = run(cl, sm, "memckpt-m1", {"fail_at_step": 45, "fail_attempt": 1})
    lines = restore_lines(text)
    # Attempt 1 restores the empty prefix from the store; attempt 2 last.
    expect(len(lines) == 2, "want two restores: %s" % lines)
    expect("source: memory" in lines[1] and "step 40 " in lines[1],
           "attempt 2 did not restore step 40 from memory: %s" % lines)
    return lines[1].split("checkpoint: ", 1)[1]


def case_m2(cl, sm):
    text = run(cl, sm, "memckpt-m2", {"fail_at_step": 45, "fail_attempt": 1})
    lines = restore_lines(text)
    expect(len(lines) == 2 and all("source: store" in ln for ln in lines),
           "attempt 2 did not restore from the store: %s" % lines)


def with_cluster(tap, mb, shm, what, case):
    os.environ["TRAINCTL_MEMORY_CHECKPOINT_MB"] = str(mb)
    os.environ["TRAINCTL_MEMORY_CHECKPOINT_DIR"] = shm
    cl = fl.LocalCluster(1, ARGS, prefix="trainctl-memckpt-")
    err = cl.start()
    try:
        if tap.ok(err is None, "trainctld --local-hosts 1 starts (memory checkpoints: %d MiB)" % mb, err):
            r = tap.case(what, case, cl, fl.sc.make_client(cl.endpoint))
            if isinstance(r, str):
                tap.note(r)
    finally:
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)


def main():
    tap = fl.sc.Tap()
    prefix, _, _ = fl.sc.run_names("mc")
    shm = os.path.join("/dev/shm", "%s-memckpt-%d" % (prefix, os.getpid()))
    try:
        with_cluster(tap, 64, shm, "(m1) a retry on the same host restores its checkpoint from memory", case_m1)
        with_cluster(tap, 0, shm, "(m2) with no copy in memory the retry restores from the store", case_m2)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
