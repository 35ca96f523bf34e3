#!/usr/bin/python3
"""One job trace through Slurm and through trainctl, side by side.

    /usr/bin/python3 bench/sched_trace.py --quick          (40 jobs, ~4 min)
    /usr/bin/python3 bench/sched_trace.py [--jobs 200] [--seed 35] [--json F]
        [--systems slurm,trainctl,trainctl-fair] [--keep]

Needs root (network namespaces). One cluster of --hosts namespace hosts
per system (scripts/cluster.sh hosts-up, each its own prefix and /24);
they run the same trace at the same time, so that the load of the
machine falls on all alike: Slurm 22.05 (slurmctld on node1, slurmd on
every host, as bench/launch_cluster.py's start_slurm() starts them), and
trainctld with the hosts in its --inventory, once with quota shares and
once with a fair-share policy (a policy is one or the other).

The trace (from --seed): --jobs jobs of 3 teams a, b, c with weights
2:1:1, 40/30/30 % of the jobs; sizes 1-4 hosts; durations lognormal
(sigma 1, mean --mean-steps steps of --step-sleep s, at least 4 steps,
capped at --cap-steps); submitted over --window seconds, uniformly, but
half of team c's jobs arrive as one burst at 30 % of the window. Every
job runs bench/trace_job.py: a checkpoint every --ckpt-every steps,
resumes from the newest one; its ground truth (each attempt's start,
resume step and end) is what is measured. Each job's time limit (Slurm
--time, trainctl MaxRuntimeInSeconds) is twice its run time plus 30 s,
rounded up to whole minutes (Slurm's unit), the same for both.

The same policy in each:
  Slurm     select/linear (whole hosts), sched/backfill (bf_interval=1),
            priority/multifactor (age; a fair-share weight is set, but the
            fair-share factor needs slurmdbd with its SQL database, which
            this machine does not have, and so do QOS), so the weights are
            expressed as owned capacity: per team a partition over its
            owned hosts (a: node1-2, b: node3, c: node4; PriorityTier 2,
            not preemptable) and one scavenger partition over every host
            (PriorityTier 1, PreemptMode=REQUEUE); preempt/partition_prio,
            PreemptExemptTime 10 s; a job that fits its team's hosts is
            submitted to both partitions, a larger one to the scavenger
            only; --requeue, the checkpoints in a shared folder.
  trainctl  one service environment of the hosts, a job queue with a
            quota-share policy, quota shares a, b, c guaranteed 2, 1, 1
            hosts, LEND_AND_BORROW (no borrow limit), preemption of
            borrowers (no job preempted before 10 s, trainctld's rule);
            service jobs submitted with boto3's batch client; the
            checkpoints mirrored by the agents.
  trainctl-fair  the same queue with a fair-share policy instead
            (shareIdentifier a, b, c; weightFactor 1/weight;
            shareDecaySeconds 60, as Slurm's PriorityDecayHalfLife above),
            which never preempts.

Reported per system: queue wait (first start - submit) mean and p99 per
team, mean job completion time (last end - submit), host utilization
(busy host-seconds / hosts x makespan, from the attempts' own run
times), fair-share error (each second while every team has work queued
or running: mean over teams of |team's share of the busy hosts - its
weight share|, averaged), preemptions (attempts that did not finish) and
steps redone per preemption (highest step reached before it - the step
the next attempt resumed from). Also: the busy fraction of the hosts
while some job waits, the pending reasons Slurm gives (squeue, every
2 s), and how many preemptions (from the daemon's log: victim, and the
job it made room for) were followed by the victim running again before
that job started. --keep keeps the ground truth and the daemons' logs in
/tmp/trainctl-trace-<pid>.
Run with the Debian interpreter: it runs itself again with the newer
botocore that has service jobs (tests/integration/batchlib.py).
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import batchlib  # noqa: E402

batchlib.reexec()

sys.path.insert(0, HERE)
import launch_cluster as lc  # noqa: E402

TEAMS = (("a", 2), ("b", 1), ("c", 1))
OWNED = {"a": "node[1-2]", "b": "node3", "c": "node4"}
REGION = "us-east-1"
ITYPE = lc.ITYPE
JOB = os.path.join(HERE, "trace_job.py")
PY = "/usr/bin/python3"


# -- the trace

def make_trace(a):
    rnd = random.Random(a.seed)
    sigma = 1.0
    mu = math.log(a.mean_steps) - sigma * sigma / 2
    jobs = []
    for i in range(a.jobs):
        team = rnd.choices([t for t, _ in TEAMS], [0.4, 0.3, 0.3])[0]
        size = rnd.choices([1, 2, 3, 4], [0.45, 0.3, 0.1, 0.15])[0]
        steps = int(min(a.cap_steps, max(4, round(rnd.lognormvariate(mu, sigma)))))
        if team == "c" and rnd.random() < 0.5:
            at = a.window * 0.3 + rnd.random() * 2
        else:
            at = rnd.random() * a.window
        limit_min = int(math.ceil((2 * steps * a.step_sleep + 30) / 60.0))
        jobs.append({"team": team, "count": size, "steps": steps, "at": at, "limit_min": limit_min})
    jobs.sort(key=lambda j: j["at"])
    for i, j in enumerate(jobs):
        j["name"] = "tr-%03d-%s" % (i, j["team"])
    return jobs


def job_argv(a, j, truth, ckpt=None):
    argv = [JOB, "--name", j["name"], "--steps", str(j["steps"]), "--ckpt-every", str(a.ckpt_every),
            "--step-sleep", str(a.step_sleep), "--truth", truth]
    return argv + (["--ckpt-dir", ckpt] if ckpt else [])


# -- clusters

class Hosts:
    """n namespace hosts of scripts/cluster.sh under their own prefix."""

    def __init__(self, prefix, n):
        self.prefix, self.n = prefix, n
        self.state = "/tmp/trainctl-cluster-%s" % prefix

    def up(self):
        lc.sh("hosts-up", str(self.n), "--prefix", self.prefix, "--instance-type", ITYPE, timeout=300)
        self.net = lc.read_env(os.path.join(self.state, "cluster.env"))["CLUSTER_NET"]

    def down(self):
        lc.sh("hosts-down", "--prefix", self.prefix, check=False)


def kill_pidfile(path):
    try:
        with open(path) as f:
            pid = int(f.read().split()[0])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, IndexError):
        pass


SLURM_EXTRA = """SchedulerParameters=bf_interval=1,bf_resolution=1,bf_continue
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityMaxAge=0-0:10:00
PriorityWeightFairshare=10000
PriorityDecayHalfLife=0-0:01:00
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
PreemptExemptTime=00:00:10
JobRequeue=1
"""


def slurm_conf_template():
    """launch_cluster's slurm.conf with this benchmark's scheduling."""
    t = lc.SLURM_CONF.replace("SchedulerType=sched/builtin", "SchedulerType=sched/backfill\n" + SLURM_EXTRA)
    parts = ["PartitionName=scav Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1 "
             "PreemptMode=REQUEUE"]
    for team, nodes in OWNED.items():
        # Hidden: sinfo (start_slurm's readiness check) shows the scavenger only.
        parts.append("PartitionName=own_%s Nodes=%s MaxTime=INFINITE State=UP PriorityTier=2 "
                     "PreemptMode=OFF Hidden=YES" % (team, nodes))
    lines = [x for x in t.splitlines() if not x.startswith("PartitionName=")]
    return "\n".join(lines + parts) + "\n"


def read_log(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def keep_log(path, truth):
    """A copy of a daemon's log beside the ground truth (--keep)."""
    try:
        shutil.copy(path, os.path.dirname(truth))
    except OSError:
        pass


class SlurmRun:
    name = "Slurm 22.05"

    def __init__(self, a, hosts, root):
        self.a, self.hosts = a, hosts
        self.truth = os.path.join(root, "slurm", "truth")
        self.ckpt = os.path.join(root, "slurm", "ckpt")
        self.out = os.path.join(root, "slurm", "out")
        for d in (self.truth, self.ckpt, self.out):
            os.makedirs(d)
        self.ids = {}
        self.reasons = {}

    def start(self):
        saved = lc.SLURM_CONF
        lc.SLURM_CONF = slurm_conf_template()
        try:
            self.conf, err = lc.start_slurm(self.hosts.state, self.hosts.prefix, self.hosts.net, self.hosts.n)
        finally:
            lc.SLURM_CONF = saved
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        return err

    def run(self, *argv):
        p = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
                           stdin=subprocess.DEVNULL, timeout=60)
        if p.returncode:
            raise RuntimeError("%s: exit %d %s" % (argv[0], p.returncode, p.stderr.decode()[-300:]))
        return p.stdout.decode()

    def submit(self, j):
        owned = 2 if j["team"] == "a" else 1
        part = "own_%s,scav" % j["team"] if j["count"] <= owned else "scav"
        argv = job_argv(self.a, j, self.truth, os.path.join(self.ckpt, j["name"]))
        out = self.run("sbatch", "--parsable", "-J", j["name"], "-N", str(j["count"]), "--exclusive",
                       "-p", part, "--requeue", "--time=%d" % j["limit_min"], "--chdir", self.out,
                       "-o", os.path.join(self.out, j["name"] + ".out"), "--comment", j["team"],
                       "--wrap", "exec %s %s" % (PY, " ".join(argv)))
        self.ids[j["name"]] = out.strip().split(";")[0]

    def alive(self):
        """Jobs the system still holds (not ended); counts the reasons
        pending jobs give."""
        rows = [x.split(None, 1) for x in self.run("squeue", "-h", "-o", "%T %r").splitlines() if x.strip()]
        for st, why in rows:
            if st == "PENDING":
                self.reasons[why] = self.reasons.get(why, 0) + 1
        return len(rows)

    def preempted(self):
        """[(victim, for job)] from slurmctld's log."""
        names = {v: k for k, v in self.ids.items()}
        out = []
        for m in re.finditer(r"preempted JobId=(\d+) has been requeued to reclaim resources for JobId=(\d+)",
                             read_log(os.path.join(os.path.dirname(self.truth), "slurmctld.log"))):
            out.append((names.get(m.group(1)), names.get(m.group(2))))
        return out

    def stop(self):
        d = os.path.join(self.hosts.state, "slurm")
        keep_log(os.path.join(d, "slurmctld.log"), self.truth)
        try:
            if self.ids:
                self.run("scancel", *self.ids.values())
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            pass
        kill_pidfile(os.path.join(d, "slurmctld.pid"))
        for k in range(1, self.hosts.n + 1):
            kill_pidfile(os.path.join(d, "slurmd-node%d.pid" % k))


class CtlArgs:
    def __init__(self, build, port):
        self.build, self.port = build, port


class TrainctlRun:
    def __init__(self, a, hosts, root, policy="quota"):
        self.a, self.hosts, self.policy = a, hosts, policy
        self.name = "trainctl, quota shares" if policy == "quota" else "trainctl, fair share"
        self.truth = os.path.join(root, "trainctl-" + policy, "truth")
        os.makedirs(self.truth)
        self.ctl = None
        self.ids = {}

    def start(self):
        self.ctl = lc.Ctl(CtlArgs(self.a.build, self.a.port), self.hosts.state, self.hosts.net, None)
        self.ctl.args += ["--grace-period", "5"]
        self.ctl.start()
        self.ctl.hosts_ready(self.hosts.n)
        ep = "http://%s:%d" % (self.ctl.addr, self.ctl.port)
        self.b = batchlib.client(ep, (self.ctl.key, self.ctl.secret), REGION)
        self.setup()
        return None

    def setup(self):
        b, n = self.b, self.hosts.n
        b.create_service_environment(serviceEnvironmentName="pool", serviceEnvironmentType="SAGEMAKER_TRAINING",
                                     capacityLimits=[{"maxCapacity": n, "capacityUnit": ITYPE}])
        if self.policy == "fairshare":
            pol = b.create_scheduling_policy(name="teams", fairsharePolicy={
                "shareDecaySeconds": 60, "computeReservation": 0,
                "shareDistribution": [{"shareIdentifier": t, "weightFactor": 1.0 / w} for t, w in TEAMS]})
        else:
            pol = b.create_scheduling_policy(name="teams",
                                             quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"})
        b.create_job_queue(jobQueueName="ml", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                           schedulingPolicyArn=pol["arn"],
                           serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "pool"}])
        if self.policy == "fairshare":
            return
        for t, w in TEAMS:
            b.create_quota_share(quotaShareName=t, jobQueue="ml",
                                 capacityLimits=[{"maxCapacity": w, "capacityUnit": ITYPE}],
                                 resourceSharingConfiguration={"strategy": "LEND_AND_BORROW", "borrowLimit": -1},
                                 preemptionConfiguration={"inSharePreemption": "DISABLED"})

    def payload(self, j):
        return {
            "TrainingJobName": j["name"],
            "AlgorithmSpecification": {"TrainingImage": "file://" + PY, "TrainingInputMode": "File",
                                       "ContainerArguments": job_argv(self.a, j, self.truth)},
            "RoleArn": "arn:aws:iam::000000000000:role/bench",
            "OutputDataConfig": {"S3OutputPath": "s3://bench-out/trace"},
            "CheckpointConfig": {"S3Uri": "s3://bench-out/ckpt/%s/" % j["name"]},
            "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": j["count"], "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 60 * j["limit_min"]},
        }

    def submit(self, j):
        kw = {"jobName": j["name"], "jobQueue": "ml", "serviceJobType": "SAGEMAKER_TRAINING",
              "serviceRequestPayload": json.dumps(self.payload(j))}
        if self.policy == "fairshare":
            kw["shareIdentifier"] = j["team"]
        else:
            kw["quotaShareName"] = j["team"]
        self.ids[j["name"]] = self.b.submit_service_job(**kw)["jobId"]

    def preempted(self):
        """[(victim, for job)] from trainctld's log."""
        return re.findall(r"job '([^']+)': Preempted: queue \S+ share \S+ is owed its hosts for job (\S+)\.",
                          read_log(os.path.join(os.path.dirname(self.truth), "trainctld.log")))

    def alive(self):
        n = 0
        for st in ("SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED", "STARTING", "RUNNING"):
            kw = {"jobQueue": "ml", "jobStatus": st}
            while True:
                r = self.b.list_service_jobs(**kw)
                n += len(r.get("jobSummaryList") or [])
                if not r.get("nextToken"):
                    break
                kw["nextToken"] = r["nextToken"]
        return n

    def stop(self):
        if self.ctl:
            self.ctl.stop()
            keep_log(self.ctl.log.name, self.truth)


# -- driving a run

def drive(sysrun, trace, t0, a, rec):
    """Submits the trace on time, then waits until every job is done or
    the system holds none. rec: {"submit": {name: t}, "error": str}."""
    try:
        for j in trace:
            d = t0 + j["at"] - time.time()
            if d > 0:
                time.sleep(d)
            rec["submit"][j["name"]] = time.time()
            sysrun.submit(j)
        deadline = t0 + a.timeout
        empty = 0
        while time.time() < deadline:
            done = sum(os.path.exists(os.path.join(sysrun.truth, j["name"] + ".done")) for j in trace)
            if done == len(trace):
                return
            empty = empty + 1 if sysrun.alive() == 0 else 0
            if empty >= 3:
                rec["error"] = "%d of %d jobs ended without finishing" % (len(trace) - done, len(trace))
                return
            time.sleep(2)
        rec["error"] = "timed out after %d s" % a.timeout
    except Exception as e:  # reported, the other system goes on
        rec["error"] = "%s: %s" % (type(e).__name__, e)


# -- measuring

def attempts_of(truth, name, step_sleep):
    """[(start, end, from, reached, how)] from the job's ground truth."""
    evs = []
    try:
        with open(os.path.join(truth, name + ".jsonl")) as f:
            evs = [json.loads(x) for x in f if x.strip()]
    except OSError:
        return []
    out = []
    for e in evs:
        if e["ev"] == "start":
            if out and out[-1][1] is None:
                # killed without an end line: it reached what the next start saw
                s, _, fr, _, _ = out[-1]
                reached = max(fr, e["prev"])
                out[-1] = (s, min(e["t"], s + (reached - fr) * step_sleep), fr, reached, "killed")
            out.append((e["t"], None, e["from"], None, None))
        elif e["ev"] == "end" and out and out[-1][1] is None:
            s, _, fr, _, _ = out[-1]
            out[-1] = (s, e["t"], fr, e["step"], e["how"])
    return out


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1)]


def sampled(jobs, t_first, t_last, hosts):
    """Every second from t_first to t_last: (fair-share error, samples),
    the error while every team has work (mean over teams of |team's
    share of the busy hosts - its weight share|), averaged; and the busy
    fraction of the hosts while some job waits (submitted, not running,
    not finished)."""
    wsum = float(sum(w for _, w in TEAMS))
    errs, busy_waiting = [], []
    t = t_first
    while t < t_last:
        m = t + 0.5
        busy = {x: 0 for x, _ in TEAMS}
        active, waiting = set(), False
        for j in jobs:
            pending = j["submit"] <= m and (j["end"] is None or j["end"] > m)
            if pending:
                active.add(j["team"])
            running = False
            for s, e, _, _, _ in j["attempts"]:
                if s <= m and e is not None and e > m:
                    busy[j["team"]] += j["count"]
                    running = True
            waiting = waiting or (pending and not running)
        tot = sum(busy.values())
        if len(active) == len(TEAMS) and tot:
            errs.append(sum(abs(busy[x] / tot - w / wsum) for x, w in TEAMS) / len(TEAMS))
        if waiting:
            busy_waiting.append(tot / float(hosts))
        t += 1.0
    mean = lambda xs: statistics.mean(xs) if xs else float("nan")  # noqa: E731
    return mean(errs), len(errs), mean(busy_waiting)


def measure(trace, sysrun, rec, a):
    jobs = []
    for j in trace:
        att = attempts_of(sysrun.truth, j["name"], a.step_sleep)
        sub = rec["submit"].get(j["name"])
        fin = [x for x in att if x[4] == "done"]
        jobs.append(dict(j, submit=sub, attempts=[x for x in att if x[1] is not None],
                         start=att[0][0] if att else None, end=fin[-1][1] if fin else None))
    ran = [j for j in jobs if j["submit"] is not None]
    done = [j for j in ran if j["end"] is not None]
    res = {"jobs": len(trace), "done": len(done), "error": rec.get("error")}
    for t, _ in TEAMS:
        w = [j["start"] - j["submit"] for j in ran if j["team"] == t and j["start"] is not None]
        res["wait_" + t] = (statistics.mean(w) if w else float("nan"), pct(w, 99))
    res["jct"] = statistics.mean(j["end"] - j["submit"] for j in done) if done else float("nan")
    t_first = min(j["submit"] for j in ran)
    t_last = max([x[1] for j in ran for x in j["attempts"]] or [t_first])
    busy = sum((e - s) * j["count"] for j in ran for s, e, _, _, _ in j["attempts"])
    res["makespan"] = t_last - t_first
    res["util"] = busy / (a.hosts * (t_last - t_first)) if t_last > t_first else float("nan")
    res["fair_err"], res["fair_samples"], res["util_waiting"] = sampled(ran, t_first, t_last, a.hosts)
    pre, redone = 0, []
    for j in ran:
        att = j["attempts"]
        for k in range(1, len(att)):
            pre += 1
            redone.append(att[k - 1][3] - att[k][2])
    res["preemptions"] = pre
    res["redone"] = redone
    first = {j["name"]: [x[0] for x in j["attempts"]] for j in ran}
    pairs = sysrun.preempted()
    # a victim placed again before the job it was preempted for started
    res["retaken"] = sum(1 for v, f in pairs if v in first and f in first and first[f] and any(
        t < first[f][0] for t in first[v][1:]))
    res["preempt_pairs"] = len(pairs)
    res["pending_reasons"] = getattr(sysrun, "reasons", None)
    res["per_job"] = [{"name": j["name"], "count": j["count"], "steps": j["steps"], "submit": j["submit"],
                       "attempts": j["attempts"]} for j in ran]
    return res


def fmt(x, f="%.1f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f % x


def report(a, trace, results):
    names = list(results)
    print()
    print("%d jobs (seed %d), %d hosts per system, checkpoint every %d steps of %.2f s" % (
        len(trace), a.seed, a.hosts, a.ckpt_every, a.step_sleep))
    print("| %-38s | %s |" % ("", " | ".join("%-22s" % n for n in names)))
    print("| %s | %s |" % ("-" * 38, " | ".join("-" * 22 for _ in names)))
    rows = [("jobs done", lambda r: "%d of %d" % (r["done"], r["jobs"]))]
    for t, w in TEAMS:
        rows.append(("queue wait team %s (w %d), mean / p99 s" % (t, w),
                     lambda r, t=t: "%s / %s" % (fmt(r["wait_" + t][0]), fmt(r["wait_" + t][1]))))
    rows += [("mean job completion time, s", lambda r: fmt(r["jct"])),
             ("makespan, s", lambda r: fmt(r["makespan"])),
             ("host utilization", lambda r: fmt(100 * r["util"], "%.1f %%")),
             ("hosts busy while a job waits", lambda r: fmt(100 * r["util_waiting"], "%.1f %%")),
             ("fair-share error (samples)", lambda r: "%s (%d)" % (fmt(r["fair_err"], "%.3f"),
                                                                 r["fair_samples"])),
             ("preemptions", lambda r: "%d" % r["preemptions"]),
             ("steps redone per preemption, mean/max", lambda r: "%s / %s" % (
                 fmt(statistics.mean(r["redone"]) if r["redone"] else float("nan"), "%.2f"),
                 max(r["redone"]) if r["redone"] else "-")),
             ("victim restarted before the job it was", lambda r: "%d of %d" % (r["retaken"], r["preempt_pairs"])),
             ("  preempted for started", lambda r: "")]
    for label, f in rows:
        print("| %-38s | %s |" % (label, " | ".join("%-22s" % f(results[n]) for n in names)))
    for n in names:
        if results[n]["pending_reasons"]:
            print("%s: pending jobs' reasons, counted every 2 s: %s" % (n, json.dumps(results[n]["pending_reasons"])))
        if results[n]["error"]:
            print("note: %s: %s" % (n, results[n]["error"]))


def combine(files):
    """--combine: the median and range of each figure over runs' --json."""
    runs = []
    for fn in files:
        with open(fn) as f:
            runs.append(json.load(f)["results"])
    names = list(runs[0])

    def cell(n, get, f="%.1f"):
        xs = [get(r[n]) for r in runs if n in r]
        xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
        if not xs:
            return "-"
        if len(xs) == 1:
            return f % xs[0]
        return "%s (%s-%s)" % (f % statistics.median(xs), f % min(xs), f % max(xs))
    rows = [("jobs done", lambda r: r["done"], "%d")]
    for t, w in TEAMS:
        rows.append(("queue wait team %s (weight %d), mean, s" % (t, w), lambda r, t=t: r["wait_" + t][0], "%.1f"))
        rows.append(("queue wait team %s (weight %d), p99, s" % (t, w), lambda r, t=t: r["wait_" + t][1], "%.1f"))
    rows += [("mean job completion time, s", lambda r: r["jct"], "%.1f"),
             ("makespan, s", lambda r: r["makespan"], "%.1f"),
             ("host utilization, %", lambda r: 100 * r["util"], "%.1f"),
             ("hosts busy while a job waits, %", lambda r: 100 * r.get("util_waiting", float("nan")), "%.1f"),
             ("fair-share error", lambda r: r["fair_err"], "%.3f"),
             ("preemptions", lambda r: r["preemptions"], "%d"),
             ("steps redone per preemption, mean",
              lambda r: statistics.mean(r["redone"]) if r["redone"] else None, "%.2f"),
             ("steps redone per preemption, max", lambda r: max(r["redone"]) if r["redone"] else None, "%d"),
             ("victim ran again before the job it was preempted for", lambda r: r["retaken"], "%d"),
             ("... of preemptions in the daemon's log", lambda r: r["preempt_pairs"], "%d")]
    print("%d runs: median (min-max)" % len(runs))
    print("| | %s |" % " | ".join(names))
    print("| --- | %s |" % " | ".join("--:" for _ in names))
    for label, get, f in rows:
        print("| %s | %s |" % (label, " | ".join(cell(n, get, f) for n in names)))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="40 jobs over 60 s")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--window", type=float, default=360, help="seconds over which jobs are submitted")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--mean-steps", type=float, default=24)
    ap.add_argument("--cap-steps", type=int, default=200)
    ap.add_argument("--step-sleep", type=float, default=0.25)
    ap.add_argument("--ckpt-every", type=int, default=8)
    ap.add_argument("--systems", default="slurm,trainctl,trainctl-fair",
                    help="of slurm, trainctl (quota shares), trainctl-fair (fair share)")
    ap.add_argument("--timeout", type=float, default=1500, help="seconds for a system's run")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--port", type=int, default=18590)
    ap.add_argument("--keep", action="store_true", help="keep the ground truth folder")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--combine", nargs="+", metavar="JSON", help="only print the median table of these runs")
    a = ap.parse_args()
    if a.quick:
        a.jobs, a.window = 40, 60
    a.build = a.build if os.path.isabs(a.build) else os.path.join(REPO, a.build)
    return a


def main():
    a = parse_args()
    if a.combine:
        combine(a.combine)
        return
    if os.geteuid() != 0:
        sys.exit("bench: skipped: needs root (CAP_NET_ADMIN) to create network namespaces")
    for k in list(os.environ):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del os.environ[k]
    trace = make_trace(a)
    root = "/tmp/trainctl-trace-%d" % os.getpid()
    kinds = {"slurm": SlurmRun, "trainctl": TrainctlRun,
             "trainctl-fair": lambda a, h, root: TrainctlRun(a, h, root, "fairshare")}
    runs, clusters = [], []
    try:
        for i, s in enumerate(a.systems.split(",")):
            h = Hosts("tr%05d%d" % (os.getpid() % 100000, i), a.hosts)
            clusters.append(h)
            h.up()
            r = kinds[s](a, h, root)
            runs.append(r)
            err = r.start()
            if err:
                sys.exit("bench: %s did not start: %s" % (r.name, err))
        recs = [{"submit": {}, "error": None} for _ in runs]
        t0 = time.time() + 1
        th = [threading.Thread(target=drive, args=(r, trace, t0, a, rec)) for r, rec in zip(runs, recs)]
        for x in th:
            x.start()
        for x in th:
            x.join()
    finally:
        for r in runs:
            r.stop()
        for h in clusters:
            h.down()
    results = {r.name: measure(trace, r, rec, a) for r, rec in zip(runs, recs)}
    report(a, trace, results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "results": results}, f, indent=1)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    bad = [n for n, r in results.items() if r["done"] != r["jobs"]]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
