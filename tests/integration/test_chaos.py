#!/usr/bin/python3
"""Seeded chaos on a 4-host namespace cluster, checked by invariants.

scripts/cluster.sh up --hosts 4 (sshd per host, agents provisioned over
SSH, credentials on; trainctld --heartbeat-ms 200 --host-deadline-ms 1000),
two ft_trainer.py jobs at once (2 and 1 hosts, so one host is spare; a
checkpoint every K=10 steps, MaximumRetryAttempts 30), and for WINDOW seconds one fault
after another, chosen by a seeded generator:

  rank-kill9   kill -9 of a random rank of a random job
  agent-kill9  kill -9 of the agent of a host running a job
  agent-stop   SIGSTOP of such an agent for 2.5 s (its ranks keep running)
  link-down    `cluster.sh link-down` of such a host for 2 s
  ctrl-kill9   kill -9 of trainctld, started again at once with the same
               command line (cluster.sh's trainctld.cmd)

Every step of every rank appends `<time> <attempt> <host> <step>` to a
trace file per job (ft_trainer.py's FT_TRACE). At the end:

  - every job Completed (or Failed only with its retries spent);
  - no two attempts of a job ever ran at the same time: the last step of
    attempt N was traced before the first step of attempt N+1;
  - no torn checkpoint under any job's S3Uri (a step-* folder without
    its manifest, a file that does not match it, a .tmp-* upload);
  - steps redone at each restart <= K + what the lease lets run unseen
    (deadline / step time);
  - the weights of every completed job equal those of a fault-free run;
  - no process of any job left anywhere, and on the hosts only sshd,
    their agent and its watchdog.

Before the seeds, (k): kill -9 of the agent of a host running a 2-host job
(SSH-provisioned): its watchdog starts the agent again at once, the new
agent re-attaches to the running ranks, and the job Completes in one
attempt (no Restarting), with the reference weights.

Each seed must also have injected at least MIN_FAULTS faults (a fault
whose target was missing counts as not injected) and seen at least one
restart (a Restarting transition of some job): a run in which nothing was
broken proves nothing. A failing check names the seed and the command
that replays it.

CHAOS_SEEDS=s1,s2 picks the seeds (default: the fixed list SEEDS, so
every run plays the same scenarios); CHAOS_SEEDS_ONLY=1 leaves out (k);
CHAOS_WINDOW the seconds of faults
per seed (default 20). Root only (it
skips otherwise). TAP on stdout; run from the top of the tree:
    /usr/bin/python3 tests/integration/test_chaos.py
"""
import os
import random
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

K = 10
STEP_S = 0.04
SEEDS = (1, 2)
MIN_FAULTS = 4
DEADLINE_MS = 1000
PREFIX, NET, PORT = fl.sc.run_names("ch")  # this run's own
ARGS = ["--grace-period", "2", "--heartbeat-ms", "200", "--host-deadline-ms", str(DEADLINE_MS),
        "--restart-wait", "30", "--max-retries", "0", "-v"]
HPS = {"steps": 260, "ckpt_every": K, "step_sleep": STEP_S}
WINDOW = float(os.environ.get("CHAOS_WINDOW") or 20)
KINDS = ["rank-kill9", "agent-kill9", "agent-stop", "link-down", "ctrl-kill9"]


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def agent_pid(ns, node):
    """The trainagent daemon in node's network namespace."""
    cands = [pid for pid, argv in fl.proc_argvs()
             if argv and os.path.basename(argv[0]) == "trainagent" and "--controller" in argv and
             argv[1:2] != ["watchdog"]]  # a watchdog that respawns agents carries their command line
    mine = ns.netns_pids(node, cands)
    # Its forked workers have the same command line: the oldest is it.
    return min(mine) if mine else None


def restart_controller(ns):
    """kill -9 of trainctld and the same command again, as cluster.sh ran it
    (its pid file updated, so `cluster.sh down` stops the new one)."""
    ctl = os.path.join(ns.state, "controller")
    with open(os.path.join(ctl, "trainctld.pid")) as f:
        pid = int(f.read().strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 5
    while time.time() < deadline and os.path.exists("/proc/%d" % pid):
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    with open(os.path.join(ctl, "trainctld.cmd")) as f:
        cmd = f.read().strip()
    log_f = open(os.path.join(ctl, "trainctld.log"), "ab")
    p = fl.subprocess.Popen(["/bin/bash", "-c", "exec " + cmd], stdin=fl.subprocess.DEVNULL, stdout=log_f,
                            stderr=log_f, start_new_session=True)
    log_f.close()
    with open(os.path.join(ctl, "trainctld.pid"), "w") as f:
        f.write("%d\n" % p.pid)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            if ns.request("GET", "/healthz", timeout=1)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise Fail("trainctld did not answer /healthz within 20 s of its restart")


def redone(trace):
    """[(attempt, step reached by algo-1 (rank 0), the next attempt that ran
    a step resumed from)]; attempts killed before their first step are
    skipped."""
    out = []
    atts = [a for a in sorted(trace) if any(h == "algo-1" for _, h, _ in trace[a])]
    for a, b in zip(atts, atts[1:]):
        reached = max(s for _, h, s in trace[a] if h == "algo-1")
        resumed = min(s for _, h, s in trace[b] if h == "algo-1") - 1
        out.append((a, reached, resumed))
    return out


def timeline(trace, t0):
    """{attempt: (first step's time, last step's time, first step, last
    step)} of algo-1, times in s since the faults began."""
    out = {}
    for a, pts in sorted(trace.items()):
        mine = sorted((t, s) for t, h, s in pts if h == "algo-1")
        if mine:
            out[a] = (round(mine[0][0] - t0, 2), round(mine[-1][0] - t0, 2), mine[0][1], mine[-1][1])
    return out


class Chaos:
    def __init__(self, ns, sm, seed, tmp):
        self.ns, self.sm, self.seed, self.rng = ns, sm, seed, random.Random(seed)
        self.t0 = time.time()
        self.tmp = tmp
        self.faults = []
        self.pending = []  # timers that heal a fault
        self.jobs = []

    def create(self):
        # Three of the four hosts busy: a spare to restart on, so that a
        # host that is not fenced in time shows as two attempts at once.
        for n, count in ((1, 2), (2, 1)):
            name = "chaos-%d-%s-%d" % (self.seed % 100000, "%x" % (int(time.time() * 1000) % 0xffffff), n)
            req = fl.job_request(name, count, HPS, retries=30, itype=self.ns.itype)
            req["Environment"]["FT_TRACE"] = os.path.join(self.tmp, name + ".trace")
            self.sm.create_training_job(**req)
            self.jobs.append((name, count, req["Environment"]["FT_TRACE"]))

    def busy_hosts(self):
        return sorted(h["name"] for h in self.ns.hosts() if h.get("job") and h.get("state") == "busy")

    def heal_later(self, delay, fn, what):
        t = threading.Timer(delay, fn)
        t.daemon = True
        t.start()
        self.pending.append((t, fn, what))

    def inject(self, t0):
        kind = self.rng.choice(KINDS)
        if kind == "ctrl-kill9":
            restart_controller(self.ns)
            self.faults.append((time.time() - t0, kind, "trainctld"))
            return
        if kind == "rank-kill9":
            cands = sorted((p, n, h, a) for n, _, _ in self.jobs for p, h, a, _ in fl.procs_with(n))
            if not cands:
                self.faults.append((time.time() - t0, "?", "not injected: %s found no rank" % kind))
                return
            pid, name, host, a = self.rng.choice(cands)
            os.kill(pid, signal.SIGKILL)
            self.faults.append((time.time() - t0, kind, "%s %s attempt %s" % (name[-8:], host, a)))
            return
        busy = self.busy_hosts()
        if not busy:
            self.faults.append((time.time() - t0, "?", "not injected: %s found no busy host" % kind))
            return
        node = self.rng.choice(busy)
        if kind == "link-down":
            self.ns.link(node, up=False)
            self.heal_later(2.0, lambda n=node: self.ns.link(n, up=True), "link-up %s" % node)
        else:
            pid = agent_pid(self.ns, node)
            if not pid:
                self.faults.append((time.time() - t0, "?", "not injected: no agent on %s" % node))
                return
            if kind == "agent-kill9":
                os.kill(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGSTOP)
                self.heal_later(2.5, lambda p=pid: os.kill(p, signal.SIGCONT), "SIGCONT %d" % pid)
        self.faults.append((time.time() - t0, kind, node))

    def run(self):
        t0 = self.t0 = time.time()
        while time.time() - t0 < WINDOW:
            time.sleep(self.rng.uniform(1.0, 2.5))
            # One long fault at a time: the next waits for the last to heal.
            while any(t.is_alive() for t, _, _ in self.pending):
                time.sleep(0.1)
            try:
                self.inject(t0)
            except (OSError, Fail) as e:
                self.faults.append((time.time() - t0, "?", "not injected: %s" % e))
        for t, fn, what in self.pending:
            t.join(5)

    def heal_all(self):
        for t, fn, what in self.pending:
            t.cancel()
            try:
                fn()
            except Exception:
                pass


def case_k(tap, ns, sm, tmp):
    name = "chaos-k-%x" % (int(time.time() * 1000) % 0xffffff)
    hps = dict(HPS, steps=200)
    req = fl.job_request(name, 2, hps, retries=2, itype=ns.itype)
    req["Environment"]["FT_TRACE"] = os.path.join(tmp, name + ".trace")
    sm.create_training_job(**req)
    deadline = time.time() + 60
    while time.time() < deadline and max([s for _, h, s in fl.read_trace(req["Environment"]["FT_TRACE"]).get(1, [])
                                          if h == "algo-2"] or [0]) < 40:
        time.sleep(0.05)
    node = ns.host_of(name, "algo-2")
    expect(node, "GET /v1/hosts names no host for algo-2")
    old = agent_pid(ns, node)
    expect(old, "no agent on %s" % node)
    os.kill(old, signal.SIGKILL)
    new, t0 = None, time.time()
    while time.time() - t0 < 10 and not new:
        p = agent_pid(ns, node)
        new = p if p and p != old else None
        time.sleep(0.02)
    back_ms = (time.time() - t0) * 1000
    d, _ = fl.wait_job(sm, name, fl.terminal, 90)
    trans = fl.transitions(d)
    diag = "agent %s -> %s after %.0f ms; status %s (%s); transitions %s\n%s" % (
        old, new, back_ms, d["TrainingJobStatus"], d.get("FailureReason"), short(trans, 1500), ns.log_tail(20))
    tap.ok(new, "(k) kill -9 of an SSH host's agent: a new agent runs on %s (%.0f ms)" % (node, back_ms), diag)
    tap.ok(d["TrainingJobStatus"] == "Completed" and not [m for st, m in trans if st == "Restarting"],
           "(k) ... the job Completes without a restart (the new agent re-attached)", diag)
    try:
        res = fl.results(ns.s3_path(fl.model_uri(name)))
        ref = fl.reference(hps)
        same = len(res) == 2 and all(r.get("params_sha256") == ref["params_sha256"] for r in res.values())
    except Exception as e:
        res, same = str(e), False
    tap.ok(same, "(k) ... with the weights of a run that never stopped", short(res, 600))
    tap.ok(not fl.wait_no_procs(name, 10.0), "(k) ... no process of the job left", short(fl.procs_with(name)))


def check_seed(tap, ns, sm, seed, tmp):
    ch = Chaos(ns, sm, seed, tmp)
    ch.create()
    try:
        ch.run()
    finally:
        ch.heal_all()
    log("seed %d: %d faults: %s" % (seed, len(ch.faults), "; ".join("%.1f %s %s" % f for f in ch.faults)))
    descs = {}
    for name, _, _ in ch.jobs:
        try:
            descs[name], _ = fl.wait_job(sm, name, fl.terminal, 150, interval=0.2)
        except Fail as e:
            descs[name] = {"TrainingJobStatus": "not ended: %s" % e}
            try:
                sm.stop_training_job(TrainingJobName=name)
            except Exception:
                pass
    injected = [f for f in ch.faults if f[1] != "?"]
    tag = "(seed %d, %d faults)" % (seed, len(injected))
    replay = "replay: CHAOS_SEEDS=%d /usr/bin/python3 tests/integration/test_chaos.py" % seed
    tap.ok(len(injected) >= MIN_FAULTS, "%s at least %d faults were injected" % (tag, MIN_FAULTS),
           "%s\n%s" % (replay, "; ".join("%.1f %s %s" % f for f in ch.faults)))
    restarts = sum(1 for d in descs.values() for st, _ in fl.transitions(d) if st == "Restarting")
    tap.ok(restarts >= 1, "%s the faults caused restarts (%d)" % (tag, restarts),
           "%s\nno job went through Restarting: %s" % (replay, short({n: fl.transitions(d) for n, d in descs.items()}, 2000)))
    bad = ["%s: %s %s\ntransitions %s" % (n, d["TrainingJobStatus"], d.get("FailureReason") or "",
                                         short(fl.transitions(d), 3000))
           for n, d in descs.items() if d["TrainingJobStatus"] != "Completed"]
    tap.ok(not bad, "%s every job Completed" % tag, "\n".join(bad) + "\n" + ns.log_tail(40))
    traces = {name: fl.read_trace(path) for name, _, path in ch.jobs}
    bad = ["%s: %s" % (n, b) for n, tr in traces.items() for b in fl.overlaps(tr)]
    tap.ok(not bad and all(traces.values()), "%s no two attempts of a job ever ran at the same time" % tag,
           "\n".join(bad) or "a trace is empty: %s" % {n: len(t) for n, t in traces.items()})
    probs = []
    for name, _, _ in ch.jobs:
        p, _ = fl.store_problems(ns.s3_path(fl.ckpt_uri(name)))
        probs += ["%s: %s" % (name, x) for x in p]
    tap.ok(not probs, "%s no torn checkpoint under any job's S3Uri" % tag, "\n".join(probs))
    limit = K + DEADLINE_MS / 1000.0 / STEP_S + 2
    rd = {n: redone(tr) for n, tr in traces.items()}
    worst = [(n, a, r, s) for n, v in rd.items() for a, r, s in v if r - s > limit]
    tap.ok(not worst, "%s steps redone at each restart <= K + a lease of steps (%d)" % (tag, limit),
           "%s\nalgo-1 by attempt (first s, last s, first step, last step): %s\n%s" % (
               short(rd, 2000), short({n: timeline(tr, ch.t0) for n, tr in traces.items()}, 3000),
               ns.log_tail(80, grep=worst[0][0]) if worst else ""))
    log("redone (attempt, reached, resumed from): %s" % short(rd, 2000))
    bad = []
    ref = fl.reference(HPS)
    for name, count, _ in ch.jobs:
        if descs[name]["TrainingJobStatus"] != "Completed":
            continue
        try:
            res = fl.results(ns.s3_path(fl.model_uri(name)))
            if len(res) != count or any(r.get("params_sha256") != ref["params_sha256"] for r in res.values()):
                bad.append("%s: %s" % (name, short(res, 400)))
        except Fail as e:
            bad.append("%s: %s" % (name, e))
    tap.ok(not bad, "%s the weights of every completed job equal a fault-free run" % tag, "\n".join(bad))
    left = {n: fl.wait_no_procs(n, 10.0) for n, _, _ in ch.jobs}
    tap.ok(not any(left.values()), "%s no process of any job left" % tag, short(left))
    ns.wait_hosts(lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts, 90, "every host ready")


def main():
    tap = fl.sc.Tap()
    why = fl.ns_skip_reason()
    if why:
        tap.skip("chaos on a namespace cluster", why)
        return tap.finish()
    seeds = [int(s) for s in (os.environ.get("CHAOS_SEEDS") or "").split(",") if s.strip()]
    if not seeds:
        seeds = list(SEEDS)
    log("seeds %s (CHAOS_SEEDS=%s reproduces the choices)" % (seeds, ",".join(map(str, seeds))))
    try:
        fl.reference(HPS)
    except Exception as e:
        tap.ok(False, "ft_trainer.py runs here (reference run)", str(e))
        return tap.finish()
    ns = fl.NsCluster(PREFIX, NET, PORT, n_hosts=4, extra=ARGS)
    tmp = fl.tempfile.mkdtemp(prefix="trainctl-chaos-")
    t = time.time()
    try:
        err = ns.up()
        if tap.ok(err is None, "cluster.sh up --hosts 4 (%.1f s)" % (time.time() - t), err):
            sm = ns.client()
            try:
                if not os.environ.get("CHAOS_SEEDS_ONLY"):
                    case_k(tap, ns, sm, tmp)
            except Exception as e:
                tap.ok(False, "(k) ran to its end", "%s: %s\n%s\n%s" % (
                    type(e).__name__, e, traceback.format_exc(), ns.log_tail(15)))
            for seed in seeds:
                t = time.time()
                try:
                    check_seed(tap, ns, sm, seed, tmp)
                except Exception as e:
                    tap.ok(False, "(seed %d) ran to its end" % seed, "%s: %s\n%s\n%s" % (
                        type(e).__name__, e, traceback.format_exc(), ns.log_tail(15)))
                log("seed %d took %.1f s" % (seed, time.time() - t))
    finally:
        rc, out, err2 = ns.down()
        tap.ok(rc == 0, "cluster.sh down: nothing left", out + err2)
        fl.shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
