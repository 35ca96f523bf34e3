#!/usr/bin/python3
"""Checkpoints that PyTorch programs write, and jobs that share a name.

The training program is tests/integration/plain_ckpt_trainer.py, a
PyTorch DDP job (gloo, torch_distributed) whose rank 0 does
torch.save(..., "ckpt.pt.tmp"); os.replace(..., "ckpt.pt") after every
step (~60 ms apart): no libtrainer manifest, so the agent's mirror must
see that the file is complete when it is renamed into place.

Embedded local cluster (trainctld --local-hosts 3, --max-retries 0):
  (p) 2 hosts, RetryStrategy.MaximumRetryAttempts 2, the last rank kills
      itself with SIGKILL at step 15 of attempt 1: attempt 2 resumes from
      step >= 14 on both ranks and the job Completes after 2 attempts
  (w) a program that writes ckpt.pt and exits 0 at once: Completed, and
      ckpt.pt is under CheckpointConfig.S3Uri
  (x) the same exiting 1 (no retries): Failed, and ckpt.pt is there
  (r) Stop, Delete and CreateTrainingJob again with the same name at
      once: the new job Completes (nothing of the old one touches it)
  (s) Stop of one job and, at once, Create of another: it Completes
A second controller with --retry-policy sagemaker:
  (y) a job whose program exits 1, RetryStrategy.MaximumRetryAttempts 2,
      ends Failed after its first attempt (SageMaker retries only
      InternalServerError), while the same job on the default policy
      (x2) is tried 3 times
  (y2) a lost host is retried there: the agent of the host running a
      job with MaximumRetryAttempts 2 is frozen (SIGSTOP) past the host
      deadline; the job restarts on the other host (an
      InternalServerError) and Completes in attempt 2

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_ckpt_plain.py
BUILD names the build directory (default build); PLAIN_ONLY=p,w,...
runs only those cases; TRAINCTL_TEST_KEEP=1 keeps the temp dir.
"""
import json
import os
import re
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import Fail, expect, short  # noqa: E402

fl.sc.hermetic_env()

PROGRAM = os.path.join(HERE, "plain_ckpt_trainer.py")
ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0", "--grace-period", "2",
        "-v"]
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
ONLY = set(x.strip() for x in os.environ.get("PLAIN_ONLY", "").split(",") if x.strip())
START_RE = re.compile(r"^plain-start attempt=(\d+) rank=(\d+) resumed_from=(\d+)")


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def request(name, count, hps, retries=None, checkpoint=True):
    req = fl.job_request(name, count, image=PROGRAM, retries=retries, checkpoint=checkpoint,
                         max_runtime=120)
    req["HyperParameters"] = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in hps.items()}
    if count > 1 or hps.get("mode") != "write_exit":
        req["HyperParameters"]["sagemaker_torch_distributed_enabled"] = "true"
    return req


def log_lines(cl, name):
    """[(stream file, text)] of every line the job's processes wrote."""
    out = []
    d = cl.logs_dir(name)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), "rb") as fh:
            for line in fh.read().decode("utf-8", "replace").splitlines():
                parts = line.split("\t", 3)
                if len(parts) == 4:
                    out.append((f, parts[3]))
    return out


def ckpt_files(cl, name):
    root = cl.s3_path(fl.ckpt_uri(name))
    found = []
    for dirpath, _, files in os.walk(root):
        found += [os.path.relpath(os.path.join(dirpath, f), root) for f in files]
    return sorted(found)


def wait_done(sm, name, timeout=120):
    d, seen = fl.wait_job(sm, name, fl.terminal, timeout)
    return d, seen


def case_p(tap, cl, sm):
    name = "plain-p-%s" % RUN
    sm.create_training_job(**request(name, 2, {"steps": 30, "step_sleep": 0.06, "die_at_step": 15},
                                     retries=2))
    d, seen = wait_done(sm, name, 180)
    lines = log_lines(cl, name)
    starts = [tuple(int(x) for x in m.groups()) for m in (START_RE.match(t) for _, t in lines) if m]
    diag = "status %s (%s); starts %s; transitions %s\n%s" % (
        d["TrainingJobStatus"], d.get("FailureReason"), starts, short(fl.transitions(d), 1500),
        cl.log_tail(15, grep="checkpoint"))
    tap.ok(d["TrainingJobStatus"] == "Completed", "(p) DDP job with torch.save checkpoints, rank killed at "
           "step 15: Completed", diag)
    second = [s for s in starts if s[0] == 2]
    tap.ok(len(second) == 2 and all(s[2] >= 14 for s in second),
           "(p) attempt 2 resumes from step >= 14 on both ranks", diag)
    tap.ok(not [s for s in starts if s[0] > 2], "(p) two attempts in all", diag)
    tap.ok("ckpt.pt" in ckpt_files(cl, name), "(p) ckpt.pt is under S3Uri", ckpt_files(cl, name))
    tap.ok(not fl.wait_no_procs(name), "(p) no process of the job left", fl.procs_with(name))


def write_exit_case(tap, cl, sm, case, code, status):
    name = "plain-%s-%s" % (case, RUN)
    sm.create_training_job(**request(name, 1, {"mode": "write_exit", "exit_code": code}))
    d, _ = wait_done(sm, name, 60)
    tap.ok(d["TrainingJobStatus"] == status, "(%s) writes ckpt.pt and exits %d at once: %s" % (case, code, status),
           "%s (%s)" % (d["TrainingJobStatus"], d.get("FailureReason")))
    # The final sync runs after the status is final; generous, for a
    # loaded machine.
    deadline = time.time() + 60
    while "ckpt.pt" not in ckpt_files(cl, name) and time.time() < deadline:
        time.sleep(0.1)
    tap.ok(ckpt_files(cl, name) == ["ckpt.pt"], "(%s) ckpt.pt is under S3Uri" % case,
           "%s\n%s" % (ckpt_files(cl, name), cl.log_tail(10, grep="checkpoint")))


def case_w(tap, cl, sm):
    write_exit_case(tap, cl, sm, "w", 0, "Completed")


def case_x(tap, cl, sm):
    write_exit_case(tap, cl, sm, "x", 1, "Failed")


def case_x2(tap, cl, sm):
    retry_case(tap, cl, sm, "x2", 3, "default policy")


def long_job(name):
    return request(name, 1, {"steps": 400, "step_sleep": 0.05}, checkpoint=False)


def wait_training(sm, name):
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training" or fl.terminal(d), 60)


def case_r(tap, cl, sm):
    name = "plain-r-%s" % RUN
    sm.create_training_job(**long_job(name))
    wait_training(sm, name)
    time.sleep(1.0)
    sm.stop_training_job(TrainingJobName=name)
    fl.wait_job(sm, name, fl.terminal, 60)
    r = fl.sc.amz_json(cl.port, "DeleteTrainingJob", {"TrainingJobName": name})
    expect(r.status == 200, "DeleteTrainingJob: HTTP %d %s" % (r.status, r.body[:300]))
    req = request(name, 1, {"steps": 20, "step_sleep": 0.05}, checkpoint=False)
    deadline = time.time() + 10
    while True:
        try:
            sm.create_training_job(**req)
            break
        except Exception as e:  # the delete may still be under way
            if time.time() > deadline:
                raise Fail("CreateTrainingJob after Delete: %s" % e)
            time.sleep(0.02)
    d, seen = wait_done(sm, name, 90)
    tap.ok(d["TrainingJobStatus"] == "Completed", "(r) Stop + Delete + Create of the same name: the new job "
           "Completes", "%s (%s); seen %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"),
                                                  " -> ".join(s for _, s in seen), cl.log_tail(20)))


def case_s(tap, cl, sm):
    a, b = "plain-s1-%s" % RUN, "plain-s2-%s" % RUN
    sm.create_training_job(**long_job(a))
    wait_training(sm, a)
    sm.stop_training_job(TrainingJobName=a)
    sm.create_training_job(**request(b, 1, {"steps": 20, "step_sleep": 0.05}, checkpoint=False))
    d, _ = wait_done(sm, b, 90)
    da, _ = wait_done(sm, a, 60)
    tap.ok(da["TrainingJobStatus"] == "Stopped" and d["TrainingJobStatus"] == "Completed",
           "(s) Stop of one job and Create of another at once: Stopped and Completed",
           "%s / %s (%s)" % (da["TrainingJobStatus"], d["TrainingJobStatus"], d.get("FailureReason")))


def attempts_of(cl, name):
    return sum(1 for _, t in log_lines(cl, name) if t.startswith("plain-wrote "))


def retry_case(tap, cl, sm, case, expect_attempts, what):
    name = "plain-%s-%s" % (case, RUN)
    sm.create_training_job(**request(name, 1, {"mode": "write_exit", "exit_code": 1}, retries=2))
    d, _ = wait_done(sm, name, 60)
    n = attempts_of(cl, name)
    tap.ok(d["TrainingJobStatus"] == "Failed" and n == expect_attempts,
           "(%s) a program that exits 1 with 2 retries, %s: Failed after %d attempt%s" % (
               case, what, expect_attempts, "" if expect_attempts == 1 else "s"),
           "%s (%s); %d attempts; transitions %s" % (d["TrainingJobStatus"], d.get("FailureReason"), n,
                                                    short(fl.transitions(d), 800)))


def lost_host_case(tap, cl, sm):
    name = "plain-y2-%s" % RUN
    sm.create_training_job(**request(name, 1, {"steps": 150, "step_sleep": 0.05}, retries=2))
    wait_training(sm, name)
    host = cl.host_of(name, "algo-1")
    pid = cl.agent_pids().get(host)
    expect(pid, "no agent for %s (%s)" % (host, cl.agent_pids()))
    os.kill(pid, signal.SIGSTOP)
    try:
        fl.wait_job(sm, name, lambda d: any(st == "Restarting" for st, _ in fl.transitions(d)) or
                    fl.terminal(d), 30)
    finally:
        os.kill(pid, signal.SIGCONT)
    d, _ = wait_done(sm, name, 120)
    trans = fl.transitions(d)
    restarts = [m for st, m in trans if st == "Restarting"]
    started = sorted({int(m.group(1)) for m in (START_RE.match(t) for _, t in log_lines(cl, name)) if m})
    tap.ok(d["TrainingJobStatus"] == "Completed" and len(restarts) == 1 and
           "InternalServerError" in restarts[0] and started and started[-1] == 2,
           "(y2) a lost host, --retry-policy sagemaker: retried (InternalServerError), Completed in attempt 2",
           "%s (%s); attempts started %s; transitions %s\n%s" % (
               d["TrainingJobStatus"], d.get("FailureReason"), started, short(trans, 1200), cl.log_tail(15)))


def sagemaker_policy(tap):
    cl = fl.LocalCluster(2, ARGS + ["--retry-policy", "sagemaker"], prefix="trainctl-plain-sm-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --retry-policy sagemaker starts", err):
        for case, fn in (("y", lambda: retry_case(tap, cl, cl.client(), "y", 1, "--retry-policy sagemaker")),
                         ("y2", lambda: lost_host_case(tap, cl, cl.client()))):
            try:
                fn()
            except Exception as e:
                tap.ok(False, "(%s) ran to its end" % case, "%s: %s\n%s\n%s" % (
                    type(e).__name__, e, traceback.format_exc(), cl.log_tail(20)))
    cl.stop()
    fl.kill_pids(cl.own_pids())
    cl.cleanup()


def main():
    tap = fl.sc.Tap()
    try:
        import torch  # noqa: F401
    except ImportError:
        tap.skip("PyTorch DDP with plain checkpoints", "no torch for %s (apt-get install python3-torch)" %
                 sys.executable)
        return tap.finish()
    cl = fl.LocalCluster(3, ARGS, prefix="trainctl-plain-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts, 3 hosts ready", err):
        sm = cl.client()
        for c in ("p", "w", "x", "x2", "r", "s"):
            if ONLY and c not in ONLY:
                continue
            t = time.time()
            try:
                globals()["case_" + c](tap, cl, sm)
            except Exception as e:
                tap.ok(False, "(%s) ran to its end" % c, "%s: %s\n%s\n%s" % (
                    type(e).__name__, e, traceback.format_exc(), cl.log_tail(15)))
            log("(%s) took %.1f s" % (c, time.time() - t))
    rc, killed = cl.stop()
    if not ONLY or "y" in ONLY:
        sagemaker_policy(tap)
    time.sleep(0.5)
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
