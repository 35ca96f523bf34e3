#!/usr/bin/python3
"""Fencing when an agent freezes instead of dying: no two attempts of a
job ever run at the same time.

Embedded local cluster (trainctld --local-hosts 3 --heartbeat-ms 200
--host-deadline-ms 1000), ft_trainer.py as in test_faults.py (checkpoint
every 10 steps):
  (z) a 2-host job; the agent of algo-2's host is frozen with SIGSTOP for
      4 s (its ranks are not: they train on, as they would when only the
      agent hangs). The controller declares the host lost after 1 s and
      restarts the job on the spare. Checked: every process of attempt 1
      on the frozen host was gone before attempt 2's first process
      started (the host's watchdog killed it when the lease ran out, the
      agent being unable to); the job Completes with the weights of a
      run that never stopped; after SIGCONT the thawed agent stores none
      of attempt 1's checkpoints (no torn or stale folder under S3Uri);
      its host serves again; no process of the job is left.
  (d) `trainctl drain-host` of the host of algo-2 of a 2-host job with
      MaximumRetryAttempts 1 (the spare third host free): the job moves
      (transition "Planned move: ..."), algo-2 runs on the spare, the
      drained host takes no work and shows "drained"; a rank failure in
      attempt 2 is still retried (the move spent no retry), and the job
      Completes after 3 attempts with the weights of a run that never
      stopped; `undrain-host` makes the host ready again.
  (f) checkpoints are fenced by attempt: a 1-host job whose rank is
      killed (-9) runs attempt 2; then a checkpoint upload through the
      blob endpoint with the host's token naming attempt 1
      (X-Trainctl-Fence job/uid/1) is refused with 409 and stores
      nothing, a DELETE naming attempt 1 deletes nothing, another uid is
      refused, and the same upload naming attempt 2 is stored.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_fencing.py
BUILD names the build directory; TRAINCTL_TEST_KEEP=1 keeps the temp dir.
"""
import os
import re
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import Fail, expect, short  # noqa: E402

fl.sc.hermetic_env()

ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0", "--grace-period", "2",
        "--restart-wait", "30", "-v"]
HPS = {"steps": 160, "ckpt_every": 10, "step_sleep": 0.03}
FREEZE_S = 4.0
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
START_RE = re.compile(r"^ft-start ts=(\d+\.\d+) attempt=(\d+)")


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def wait_step(cl, name, algo, step, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(cl.logs_dir(name)).get(1, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.05)
    raise Fail("%s never logged step=%d within %d s\n%s" % (algo, step, timeout, cl.log_tail(15)))


class Watch(threading.Thread):
    """Polls /proc every 5 ms: when each of pids was last seen alive."""

    def __init__(self, pids):
        super().__init__(daemon=True)
        self.pids = set(pids)
        self.last_alive = {p: time.time() for p in pids}
        self.stop = False

    def run(self):
        while not self.stop and self.pids:
            now = time.time()
            for p in list(self.pids):
                try:
                    with open("/proc/%d/stat" % p) as f:
                        alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
                except (OSError, IndexError):
                    alive = False
                if alive:
                    self.last_alive[p] = now
                else:
                    self.pids.discard(p)
            time.sleep(0.005)


def attempt_starts(cl, name, attempt):
    """Wall times of the ft-start lines of attempt, from every host."""
    out = []
    for rows in fl.attempt_logs(cl.logs_dir(name)).get(attempt, {}).values():
        for r in rows:
            m = START_RE.match(r[3])
            if m and int(m.group(2)) == attempt:
                out.append(float(m.group(1)))
    return out


def case_z(tap, cl, sm):
    name = "fence-z-%s" % RUN
    req = fl.job_request(name, 2, HPS, retries=2)
    sm.create_training_job(**req)
    wait_step(cl, name, "algo-2", 25)
    host = cl.host_of(name, "algo-2")
    expect(host, "GET /v1/hosts names no host for algo-2")
    agent = cl.agent_pids().get(host)
    expect(agent, "no trainagent --host %s in /proc" % host)
    frozen = [p for p, h, a, _ in fl.procs_with(name) if h == "algo-2" and a == 1]
    expect(frozen, "no process of attempt 1 on algo-2 found")
    watch = Watch(frozen)
    watch.start()
    os.kill(agent, signal.SIGSTOP)
    t_stop = time.time()
    try:
        deadline = t_stop + FREEZE_S
        while time.time() < deadline:
            time.sleep(0.05)
    finally:
        os.kill(agent, signal.SIGCONT)
    d, _ = fl.wait_job(sm, name, fl.terminal, 120)
    watch.stop = True
    starts = attempt_starts(cl, name, 2)
    diag = "frozen pids %s last alive %s (SIGSTOP at %.3f); attempt 2 starts %s; status %s (%s)\n%s" % (
        frozen, {p: "%.3f" % t for p, t in watch.last_alive.items()}, t_stop, ["%.3f" % s for s in starts],
        d["TrainingJobStatus"], d.get("FailureReason"), cl.log_tail(20))
    tap.ok(d["TrainingJobStatus"] == "Completed", "(z) frozen agent: the job Completes", diag)
    tap.ok(starts, "(z) the job restarted (attempt 2) while the agent was frozen", diag)
    if starts:
        last = max(watch.last_alive.values())
        tap.ok(last < min(starts), "(z) attempt 1 on the frozen host was gone %.0f ms before attempt 2 started"
               % ((min(starts) - last) * 1000), diag)
        tap.ok(last - t_stop < FREEZE_S - 1.0, "(z) ... killed while the agent was still frozen (%.2f s after "
               "SIGSTOP)" % (last - t_stop), diag)
    try:
        res = fl.results(cl.s3_path(fl.model_uri(name)))
        ref = fl.reference(HPS)
        same = all(r.get("params_sha256") == ref["params_sha256"] for r in res.values()) and len(res) == 2
    except Exception as e:
        res, same = str(e), False
    tap.ok(same, "(z) the weights equal those of a run that never stopped", short(res, 800))
    probs, names = fl.store_problems(cl.s3_path(fl.ckpt_uri(name)))
    tap.ok(not probs, "(z) no torn or stale checkpoint under S3Uri after the thaw", "\n".join(probs))
    left = fl.wait_no_procs(name, 5.0)
    tap.ok(not left, "(z) no process of the job left", short(left))
    try:
        cl.wait_hosts(lambda hs: any(h["name"] == host and h.get("state") in ("ready", "busy") for h in hs), 15,
                      "host %s ready again" % host)
        back = True
    except Fail as e:
        back = str(e)
    tap.ok(back is True, "(z) the thawed host serves again", back)


def trainctl(cl, *args):
    p = fl.subprocess.run([fl.TRAINCTL, "--endpoint", cl.endpoint] + list(args), stdout=fl.subprocess.PIPE,
                          stderr=fl.subprocess.PIPE, timeout=30)
    return p.returncode, p.stdout.decode() + p.stderr.decode()


def case_d(tap, cl, sm):
    name = "fence-d-%s" % RUN
    hps = dict(HPS, fail_at_step=140, fail_host="algo-1", fail_attempt=2)
    sm.create_training_job(**fl.job_request(name, 2, hps, retries=1))
    wait_step(cl, name, "algo-2", 30)
    host = cl.host_of(name, "algo-2")
    expect(host, "GET /v1/hosts names no host for algo-2")
    rc, out = trainctl(cl, "drain-host", host, "--reason", "disk swap")
    tap.ok(rc == 0, "(d) trainctl drain-host %s --reason ...: exit 0" % host, out)
    seen_hosts = set()
    deadline = time.time() + 120
    while time.time() < deadline:
        d = sm.describe_training_job(TrainingJobName=name)
        h2 = cl.host_of(name, "algo-2")
        if h2:
            seen_hosts.add(h2)
        if fl.terminal(d):
            break
        time.sleep(0.1)
    trans = fl.transitions(d)
    moves = [m for st, m in trans if st == "Restarting" and m.startswith("Planned move: host '%s'" % host)]
    fails = [m for st, m in trans if st == "Restarting" and m.startswith("Attempt 2 failed")]
    diag = "status %s (%s); algo-2 seen on %s; transitions %s\n%s" % (
        d["TrainingJobStatus"], d.get("FailureReason"), sorted(seen_hosts), short(trans, 2000),
        cl.log_tail(15))
    tap.ok(d["TrainingJobStatus"] == "Completed", "(d) the job Completes", diag)
    tap.ok(len(moves) == 1, "(d) one planned move off the drained host in its transitions", diag)
    tap.ok(len(fails) == 1, "(d) the rank failure of attempt 2 was still retried (the move spent no retry)", diag)
    tap.ok(len(seen_hosts - {host}) >= 1, "(d) algo-2 ran on another host after the drain", diag)
    try:
        res = fl.results(cl.s3_path(fl.model_uri(name)))
        ref = fl.reference(HPS)
        same = len(res) == 2 and all(r.get("params_sha256") == ref["params_sha256"] for r in res.values())
    except Exception as e:
        res, same = str(e), False
    tap.ok(same, "(d) the weights equal those of a run that never stopped", short(res, 800))
    hs = {h["name"]: h for h in cl.hosts()}
    tap.ok(hs.get(host, {}).get("state") == "drained" and hs[host].get("drain_reason") == "disk swap",
           "(d) the drained host shows \"drained\" with its reason", short(hs.get(host)))
    other = "fence-d2-%s" % RUN
    sm.create_training_job(**fl.job_request(other, 2, {"steps": 20, "ckpt_every": 0}))
    fl.wait_job(sm, other, lambda x: x.get("SecondaryStatus") in ("Training", "Completed"), 60)
    on = {cl.host_of(other, "algo-1"), cl.host_of(other, "algo-2")}
    tap.ok(host not in on, "(d) a new 2-host job does not land on the drained host", "%s" % on)
    fl.wait_job(sm, other, fl.terminal, 60)
    rc, out = trainctl(cl, "undrain-host", host)
    hs = {h["name"]: h for h in cl.hosts()}
    tap.ok(rc == 0 and hs.get(host, {}).get("state") == "ready" and not hs[host].get("drained"),
           "(d) undrain-host: the host is ready again", "%s\n%s" % (out, short(hs.get(host))))


def watchdogs(cl):
    return [pid for pid, argv in fl.proc_argvs()
            if len(argv) >= 3 and argv[1] == "watchdog" and argv[2].startswith(cl.state + "/")]


def case_f(tap, cl, sm):
    import sqlite3
    name = "fence-f-%s" % RUN
    sm.create_training_job(**fl.job_request(name, 1, dict(HPS, steps=400), retries=2))
    wait_step(cl, name, "algo-1", 15)
    ranks = [p for p, h, a, _ in fl.procs_with(name) if a == 1]
    expect(ranks, "no rank of attempt 1")
    fl.kill_pids(ranks)
    deadline = time.time() + 60
    while time.time() < deadline and not attempt_starts(cl, name, 2):
        time.sleep(0.05)
    expect(attempt_starts(cl, name, 2), "attempt 2 did not start")
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(cl.state, "trainctl.db"), uri=True)
    uid, attempt = db.execute("SELECT uid, attempt FROM jobs WHERE name = ?", (name,)).fetchone()
    db.close()
    expect(attempt == 2, "the job is at attempt %s" % attempt)
    host = cl.host_of(name, "algo-1")
    token = fl.sc.host_token(cl.state, host)
    key = "ckpt/%s/fence-probe" % name
    path = cl.s3_path("s3://%s/%s" % (fl.BUCKET, key))

    def send(method, fence, body=b"stale checkpoint bytes"):
        return fl.sc.http_request(cl.port, method, "/v1/blobs/%s/%s" % (fl.BUCKET, key),
                                  body=body if method == "PUT" else b"",
                                  headers={"Authorization": "Bearer " + token, "X-Trainctl-Fence": fence})
    r = send("PUT", "%s/%s/1" % (name, uid))
    expect(r.status == 409 and b"AttemptFenced" in r.body, "PUT naming attempt 1: %r" % r)
    expect(not os.path.exists(path), "the stale upload is visible at %s" % path)
    r = send("PUT", "%s/%s/2" % (name, "0" * 16))
    expect(r.status == 409, "PUT naming another uid: %r" % r)
    r = send("PUT", "%s/%s/2" % (name, uid), b"current")
    expect(r.status == 200 and open(path, "rb").read() == b"current", "PUT naming attempt 2: %r" % r)
    r = send("DELETE", "%s/%s/1" % (name, uid))
    expect(r.status == 409 and os.path.exists(path), "DELETE naming attempt 1: %r" % r)
    leftovers = [f for _, _, fs in os.walk(os.path.dirname(path)) for f in fs if ".trainctl-tmp" in f]
    expect(not leftovers, "temp files left: %s" % leftovers)
    d, _ = fl.wait_job(sm, name, fl.terminal, 120)
    expect(d["TrainingJobStatus"] == "Completed", "job ended %s: %s" % (d["TrainingJobStatus"],
                                                                       d.get("FailureReason")))


def main():
    tap = fl.sc.Tap()
    try:
        fl.reference(HPS)
    except Exception as e:
        tap.ok(False, "ft_trainer.py runs here (reference run)", str(e))
        return tap.finish()
    cl = fl.LocalCluster(3, ARGS, prefix="trainctl-fence-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts, 3 hosts ready", err):
        sm = cl.client()
        dogs = watchdogs(cl)
        tap.ok(len(dogs) == 3, "one watchdog per host", "%s" % dogs)
        for c, fn in (("z", case_z), ("d", case_d), ("f", case_f)):
            try:
                if c == "f":
                    tap.case("(f) a stale attempt's checkpoint uploads and deletes are refused; the "
                             "current one's stored", fn, tap, cl, sm)
                else:
                    fn(tap, cl, sm)
            except Exception as e:
                tap.ok(False, "(%s) ran to its end" % c, "%s: %s\n%s\n%s" % (
                    type(e).__name__, e, traceback.format_exc(), cl.log_tail(15)))
    rc, killed = cl.stop()
    time.sleep(0.5)
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
