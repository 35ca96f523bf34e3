#!/usr/bin/python3
"""Restart latency of a failed training attempt.

(1) Rank death -> next attempt running, on the embedded local cluster
    (trainctld --local-hosts 3): one job per row whose ranks fail on every
    attempt (tests/integration/ft_trainer.py with fail_after_steps, fail_attempt
    0, MaximumRetryAttempts = trials), so each restart is one trial. From
    the program's own output (a line with a microsecond time.time() right
    before it dies, and one as the first thing it does, before importing
    numpy), read back from the controller's log files
    <state-dir>/logs/<job>/<algo>-<epoch>.log:
        detect   death -> Describe's `Restarting` transition (its StartTime)
        restart  death -> `Starting attempt N+1` transition
        exec'd   death -> the last rank of attempt N+1 exec'd (the image is
                 tests/integration/ft_trainer.sh: bash prints
                 $EPOCHREALTIME, then execs python)
        first line  death -> the last rank's first line from Python
(2) Host partition (root): scripts/cluster.sh up --hosts 3, a 2-host job,
    `cluster.sh link-down` of algo-2's host; from just before link-down:
        noticed  Describe says Restarting, or GET /v1/hosts says the host
                 is no longer ready/busy (whichever first; both printed)
        running  every rank of attempt 2 (algo-2 on the spare) printed its
                 first line
    then StopTrainingJob, link-up, wait for every host to be ready (and
    still ready 5 s later), next trial.
    Run with trainctld's default deadlines (--heartbeat-ms 1000
    --host-deadline-ms 3000) and with --heartbeat-ms 200 --host-deadline-ms
    1000.

Only public interfaces: the SageMaker API (boto3), GET /v1/hosts, the log
files, scripts/cluster.sh.

Usage: /usr/bin/python3 bench/restart.py [--trials 10] [--ns-trials 10]
           [--no-ns] [--build build]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

ANCHORS = [
    ("torchrun (c10d rendezvous)", "15 s to declare a node dead; the surviving workers hang until then"),
    ("Ray", "20-55 s"),
    ("Slurm", "300 s (SlurmdTimeout)"),
]


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ms(x):
    return "%.0f" % (x * 1000) if x == x else "-"


def first_ts(rows, prefix):
    for r in rows:
        if r[3].startswith(prefix):
            m = re.search(r"\bts=([0-9.]+)", r[3])
            if m:
                return float(m.group(1))
    return None


def transition_times(d):
    """[(status, message, start time in s)]"""
    out = []
    for t in d.get("SecondaryStatusTransitions") or []:
        out.append((t.get("Status"), t.get("StatusMessage") or "", t["StartTime"].timestamp()))
    return out


def startup_overhead(fl, n=10):
    """exec -> first output line of ft_trainer.py, here (median, s)."""
    xs = []
    env = dict(os.environ, FT_EXIT_AFTER_START="1")
    for _ in range(n):
        t = time.time()
        out = subprocess.run([fl.TRAINER, "train"], env=env, stdout=subprocess.PIPE).stdout.decode()
        m = re.search(r"ts=([0-9.]+)", out)
        if m:
            xs.append(float(m.group(1)) - t)
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------- (1) local

def local_rows(fl, trials):
    cl = fl.LocalCluster(3, ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "-v"], prefix="ft-bench-")
    err = cl.start()
    if err:
        sys.exit("trainctld: %s" % err)
    sm = cl.client()
    specs = [
        ("3 hosts, algo-2 exits 1, checkpoints on", 3, {"fail_host": "algo-2"}, True),
        ("3 hosts, algo-2 killed by SIGKILL, checkpoints on", 3, {"fail_host": "algo-2", "fail_signal": 9}, True),
        ("1 host, exits 1, no CheckpointConfig", 1, {}, False),
    ]
    rows = []
    try:
        for n, (label, count, extra, ck) in enumerate(specs):
            name = "bench-r%d-%x" % (n, int(time.time() * 1000) % 0xffffff)
            hps = {"steps": 100000, "ckpt_every": 1, "step_sleep": 0.02, "fail_after_steps": 5, "fail_attempt": 0}
            hps.update(extra)
            sm.create_training_job(**fl.job_request(name, count, hps, retries=trials, checkpoint=ck,
                                                    image=fl.TRAINER_SH))
            d, _ = fl.wait_job(sm, name, fl.terminal, 60 + 5 * trials, interval=0.2)
            time.sleep(0.5)
            logs = fl.attempt_logs(cl.logs_dir(name))
            tr = transition_times(d)
            restarting = [t for s, m, t in tr if s == "Restarting"]
            starting = {int(m.split()[2]): t for s, m, t in tr
                        if s == "Starting" and m.startswith("Starting attempt ")}
            det, rst, exe, run = [], [], [], []
            for a in range(1, trials + 1):
                dead = [first_ts(rows_, "ft-die") for rows_ in logs.get(a, {}).values()]
                dead = [x for x in dead if x]
                nxt = [first_ts(rows_, "ft-start") for rows_ in logs.get(a + 1, {}).values()]
                nex = [first_ts(rows_, "ft-exec") for rows_ in logs.get(a + 1, {}).values()]
                if not dead or len(nxt) != count or None in nxt or None in nex:
                    continue
                t0 = min(dead)
                run.append(max(nxt) - t0)
                exe.append(max(nex) - t0)
                if a - 1 < len(restarting):
                    det.append(restarting[a - 1] - t0)
                if a + 1 in starting:
                    rst.append(starting[a + 1] - t0)
            rows.append((label, len(run), det, rst, exe, run, d["TrainingJobStatus"]))
            print("# %s: exec'd per trial (ms): %s" % (label, " ".join(ms(x) for x in exe)))
            sys.stdout.flush()
    finally:
        cl.stop()
        cl.cleanup()
    return rows


# ---------------------------------------------------------------- (2) partition

def ns_rows(fl, trials, configs):
    out = []
    for label, extra in configs:
        ns = fl.NsCluster(*fl.sc.run_names("fb"), extra=["--grace-period", "1", "-v"] + extra)
        err = ns.up()
        if err:
            out.append((label, 0, [], [], [], [], "cluster.sh up failed: %s" % err[:300]))
            ns.down()
            continue
        sm = ns.client()
        settle(fl, ns)
        noticed_d, noticed_h, noticed, running = [], [], [], []
        note = ""
        try:
            for k in range(trials):
                r = partition_trial(fl, ns, sm, "bench-p%d-%x" % (k, int(time.time() * 1000) % 0xffffff))
                if r is None:
                    note = "(trials discarded: see above)"
                    continue
                noticed_d.append(r[0])
                noticed_h.append(r[1])
                noticed.append(min(r[0], r[1]))
                running.append(r[2])
        finally:
            ns.down()
        out.append((label, len(running), noticed, noticed_d, noticed_h, running, note))
    return out


def partition_trial(fl, ns, sm, name):
    hps = {"steps": 100000, "step_sleep": 0.05, "ckpt_every": 10}
    req = fl.job_request(name, 2, hps, retries=1, itype=ns.itype)
    sm.create_training_job(**req)
    try:
        fl.wait_job(sm, name, fl.running, 60, interval=0.1)
        deadline = time.time() + 30
        while time.time() < deadline:
            lg = fl.attempt_logs(ns.logs_dir(name)).get(1, {})
            if len(lg) == 2 and all(fl.last_step(v) >= 5 for v in lg.values()):
                break
            time.sleep(0.1)
        victim = ns.host_of(name, "algo-2")
        seen = {}
        stop = threading.Event()

        def poll_describe():
            while not stop.is_set():
                d = sm.describe_training_job(TrainingJobName=name)
                if d.get("SecondaryStatus") != "Training":
                    seen.setdefault("describe", time.time())
                    return
                time.sleep(0.005)

        def poll_hosts():
            while not stop.is_set():
                try:
                    st = {h["name"]: h["state"] for h in ns.hosts()}.get(victim)
                except Exception:
                    st = None
                if st not in ("ready", "busy", None):
                    seen.setdefault("hosts", time.time())
                    return
                time.sleep(0.005)
        ths = [threading.Thread(target=poll_describe, daemon=True), threading.Thread(target=poll_hosts, daemon=True)]
        t0 = time.time()
        ns.link(victim, up=False)
        for t in ths:
            t.start()
        deadline = time.time() + 30
        t_run = None
        while time.time() < deadline:
            lg = fl.attempt_logs(ns.logs_dir(name)).get(2, {})
            ts = [first_ts(v, "ft-start") for v in lg.values()]
            if len(ts) == 2 and None not in ts and "describe" in seen and "hosts" in seen:
                t_run = max(ts)
                break
            if fl.terminal(sm.describe_training_job(TrainingJobName=name)):
                break
            time.sleep(0.05)
        stop.set()
        ns.link(victim, up=True)
        if t_run is None or t_run < t0:
            d = sm.describe_training_job(TrainingJobName=name)
            print("# %s: trial discarded: attempt 2 %s (seen %s); %s" % (
                name, "started before the partition" if t_run else "not running within 30 s", seen,
                [m for s_, m in fl.transitions(d) if s_ == "Restarting"]))
            return None
        print("# %s: %s partitioned; noticed %s ms (Describe) / %s ms (GET /v1/hosts); attempt 2 running %s ms" % (
            name, victim, ms(seen["describe"] - t0), ms(seen["hosts"] - t0), ms(t_run - t0)))
        sys.stdout.flush()
        return seen["describe"] - t0, seen["hosts"] - t0, t_run - t0
    finally:
        try:
            sm.stop_training_job(TrainingJobName=name)
        except Exception:
            pass
        try:
            fl.wait_job(sm, name, fl.terminal, 60, interval=0.2)
            settle(fl, ns)
        except Exception as e:
            print("# %s: after the trial: %s" % (name, e))


def settle(fl, ns):
    """Every host ready, and still after 5 s: after a partition heals,
    trainctld may restart the host's agent over SSH a moment after the old
    agent came back (killing what it runs), so the next trial waits that out."""
    ready = lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts
    ns.wait_hosts(ready, 60, "hosts ready")
    time.sleep(5)
    ns.wait_hosts(ready, 60, "hosts ready")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10, help="restarts per local row")
    ap.add_argument("--ns-trials", type=int, default=10, help="partitions per namespace-cluster row")
    ap.add_argument("--no-ns", action="store_true", help="skip the namespace cluster (root only)")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    a = ap.parse_args()
    os.environ["BUILD"] = a.build if os.path.isabs(a.build) else os.path.join(REPO, a.build)
    import ftlib as fl
    fl.sc.hermetic_env()
    cmd = "/usr/bin/python3 bench/restart.py --trials %d --ns-trials %d%s%s" % (
        a.trials, a.ns_trials, " --no-ns" if a.no_ns else "", "" if a.build == "build" else " --build " + a.build)
    print("# %s  (%s, %d CPUs)" % (cmd, os.uname().nodename, os.cpu_count()))
    boot = startup_overhead(fl)
    print("# /usr/bin/python3 ft_trainer.py alone: exec -> first output line %s ms (median of 10)" % ms(boot))
    sys.stdout.flush()

    rows = local_rows(fl, a.trials)
    print()
    print("(1) rank death -> next attempt, embedded local cluster (trainctld --local-hosts 3 "
          "--heartbeat-ms 200 --host-deadline-ms 1000)")
    hdr = ("detect ms", "restart ms", "exec'd ms", "first line ms")
    print("%-50s %3s  %-15s %-15s %-15s %-15s" % (("", "n") + hdr))
    print("%-50s %3s  %-15s %-15s %-15s %-15s" % (("", "") + ("med  p90  max",) * 4))
    for label, n, det, rst, exe, run, status in rows:
        f = lambda xs: "%4s %4s %4s" % (ms(pct(xs, 50)), ms(pct(xs, 90)), ms(max(xs) if xs else float("nan")))
        print("%-50s %3d  %-15s %-15s %-15s %-15s" % (label, n, f(det), f(rst), f(exe), f(run)))
    print("detect: death -> Restarting; restart: -> Starting attempt N+1; exec'd: -> the last rank of attempt")
    print("N+1 exec'd (ft_trainer.sh's first line); first line: -> the last rank's first Python line")
    print("target: every rank of the next attempt exec'd <= 300 ms (median)")

    if not a.no_ns:
        reason = fl.ns_skip_reason()
        if reason:
            print("\n(2) skipped: %s" % reason)
        else:
            print()
            sys.stdout.flush()
            res = ns_rows(fl, a.ns_trials, [
                ("defaults (--heartbeat-ms 1000 --host-deadline-ms 3000)", []),
                ("--heartbeat-ms 200 --host-deadline-ms 1000", ["--heartbeat-ms", "200",
                                                                "--host-deadline-ms", "1000"]),
            ])
            print("(2) link-down of a host of a 2-host job, spare host (scripts/cluster.sh, 3 hosts)")
            print("%-55s %3s  %-16s %-16s %-16s %-16s" % ("", "n", "noticed ms", "(Describe)", "(/v1/hosts)",
                                                          "running ms"))
            print("%-55s %3s  %-16s %-16s %-16s %-16s" % ("", "", "med  p90  max", "med  max", "med  max",
                                                          "med  p90  max"))
            for label, n, noticed, nd, nh, running, note in res:
                f3 = lambda xs: "%4s %4s %4s" % (ms(pct(xs, 50)), ms(pct(xs, 90)), ms(max(xs) if xs else float("nan")))
                f2 = lambda xs: "%4s %4s" % (ms(pct(xs, 50)), ms(max(xs) if xs else float("nan")))
                print("%-55s %3d  %-16s %-16s %-16s %-16s %s" % (label, n, f3(noticed), f2(nd), f2(nh), f3(running),
                                                                 note))
            print("targets with the defaults: noticed <= 3 s, running again on the spare <= 5 s")
    print()
    print("anchors (published figures, not measured here):")
    for k, v in ANCHORS:
        print("  %-28s %s" % (k, v))
    print("\nreproduce: %s" % cmd)


if __name__ == "__main__":
    main()
