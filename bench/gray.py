#!/usr/bin/python3
"""Gray failures: a hung rank, a slow host and a bad host, found, named and
routed around by trainctl, against the same program under torchrun and
under Slurm on the same hosts.

The hosts are a scripts/cluster.sh cluster of 4 (network namespaces on a
bridge, one sshd each; needs root): a 3-host job and one spare. The job is
bench/gray_ddp.py, torch DDP over gloo on CPU (Debian's /usr/bin/python3
and torch), one rank per host, a step every ~0.4 s, a checkpoint every 4
steps. Faults, one at a time:
  (a) the rank of one host frozen with SIGSTOP (after its step 10);
  (b) one rank stuck inside a step (it sleeps forever there, at step 12)
      while its peers wait in the allreduce;
  (c) one host's rank throttled to 30 % of a CPU (cgroup v1
      cpu.cfs_quota_us 30000 of cpu.cfs_period_us 100000), after step 8;
  (d) a host whose every job fails at start (node2: its torch install
      broken, a file bound over torch/__init__.py in its own mount
      namespace); 5 jobs in a row, each a trial.
Measured, from the fault (for (d) from the job's submission): detect (the
system reacts: a restart, a finding, a launcher that exits), named (the
culprit host is named in what the system says), training again (the first
step after a restart from the checkpoint). A trial's clock: time.time() of
this script (the moment of the SIGSTOP or the cgroup write) and the
program's own time.time() in its lines (one machine, one clock); trainctl
is polled with DescribeTrainingJob every 0.2 s.

  trainctl  trainctld (cluster.sh up) --hang-timeout 10 --telemetry-ms
            1000 --straggler-window 30 --straggler-action move
            --infra-check on --quarantine-failures 3, RetryStrategy 3.
            The infrastructure checks' time per attempt is read from the
            transitions ("Infrastructure checks passed on 3 hosts in X s").
  torchrun  python3 -m torch.distributed.run on each of node1..3 with
            --nnodes 3 --nproc-per-node 1 --rdzv-backend c10d
            --rdzv-endpoint node1:PORT --max-restarts 3 (its default
            timeouts: gloo's 30 min; --redirects 1 --tee 1, which torch
            1.13 needs with Python 3.11).
  srun      Slurm 22.05 (bench/launch_cluster.py's start_slurm: slurmctld
            on node1, slurmd on every host), srun -N3 -n3 -K (kill the
            step when a task fails) with no time limit (partition
            MaxTime=INFINITE).
A peer trial that shows nothing is cut at --peer-cap s (180) and reported
as "not in 180 s". The peers' trials of one fault run side by side
(--peer-par at a time, different ports; Slurm's partition is set to
OverSubscribe=FORCE for it), since their result is what does not happen.

Usage: /usr/bin/python3 bench/gray.py [--quick] [--trials 5]
           [--peer-cap 180] [--only abcd] [--no-peers] [--json F]
--quick: 1 trial of each, peer cap 60 s.
"""
import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import graylib as gl  # noqa: E402
from graylib import fl, sc  # noqa: E402

import launch_cluster  # noqa: E402

HANG_S = 10
TC_ARGS = ["--heartbeat-ms", "500", "--host-deadline-ms", "10000", "--grace-period", "2",
           "--hang-timeout", str(HANG_S), "--telemetry-ms", "1000", "--straggler-window", "30",
           "--straggler-action", "move", "--infra-check", "on", "--quarantine-failures", "3"]
QUOTA = 0.30
# (c)'s program computes most of each step (as training does; a rank must
# be busy for a quarter of a core or more to be compared at all).
BUSY = {"GRAY_WORK": "16", "GRAY_STEP_SLEEP": "0.2"}
BAD = "node2"
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
CHECKS_RE = re.compile(r"^Infrastructure checks passed on (\d+) hosts in (\d+\.\d) s")
STRAG_RE = re.compile(r"^Straggler: (algo-\d+) \(host ([^)]+)\) rank \d+ is (\d+\.\d)x slower")


def log(text):
    print("# " + str(text).replace("\n", "\n# "), flush=True)


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="trainctl-bench-gray-")
        prefix, net, port = sc.run_names("gy")
        self.cl = gl.Cluster(prefix, net, port, n_hosts=4, extra=TC_ARGS)
        self.checks = []   # seconds per attempt
        self.rows = {}     # (system, fault) -> [trial dicts]
        self.notes = []
        self.slurm_conf = None
        self.port = 29500

    def next_port(self):
        self.port += 1
        return self.port

    def add(self, system, fault, r):
        self.rows.setdefault((system, fault), []).append(r)
        log("%s (%s): %s" % (system, fault, json.dumps(r)))


# ------------------------------------------------------------ trainctl

def tc_request(b, name, env, retries=3):
    e = {"GRAY_MARKER": name, "GLOO_SOCKET_IFNAME": "eth0"}
    e.update(env)
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file://" + gl.PROGRAM, "TrainingInputMode": "File"},
        "RoleArn": fl.ROLE,
        "HyperParameters": {"sagemaker_torch_distributed_enabled": "true"},
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 3, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 1200},
        "CheckpointConfig": {"S3Uri": fl.ckpt_uri(name)},
        "RetryStrategy": {"MaximumRetryAttempts": retries},
        "Environment": e,
    }


def transitions(cl, name):
    return fl.transitions(cl.describe(name))


def watch_msg(cl, name, regex, timeout):
    """(time first seen, message) of the first transition matching regex;
    (None, "") when none came within timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for _, msg in transitions(cl, name):
            if re.search(regex, msg):
                return time.time(), msg
        time.sleep(0.2)
    return None, ""


def again_after(lines, t0):
    """The first step after the first restart (a gray-start) after t0."""
    starts = [float(m.group(4)) for m in map(gl.START_RE.search, lines) if m and float(m.group(4)) > t0]
    if not starts:
        return None
    return gl.first_step_after(lines, min(starts))


def tc_end(b, name):
    cl = b.cl
    try:
        cl.call("StopTrainingJob", {"TrainingJobName": name})
    except RuntimeError:
        pass
    try:
        gl.wait_for(lambda: fl.terminal(cl.describe(name)), 60, 0.2, name + " ends")
    except RuntimeError as e:
        b.notes.append(str(e))
    for _, msg in transitions(cl, name):
        m = CHECKS_RE.match(msg)
        if m:
            b.checks.append(float(m.group(2)))
    gl.kill_marker(name)
    forget_failures(cl)


def forget_failures(cl):
    """Every host back, with no failure laid at it (undrain forgets them):
    one trial's faults must not quarantine a host in the next."""
    for h in cl.hosts():
        if not h.get("drained"):
            cl.send("POST", "/v1/hosts/%s/drain" % h["name"])
        cl.undrain(h["name"])


def tc_inject_hang(b, name, fault):
    """Waits for the job to train, then (a) SIGSTOPs rank 1 or (b) waits
    for it to get stuck; (t0, host)."""
    cl = b.cl
    if fault == "a":
        gl.wait_for(lambda: any(s[0] >= 10 and s[1] == 1 for s in gl.steps(gl.job_lines(cl, name))), 120, 0.2,
                    name + " step 10")
        pids = gl.rank_procs(name).get(1) or []
        if not pids:
            raise RuntimeError("%s: rank 1 not found" % name)
        fl.kill_pids(pids, signal.SIGSTOP)
        return time.time(), gl.host_of_pid(cl, pids[0])
    m = gl.wait_for(lambda: next(filter(None, map(gl.STUCK_RE.search, gl.job_lines(cl, name))), None), 120,
                    0.2, name + " stuck")
    pids = gl.rank_procs(name).get(1) or [0]
    return float(m.group(2)), gl.host_of_pid(cl, pids[0])


def tc_hang(b, fault, i):
    name = "gray-%s-%s-%d" % (fault, RUN, i)
    env = {"GRAY_HANG_RANK": "1", "GRAY_HANG_AT": "12"} if fault == "b" else {}
    b.cl.call("CreateTrainingJob", tc_request(b, name, env))
    try:
        t0, host = tc_inject_hang(b, name, fault)
        t1, msg = watch_msg(b.cl, name, r"^Attempt 1 failed", b.a.tc_cap)
        if t1 is None:
            return {"detect": None, "named": None, "again": None, "culprit": host, "said": ""}
        t2 = gl.wait_for(lambda: again_after(gl.job_lines(b.cl, name), t0), 120, 0.2, name + " training again")
        named = host and ("(host %s)" % host) in msg and "made no progress" in msg
        return {"detect": t1 - t0, "named": (t1 - t0) if named else None, "again": t2 - t0,
                "culprit": host, "said": msg[:240]}
    finally:
        tc_end(b, name)


def tc_straggler(b, i):
    cl = b.cl
    name = "gray-c-%s-%d" % (RUN, i)
    cl.call("CreateTrainingJob", tc_request(b, name, BUSY))
    th = None
    try:
        gl.wait_for(lambda: any(s[0] >= 8 and s[1] == 2 for s in gl.steps(gl.job_lines(cl, name))), 120, 0.2,
                    name + " step 8")
        pids = gl.rank_procs(name).get(2) or []
        host = gl.host_of_pid(cl, pids[0]) if pids else None
        th = gl.Throttle(name, QUOTA)
        th.add(pids)
        t0 = time.time()
        t1, msg = watch_msg(cl, name, r"^Straggler: ", b.a.tc_cap)
        if t1 is None:
            return {"detect": None, "named": None, "again": None, "culprit": host, "said": ""}
        m = STRAG_RE.match(msg)
        t2 = gl.wait_for(lambda: again_after(gl.job_lines(cl, name), t0), 120, 0.2, name + " on the spare")
        named = m and m.group(2) == host
        return {"detect": t1 - t0, "named": (t1 - t0) if named else None, "again": t2 - t0, "culprit": host,
                "said": msg[:240]}
    finally:
        if th:
            th.remove()
        tc_end(b, name)


def tc_bad_host(b):
    """(d): 5 jobs while BAD's torch is broken; one row per job."""
    cl = b.cl
    forget_failures(cl)
    gl.break_torch(cl, BAD, b.tmp)
    try:
        for i in range(max(5, b.a.trials)):
            name = "gray-d-%s-%d" % (RUN, i)
            env = {"GRAY_STEPS": "16"}
            t0 = time.time()
            cl.call("CreateTrainingJob", tc_request(b, name, env))
            det, d = None, cl.describe(name)
            while not fl.terminal(d):
                if det is None and any(s == "Restarting" for s, _ in fl.transitions(d)):
                    det = time.time() - t0
                time.sleep(0.2)
                d = cl.describe(name)
            tr = fl.transitions(d)
            fails = [m for s, m in tr if m.startswith("Attempt 1 failed")]
            t2 = gl.first_step_after(gl.job_lines(cl, name), t0)
            bad = {h["name"]: h for h in cl.hosts()}.get(BAD, {})
            r = {"status": d["TrainingJobStatus"], "attempts": 1 + len([s for s, _ in tr if s == "Restarting"]),
                 "first_step": (t2 - t0) if t2 else None, "said": (fails[0][:200] if fails else ""),
                 "bad_host_drained": bool(bad.get("drained")), "drain_reason": (bad.get("drain_reason") or "")[:200]}
            if fails:
                r.update({"detect": det, "named": det if ("(host %s)" % BAD) in fails[0] else None,
                          "again": r["first_step"]})
            for _, msg in tr:
                m = CHECKS_RE.match(msg)
                if m:
                    b.checks.append(float(m.group(2)))
            b.add("trainctl", "d", r)
    finally:
        gl.mend_torch(cl, BAD)
        forget_failures(cl)


# ------------------------------------------------------------ the peers

class PeerJob:
    """The program on node1..3 under torchrun (one per host) or srun."""

    def __init__(self, b, launcher, name, extra):
        cl = b.cl
        self.b, self.launcher, self.name = b, launcher, name
        env = {"GRAY_MARKER": name, "GLOO_SOCKET_IFNAME": "eth0", "PYTHONUNBUFFERED": "1",
               "GRAY_CKPT_DIR": os.path.join(b.tmp, "ckpt-" + name)}
        env.update(extra)
        kv = ["%s=%s" % x for x in sorted(env.items())]
        port = b.next_port()
        self.logs, self.procs, self.t_exit = [], [], None
        if launcher == "torchrun":
            for k in (1, 2, 3):
                argv = ["env"] + kv + ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "3",
                                       "--nproc_per_node", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint",
                                       "%s.11:%d" % (cl.net, port), "--rdzv_id", name, "--max_restarts", "3",
                                       "--redirects", "1", "--tee", "1", "--log_dir",
                                       os.path.join(b.tmp, "torchrun-%s-node%d" % (name, k)), gl.PROGRAM]
                self.start("node%d" % k, argv)
        else:
            argv = ["env", "SLURM_CONF=" + b.slurm_conf] + kv + [
                "MASTER_ADDR=%s.11" % cl.net, "MASTER_PORT=%d" % port,
                "srun", "-N3", "-n3", "-K", "-J", name, "/usr/bin/python3", gl.PROGRAM]
            self.start("node1", argv)

    def start(self, node, argv):
        path = os.path.join(self.b.tmp, "%s-%s.log" % (self.name, node))
        self.logs.append(path)
        self.procs.append(self.b.cl.popen_on(node, argv, path))

    def lines(self):
        return gl.file_lines(self.logs)

    def poll(self):
        """True once every launcher exited; notes when the first did."""
        done = [p.poll() is not None for p in self.procs]
        if any(done) and self.t_exit is None:
            self.t_exit = time.time()
        return all(done)

    def stop(self):
        if self.launcher == "srun":
            self.b.cl.exec_on("node1", "env", "SLURM_CONF=" + self.b.slurm_conf, "scancel", "--name", self.name)
        gl.kill_marker(self.name)
        for p in self.procs:
            try:
                p.wait(10)
            except Exception:
                p.kill()


def peer_named(job, host):
    """Whether what the user reads names host with an error: for srun a
    line that names it; for torchrun an error in the output of the host's
    own torchrun (started there, as with pdsh or one ssh per host)."""
    if not host:
        return False
    if job.launcher == "torchrun":
        lines = gl.file_lines([x for x in job.logs if x.endswith("-%s.log" % host)])
        return any(re.search(r"Error|error|failed", x) for x in lines)
    return any(host in x and re.search(r"error|fail|exit", x, re.I) for x in job.lines())


def peer_observe(b, job, t0, host, cap):
    det = again = None
    while time.time() < t0 + cap:
        ended = job.poll()
        if det is None and job.t_exit is not None:
            det = job.t_exit - t0
        ag = again_after(job.lines(), t0)
        if ag:
            again = ag - t0
            break
        if ended:
            break
        time.sleep(0.5)
    named = det if det is not None and peer_named(job, host) else None
    return {"detect": det, "named": named, "again": again, "culprit": host,
            "said": next((x[:200] for x in job.lines() if re.search(r"Error|error:", x)), "")}


def peer_inject(job, fault):
    lines = job.lines
    if fault == "a":
        gl.wait_for(lambda: any(s[0] >= 10 and s[1] == 1 for s in gl.steps(lines())), 240, 0.3,
                    job.name + " step 10")
        pids = gl.rank_procs(job.name).get(1) or []
        if not pids:
            raise RuntimeError("%s: rank 1 not found" % job.name)
        fl.kill_pids(pids, signal.SIGSTOP)
        return time.time(), gl.host_of_pid(job.b.cl, pids[0])
    m = gl.wait_for(lambda: next(filter(None, map(gl.STUCK_RE.search, lines())), None), 240, 0.3,
                    job.name + " stuck")
    pids = gl.rank_procs(job.name).get(1) or [0]
    return float(m.group(2)), gl.host_of_pid(job.b.cl, pids[0])


def peer_trial(b, launcher, fault, i):
    name = "gp-%s-%s-%s-%d" % (launcher[0], fault, RUN, i)
    env = {"GRAY_HANG_RANK": "1", "GRAY_HANG_AT": "12"} if fault == "b" else {}
    job = PeerJob(b, launcher, name, BUSY if fault == "c" else env)
    try:
        return peer_fault(b, job, fault)
    except RuntimeError as e:
        raise RuntimeError("%s; its output ends: %s" % (e, " | ".join(job.lines()[-6:])[-600:]))
    finally:
        job.stop()


def peer_fault(b, job, fault):
    name = job.name
    th = None
    try:
        if fault in "ab":
            t0, host = peer_inject(job, fault)
            return peer_observe(b, job, t0, host, b.a.peer_cap)
        if fault == "d":
            return peer_observe(b, job, time.time(), BAD, b.a.peer_cap)
        gl.wait_for(lambda: any(s[0] >= 8 and s[1] == 2 for s in gl.steps(job.lines())), 240, 0.3,
                    name + " step 8")
        pids = gl.rank_procs(name).get(2) or []
        th = gl.Throttle(name, QUOTA)
        th.add(pids)
        t0 = time.time()
        r = peer_observe(b, job, t0, gl.host_of_pid(b.cl, pids[0]) if pids else None, b.a.strag_cap)
        r["slowdown"] = slowdown(job.lines(), t0)
        return r
    finally:
        if th:
            th.remove()


def slowdown(lines, t0):
    """Rank 0's median step interval after the throttle over before."""
    ts = sorted(s[3] for s in gl.steps(lines) if s[1] == 0)
    gaps = [(y, y - x) for x, y in zip(ts, ts[1:])]
    before = sorted(g for t, g in gaps if t < t0)
    after = sorted(g for t, g in gaps if t > t0 + 5)
    if not before or not after:
        return None
    return after[len(after) // 2] / before[len(before) // 2]


def run_par(fn, argss, par):
    """fn(*args) for each, par at a time in threads; results in order."""
    out = [None] * len(argss)

    def one(k):
        try:
            out[k] = fn(*argss[k])
        except Exception as e:  # a trial that broke is reported, not fatal
            out[k] = {"error": "%s: %s" % (type(e).__name__, e)}
    for s in range(0, len(argss), par):
        ts = [threading.Thread(target=one, args=(k,)) for k in range(s, min(s + par, len(argss)))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return out


def start_slurm(b):
    cl = b.cl
    conf, err = launch_cluster.start_slurm(cl.state, cl.prefix, cl.net, 4)
    if err:
        return err
    b.slurm_conf = conf
    # Let the side-by-side trials share the nodes (select/linear gives a
    # job whole nodes otherwise).
    rc, out, e = cl.exec_on("node1", "env", "SLURM_CONF=" + conf, "scontrol", "update", "PartitionName=bench",
                            "OverSubscribe=FORCE:%d" % max(2, 2 * b.a.peer_par))
    return None if rc == 0 else "scontrol update: %s%s" % (out, e)


def run_peers(b):
    """Each fault's peer trials side by side: (a), (b) and (d) of both
    launchers at once (what they show is an absence, or a launcher that
    exits), (c) one launcher at a time."""
    launchers = ["torchrun"]
    if shutil.which("srun") and not b.a.no_slurm:
        err = start_slurm(b)
        if err:
            b.notes.append("srun skipped: " + err)
        else:
            launchers.append("srun")
    for fault in b.a.only:
        groups = [launchers] if fault != "c" else [[x] for x in launchers]
        if fault == "d":
            gl.break_torch(b.cl, BAD, b.tmp)
        try:
            for group in groups:
                argss = [(la, i) for la in group for i in range(b.a.trials)]
                res = run_par(lambda la, i, f=fault: peer_trial(b, la, f, i), argss,
                              b.a.peer_par * len(group))
                for (la, _), r in zip(argss, res):
                    b.add(la, fault, r)
        finally:
            if fault == "d":
                gl.mend_torch(b.cl, BAD)


# ------------------------------------------------------------ main

def run_trainctl(b):
    for fault in b.a.only:
        if fault == "d":
            tc_bad_host(b)
            continue
        for i in range(b.a.trials):
            try:
                r = tc_straggler(b, i) if fault == "c" else tc_hang(b, fault, i)
            except Exception as e:  # reported in the table, the run goes on
                r = {"error": "%s: %s" % (type(e).__name__, e)}
            b.add("trainctl", fault, r)


FAULTS = {"a": "(a) rank frozen (SIGSTOP)", "b": "(b) rank stuck in a step", "c": "(c) host at 30 % CPU",
          "d": "(d) host fails every job"}


def cell(rs, key, cap):
    vals = [r.get(key) for r in rs if "error" not in r and key in r]
    got = [v for v in vals if v is not None]
    if not vals:
        return "-"
    if not got:
        return "not in %d s" % cap
    s = gl.fmt(gl.stats(got))
    return s if len(got) == len(vals) else "%s; %d of %d not in %d s" % (s, len(vals) - len(got), len(vals), cap)


def report(b):
    print("| fault | system | trials | detect (s) | culprit named (s) | training again (s) |")
    print("| --- | --- | --: | --- | --- | --- |")
    for fault in b.a.only:
        for system in ("trainctl", "torchrun", "srun"):
            rs = b.rows.get((system, fault))
            if not rs:
                continue
            cap = b.a.tc_cap if system == "trainctl" else b.a.strag_cap if fault == "c" else b.a.peer_cap
            errs = [r for r in rs if "error" in r]
            print("| %s | %s | %d%s | %s | %s | %s |" % (
                FAULTS[fault], system, len(rs), " (%d broke)" % len(errs) if errs else "",
                cell(rs, "detect", cap), cell(rs, "named", cap), cell(rs, "again", cap)))
    print()
    print("infrastructure checks per attempt: %s (%d attempts)" % (gl.fmt(gl.stats(b.checks)), len(b.checks)))
    d = b.rows.get(("trainctl", "d"), [])
    if d:
        q = next((k + 1 for k, r in enumerate(d) if r.get("bad_host_drained")), None)
        after = [r for k, r in enumerate(d) if q is not None and k >= q]
        print("(d) trainctl: %s quarantined after job %s; jobs after it that failed on %s: %d of %d" % (
            BAD, q, BAD, sum(r.get("named") is not None for r in after), len(after)))
    for system in ("torchrun", "srun"):
        c = [r.get("slowdown") for r in b.rows.get((system, "c"), []) if r.get("slowdown")]
        if c:
            print("(c) %s: step time x%s after the throttle, nothing named" % (system, gl.fmt(gl.stats(c), "")))
    for x in b.notes:
        print("note: " + x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 trial each, peer cap 60 s")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--peer-cap", type=int, default=180, help="s a peer trial of (a), (b), (d) may take")
    ap.add_argument("--tc-cap", type=int, default=60, help="s trainctl is given to find (a), (b), (c)")
    ap.add_argument("--strag-cap", type=int, default=60, help="s a peer trial of (c) is watched")
    ap.add_argument("--peer-par", type=int, default=5, help="peer trials side by side")
    ap.add_argument("--only", default="abcd")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-trainctl", action="store_true")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.trials = 1
        a.peer_cap = 60 if a.peer_cap == 180 else a.peer_cap
    if os.geteuid() != 0:
        sys.exit("bench: needs root (network namespaces, cgroups, mounts)")
    b = Bench(a)
    err = b.cl.up()
    if err:
        sys.exit("bench: " + err)
    t = time.time()
    try:
        if not a.no_trainctl:
            run_trainctl(b)
        if not a.no_peers:
            run_peers(b)
    finally:
        down = b.cl.down()
        if down[0]:
            log("cluster.sh down: %s" % (down[1] + down[2]))
        shutil.rmtree(b.tmp, ignore_errors=True)
    log("took %.0f s" % (time.time() - t))
    report(b)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": {"%s/%s" % k: v for k, v in b.rows.items()}, "checks": b.checks,
                       "notes": b.notes}, f, indent=1)


if __name__ == "__main__":
    main()
