#!/usr/bin/python3
"""Launch latency on a cluster of hosts on this machine: trainctl cold and
warm, and srun, pdsh and mpirun on the same hosts.

The hosts are scripts/cluster.sh's (network namespaces on a bridge, one sshd
each, own hostname; needs root). Every launcher starts the same trivial
program on every host, `/bin/date +%s%N`, whose only output is the
wall-clock time at which it began running (one machine, one clock). A
launch's latency is the latest of the hosts' start times minus the moment
the launch was asked for:

  trainctl cold   fresh hosts (new namespaces, no agent running), a new
                  trainctld with --inventory; CreateTrainingJob is sent as
                  soon as /healthz answers. "create ->" counts from sending
                  CreateTrainingJob, "ctld start ->" from starting trainctld.
                  Three variants: the agent binary copied to a path in the
                  shared /tmp (all hosts share this machine's file system),
                  copied to a path private to each host (/var/lib/trainagent,
                  as on separate machines), or already there (same build).
  trainctl warm   the same hosts with their agents up: from sending
                  CreateTrainingJob (SigV4-signed, ContainerEntrypoint
                  /bin/date +%s%N, 3 instances) to the last start time, read
                  from the job's logs.
  trainctl create --wait
                  create + wait (next) as one command,
                  `create-training-job ... --wait`, as srun is one.
  trainctl create + wait
                  what a user types: `trainctl create-training-job ...`
                  then `trainctl wait NAME` (which long-polls the job), as
                  two processes; "returned" is when wait exited, to compare
                  with srun's, whose command also returns when the job
                  ended.
  srun -N3        Slurm 22.05: slurmctld on node1, slurmd on every host
                  (auth/none, proctrack/linuxproc), daemons already up.
  pdsh -R ssh     -w node1,node2,node3 (ssh with curve25519 KEX, no
                  connection reuse).
  mpirun -H       OpenMPI 4.1: -np 3 --allow-run-as-root, plm_rsh_agent ssh,
                  btl/oob_tcp_if_include the cluster's /24.
A log line, printed -> shown: a 1-host job that prints its wall-clock time
every --line-gap s (--lines lines), followed by `trainctl logs -f` on this
machine (the arrival time of each line minus the time in it), against the
same program under `srun -u -N1` from node1.
srun, pdsh and mpirun run on node1 (a login node of the cluster: one
nsenter into its namespaces, the timing loop runs inside). "returned" is
when the launcher command exited. Timing: Python's time.time_ns() and the
programs' own `date +%s%N`; nothing else.

Every run starts from an idle cluster: --pause seconds between runs (and,
for srun, until sinfo says every node is idle again), not timed.

Usage: bench/launch_cluster.py [--hosts 3] [--warm 20] [--runs 10] [--cold 3]
           [--pause 0.3] [--no-slurm] [--line-jobs 3] [--lines 20] [--line-gap 0.1]
           [--build build] [--prefix tcb] [--json F]
Prints a table (milliseconds).
"""
import argparse
import http.client
import json
import os
import random
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))
import smcompat as sc  # noqa: E402  (sigv4_sign)

ITYPE = "ml.c5.xlarge"


def sh(*args, check=True, timeout=120):
    p = subprocess.run(["/bin/bash", CLUSTER_SH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    if check and p.returncode != 0:
        sys.exit("bench: cluster.sh %s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout.decode(),
                                                          p.stderr.decode()))
    return p


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    return env


class Ctl:
    """One trainctld on the cluster's bridge address, SigV4 with a random key."""

    def __init__(self, a, state, net, agent_path):
        self.state = state
        self.addr = net + ".1"
        self.port = a.port
        self.dir = os.path.join(state, "bench-ctld-%d" % random.randrange(1 << 30))
        os.makedirs(self.dir)
        self.key = "AKIDBENCH" + secrets.token_hex(6).upper()
        self.secret = secrets.token_urlsafe(30)
        cred = os.path.join(self.dir, "credentials")
        with open(cred, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (self.key, self.secret))
        inv = os.path.join(state, "inventory.json")
        if agent_path:
            with open(inv) as f:
                js = json.load(f)
            for h in js["hosts"]:
                h["agent_path"] = agent_path
            inv = os.path.join(self.dir, "inventory.json")
            with open(inv, "w") as f:
                json.dump(js, f)
        self.log = open(os.path.join(self.dir, "trainctld.log"), "w")
        self.args = [os.path.join(a.build, "bin", "trainctld"), "--inventory", inv, "--local-hosts", "0",
                     "--listen", "%s:%d" % (self.addr, self.port), "--advertise-url",
                     "http://%s:%d" % (self.addr, self.port), "--credentials", cred,
                     "--state-dir", os.path.join(self.dir, "state")]
        self.proc = None

    def start(self):
        self.t_start = time.time_ns()
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                sys.exit("bench: trainctld exited %s (log %s)" % (self.proc.returncode, self.log.name))
            try:
                c = http.client.HTTPConnection(self.addr, self.port, timeout=1)
                c.request("GET", "/healthz")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    return
            except OSError:
                pass
            time.sleep(0.002)
        sys.exit("bench: trainctld not answering")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def _req(self, method, path, body=b"", headers=None):
        host = "%s:%d" % (self.addr, self.port)
        p, _, q = path.partition("?")
        hs = dict(headers or {})
        hs.update(sc.sigv4_sign(method, host, p, q, body, self.key, self.secret, hs))
        c = http.client.HTTPConnection(self.addr, self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=hs)
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        if r.status != 200:
            raise RuntimeError("%s %s: HTTP %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data)

    def call(self, op, body):
        return self._req("POST", "/", json.dumps(body).encode(),
                         {"X-Amz-Target": "SageMaker." + op, "Content-Type": "application/x-amz-json-1.1"})

    def get(self, path):
        return self._req("GET", path)

    def hosts_ready(self, n, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                hs = self.get("/v1/hosts")["hosts"]
                if sum(h["state"] == "ready" for h in hs) >= n:
                    return
            except (OSError, RuntimeError):
                pass
            time.sleep(0.02)
        sys.exit("bench: hosts not ready: %s (log %s)" % (self.get("/v1/hosts"), self.log.name))

    def cli_create_wait(self, name, n, one=False):
        """`trainctl create-training-job` then `trainctl wait` (one: the
        first with --wait, alone): (t0, t1) ns."""
        cli = os.path.join(os.path.dirname(self.args[0]), "trainctl")
        env = dict(os.environ, TRAINCTL_ENDPOINT="http://%s:%d" % (self.addr, self.port),
                   AWS_ACCESS_KEY_ID=self.key, AWS_SECRET_ACCESS_KEY=self.secret)
        create = [cli, "create-training-job", "--name", name, "--image", "trainctl/python",
                  "--entrypoint", "/bin/date", "--entrypoint", "+%s%N", "--instance-type", ITYPE,
                  "--instance-count", str(n), "--output-path", "s3://bench-out/launch"]
        t0 = time.time_ns()
        for argv in ([create + ["--wait"]] if one else [create, [cli, "wait", name]]):
            r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=120)
            if r.returncode:
                sys.exit("bench: %s: exit %d %s" % (" ".join(argv[:2]), r.returncode, r.stderr.decode()))
        return t0, time.time_ns()

    def follow_lines(self, name, lines, gap):
        """A 1-host job printing `lines` wall-clock times `gap` s apart,
        followed with `trainctl logs -f`: [arrival - printed, ms]."""
        cli = os.path.join(os.path.dirname(self.args[0]), "trainctl")
        env = dict(os.environ, TRAINCTL_ENDPOINT="http://%s:%d" % (self.addr, self.port),
                   AWS_ACCESS_KEY_ID=self.key, AWS_SECRET_ACCESS_KEY=self.secret)
        body = {
            "TrainingJobName": name,
            "RoleArn": "arn:aws:iam::000000000000:role/bench",
            "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File",
                                       "ContainerEntrypoint": ["/bin/sh", "-c", LINES_SH % (lines, gap)]},
            "OutputDataConfig": {"S3OutputPath": "s3://bench-out/launch"},
            "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": 1, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        }
        self.call("CreateTrainingJob", body)
        p = subprocess.Popen([cli, "logs", "-f", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        lat = []
        for line in p.stdout:
            t = time.time_ns()
            w = line.split()
            if w and w[-1].isdigit():
                lat.append((t - int(w[-1])) / 1e6)
        rc = p.wait(60)
        if rc or len(lat) != lines:
            sys.exit("bench: trainctl logs -f %s: exit %d, %d of %d lines %s" % (
                name, rc, len(lat), lines, p.stderr.read().decode()[-300:]))
        return lat

    def launch(self, name, n):
        """Sends CreateTrainingJob; returns (t_sent_ns, [start times ns])."""
        body = {
            "TrainingJobName": name,
            "RoleArn": "arn:aws:iam::000000000000:role/bench",
            "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File",
                                       "ContainerEntrypoint": ["/bin/date", "+%s%N"]},
            "OutputDataConfig": {"S3OutputPath": "s3://bench-out/launch"},
            "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": n, "VolumeSizeInGB": 1},
            "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        }
        t0 = time.time_ns()
        self.call("CreateTrainingJob", body)
        deadline = time.time() + 120
        while True:
            st = self.call("DescribeTrainingJob", {"TrainingJobName": name})
            if st["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                break
            if time.time() > deadline:
                sys.exit("bench: %s still %s" % (name, st["TrainingJobStatus"]))
            time.sleep(0.01)
        if st["TrainingJobStatus"] != "Completed":
            sys.exit("bench: job %s ended %s: %s" % (name, st["TrainingJobStatus"], st.get("FailureReason")))
        starts = []
        for _ in range(300):
            streams = self.get("/v1/training-jobs/%s/logs" % name)["streams"]
            starts = []
            for s in streams:
                ev = self.get("/v1/training-jobs/%s/logs?stream=%s" % (name, urllib.parse.quote(s, safe="")))
                starts += [int(e["message"]) for e in ev["events"] if e["message"].strip().isdigit()]
            if len(starts) >= n:
                break
            time.sleep(0.01)
        if len(starts) != n:
            sys.exit("bench: job %s: %d start times, expected %d" % (name, len(starts), n))
        return t0, starts


def agent_pids_in(prefix, n):
    """trainagent processes inside the cluster's namespaces."""
    inos = set()
    for k in range(1, n + 1):
        try:
            inos.add("net:[%d]" % os.stat("/run/netns/%s-node%d" % (prefix, k)).st_ino)
        except OSError:
            pass
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/ns/net" % d) not in inos:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if b"trainagent" in f.read().split(b"\0")[0]:
                    pids.append(int(d))
        except OSError:
            continue
    return pids


def stats(xs):
    xs = sorted(xs)
    if not xs:
        return None
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return {"n": len(xs), "median": statistics.median(xs), "p90": p90, "min": xs[0], "max": xs[-1]}


SLURM_CONF = """ClusterName={prefix}
SlurmctldHost=node1({net}.11)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
SlurmctldPort={ctldport}
SlurmdPort={slurmdport}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
{nodes}
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""

# The timing loop that runs on node1 (inside its namespaces).
INNER = r'''
import json, os, subprocess, sys, time
cmds = json.loads(sys.argv[1])
runs = int(sys.argv[2])
out = {}
for label, argv, env in cmds:
    e = dict(os.environ)
    e.update(env)
    res = []
    for i in range(runs + 1):
        t0 = time.time_ns()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, timeout=60)
        t1 = time.time_ns()
        starts = [int(x.split()[-1]) for x in p.stdout.decode().splitlines() if x.split() and x.split()[-1].isdigit()]
        if p.returncode != 0 or len(starts) != NHOSTS:
            res.append({"error": "exit %d, %d start times: %s" % (p.returncode, len(starts), p.stderr.decode()[-400:])})
            break
        if i:   # the first is a warm-up
            res.append({"all_started": (max(starts) - t0) / 1e6, "returned": (t1 - t0) / 1e6})
        # Start every run from an idle cluster (not timed): Slurm keeps nodes
        # COMPLETING for a moment after a job, and a job submitted then
        # waits for the next scheduling pass (up to seconds).
        if label.startswith("srun"):
            end = time.time() + 10
            while time.time() < end:
                q = subprocess.run(["sinfo", "-h", "-o", "%T"], stdout=subprocess.PIPE, env=e, timeout=10)
                if q.stdout.decode().split() == ["idle"]:
                    break
                time.sleep(0.05)
        time.sleep(PAUSE)
    out[label] = res
print(json.dumps(out))
'''


# The program of the log-line test: `lines` lines, the wall-clock time each.
LINES_SH = "i=0; while [ $i -lt %d ]; do date +%%s%%N; sleep %s; i=$((i+1)); done"

# The same program under `srun -u` (unbuffered), from node1.
INNER_LINES = r'''
import json, os, subprocess, sys, time
argv, env, runs = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
e = dict(os.environ)
e.update(env)
lat = []
for i in range(runs):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, env=e)
    for line in p.stdout:
        t = time.time_ns()
        w = line.split()
        if w and w[-1].isdigit():
            lat.append((t - int(w[-1])) / 1e6)
    p.wait(60)
print(json.dumps(lat))
'''


def start_slurm(state, prefix, net, n):
    d = os.path.join(state, "slurm")
    os.makedirs(os.path.join(d, "ctld"), exist_ok=True)
    nodes = "\n".join("NodeName=node%d NodeAddr=%s.%d CPUs=%d Boards=1 SocketsPerBoard=1 CoresPerSocket=%d "
                      "ThreadsPerCore=1 State=UNKNOWN" % (k, net, 10 + k, os.cpu_count(), os.cpu_count())
                      for k in range(1, n + 1))
    for k in range(1, n + 1):
        os.makedirs(os.path.join(d, "spool-node%d" % k), exist_ok=True)
    conf = os.path.join(d, "slurm.conf")
    with open(conf, "w") as f:
        f.write(SLURM_CONF.format(prefix=prefix, net=net, d=d, nodes=nodes, ctldport=6817, slurmdport=6818))
    with open(os.path.join(d, "cgroup.conf"), "w") as f:
        # No cgroup hierarchy inside the hosts' /sys; nothing here uses it.
        f.write("CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n")
    env = ["env", "SLURM_CONF=" + conf]
    sh("exec", "node1", "--prefix", prefix, "--", *env, "slurmctld")
    for k in range(1, n + 1):
        sh("exec", "node%d" % k, "--prefix", prefix, "--", *env, "slurmd")
    deadline = time.time() + 30
    while time.time() < deadline:
        p = sh("exec", "node1", "--prefix", prefix, "--", *env, "sinfo", "-h", "-o", "%T %D", check=False)
        text = p.stdout.decode().split()
        if len(text) == 2 and text[0] == "idle" and text[1] == str(n):
            return conf, None
        time.sleep(0.2)
    return conf, "slurm nodes not idle after 30 s: %s (logs in %s)" % (p.stdout.decode().strip(), d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--warm", type=int, default=20, help="warm trainctl jobs")
    ap.add_argument("--runs", type=int, default=10, help="runs of srun, pdsh, mpirun")
    ap.add_argument("--cold", type=int, default=3, help="cold launches per variant")
    ap.add_argument("--no-slurm", action="store_true")
    ap.add_argument("--pause", type=float, default=0.3, help="seconds between runs (not timed)")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--prefix", default="tcb")
    ap.add_argument("--port", type=int, default=18580)
    ap.add_argument("--line-jobs", type=int, default=3, help="jobs of the log-line test")
    ap.add_argument("--lines", type=int, default=20, help="lines per job of the log-line test")
    ap.add_argument("--line-gap", default="0.1", help="seconds between those lines")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    a.build = os.path.join(REPO, a.build) if not os.path.isabs(a.build) else a.build
    if os.geteuid() != 0:
        sys.exit("bench: skipped: needs root (CAP_NET_ADMIN) to create network namespaces")
    n = a.hosts
    state = "/tmp/trainctl-cluster-%s" % a.prefix
    results = {}
    line_results = {}
    notes = []
    err = None
    ctl = None
    try:
        # -- cold launches: fresh hosts and controller for each
        variants = [("shared /tmp, copied", lambda: os.path.join(state, "trainagent")),
                    ("private dir, copied", lambda: "/var/lib/trainagent/trainagent"),
                    ("already there", lambda: "/tmp/trainagent-bench-present")]
        for label, path_of in variants:
            create_ms, start_ms = [], []
            for i in range(a.cold):
                sh("hosts-up", str(n), "--prefix", a.prefix, "--instance-type", ITYPE)
                env = read_env(os.path.join(state, "cluster.env"))
                path = path_of()
                if label == "already there":
                    shutil.copy2(os.path.join(a.build, "bin", "trainagent"), path + ".tmp")
                    os.rename(path + ".tmp", path)
                ctl = Ctl(a, state, env["CLUSTER_NET"], path)
                ctl.start()
                t0, starts = ctl.launch("cold-%d-%d" % (os.getpid(), i), n)
                create_ms.append((max(starts) - t0) / 1e6)
                start_ms.append((max(starts) - ctl.t_start) / 1e6)
                with open(ctl.log.name) as f:
                    fails = [x for x in f if "provisioning failed" in x]
                if fails:
                    notes.append("cold (%s) #%d: %d provisioning failures, e.g. %s" % (
                        label, i + 1, len(fails), re.sub(r"^\S+ ", "", fails[0].strip())))
                if i < a.cold - 1 or label != variants[-1][0]:
                    ctl.stop()
                    ctl = None
                    sh("hosts-down", "--prefix", a.prefix)
            results["trainctl cold, create -> all running (agent %s)" % label] = stats(create_ms)
            results["trainctl cold, ctld start -> all running (agent %s)" % label] = stats(start_ms)
        try:
            os.unlink("/tmp/trainagent-bench-present")
        except OSError:
            pass

        # -- warm: the same hosts, agents up
        env = read_env(os.path.join(state, "cluster.env"))
        net = env["CLUSTER_NET"]
        ctl.hosts_ready(n)
        warm = []
        for i in range(a.warm + 1):
            t0, starts = ctl.launch("warm-%d-%d" % (os.getpid(), i), n)
            if i:
                warm.append((max(starts) - t0) / 1e6)
            time.sleep(a.pause)
        results["trainctl warm, create -> all running"] = stats(warm)
        e2e = []
        for i in range(a.warm + 1):
            t0, t1 = ctl.cli_create_wait("cli-%d-%d" % (os.getpid(), i), n)
            if i:
                e2e.append((t1 - t0) / 1e6)
            time.sleep(a.pause)
        results["trainctl create + wait (returned)"] = stats(e2e)
        e2e = []
        for i in range(a.warm + 1):
            t0, t1 = ctl.cli_create_wait("cliw-%d-%d" % (os.getpid(), i), n, one=True)
            if i:
                e2e.append((t1 - t0) / 1e6)
            time.sleep(a.pause)
        results["trainctl create --wait (returned)"] = stats(e2e)
        lat = []
        for i in range(a.line_jobs):
            lat += ctl.follow_lines("lines-%d-%d" % (os.getpid(), i), a.lines, a.line_gap)
        line_results = {"trainctl logs -f": stats(lat)}

        # -- the others, from node1
        hostlist = ",".join("node%d" % k for k in range(1, n + 1))
        cmds = []
        if not a.no_slurm:
            conf, err = start_slurm(state, a.prefix, net, n)
            if err:
                notes.append("srun skipped: " + err)
            else:
                cmds.append(["srun -N%d" % n, ["srun", "-N%d" % n, "-n%d" % n, "/bin/date", "+%s%N"],
                             {"SLURM_CONF": conf}])
        cmds.append(["pdsh -R ssh -w", ["pdsh", "-R", "ssh", "-w", hostlist, "/bin/date +%s%N"], {}])
        cmds.append(["mpirun -H", ["mpirun", "--allow-run-as-root", "-H", hostlist, "-np", str(n),
                                   "--mca", "plm_rsh_agent", "ssh",
                                   "--mca", "btl_tcp_if_include", net + ".0/24",
                                   "--mca", "oob_tcp_if_include", net + ".0/24",
                                   "/bin/date", "+%s%N"], {}])
        inner = INNER.replace("NHOSTS", str(n)).replace("PAUSE", str(a.pause))
        p = sh("exec", "node1", "--prefix", a.prefix, "--", "/usr/bin/python3", "-c", inner, json.dumps(cmds),
               str(a.runs), timeout=600)
        got = json.loads(p.stdout.decode().strip().splitlines()[-1])
        for label, res in got.items():
            errs = [r["error"] for r in res if "error" in r]
            if errs:
                notes.append("%s failed: %s" % (label, errs[0]))
                continue
            results[label + " (all started)"] = stats([r["all_started"] for r in res])
            results[label + " (returned)"] = stats([r["returned"] for r in res])
        if not a.no_slurm and not err:
            prog = LINES_SH % (a.lines, a.line_gap)
            p = sh("exec", "node1", "--prefix", a.prefix, "--", "/usr/bin/python3", "-c", INNER_LINES,
                   json.dumps(["srun", "-u", "-N1", "-n1", "/bin/sh", "-c", prog]),
                   json.dumps({"SLURM_CONF": conf}), str(a.line_jobs), timeout=600)
            line_results["srun -u -N1"] = stats(json.loads(p.stdout.decode().strip().splitlines()[-1]))
    finally:
        if ctl:
            ctl.stop()
        sh("hosts-down", "--prefix", a.prefix, check=False)

    w = max(len(k) for k in results) if results else 10
    print("launch latency, %d hosts on one machine (ms)" % n)
    print("| %-*s | %3s | %8s | %8s | %8s | %8s |" % (w, "launcher", "n", "median", "p90", "min", "max"))
    print("| %s | --: | -------: | -------: | -------: | -------: |" % ("-" * w))
    for k, s in results.items():
        if s:
            print("| %-*s | %3d | %8.1f | %8.1f | %8.1f | %8.1f |" % (w, k, s["n"], s["median"], s["p90"], s["min"],
                                                                    s["max"]))
    print()
    print("a log line, printed -> shown to the user (ms; %d jobs of %d lines, %s s apart)" % (
        a.line_jobs, a.lines, a.line_gap))
    print("| %-*s | %4s | %8s | %8s | %8s | %8s |" % (w, "follower", "n", "median", "p90", "min", "max"))
    print("| %s | ---: | -------: | -------: | -------: | -------: |" % ("-" * w))
    for k, s in line_results.items():
        if s:
            print("| %-*s | %4d | %8.1f | %8.1f | %8.1f | %8.1f |" % (w, k, s["n"], s["median"], s["p90"],
                                                                     s["min"], s["max"]))
    srun = results.get("srun -N%d (returned)" % n)
    for label in ("trainctl create + wait (returned)", "trainctl create --wait (returned)"):
        mine = results.get(label)
        if srun and mine:
            print("%s / srun -N%d, returned, medians: %.2f" % (label.replace(" (returned)", ""), n,
                                                              mine["median"] / srun["median"]))
    for x in notes:
        print("note: " + x)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "lines": line_results, "notes": notes}, f, indent=1)


if __name__ == "__main__":
    main()
