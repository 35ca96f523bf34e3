#!/usr/bin/python3
"""Hang detection end to end (docs/distributed.md, "Hangs"): a rank that
makes no progress (no output, no CPU time, no checkpoint) for longer than
its threshold fails its attempt with a reason that names it, its stacks
land in its log, and the job restarts from its checkpoint; ranks that are
only quiet are left alone.

Embedded local cluster (trainctld --local-hosts 2 --hang-timeout 5
--max-retries 0; RetryStrategy per job), tests/integration/ft_trainer.py
with its hosts kept in lock-step by `sync_dir` (a file barrier after each
step, like a collective: a host waiting there prints one line, then
nothing and burns next to no CPU):
  (a) SIGSTOP of algo-2's rank mid-training: attempt 1 fails with
      "algo-2 (host ...) rank 0 made no progress for N s (...; frozen:
      state T)", algo-2's log holds the agent's note and Python's
      faulthandler stacks ("Current thread", "File ..."), the job resumes
      from its checkpoint and Completes, nothing is left running
  (b) algo-2 stuck inside a step (`hang_at_step`: it sleeps there forever
      without output) while algo-1 waits for it in the barrier: the
      reason names algo-2, not the waiting algo-1
  (c) no false positive, two 1-host jobs side by side: one computes
      silently with CPU for longer than the timeout (`busy_at_step`), one
      logs irregularly with gaps just under the timeout (`sleep_pattern`):
      both Complete in one attempt
  (d) a native rank (a shell script that execs sleep) hangs: the job
      Fails with a reason naming it, and its log holds its state from
      /proc and, where gdb is installed, gdb's backtrace ("#0 ...")
  (e) a torch DDP rank (gloo; bench/gray_ddp.py) stuck inside a step
      while its peer waits in the allreduce: torch's threads still gain a
      CPU tick now and then, which is no progress; the reason names
      algo-2 and the job Completes on attempt 2

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_hang.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dir. Takes about a minute on 2 cores.
"""
import os
import re
import shutil
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import Fail, expect, short  # noqa: E402

fl.sc.hermetic_env()

HANG_S = 5
LOCAL_ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0",
              "--grace-period", "2", "--hang-timeout", str(HANG_S), "-v"]
RESTART_RE = re.compile(r"^Attempt (\d+) failed: (.*)\. Restarting \((\d+) restarts? left\)$", re.S)
T0 = time.time()
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


class Job:
    def __init__(self, cl, case, count, hps, retries=1):
        self.name = "hang-%s-%s" % (case, RUN)
        self.case = case
        self.count = count
        hps = dict(hps)
        if count > 1:
            hps["sync_dir"] = os.path.join(cl.tmp, "sync-" + self.name)
        self.req = fl.job_request(self.name, count, hps, retries=retries, max_runtime=120)
        self.desc = None
        self.seen = []
        self.error = None
        self.logs = {}
        self.left = []

    def title(self, what):
        return "(%s) %s" % (self.case, what)


def wait_step(cl, job, algo, step, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cl.logs_dir(job.name)).get(1, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.05)
    raise Fail("%s never logged step=%d within %d s" % (algo, step, timeout))


def start(sm, job):
    sm.create_training_job(**job.req)


def finish(cl, sm, job, timeout=120):
    """Waits for the end, then collects; never raises (job.error)."""
    try:
        job.desc, _ = fl.wait_job(sm, job.name, fl.terminal, timeout, seen=job.seen)
    except Exception as e:
        job.error = "%s: %s" % (type(e).__name__, e)
        try:
            sm.stop_training_job(TrainingJobName=job.name)
            job.desc, _ = fl.wait_job(sm, job.name, fl.terminal, 30, seen=job.seen)
        except Exception as e2:
            job.error += "\n(after the error: %s)" % e2
    job.left = fl.wait_no_procs(job.name, 5.0)
    job.logs = fl.attempt_logs(cl.logs_dir(job.name))


def diag(cl, job):
    return "%s\nseen: %s\ntransitions: %s\n%s" % (
        job.error or "", " -> ".join(s for _, s in job.seen), short(fl.transitions(job.desc or {}), 1500),
        cl.log_tail(12, grep=job.name))


def restarts(job):
    out = []
    for st, msg in fl.transitions(job.desc or {}):
        if st == "Restarting":
            m = RESTART_RE.match(msg)
            out.append((int(m.group(1)), m.group(2)) if m else (None, msg))
    return out


def check_completed(cl, job):
    d = job.desc
    expect(job.error is None and d is not None, diag(cl, job))
    expect(d["TrainingJobStatus"] == "Completed", "ended %s; FailureReason %r\n%s" % (
        d["TrainingJobStatus"], d.get("FailureReason"), diag(cl, job)))


def check_reason(cl, job, frozen):
    rs = restarts(job)
    expect(rs, "no Restarting transition: %s" % short(fl.transitions(job.desc or {}), 1500))
    attempt, reason = rs[0]
    want = (r"^AlgorithmError: algo-2 \(host [^)]+\) rank 0 made no progress for \d+ s "
            r"\(no output, no CPU time, no checkpoint%s\); its stacks are in its log$" %
            ("; frozen: state T" if frozen else ""))
    expect(attempt == 1 and re.match(want, reason), "restart reason %r does not match %r" % (reason, want))
    return reason


def check_stacks(cl, job):
    rows = job.logs.get(1, {}).get("algo-2", [])
    text = [r[3] for r in rows]
    notes = [t for t in text if t.startswith("trainagent: hang: ")]
    expect(notes, "no 'trainagent: hang:' line in algo-2's log of attempt 1: %s" % short(text[-15:], 1500))
    expect(any(re.match(r"^trainagent: hang: pid \d+ \(.*\): state [A-Za-z], wchan ", t) for t in notes),
           "no process state in the notes: %s" % notes)
    expect(any("Current thread" in t or "Thread 0x" in t for t in text) and
           any(re.match(r'^\s+File ".*ft_trainer\.py", line \d+ in ', t) for t in text),
           "no faulthandler stacks in algo-2's log of attempt 1; last lines: %s" % short(text[-20:], 2000))


def check_resumed(cl, job):
    expect(2 in job.logs, "no attempt 2 in the logs (attempts %s)" % sorted(job.logs))
    rf = fl.field(job.logs[2].get("algo-1", []), "ft-resume", "resumed_from")
    expect(rf and int(rf[0]) > 0, "attempt 2 did not resume from a checkpoint: %s" % rf)
    return "resumed from step %s" % rf[0]


def check_no_restart(cl, job):
    expect(not restarts(job), "restarted: %s" % restarts(job))
    expect(sorted(job.logs) == [1], "attempts in the logs: %s" % sorted(job.logs))
    hang = [r[3] for rows in job.logs.get(1, {}).values() for r in rows if "trainagent: hang" in r[3]]
    expect(not hang, "hang notes: %s" % hang)


def check_no_procs(cl, job):
    expect(not job.left, "still running after the job ended: %s" % job.left)


def emit_restart_case(tap, cl, job, frozen):
    tap.case(job.title("the job Completes after a restart"), check_completed, cl, job)
    r = tap.case(job.title("attempt 1 failed naming algo-2's rank: no progress%s" %
                           (", frozen" if frozen else "")), check_reason, cl, job, frozen)
    if r:
        log("%s: %s" % (job.name, r))
    tap.case(job.title("algo-2's log holds its state and Python stacks"), check_stacks, cl, job)
    tap.case(job.title("attempt 2 resumed from the checkpoint"), check_resumed, cl, job)
    tap.case(job.title("no process of the job left"), check_no_procs, cl, job)


def case_a(tap, cl, sm):
    job = Job(cl, "a", 2, {"steps": 14, "ckpt_every": 2, "step_sleep": 0.3})
    try:
        start(sm, job)
        wait_step(cl, job, "algo-2", 5)
        victims = [p for p, h, a, _ in fl.procs_with(job.name) if h == "algo-2" and a == 1]
        expect(victims, "no process of algo-2 found by its marker")
        fl.kill_pids(victims, signal.SIGSTOP)
        log("%s: SIGSTOP to %s" % (job.name, victims))
    except Exception as e:
        job.error = "%s: %s" % (type(e).__name__, e)
    finish(cl, sm, job)
    emit_restart_case(tap, cl, job, True)


def case_b(tap, cl, sm):
    job = Job(cl, "b", 2, {"steps": 10, "ckpt_every": 2, "step_sleep": 1.0, "hang_at_step": 5,
                           "fail_host": "algo-2"})
    start(sm, job)
    finish(cl, sm, job)
    emit_restart_case(tap, cl, job, False)


def case_c(tap, cl, sm):
    busy = Job(cl, "c-busy", 1, {"steps": 4, "ckpt_every": 0, "busy_at_step": 2,
                                 "busy_s": HANG_S + 4, "fail_host": "algo-1"}, retries=None)
    quiet = Job(cl, "c-quiet", 1, {"steps": 7, "ckpt_every": 0,
                                   "sleep_pattern": "0.2,%.1f,1,%.1f" % (HANG_S - 1, HANG_S - 0.5)},
                retries=None)
    start(sm, busy)
    start(sm, quiet)
    finish(cl, sm, busy)
    finish(cl, sm, quiet)
    for job, what in ((busy, "computing silently for %d s" % (HANG_S + 4)),
                      (quiet, "logging with gaps of up to %.1f s" % (HANG_S - 0.5))):
        tap.case(job.title("%s: Completed" % what), check_completed, cl, job)
        tap.case(job.title("%s: one attempt, no hang" % what), check_no_restart, cl, job)
        tap.case(job.title("no process of the job left"), check_no_procs, cl, job)


def case_d(tap, cl, sm):
    script = os.path.join(cl.tmp, "native-hang.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\necho native-start\nexec sleep 600\n")
    os.chmod(script, 0o755)
    job = Job(cl, "d", 1, {}, retries=None)
    job.req = fl.job_request(job.name, 1, {}, checkpoint=False, max_runtime=120, image=script)
    start(sm, job)
    finish(cl, sm, job)

    def failed():
        d = job.desc
        expect(job.error is None and d is not None, diag(cl, job))
        want = (r"^AlgorithmError: algo-1 \(host [^)]+\) rank 0 made no progress for \d+ s "
                r"\(no output, no CPU time\); its state is in its log$")
        expect(d["TrainingJobStatus"] == "Failed" and re.match(want, d.get("FailureReason") or ""),
               "ended %s, FailureReason %r, expected Failed and %r" % (
                   d["TrainingJobStatus"], d.get("FailureReason"), want))
        return d["FailureReason"]

    def state_logged():
        rows = [r[3] for rows in job.logs.values() for r in rows.get("algo-1", [])]
        expect(any(re.match(r"^trainagent: hang: pid \d+ \(sleep\): state S, wchan ", t) for t in rows),
               "no state of the sleep process in the log: %s" % short(rows, 1500))
        if shutil.which("gdb"):
            expect(any(re.match(r"^#0\s+\S", t) for t in rows) and any(t.startswith("Thread 1 ") for t in rows),
                   "gdb is installed, but no backtrace ('Thread 1 ...', '#0 ...') in the log: %s" % short(rows, 2000))
            return "with gdb's backtrace"
        return "gdb not installed: /proc only"

    r = tap.case(job.title("a native rank that hangs: Failed, the reason names it"), failed)
    if r:
        log("%s: %s" % (job.name, r))
    r = tap.case(job.title("its log holds its state (and gdb's backtrace)"), state_logged)
    if r:
        log("%s: %s" % (job.name, r))
    tap.case(job.title("no process of the job left"), check_no_procs, cl, job)


def check_torch_hang(cl, job):
    rs = restarts(job)
    expect(rs, "no Restarting transition: %s" % short(fl.transitions(job.desc or {}), 1500))
    attempt, reason = rs[0]
    # The stuck rank prints a line as it gets stuck (the benchmark times
    # the fault by it), after its peer's last step line: which of the two
    # has been silent longer is a matter of milliseconds here, so either
    # may be named; the hang must be found.
    want = (r"^AlgorithmError: algo-[12] \(host [^)]+\) rank 0 made no progress for \d+ s "
            r"\(no output, no CPU time, no checkpoint\); its stacks are in its log$")
    expect(attempt == 1 and re.match(want, reason), "restart reason %r does not match %r" % (reason, want))
    return reason


def case_e(tap, cl, sm):
    job = Job(cl, "e", 2, {"steps": 1})
    job.req["AlgorithmSpecification"]["TrainingImage"] = "file://" + os.path.join(
        fl.REPO, "bench", "gray_ddp.py")
    job.req["HyperParameters"] = {"sagemaker_torch_distributed_enabled": "true"}
    job.req["Environment"].update({
        "GRAY_STEPS": "24", "GRAY_STEP_SLEEP": "0.1", "GRAY_WORK": "2", "GRAY_CKPT_EVERY": "4",
        "GRAY_HANG_RANK": "1", "GRAY_HANG_AT": "10", "GRAY_MARKER": job.name,
        "GLOO_SOCKET_IFNAME": "lo"})
    start(sm, job)
    finish(cl, sm, job)
    tap.case(job.title("a torch rank stuck in a step: the job Completes after a restart"),
             check_completed, cl, job)
    r = tap.case(job.title("attempt 1 failed as a hang, torch's CPU ticks notwithstanding"),
                 check_torch_hang, cl, job)
    if r:
        log("%s: %s" % (job.name, r))
    tap.case(job.title("no process of the job left"), check_no_procs, cl, job)


def main():
    tap = fl.sc.Tap()
    cl = fl.LocalCluster(2, LOCAL_ARGS, prefix="trainctl-hang-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 2 %s starts, 2 hosts ready" % " ".join(LOCAL_ARGS), err):
        sm = cl.client()
        for c in ("a", "b", "c", "d", "e"):
            t = time.time()
            try:
                globals()["case_" + c](tap, cl, sm)
            except Exception as e:
                tap.ok(False, "(%s) ran to its end" % c, "%s: %s\n%s" % (type(e).__name__, e,
                                                                       traceback.format_exc()))
            log("(%s) took %.1f s" % (c, time.time() - t))
    rc, killed = cl.stop()
    time.sleep(0.5)
    if tap.failed:
        log(cl.log_tail(15))
    cl.check_stopped(tap, rc, killed)
    log("took %.1f s" % (time.time() - T0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
