#!/usr/bin/python3
# trainctl-test: solo
"""Stragglers end to end (docs/distributed.md, "Stragglers"): one host of
a 2-host job throttled to 30 % of a CPU by a cgroup is named, with how
much slower it is, in the job's status message and in /metrics within
the window; the other host never is; with --straggler-action move and a
spare host free, the throttled host is drained with the finding as its
reason and the job goes on from its checkpoint on the spare.

Embedded local cluster (trainctld --local-hosts 3 --telemetry-ms 500
--straggler-window 8 --straggler-action move --max-retries 0), with
tests/integration/ft_trainer.py computing `step_cpu` seconds of CPU time
per step and its two hosts kept in lock-step by `sync_dir` (a file
barrier after each step, like a collective: the host that waits there
sleeps). algo-2's processes go into a cgroup with a CPU quota of 30 % of
a period (v1: cpu.cfs_quota_us / cpu.cfs_period_us under
/sys/fs/cgroup/cpu; v2: cpu.max), removed at the end whatever happens.

TAP on stdout. Run from the top of the tree with Debian's interpreter, as
root (cgroups):
    /usr/bin/python3 tests/integration/test_straggler.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dir. Takes about 30 s.
"""
import os
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import Fail, expect, short  # noqa: E402

fl.sc.hermetic_env()

WINDOW_S = 8
QUOTA = 0.30
LOCAL_ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0",
              "--grace-period", "2", "--telemetry-ms", "500", "--straggler-window", str(WINDOW_S),
              "--straggler-action", "move", "-v"]
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
NAME = "strag-%s" % RUN
NAMED_RE = re.compile(r"^Straggler: (algo-\d+) \(host ([^)]+)\) rank (\d+) is (\d+\.\d)x slower than the "
                      r"job's other hosts: busy \d+\.\d\d of a core \(\d+\.\d\d of it waiting for a CPU\) "
                      r"against \d+\.\d\d \(\d+\.\d\d\), the others' median, over %d s" % WINDOW_S)
GAUGE_RE = re.compile(r'^trainctl_job_straggler_ratio\{job="([^"]*)",algo="([^"]*)",host="([^"]*)"\} (\S+)$')
T0 = time.time()


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


class Throttle:
    """A cgroup with a CPU quota of QUOTA of a period, for some processes."""

    def __init__(self):
        self.v1 = os.path.isdir("/sys/fs/cgroup/cpu") and os.path.exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
        root = "/sys/fs/cgroup/cpu" if self.v1 else "/sys/fs/cgroup"
        self.root = root
        self.path = os.path.join(root, "trainctl-test-straggler-%d-%s" % (os.getpid(), RUN))

    def create(self):
        os.mkdir(self.path)
        if self.v1:
            with open(os.path.join(self.path, "cpu.cfs_period_us"), "w") as f:
                f.write("100000")
            with open(os.path.join(self.path, "cpu.cfs_quota_us"), "w") as f:
                f.write("%d" % int(100000 * QUOTA))
        else:
            with open(os.path.join(self.path, "cpu.max"), "w") as f:
                f.write("%d 100000" % int(100000 * QUOTA))

    def add(self, pids):
        for pid in pids:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write("%d" % pid)

    def remove(self):
        """Gives any process left back to the root group, then removes it."""
        if not os.path.isdir(self.path):
            return
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = [int(x) for x in f.read().split()]
        except OSError:
            left = []
        for pid in left:
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                    f.write("%d" % pid)
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.05)
        os.rmdir(self.path)


def scrape(cl):
    """{(job, algo, host): ratio} from /metrics."""
    r = fl.sc.http_request(cl.port, "GET", "/metrics", timeout=10)
    out = {}
    for line in r.body.decode("utf-8", "replace").splitlines():
        m = GAUGE_RE.match(line)
        if m:
            out[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    return out


def wait_step(cl, attempt, algo, step, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cl.logs_dir(NAME)).get(attempt, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return rows
        time.sleep(0.05)
    raise Fail("%s never logged step=%d in attempt %d within %d s" % (algo, step, attempt, timeout))


def resumed_from(cl, timeout):
    """The step attempt 2's algo-2 resumed from (its ft-resume line)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cl.logs_dir(NAME)).get(2, {}).get("algo-2", [])
        rf = fl.field(rows, "ft-resume", "resumed_from")
        if rf:
            return int(rf[0])
        time.sleep(0.05)
    raise Fail("attempt 2's algo-2 logged no ft-resume line within %d s" % timeout)


class Run:
    def __init__(self):
        self.error = None
        self.slow = self.fast = None  # host names of algo-2 and algo-1
        self.throttled_at = None
        self.named_at = None
        self.named = None  # the transition message
        self.gauges = {}  # (algo, host): the largest ratio seen
        self.messages = set()
        self.desc = None
        self.moved_at = None
        self.hosts = []
        self.left = []
        self.spare = None
        self.resumed = -1


def watch(cl, sm, run, timeout):
    """Polls Describe and /metrics until the job restarted on a spare."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        d = sm.describe_training_job(TrainingJobName=NAME)
        run.desc = d
        for st, msg in fl.transitions(d):
            run.messages.add(msg)
            if st == "Training" and msg.startswith("Straggler: ") and run.named_at is None:
                run.named_at, run.named = time.time(), msg
        for (job, algo, host), v in scrape(cl).items():
            if job == NAME:
                run.gauges[(algo, host)] = max(v, run.gauges.get((algo, host), 0.0))
        if run.moved_at is None and any(st == "Restarting" for st, _ in fl.transitions(d)):
            run.moved_at = time.time()
        if run.named_at and run.moved_at and d.get("SecondaryStatus") == "Training" and \
                fl.attempt_logs(cl.logs_dir(NAME)).get(2, {}).get("algo-2"):
            return
        if fl.terminal(d):
            raise Fail("the job ended %s before it moved: %r" % (d["TrainingJobStatus"], d.get("FailureReason")))
        time.sleep(0.1)
    raise Fail("not named and moved within %d s: named %r, moved at %r; messages %s" % (
        timeout, run.named, run.moved_at, short(sorted(run.messages), 1500)))


def scenario(cl, sm, run):
    thr = Throttle()
    try:
        sm.create_training_job(**fl.job_request(
            NAME, 2, {"steps": 5000, "ckpt_every": 5, "step_cpu": 0.1,
                      "sync_dir": os.path.join(cl.tmp, "sync-" + NAME)}, max_runtime=300))
        wait_step(cl, 1, "algo-2", 3, 30)
        run.slow, run.fast = cl.host_of(NAME, "algo-2"), cl.host_of(NAME, "algo-1")
        victims = [p for p, h, a, _ in fl.procs_with(NAME) if h == "algo-2" and a == 1]
        expect(victims, "no process of algo-2 found by its marker")
        thr.create()
        thr.add(victims)
        run.throttled_at = time.time()
        log("%s: algo-2 on %s (pids %s) throttled to %d %% of a CPU in %s; algo-1 on %s" % (
            NAME, run.slow, victims, QUOTA * 100, thr.path, run.fast))
        watch(cl, sm, run, WINDOW_S + 25)
        run.hosts = cl.hosts()
        run.spare = cl.host_of(NAME, "algo-2")
        run.resumed = resumed_from(cl, 20)
        wait_step(cl, 2, "algo-2", run.resumed + 2, 20)
    except Exception as e:
        run.error = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
    finally:
        try:
            sm.stop_training_job(TrainingJobName=NAME)
            run.desc, _ = fl.wait_job(sm, NAME, fl.terminal, 30)
        except Exception as e:
            run.error = (run.error or "") + "\n(stopping: %s)" % e
        run.left = fl.wait_no_procs(NAME, 5.0)
        thr.remove()


def emit(tap, cl, run):
    def ran():
        expect(run.error is None, "%s\n%s" % (run.error, cl.log_tail(15, grep=NAME)))

    def named():
        m = NAMED_RE.match(run.named or "")
        expect(m, "no Training transition names a straggler as %r; messages: %s" % (
            NAMED_RE.pattern, short(sorted(run.messages), 1500)))
        expect(m.group(1) == "algo-2" and m.group(2) == run.slow and m.group(3) == "0",
               "named %s on %s rank %s, not algo-2 on %s rank 0: %r" % (
                   m.group(1), m.group(2), m.group(3), run.slow, run.named))
        ratio = float(m.group(4))
        expect(ratio > 1.5, "ratio %.1f is not above 1.5: %r" % (ratio, run.named))
        took = run.named_at - run.throttled_at
        expect(took <= WINDOW_S + 10, "named %.1f s after the throttle (window %d s)" % (took, WINDOW_S))
        return "%.1fx, %.1f s after the throttle (window %d s): %s" % (ratio, took, WINDOW_S, run.named)

    def gauge():
        slow = run.gauges.get(("algo-2", run.slow), 0.0)
        expect(slow > 1.5, "trainctl_job_straggler_ratio of algo-2 (%s) never above 1.5: %s" % (
            run.slow, run.gauges))
        fast = run.gauges.get(("algo-1", run.fast))
        expect(fast is not None, "no trainctl_job_straggler_ratio for algo-1 (%s): %s" % (run.fast, run.gauges))
        return "algo-2 up to %.2f, algo-1 up to %.2f" % (slow, fast)

    def other_never_named():
        bad = [m for m in run.messages if m.startswith("Straggler: algo-1 ") or
               ("Straggler: " in m and "(host %s)" % run.fast in m)]
        expect(not bad, "algo-1 (%s) was named: %s" % (run.fast, bad))
        drained = [h["name"] for h in run.hosts if h.get("drained")]
        expect(drained == [run.slow], "drained hosts %s, expected only %s" % (drained, run.slow))

    def drained_with_reason():
        h = [x for x in run.hosts if x.get("name") == run.slow]
        expect(h, "host %s not in GET /v1/hosts: %s" % (run.slow, short(run.hosts)))
        reason = h[0].get("drain_reason") or ""
        expect(reason.startswith("straggler in job '%s': algo-2 (host %s) rank 0 is " % (NAME, run.slow)),
               "drain reason of %s: %r" % (run.slow, reason))
        expect("Draining host %s" % run.slow in run.named, "the status message does not say it drains: %r" %
               run.named)
        return reason

    def moved():
        rs = [m for st, m in fl.transitions(run.desc or {}) if st == "Restarting"]
        expect(rs and rs[0].startswith("Planned move: host '%s' (algo-2) drained." % run.slow),
               "no planned move off %s: %s" % (run.slow, rs))
        expect(run.spare not in (run.slow, run.fast), "attempt 2's algo-2 on %s (algo-2 was %s, algo-1 %s)" % (
            run.spare, run.slow, run.fast))
        expect(run.resumed > 0, "attempt 2 resumed from step %d" % run.resumed)
        return "algo-2 moved from %s to %s, resumed from step %d" % (run.slow, run.spare, run.resumed)

    def no_procs():
        expect(not run.left, "still running after the job ended: %s" % run.left)

    tap.case("the scenario ran to its end", ran)
    r = tap.case("algo-2, throttled to 30 %, is named with its host, rank and ratio > 1.5 in the status "
                 "message within the window", named)
    if r:
        log(r)
    r = tap.case("/metrics: trainctl_job_straggler_ratio of algo-2 above 1.5", gauge)
    if r:
        log(r)
    tap.case("algo-1 is never named nor drained", other_never_named)
    r = tap.case("the straggler is drained with the finding as its reason", drained_with_reason)
    if r:
        log(r)
    r = tap.case("the job moved to the spare as a planned move and resumed from its checkpoint", moved)
    if r:
        log(r)
    tap.case("no process of the job left", no_procs)


def main():
    tap = fl.sc.Tap()
    cl = fl.LocalCluster(3, LOCAL_ARGS, prefix="trainctl-strag-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 %s starts, 3 hosts ready" % " ".join(LOCAL_ARGS), err):
        run = Run()
        scenario(cl, cl.client(), run)
        emit(tap, cl, run)
    rc, killed = cl.stop()
    time.sleep(0.5)
    if tap.failed:
        log(cl.log_tail(20))
    cl.check_stopped(tap, rc, killed)
    log("took %.1f s" % (time.time() - T0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
