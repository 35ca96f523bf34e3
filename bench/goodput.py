#!/usr/bin/python3
"""Goodput side by side: ETTR of one training program with failures
injected at a fixed seed and mean interval, through trainctl, torchrun
and Slurm, at the same time on hosts of their own.

Each system gets a scripts/cluster.sh cluster of 4 hosts (network
namespaces on a bridge; needs root): a job of 3 and one spare. The
program is bench/goodput_prog.py (torch, gloo on CPU, one rank per host):
a step of --step-s s (0.1) and an allreduce, a checkpoint of --ckpt-mb
MiB per rank every --ckpt-s s (10), resumed from the newest complete one;
it writes its ground truth (every step's start and end, every stall and
restore). The three run at once, for --minutes each, and get the same
faults at the same times from their start: exponential gaps of mean
--mean-interval s (300) drawn from --seed (1), or with --even one at
every mean interval exactly (the first at half of one); the kind drawn:
  rank-kill9    kill -9 of the rank of a host of the job;
  agent-kill9   kill -9 of that host's agent: trainctl's trainagent,
                the torchrun agent, the step's slurmstepd;
  link-down     the host's link down for --link-s s (20), then up;
  host-removed  the host powered off for good (link down, every process
                but sshd killed); at most once a run (one spare).
The host is drawn among the job's hosts but node1 (where Slurm's
slurmctld lives; torchrun's rendezvous store lives in the root
namespace, as trainctld does). A fault that comes due while the system
is down, or before it has trained for 10 s after the last fault, waits
for that; a fault still waiting at the end is not injected (a slow
recovery is spared the faults it pushes past the end).

  trainctl  trainctld (cluster.sh up) --heartbeat-ms 250
            --host-deadline-ms 2000 --elastic-wait 2 (the benchmark's
            options of those names) --grace-period 2, RetryStrategy 30;
            checkpoints through its checkpoint channel (the agent mirrors
            TRAINCTL_CHECKPOINT_DIR to the embedded store and restores
            from it, or from a copy in memory where it has one).
  torchrun  python3 -m torch.distributed.run on each of node1..3,
            --nnodes 2:3 --max_restarts 100 --rdzv_backend c10d with the
            store (a TCPStore) in the root namespace, --monitor_interval
            1; checkpoints in a folder every host sees (/tmp). It has no
            spare: an agent beyond --nnodes' maximum waits, and the
            healthy agents restart their workers to let it in, over and
            over (torch 1.13); with a minimum of 2 it goes on with the
            hosts left after its last-call wait (30 s).
  srun      Slurm 22.05 (bench/launch_cluster.py's start_slurm, plus
            SlurmdTimeout=10): sbatch --requeue -N3 of a script that runs
            `srun -K` again (up to 100 times) when it fails; a node lost
            requeues the job; checkpoints in the shared folder.
The program's collective timeout is 30 s under all three.

Reported per system: ETTR (the steps that count, at their own duration,
over the wall time from submission to the end), the faults and for each
the steps redone, the time to train again and the wall time lost;
restore times by source (the agent's record for trainctl, the program's
read-back for all); for trainctl, the split of TrainctlGoodput.

First the elastic case (--no-elastic to skip; --no-main for it alone),
on the same clusters with the spare held back (drained): a 3-host job
that may shrink to 2 (trainctl: tag trainctl:min-instance-count=2;
torchrun --nnodes 2:3 on 3 hosts; Slurm: sbatch -N2-3 --requeue), one
host cut off (link down) for the rest of the trial: the time from the
fault to the first step on the survivors (cap --elastic-cap s, 120).

Usage: /usr/bin/python3 bench/goodput.py [--quick] [--minutes 15]
           [--mean-interval 300] [--seed 1] [--even] [--ckpt-mb 256]
           [--elastic-wait 2] [--heartbeat-ms 250] [--host-deadline-ms 2000]
           [--no-elastic] [--no-main] [--systems trainctl,torchrun,srun]
           [--peer-copies-mb N] [--json F] [--keep]
--peer-copies-mb N: trainctl's agents keep checkpoint copies in memory and
share them with the next host (docs/checkpoints.md); restores then come
from a peer's copy where one survived.
--quick: 3 minutes each, a fault every 45 s on average, 16 MiB (about
6 minutes with the elastic case). docs/benchmarks.md's table:
--minutes 15 --even --mean-interval 300 --ckpt-mb 32 (about 18 minutes).
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import goodputlib as gp  # noqa: E402
import graylib as gl  # noqa: E402
from graylib import fl, sc  # noqa: E402

import launch_cluster  # noqa: E402

TC_ARGS = ["--grace-period", "2"]
SETTLE_S = 10  # training this long after a fault before the next one
KINDS = ["rank-kill9", "agent-kill9", "link-down", "host-removed"]
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
SLURM_SCRIPT = r"""#!/bin/bash
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
for try in $(seq 1 100); do
    export GP_TRY=$(( ${SLURM_RESTART_COUNT:-0} * 100 + try ))
    export MASTER_PORT=$(( 29500 + GP_TRY % 1000 ))
    srun -K -N "$SLURM_NNODES" -n "$SLURM_NNODES" /usr/bin/python3 @PROGRAM@ && exit 0
    sleep 1
done
exit 1
"""


def log(text):
    print("# " + str(text).replace("\n", "\n# "), flush=True)


def schedule(a):
    """[(seconds from the start, kind, rank index)] of the run's faults."""
    rng = random.Random(a.seed)
    out, t, removed = [], 0.0, False
    while True:
        gap = rng.expovariate(1.0 / a.mean_interval)
        t = (len(out) + 0.5) * a.mean_interval if a.even else t + gap
        if t > a.minutes * 60 - 20:
            return out
        kind = rng.choice(KINDS)
        while kind == "host-removed" and removed:
            kind = rng.choice(KINDS)
        removed = removed or kind == "host-removed"
        out.append((t, kind, rng.random()))


# The port trainctl's agents serve their checkpoint copies on.
PEER_PORT = 29750

class System:
    """One system's cluster, job and faults."""
    label = "?"

    def up_args(self):
        """scripts/cluster.sh up options."""
        return []

    def __init__(self, b, tag, n_hosts):
        self.b, self.a = b, b.a
        prefix, net, port = sc.run_names(tag)
        self.cl = gl.Cluster(prefix, net, port, n_hosts=n_hosts, extra=self.extra(),
                             up_args=self.up_args())
        self.name = self.truth = self.t0 = None
        self.faults, self.notes, self.procs = [], [], []
        self.removed = []

    def extra(self):
        return []

    def env(self, name):
        return {"GP_MARKER": name, "GP_TRUTH": self.truth, "GP_STEP_S": str(self.a.step_s),
                "GP_CKPT_S": str(self.a.ckpt_s), "GP_CKPT_MB": str(self.a.ckpt_mb), "GP_TIMEOUT": "30",
                "GLOO_SOCKET_IFNAME": "eth0", "PYTHONUNBUFFERED": "1",
                "GP_CKPT_DIR": os.path.join(self.b.tmp, "ckpt-" + name)}

    def begin(self, kind):
        self.name = "gp-%s-%s-%s" % (self.label[:2], kind, RUN)
        self.truth = os.path.join(self.b.tmp, self.name + ".truth")
        self.tr = gp.Truth(self.truth)
        self.t0 = time.time()
        self.start()

    def victim(self, pick):
        """A host of the job other than node1, drawn with pick in [0, 1)."""
        hosts = []
        for r, pids in sorted(gp.rank_procs(self.name).items()):
            h = gl.host_of_pid(self.cl, pids[0])
            if h and h != "node1" and h not in hosts:
                hosts.append(h)
        return hosts[int(pick * len(hosts))] if hosts else None

    def inject(self, kind, host):
        if kind == "rank-kill9":
            pids = [p for ps in gp.rank_procs(self.name).values() for p in ps]
            fl.kill_pids(self.cl.netns_pids(host, pids))
        elif kind == "agent-kill9":
            fl.kill_pids(self.agent_pids(host))
        elif kind == "link-down":
            self.cl.link(host, up=False)
            t = threading.Timer(self.a.link_s, lambda: self.cl.link(host, up=True))
            t.daemon = True
            t.start()
        else:
            gp.power_off(self.cl, host)
            self.removed.append(host)

    def settled(self, last):
        """Training, and for SETTLE_S s since it first trained after the
        last fault (none: since it started)."""
        if not self.tr.training():
            return False
        after = [e["t1"] for e in self.tr.poll() if e["ev"] == "step" and e["t1"] > last]
        return bool(after) and time.time() - after[0] >= SETTLE_S

    def run_faults(self, plan):
        last = self.t0
        for at, kind, pick in plan:
            while time.time() < self.t0 + at:
                time.sleep(0.2)
            deadline = self.t0 + self.a.minutes * 60 - 10
            while not self.settled(last) and time.time() < deadline:
                time.sleep(0.2)
            host = self.victim(pick) if time.time() < deadline else None
            if not host:
                self.notes.append("%s at %.0f s not injected: not training again by the end" % (kind, at))
                continue
            t = time.time()
            try:
                self.inject(kind, host)
            except Exception as e:  # the run goes on; the note says
                self.notes.append("%s on %s: %s" % (kind, host, e))
                continue
            last = t
            self.faults.append({"t": t, "at": t - self.t0, "kind": kind, "host": host})
            log("%s: %s on %s at %.1f s" % (self.label, kind, host, t - self.t0))

    def main_run(self, plan):
        self.begin("m")
        self.run_faults(plan)
        while time.time() < self.t0 + self.a.minutes * 60:
            time.sleep(0.2)
        self.t_end = time.time()
        self.before_stop()
        self.stop()
        for h in self.removed:
            self.cl.link(h, up=True)

    def before_stop(self):
        pass

    def figures(self):
        ev = self.tr.poll()
        e, prod, nsteps, stall = gp.ettr(ev, self.t0, self.t_end)
        starts = [x for x in ev if x["ev"] == "start"]
        first = min((x["t1"] for x in ev if x["ev"] == "step"), default=None)
        return {"ettr": e, "productive_s": prod, "wall_s": self.t_end - self.t0, "steps": nsteps,
                "ckpt_stall_s": stall, "ckpts": len([x for x in ev if x["ev"] == "ckpt"]),
                "first_step_s": (first - self.t0) if first else None,
                "starts": len(starts), "load_s": [x["load_s"] for x in starts if x["resumed"]],
                "faults": gp.per_fault(ev, self.faults, self.t_end, self.a.step_s), "notes": self.notes}


class Trainctl(System):
    label = "trainctl"

    def up_args(self):
        # Checkpoint copies in memory, shared with the next host of the
        # job (docs/checkpoints.md): a restore reads them when it can.
        if not self.a.peer_copies_mb:
            return []
        return ["--host-env", "TRAINCTL_MEMORY_CHECKPOINT_MB=%d" % self.a.peer_copies_mb,
                "--host-env", "TRAINCTL_PEER_CHECKPOINT_PORT=%d" % PEER_PORT]

    def extra(self):
        return TC_ARGS + ["--elastic-wait", "%g" % self.a.elastic_wait, "--heartbeat-ms",
                          str(self.a.heartbeat_ms), "--host-deadline-ms", str(self.a.host_deadline_ms)]

    def request(self, min_count=None):
        req = {
            "TrainingJobName": self.name,
            "AlgorithmSpecification": {"TrainingImage": "file://" + gp.PROGRAM, "TrainingInputMode": "File"},
            "RoleArn": fl.ROLE,
            "HyperParameters": {"sagemaker_torch_distributed_enabled": "true"},
            "OutputDataConfig": {"S3OutputPath": fl.OUT},
            "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 3, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 4 * 3600},
            "CheckpointConfig": {"S3Uri": fl.ckpt_uri(self.name)},
            "RetryStrategy": {"MaximumRetryAttempts": 30},
            "Environment": self.env(self.name),
        }
        del req["Environment"]["GP_CKPT_DIR"]
        if min_count:
            req["Tags"] = [{"Key": "trainctl:min-instance-count", "Value": str(min_count)}]
        return req

    def start(self, min_count=None):
        self.cl.call("CreateTrainingJob", self.request(min_count))

    def agent_pids(self, host):
        return gp.trainagent_pid(self.cl, host)

    def before_stop(self):
        try:
            self.split = self.cl.send("GET", "/v1/training-jobs/%s" % self.name).get("TrainctlGoodput")
        except RuntimeError as e:
            self.split = None
            self.notes.append("TrainctlGoodput: %s" % e)

    def stop(self):
        try:
            self.cl.call("StopTrainingJob", {"TrainingJobName": self.name})
            gp.wait_for(lambda: fl.terminal(self.cl.describe(self.name)), 60, 0.5, self.name + " stops")
        except RuntimeError as e:
            self.notes.append(str(e))
        gp.kill_marker(self.name)

    def figures(self):
        f = System.figures(self)
        f["split"] = getattr(self, "split", None)
        f["restores"] = gp.restores(gl.job_lines(self.cl, self.name))
        f["transitions"] = [m for _, m in fl.transitions(self.cl.describe(self.name))][-40:]
        return f

    def hold_spare(self, free):
        """Drains every host but the job's; free: undrain them again."""
        for h in self.cl.hosts():
            if h["name"] != "node1" and h["name"] not in ("node2", "node3"):
                self.cl.send("POST", "/v1/hosts/%s/%s" % (h["name"], "undrain" if free else "drain"))


class Torchrun(System):
    label = "torchrun"

    def up(self):
        self.store_port = 29400
        self.store = subprocess.Popen(
            ["/usr/bin/python3", "-c", "import datetime, time, torch.distributed as d; "
             "s = d.TCPStore(%r, %d, is_master=True, wait_for_workers=False, "
             "timeout=datetime.timedelta(seconds=3600)); time.sleep(10 ** 7)" % (self.cl.addr, self.store_port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self, nodes=(1, 2, 3), nnodes="2:3"):
        env = self.env(self.name)
        kv = ["%s=%s" % x for x in sorted(env.items())]
        self.procs = []
        for k in nodes:
            argv = ["env"] + kv + ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", nnodes,
                                   "--nproc_per_node", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint",
                                   "%s:%d" % (self.cl.addr, self.store_port), "--rdzv_conf", "is_host=false",
                                   "--rdzv_id", self.name, "--max_restarts", "100", "--monitor_interval", "1",
                                   "--redirects", "1", "--tee", "1", "--log_dir",
                                   os.path.join(self.b.tmp, "torchrun-%s-node%d" % (self.name, k)), gp.PROGRAM]
            path = os.path.join(self.b.tmp, "%s-node%d.log" % (self.name, k))
            self.procs.append(self.cl.popen_on("node%d" % k, argv, path))

    def agent_pids(self, host):
        pids = [p for p, _ in gp.marked(self.name) if "torch.distributed.run" in gp.argv_of(p)]
        return self.cl.netns_pids(host, pids)

    def stop(self):
        gp.kill_marker(self.name)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    def down(self):
        self.store.kill()
        self.store.wait()


class Slurm(System):
    label = "srun"

    def up(self):
        launch_cluster.SLURM_CONF = launch_cluster.SLURM_CONF.replace(
            "ReturnToService=2\n", "ReturnToService=2\nSlurmdTimeout=10\n")
        self.conf, err = launch_cluster.start_slurm(self.cl.state, self.cl.prefix, self.cl.net, self.cl.n_hosts)
        if err:
            raise RuntimeError(err)
        self.script = os.path.join(self.b.tmp, "goodput.sbatch")
        with open(self.script, "w") as f:
            f.write(SLURM_SCRIPT.replace("@PROGRAM@", gp.PROGRAM))
        os.chmod(self.script, 0o755)

    def slurm(self, *argv):
        return self.cl.exec_on("node1", "env", "SLURM_CONF=" + self.conf, *argv)

    def start(self, nodes="3"):
        env = ["%s=%s" % x for x in sorted(self.env(self.name).items())]
        out = os.path.join(self.b.tmp, self.name + ".out")
        rc, o, e = self.slurm(*env, "sbatch", "--requeue", "-N", nodes, "--ntasks-per-node", "1", "-J", self.name,
                              "--open-mode", "append", "-o", out, self.script)
        if rc:
            raise RuntimeError("sbatch: %s%s" % (o, e))

    def agent_pids(self, host):
        c = [p for p, argv in fl.proc_argvs()
             if argv and argv[0].startswith("slurmstepd") and re.search(r"\[\d+\.\d+\]", " ".join(argv))]
        return self.cl.netns_pids(host, c)

    def stop(self):
        self.slurm("scancel", "--name", self.name)
        gp.kill_marker(self.name)

    def figures(self):
        f = System.figures(self)
        try:
            with open(os.path.join(self.cl.state, "slurm", "slurmctld.log")) as fh:
                f["slurmctld"] = [x.strip() for x in fh if re.search(r"Requeuing|Allocate|requeue|DOWN", x)][-30:]
        except OSError:
            f["slurmctld"] = []
        return f

    def node_state(self, node, state):
        self.slurm("scontrol", "update", "NodeName=" + node, "State=" + state,
                   *(["Reason=bench"] if state == "DRAIN" else []))


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="trainctl-bench-goodput-")
        os.chmod(self.tmp, 0o755)
        kinds = {"trainctl": (Trainctl, "gt"), "torchrun": (Torchrun, "gr"), "srun": (Slurm, "gs")}
        self.systems = [kinds[s][0](self, kinds[s][1], 4) for s in a.systems.split(",")]
        self.results, self.elastic = {}, {}


def up_all(b):
    for s in b.systems:
        err = s.cl.up()
        if err:
            raise RuntimeError("%s: %s" % (s.label, err))
        if hasattr(s, "up"):
            s.up()


def run_threads(b, fn):
    errs = {}

    def one(s):
        try:
            fn(s)
        except Exception as e:  # a system that broke is reported, not fatal
            import traceback
            errs[s.label] = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
    ts = [threading.Thread(target=one, args=(s,)) for s in b.systems]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errs


# ------------------------------------------------------------ elastic

def elastic_one(s, cap):
    """Holds back the spare, starts a 3-host job that may go on with 2,
    cuts one of its hosts (not node1) off once it trains (its link down
    until the trial ends, so that its daemons live on for the main run);
    seconds from the fault to the first step of a restart on 2."""
    if isinstance(s, Trainctl):
        s.hold_spare(False)
    elif isinstance(s, Slurm):
        s.node_state("node4", "DRAIN")
    s.name = "gp-%s-e-%s" % (s.label[:2], RUN)
    s.truth = os.path.join(s.b.tmp, s.name + ".truth")
    s.tr = gp.Truth(s.truth)
    s.t0 = time.time()
    if isinstance(s, Trainctl):
        s.start(min_count=2)
    elif isinstance(s, Torchrun):
        s.start()
    else:
        s.start(nodes="2-3")
    try:
        gp.wait_for(lambda: len([e for e in s.tr.poll() if e["ev"] == "step"]) > 30, 120, 0.2,
                    s.name + " trains")
        host = s.victim(0.99)
        tf = time.time()
        s.cl.link(host, up=False)
        s.removed = [host]

        def again():
            st = [e for e in s.tr.poll() if e["ev"] == "start" and e["t"] > tf and e["world"] == 2]
            return next((e["t1"] for e in s.tr.poll() if st and e["ev"] == "step" and e["t1"] > st[0]["t"]), None)
        try:
            t = gp.wait_for(again, cap, 0.2, "training on 2")
            r = {"again_s": t - tf, "host": host}
        except RuntimeError:
            r = {"again_s": None, "host": host}
        st = [e for e in s.tr.poll() if e["ev"] == "start" and e["t"] > tf]
        r["program_start_s"] = (st[0]["t"] - tf) if st else None
        if isinstance(s, Trainctl):
            d = s.cl.send("GET", "/v1/training-jobs/%s" % s.name)
            r["elastic"] = d.get("TrainctlElastic")
            tr = [(x.get("StartTime"), x.get("StatusMessage") or "") for x in d.get("SecondaryStatusTransitions") or []]
            r["said"] = [(round(t - tf, 2) if isinstance(t, (int, float)) else t, m[:160]) for t, m in tr][-5:]
        return r
    finally:
        s.stop()


def run_elastic(b):
    def one(s):
        b.elastic[s.label] = elastic_one(s, b.a.elastic_cap)
        log("elastic %s: %s" % (s.label, json.dumps(b.elastic[s.label])))
    errs = run_threads(b, one)
    for k, v in errs.items():
        b.elastic[k] = {"error": v}
    for s in b.systems:
        for h in s.removed:
            s.cl.link(h, up=True)
        s.removed = []


# ------------------------------------------------------------ report

def report(b, plan):
    if b.results:
        report_main(b, plan)
    report_elastic(b)


def report_main(b, plan):
    a = b.a
    print("%g min a system, faults (seed %d, %s %d s): %s" % (
        a.minutes, a.seed, "every" if a.even else "mean", a.mean_interval,
        ", ".join("%s at %.0f s" % (k, t) for t, k, _ in plan)))
    print("step %.2f s, checkpoint every %g s of %d MiB a rank" % (a.step_s, a.ckpt_s, a.ckpt_mb))
    print()
    print("| system | ETTR | faults | steps redone (median) | training again (s) | lost a fault (s) "
          "| checkpoint stall (s, total) | first step (s) | read-back of a restore (s) |")
    print("| --- | --: | --: | --- | --- | --- | --: | --: | --- |")
    for s in b.systems:
        f = b.results.get(s.label)
        if not f or "error" in f:
            print("| %s | broke: %s |" % (s.label, (f or {}).get("error", "-").splitlines()[0]))
            continue
        fs = f["faults"]
        print("| %s | %.3f | %d | %s | %s | %s | %.1f in %d | %.1f | %s |" % (
            s.label, f["ettr"], len(fs), gp.fmt([x["redone"] for x in fs]), gp.fmt([x["restart"] for x in fs]),
            gp.fmt([x["lost"] for x in fs]), f["ckpt_stall_s"], f["ckpts"], f["first_step_s"] or -1,
            gp.fmt(f["load_s"])))
    print()
    print("| system | fault | at (s) | host | steps redone | training again (s) | lost (s) | note |")
    print("| --- | --- | --: | --- | --: | --: | --: | --- |")
    for s in b.systems:
        for x in (b.results.get(s.label) or {}).get("faults", []):
            print("| %s | %s | %.0f | %s | %s | %s | %s | %s |" % (
                s.label, x["kind"], x["at"], x["host"], x["redone"],
                "-" if x["restart"] is None else "%.1f" % x["restart"],
                "-" if x["lost"] is None else "%.1f" % x["lost"], x.get("note", "")))
    tc = b.results.get("trainctl") or {}
    if tc.get("split"):
        sp = tc["split"]
        print()
        print("trainctl's TrainctlGoodput: Goodput %.3f of %.0f s; %s; StepsRedone %s" % (
            sp.get("Goodput", 0), sp.get("WallTimeInSeconds", 0),
            ", ".join("%s %.1f s" % kv for kv in sp.get("TimeInSeconds", {}).items()), sp.get("StepsRedone")))
    if tc.get("restores"):
        by = {}
        for src, ms in tc["restores"]:
            by.setdefault(src, []).append(ms / 1000.0)
        print("trainctl's restores (the agent's record): %s" % "; ".join(
            "%s %s s (%d)" % (k, gp.fmt(v), len(v)) for k, v in sorted(by.items())))
    for s in b.systems:
        for n in (b.results.get(s.label) or {}).get("notes", []):
            print("note: %s: %s" % (s.label, n))


def report_elastic(b):
    if b.elastic:
        print()
        print("| elastic: a 3-host job, min 2, no spare, a host cut off | training again on 2 (s) |")
        print("| --- | --: |")
        for k, r in b.elastic.items():
            v = "broke" if "error" in r else "not in %d s" % b.a.elastic_cap if r["again_s"] is None else \
                "%.1f" % r["again_s"]
            print("| %s | %s |" % (k, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 min each, a fault every 45 s on average, 16 MiB")
    ap.add_argument("--minutes", type=float, default=15)
    ap.add_argument("--mean-interval", type=float, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--even", action="store_true",
                    help="a fault at every mean interval exactly (from half of one), kinds still drawn")
    ap.add_argument("--elastic-wait", type=float, default=2, help="trainctld --elastic-wait (its default: 2)")
    ap.add_argument("--heartbeat-ms", type=int, default=250, help="trainctld --heartbeat-ms")
    ap.add_argument("--host-deadline-ms", type=int, default=2000, help="trainctld --host-deadline-ms")
    ap.add_argument("--step-s", type=float, default=0.1)
    ap.add_argument("--ckpt-s", type=float, default=10)
    ap.add_argument("--ckpt-mb", type=int, default=256)
    ap.add_argument("--peer-copies-mb", type=int, default=0,
                    help="trainctl's agents keep checkpoint copies in memory (MiB per job) "
                         "and share them with the next host (0: off)")
    ap.add_argument("--link-s", type=float, default=20)
    ap.add_argument("--elastic-cap", type=int, default=120)
    ap.add_argument("--systems", default="trainctl,torchrun,srun")
    ap.add_argument("--no-elastic", action="store_true")
    ap.add_argument("--no-main", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the logs, truth and checkpoints")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.quick:
        a.minutes, a.mean_interval, a.ckpt_mb = 3, 45, 16
    if os.geteuid() != 0:
        sys.exit("bench: needs root (network namespaces)")
    plan = schedule(a)
    log("faults: %s" % plan)
    b = Bench(a)
    t = time.time()
    try:
        up_all(b)
        if not a.no_elastic:
            run_elastic(b)
        if not a.no_main:
            fresh(b)
            errs = run_threads(b, lambda s: s.main_run(plan))
            for s in b.systems:
                b.results[s.label] = {"error": errs[s.label]} if s.label in errs else s.figures()
    finally:
        for s in b.systems:
            if hasattr(s, "down"):
                s.down()
            down = s.cl.down()
            if down[0]:
                log("%s: cluster.sh down: %s" % (s.label, down[1] + down[2]))
        if a.keep:
            log("kept %s" % b.tmp)
        else:
            shutil.rmtree(b.tmp, ignore_errors=True)
    log("took %.0f s" % (time.time() - t))
    report(b, plan)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "plan": plan, "results": b.results, "elastic": b.elastic}, f, indent=1)


def fresh(b):
    """After the elastic case: every host back in service."""
    for s in b.systems:
        if isinstance(s, Trainctl):
            gp.wait_for(lambda: all(h["state"] in ("ready", "drained") for h in s.cl.hosts()), 60, 0.5,
                        "trainctl's hosts back")
            s.hold_spare(True)
        elif isinstance(s, Slurm):
            s.node_state("node4", "RESUME")
            gp.wait_for(lambda: s.slurm("sinfo", "-h", "-o", "%T %D")[1].split() == ["idle", "4"], 90, 0.5,
                        "Slurm's nodes idle")


if __name__ == "__main__":
    main()
