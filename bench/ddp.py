#!/usr/bin/python3
"""DDP training throughput under trainctl vs the same script launched by
hand with env://, on the same hosts, side by side. Target: trainctl / by
hand >= 0.99 (medians of steps/s).

The script is examples/pytorch_ddp/train.py (torch DistributedDataParallel
over gloo on CPU; it times its own training loop, so start-up and launch
cost are not in the figure: rank 0 writes steps and train_seconds into
metrics.json, and steps/s = steps / train_seconds).

The hosts are a scripts/cluster.sh cluster (network namespaces on a bridge,
one sshd each; needs root), brought up with

    scripts/cluster.sh up --hosts 2 --prefix tcdd --net 10.212.43 --port 18497 \\
        --agent-path /root/trainagent -- --heartbeat-ms 500 --host-deadline-ms 10000

and always torn down at the end (scripts/cluster.sh down --prefix tcdd).

  trainctl  CreateTrainingJob (examples/pytorch_ddp/job.json: PyTorch image,
            sagemaker_torch_distributed_enabled, InstanceCount = --hosts,
            so one process per host) with `trainctl create-training-job
            --cli-input-json`, then `trainctl wait`; code placed with
            `trainctl upload-source`, the digits with `trainctl cp`
            (TRAINCTL_STATE_DIR: the controller's blob endpoint does not
            take SigV4 yet); metrics.json read back from model.tar.gz with
            `trainctl cp`.
  by hand   rank k on node(k+1), all started at once, each with
            `scripts/cluster.sh exec nodeK --prefix tcdd -- env -i VARS
            /usr/bin/python3 examples/pytorch_ddp/train.py ARGS`: VARS are
            the env:// set (MASTER_ADDR = node1's address, MASTER_PORT,
            WORLD_SIZE, RANK, LOCAL_RANK, GLOO_SOCKET_IFNAME=eth0), SM_*
            paths into a temp copy of the data, and the same base variables
            the agent gives its processes (PATH, HOME, LANG, USER,
            PYTHONUNBUFFERED, PYTHONPATH = the code directory); ARGS are
            the job's hyperparameters as `--key value`, as the agent passes
            them. Each rank leads its own session (setsid), as after a
            login on its host and as the agent starts ranks: with
            sched_autogroup_enabled the kernel shares the CPU between
            sessions first, so this matters on a loaded machine.

Both sides get the same thread setting: OMP_NUM_THREADS=--threads (default
1: two hosts of this machine share its cores; 0 leaves it unset on both
sides), through the job's Environment for trainctl. Both sides also carry
a marker variable TCDD_RUN=<run> by which the benchmark finds the ranks in
/proc (a scan every 0.5 s until all are found, then one status read per
rank per 0.5 s, the same on both sides), to report, per side, the rank
processes' environment, argv, thread count, nice value, scheduling policy,
CPU affinity, CPU cgroups and session; what differs is printed, as what
could explain a ratio below 1. Each run also reports CPU seconds: the
ranks', the launch machinery's (trainctld, agents, the trainctl CLI) and
the rest of the machine's busy time ("others": other work on a shared
machine, the usual cause of a noisy ratio).

Rounds alternate the order (ABBA: trainctl first in odd rounds, by hand
first in even ones) so that a drift in the machine's load hits both sides
alike; --pause seconds between runs, not timed.

Usage (root, from the top of the tree):
    /usr/bin/python3 bench/ddp.py [--rounds 5] [--epochs 60] [--threads 1]
        [--hosts 2] [--build build] [--json FILE]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
DDP_DIR = os.path.join(REPO, "examples", "pytorch_ddp")
TRAIN_PY = os.path.join(DDP_DIR, "train.py")
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
PYTHON = "/usr/bin/python3"
BUCKET = "bench-ddp"
CODE_URI = "s3://%s/code/pytorch_ddp/" % BUCKET
DATA_URI = "s3://%s/digits/" % BUCKET
OUT_URI = "s3://%s/out" % BUCKET
MARKER = "TCDD_RUN"
TICK = float(os.sysconf("SC_CLK_TCK"))
# What agent/launch.c's base_env gives every process (PATH is its BASE_PATH).
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Variables that can change how fast the training loop runs.
PERF_VARS = re.compile(r"^(OMP_|GOMP_|KMP_|MKL_|OPENBLAS_|BLIS_|NUMEXPR_|VECLIB_|TORCH_|PYTORCH_|ATEN_|GLOO_|"
                       r"NCCL_|CUDA_|LD_PRELOAD$|LD_LIBRARY_PATH$|PYTHON|MALLOC_|GLIBC_TUNABLES$)")


def now():
    return time.time()


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


# ---------------------------------------------------------------- the cluster

class Cluster:
    def __init__(self, a):
        self.a = a
        self.state = "/tmp/trainctl-cluster-%s" % a.prefix
        self.exports = {}
        self.up_cmd = ["scripts/cluster.sh", "up", "--hosts", str(a.hosts), "--prefix", a.prefix, "--net", a.net,
                       "--port", str(a.port), "--agent-path", a.agent_path]
        if a.build_given:
            self.up_cmd += ["--trainctld", os.path.join(a.build, "bin", "trainctld")]
        self.up_cmd += ["--", "--heartbeat-ms", "500", "--host-deadline-ms", "10000"]
        self.addr = {}   # node -> address
        self.itype = None
        self.trainctl = os.path.join(a.build, "bin", "trainctl")

    def sh(self, *args, timeout=180, check=True):
        p = subprocess.run(["/bin/bash", CLUSTER_SH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout, cwd=REPO)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if check and p.returncode != 0:
            raise RuntimeError("cluster.sh %s: exit %d\n%s%s" % (args[0], p.returncode, out, err))
        return p.returncode, out, err

    def up(self):
        t = now()
        _, out, err = self.sh(*self.up_cmd[1:])
        for line in out.splitlines():   # what `eval "$(cluster.sh up ...)"` would set
            m = re.match(r"^export (\w+)=(.*)$", line)
            if m:
                self.exports[m.group(1)] = m.group(2)
        for k in ("TRAINCTL_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            if k not in self.exports:
                raise RuntimeError("cluster.sh up printed no %s export:\n%s%s" % (k, out, err))
        with open(os.path.join(self.state, "inventory.json")) as f:
            inv = json.load(f)
        self.addr = {h["name"]: h["address"] for h in inv["hosts"]}
        self.itype = inv["hosts"][0]["instance_type"]
        return now() - t, err.strip()

    def down(self):
        return self.sh("down", "--prefix", self.a.prefix, timeout=120, check=False)

    def cli(self, *args, store=False, timeout=120, check=True):
        env = dict(os.environ)
        env.update(self.exports)
        if store:
            env["TRAINCTL_STATE_DIR"] = os.path.join(self.state, "controller", "state")
        p = subprocess.run([self.trainctl] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=env, timeout=timeout)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if check and p.returncode != 0:
            raise RuntimeError("trainctl %s: exit %d: %s%s" % (" ".join(args), p.returncode, out, err))
        return p.returncode, out, err

    def cli_popen(self, *args):
        env = dict(os.environ)
        env.update(self.exports)
        return subprocess.Popen([self.trainctl] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)


# ---------------------------------------------------------------- the rank processes

def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def find_ranks(tag, want):
    """pid -> {argv, env} of the train.py processes whose environment holds
    MARKER=tag."""
    found = {}
    needle = ("\0%s=%s\0" % (MARKER, tag)).encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = read("/proc/%s/cmdline" % d, "rb")
            if b"train.py" not in cmd:
                continue
            env = read("/proc/%s/environ" % d, "rb")
        except OSError:
            continue
        if needle not in b"\0" + env + b"\0":
            continue
        argv = [x.decode("utf-8", "replace") for x in cmd.split(b"\0") if x]
        if argv and os.path.basename(argv[0]).startswith("python"):
            envd = dict(x.decode("utf-8", "replace").partition("=")[::2] for x in env.split(b"\0") if b"=" in x)
            found[int(d)] = {"argv": argv, "env": envd}
        if len(found) >= want:
            break
    return found


def proc_attrs(pid):
    """Thread count, nice, policy, affinity, cgroup of one process, or None."""
    try:
        status = read("/proc/%d/status" % pid)
        stat = read("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()
        # The controllers that can hold a process's CPU back (v1 cpu,
        # cpuacct, cpuset; the v2 hierarchy "0::").
        cgroup = " ".join(x for x in read("/proc/%d/cgroup" % pid).split()
                          if x.startswith("0::") or re.search(r":(cpu|cpuacct|cpuset)(,[a-z,]*)?:", x))
        autogroup = read("/proc/%d/autogroup" % pid).split()
    except (OSError, IndexError):
        return None
    # With sched_autogroup_enabled, CFS shares the CPU between sessions
    # first: whether a rank leads its own session matters under load.
    session = "own session" if int(stat[3]) == pid else "another's session"
    if len(autogroup) == 3:
        session += " (autogroup nice %s)" % autogroup[2]
    f = dict(x.split(":\t", 1) for x in status.splitlines() if ":\t" in x)
    # stat fields after ")": state is field 3, so nice (19) is [16], policy (41) is [38].
    return {"threads": int(f.get("Threads", "0")), "cpus": f.get("Cpus_allowed_list", "?").strip(),
            "nice": int(stat[16]), "policy": {"0": "SCHED_OTHER", "1": "SCHED_FIFO", "2": "SCHED_RR",
                                              "3": "SCHED_BATCH", "5": "SCHED_IDLE"}.get(stat[38], stat[38]),
            "cgroup": cgroup, "session": session, "cpu_s": (int(stat[11]) + int(stat[12])) / TICK}


class Watch:
    """Finds a run's ranks and samples them; the same on both sides."""

    def __init__(self, tag, want):
        self.tag, self.want = tag, want
        self.ranks = {}   # pid -> {"argv", "env", "attrs"}
        self.next = 0.0

    def poll(self):
        if now() < self.next:
            return
        self.next = now() + 0.5
        if len(self.ranks) < self.want:
            for pid, info in find_ranks(self.tag, self.want).items():
                self.ranks.setdefault(pid, info)
        for pid, info in self.ranks.items():
            at = proc_attrs(pid)
            if at is None:
                continue
            prev = info.get("attrs")
            if prev:
                at["threads"] = max(at["threads"], prev["threads"])
            info["attrs"] = at

    def by_rank(self):
        out = {}
        for pid, info in self.ranks.items():
            r = info["env"].get("RANK")
            out[int(r) if r and r.isdigit() else pid] = info
        return out


def wait_gone(tag, timeout=20):
    """Until no process of run tag is left (the previous run's teardown)."""
    end = now() + timeout
    while now() < end:
        if not find_ranks(tag, 1):
            return True
        time.sleep(0.2)
    return False


def busy_s():
    """CPU seconds the whole machine has been busy (all cores, /proc/stat)."""
    f = [int(x) for x in read("/proc/stat").splitlines()[0].split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / TICK   # all but idle and iowait (guest is in user)


def tree_cpu_s(pid):
    """CPU seconds of pid itself and of its reaped children."""
    try:
        st = read("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()
        return sum(int(x) for x in st[11:15]) / TICK
    except (OSError, IndexError):
        return None


def infra_pids(cl):
    """trainctld and the hosts' agents (trainagent in the namespaces)."""
    pids = []
    try:
        pids.append(int(read(os.path.join(cl.state, "controller", "trainctld.pid")).strip()))
    except (OSError, ValueError):
        pass
    inos = set()
    for k in range(1, cl.a.hosts + 1):
        try:
            inos.add("net:[%d]" % os.stat("/run/netns/%s-node%d" % (cl.a.prefix, k)).st_ino)
        except OSError:
            pass
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/ns/net" % d) in inos and \
                    read("/proc/%s/cmdline" % d, "rb").split(b"\0")[0].endswith(b"trainagent"):
                pids.append(int(d))
        except OSError:
            continue
    return pids


class Meter:
    """CPU seconds over one run. ours: this benchmark and what it ran
    (trainctl CLI calls, the by-hand ranks), trainctld and the agents, each
    with its reaped children (the agents' include their ranks); others: the
    machine's busy time minus ours, i.e. other work on the machine;
    overhead: ours minus the ranks' (sampled) and the benchmark's own, i.e.
    the launch machinery (trainctld, agents, CLI; by hand: nothing but the
    ranks' last unsampled moments, as on the trainctl side)."""

    def __init__(self, cl):
        self.pids = infra_pids(cl)
        self.t0 = {p: tree_cpu_s(p) for p in self.pids}
        self.b0 = busy_s()
        self.s0 = os.times()[:4]

    def stop(self, ranks):
        busy = busy_s() - self.b0
        infra = 0.0
        for p, a in self.t0.items():
            b = tree_cpu_s(p)
            if a is not None and b is not None:
                infra += b - a
        t = os.times()[:4]
        me = t[0] + t[1] - self.s0[0] - self.s0[1]
        kids = t[2] + t[3] - self.s0[2] - self.s0[3]
        rk = sum((r.get("attrs") or {}).get("cpu_s", 0.0) for r in ranks.values())
        ours = me + kids + infra
        return {"busy": busy, "ours": ours, "bench": me, "ranks": rk, "overhead": ours - me - rk,
                "others": busy - ours}


# ---------------------------------------------------------------- the two sides

def hyperparameters(a):
    with open(os.path.join(DDP_DIR, "job.json")) as f:
        req = json.load(f)
    hp = dict(req["HyperParameters"])
    hp["epochs"] = str(a.epochs)
    hp["batch-size"] = str(a.batch_size)
    return req, hp


def user_argv(hp):
    """The hyperparameters as the agent passes them (not sagemaker_*)."""
    out = []
    for k in sorted(hp):
        if k.startswith("sagemaker_"):
            continue
        v = hp[k]
        try:
            v = json.loads(v)
            v = v if isinstance(v, str) else json.dumps(v)
        except ValueError:
            pass
        out += ["--" + k, v]
    return out


def thread_env(a):
    return {"OMP_NUM_THREADS": str(a.threads)} if a.threads > 0 else {}


def run_trainctl(a, cl, name, tag, work):
    req, hp = hyperparameters(a)
    req["TrainingJobName"] = name
    hp["sagemaker_submit_directory"] = json.dumps(CODE_URI + "sourcedir.tar.gz")
    req["HyperParameters"] = hp
    req["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] = DATA_URI
    req["OutputDataConfig"] = {"S3OutputPath": OUT_URI}
    req["ResourceConfig"] = {"InstanceType": cl.itype, "InstanceCount": a.hosts, "VolumeSizeInGB": 1}
    req["StoppingCondition"] = {"MaxRuntimeInSeconds": 600}
    env = {MARKER: tag}
    env.update(thread_env(a))
    req["Environment"] = env
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(req, f, indent=1)
    w = Watch(tag, a.hosts)
    meter = Meter(cl)
    t0 = now()
    cl.cli("create-training-job", "--cli-input-json", "file://" + path)
    p = cl.cli_popen("wait", name, "--timeout", "600", "--interval", "0.5")
    while p.poll() is None:
        w.poll()
        time.sleep(0.05)
    wall = now() - t0
    cpu = meter.stop(w.ranks)
    out = p.stdout.read().decode("utf-8", "replace")
    if p.returncode != 0:
        _, d, _ = cl.cli("describe-training-job", name, "--output", "json", check=False)
        _, logs, _ = cl.cli("logs", name, check=False)
        raise RuntimeError("trainctl job %s did not complete (wait exit %d: %s)\n%s\n%s" % (
            name, p.returncode, out.strip(), d[-1500:], logs[-3000:]))
    local = os.path.join(work, name + "-model.tar.gz")
    cl.cli("cp", "%s/%s/output/model.tar.gz" % (OUT_URI, name), local, store=True)
    with tarfile.open(local, "r:gz") as tf:
        metrics = json.load(tf.extractfile("metrics.json"))
    _, logs, _ = cl.cli("logs", name, check=False)
    line = next((x for x in logs.splitlines() if "throughput steps_per_s=" in x), "")
    return {"metrics": metrics, "wall": wall, "line": line, "ranks": w.by_rank(), "cpu": cpu}


def byhand_env(a, cl, rank, port, tag, rundir, data):
    env = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8", "USER": "root", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": DDP_DIR,
           "MASTER_ADDR": cl.addr["node1"], "MASTER_PORT": str(port), "WORLD_SIZE": str(a.hosts),
           "RANK": str(rank), "LOCAL_RANK": "0", "GLOO_SOCKET_IFNAME": "eth0",
           "SM_CHANNEL_TRAIN": data, "SM_MODEL_DIR": os.path.join(rundir, "model-rank%d" % rank),
           "SM_OUTPUT_DATA_DIR": os.path.join(rundir, "output-rank%d" % rank), MARKER: tag}
    env.update(thread_env(a))
    return env


def byhand_cmd(a, env, node, argv):
    return ["/bin/bash", CLUSTER_SH, "exec", node, "--prefix", a.prefix, "--", "env", "-i"] + \
        ["%s=%s" % kv for kv in env.items()] + [PYTHON, TRAIN_PY] + argv


def run_byhand(a, cl, tag, port, work, data):
    _, hp = hyperparameters(a)
    argv = user_argv(hp)
    rundir = os.path.join(work, tag)
    os.makedirs(rundir)
    w = Watch(tag, a.hosts)
    procs, logs = [], []
    meter = Meter(cl)
    t0 = now()
    for rank in range(a.hosts):
        env = byhand_env(a, cl, rank, port, tag, rundir, data)
        log = open(os.path.join(rundir, "rank%d.log" % rank), "w")
        logs.append(log)
        # setsid: each rank leads its own session, as from a login on its
        # host (and as the agent starts it).
        procs.append(subprocess.Popen(byhand_cmd(a, env, "node%d" % (rank + 1), argv), stdout=log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=rundir,
                                      start_new_session=True))
    deadline = t0 + 600
    try:
        while any(p.poll() is None for p in procs):
            if now() > deadline:
                raise RuntimeError("by hand %s: still running after 600 s" % tag)
            w.poll()
            time.sleep(0.05)
    finally:
        for p in procs:   # the exec chain ends in python: these are the ranks' own PIDs
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    wall = now() - t0
    cpu = meter.stop(w.ranks)
    bad = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode != 0]
    if bad:
        raise RuntimeError("by hand %s: ranks exited %s\n%s" % (tag, bad, read(os.path.join(rundir, "rank0.log"))[-3000:]))
    metrics = json.loads(read(os.path.join(rundir, "model-rank0", "metrics.json")))
    line = next((x for x in read(os.path.join(rundir, "rank0.log")).splitlines()
                 if "throughput steps_per_s=" in x), "")
    return {"metrics": metrics, "wall": wall, "line": line, "ranks": w.by_rank(), "cpu": cpu}


def steps_per_s(m):
    return m["steps"] / m["train_seconds"] if m.get("train_seconds") else 0.0


# ---------------------------------------------------------------- differences

def env_differences(t, h):
    """What differs between the two sides' rank 0 (and every rank's process
    attributes): the lines to print."""
    lines = []
    if 0 not in t or 0 not in h:
        return ["(rank 0 not seen on %s: no comparison)" % ("trainctl" if 0 not in t else "by hand")]
    te, he = t[0]["env"], h[0]["env"]
    perf = sorted(k for k in set(te) | set(he) if PERF_VARS.match(k) and te.get(k) != he.get(k))
    for k in perf:
        lines.append("env %s: trainctl %s, by hand %s%s" % (
            k, shlex.quote(te[k]) if k in te else "(unset)", shlex.quote(he[k]) if k in he else "(unset)",
            " (NCCL/CUDA only: unused by gloo on CPU)" if k.startswith(("NCCL_", "CUDA_")) else ""))
    if not perf:
        lines.append("env: no difference in thread, allocator, library-path or gloo variables (%s)" % (
            ", ".join("%s=%s" % (k, te[k]) for k in sorted(te) if PERF_VARS.match(k)) or "none set"))
    only_t = sorted(k for k in te if k not in he and not PERF_VARS.match(k))
    only_h = sorted(k for k in he if k not in te and not PERF_VARS.match(k))
    other = sorted(k for k in te if k in he and te[k] != he[k] and not PERF_VARS.match(k))
    if only_t:
        lines.append("env only under trainctl (bookkeeping, not read by train.py's loop): %s" % " ".join(only_t))
    if only_h:
        lines.append("env only by hand: %s" % " ".join(only_h))
    if other:
        lines.append("env with other values (paths, ports, the marker): %s" % " ".join(other))
    ta, ha = t[0]["argv"][2:], h[0]["argv"][2:]
    if ta != ha:
        lines.append("argv after the script: trainctl %s, by hand %s" % (" ".join(ta), " ".join(ha)))
    else:
        lines.append("argv after the script: the same (%s)" % " ".join(ta))
    for key in ("threads", "nice", "policy", "cpus", "cgroup", "session"):
        tv = sorted({str((t[r].get("attrs") or {}).get(key)) for r in t})
        hv = sorted({str((h[r].get("attrs") or {}).get(key)) for r in h})
        if tv != hv:
            lines.append("process %s: trainctl %s, by hand %s" % (key, ", ".join(tv), ", ".join(hv)))
        else:
            lines.append("process %s: the same (%s)" % (key, ", ".join(tv)))
    return lines


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of one trainctl job and one by-hand run")
    ap.add_argument("--epochs", type=int, default=60, help="train.py --epochs (23 steps each at 2 ranks)")
    ap.add_argument("--batch-size", type=int, default=32, help="train.py --batch-size (per rank)")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS on both sides (0: unset on both)")
    ap.add_argument("--hosts", type=int, default=2, help="hosts = ranks (one process per host)")
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between runs (not timed)")
    ap.add_argument("--target", type=float, default=0.99)
    ap.add_argument("--prefix", default="tcdd")
    ap.add_argument("--net", default="10.212.43")
    ap.add_argument("--port", type=int, default=18497, help="the controller's port")
    ap.add_argument("--master-port", type=int, default=29650, help="by hand: MASTER_PORT (+ round)")
    ap.add_argument("--agent-path", default="/root/trainagent")
    ap.add_argument("--build", default=None, help="build directory (default build)")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    a.build_given = a.build is not None
    a.build = a.build or os.environ.get("BUILD", "build")
    a.build = a.build if os.path.isabs(a.build) else os.path.join(REPO, a.build)
    if os.geteuid() != 0:
        sys.exit("bench: skipped: needs root (CAP_NET_ADMIN) to create network namespaces")
    for b in ("trainctld", "trainctl", "trainagent"):
        if not os.access(os.path.join(a.build, "bin", b), os.X_OK):
            sys.exit("bench: %s/bin/%s not built" % (a.build, b))
    if not os.path.exists(DIGITS):
        sys.exit("bench: %s missing (python3-sklearn)" % DIGITS)

    cl = Cluster(a)
    cmd = ["/usr/bin/python3", "bench/ddp.py", "--rounds", str(a.rounds), "--epochs", str(a.epochs),
           "--batch-size", str(a.batch_size), "--threads", str(a.threads), "--hosts", str(a.hosts)]
    if a.build_given:
        cmd += ["--build", os.path.relpath(a.build, REPO)]
    print("# reproduce (root, from the top of the tree): %s" % " ".join(cmd))
    print("# cluster: %s" % " ".join(shlex.quote(x) for x in cl.up_cmd))
    try:
        import torch
        tv = torch.__version__
    except Exception as e:  # noqa: BLE001  (only for the header)
        tv = "? (%s)" % e
    print("# machine: %d CPUs, load average %s at start; torch %s, %s" % (
        os.cpu_count(), loadavg(), tv, PYTHON))
    _, hp = hyperparameters(a)
    print("# train.py %s; %s on both sides; rounds alternate the order (ABBA)" % (
        " ".join(user_argv(hp)), "OMP_NUM_THREADS=%d" % a.threads if a.threads > 0 else "OMP_NUM_THREADS unset"))
    sys.stdout.flush()

    work = tempfile.mkdtemp(prefix="bench-ddp-")
    runid = "%x" % (int(now() * 1000) % 0xfffffff)
    rows = []   # (round, side, steps/s, steps, train_s, wall)
    first = {}  # side -> ranks info of its first run
    notes = []
    err = None
    try:
        took, say = cl.up()
        print("# cluster up in %.1f s: %s" % (took, say.replace("\n", " | ")))
        data = os.path.join(work, "data")
        os.makedirs(data)
        shutil.copy2(DIGITS, data)
        cl.cli("upload-source", DDP_DIR, "--to", CODE_URI, store=True)
        cl.cli("cp", DIGITS, DATA_URI + "digits.csv.gz", store=True)
        env0 = byhand_env(a, cl, 0, a.master_port + 1, "<run>", os.path.join(work, "<run>"), data)
        print("# by hand, rank 0 (rank k: node(k+1), RANK=k, at the same time): setsid %s" % " ".join(
            shlex.quote(x) for x in ["scripts/cluster.sh"] + byhand_cmd(a, env0, "node1", user_argv(hp))[2:]))
        print("CPU-s over each run (create/start to end): ranks (sampled every 0.5 s); launch overhead "
              "(trainctld, agents, CLI, with their children, less the ranks); others (the rest of the "
              "machine's busy time: other work)")
        print("| round | launcher | steps/s | steps | train s | wall s | CPU-s ranks | overhead | others |")
        print("| --: | --- | --: | --: | --: | --: | --: | --: | --: |")
        sys.stdout.flush()
        prev = None
        for rnd in range(1, a.rounds + 1):
            order = ("trainctl", "by hand") if rnd % 2 else ("by hand", "trainctl")
            for side in order:
                if prev:
                    if not wait_gone(prev):
                        notes.append("round %d: processes of %s still there after 20 s" % (rnd, prev))
                time.sleep(a.pause)
                tag = "%s-%d-%s" % (runid, rnd, "tc" if side == "trainctl" else "bh")
                if side == "trainctl":
                    r = run_trainctl(a, cl, "ddpb-%s" % tag, tag, work)
                else:
                    r = run_byhand(a, cl, tag, a.master_port + rnd, work, data)
                prev = tag
                m = r["metrics"]
                if m.get("world") != a.hosts:
                    raise RuntimeError("%s: world %s, expected %d" % (side, m.get("world"), a.hosts))
                sps = steps_per_s(m)
                rows.append({"round": rnd, "side": side, "steps_per_s": sps, "steps": m["steps"],
                             "train_s": m["train_seconds"], "wall_s": r["wall"], "accuracy": m.get("accuracy"),
                             "line": r["line"], "cpu": r["cpu"]})
                if side not in first and len(r["ranks"]) >= a.hosts:
                    first[side] = r["ranks"]
                elif len(r["ranks"]) < a.hosts:
                    notes.append("round %d %s: %d of %d ranks seen in /proc" % (rnd, side, len(r["ranks"]), a.hosts))
                c = r["cpu"]
                print("| %d | %s | %.1f | %d | %.3f | %.1f | %.1f | %.2f | %.1f |" % (
                    rnd, side, sps, m["steps"], m["train_seconds"], r["wall"], c["ranks"], c["overhead"], c["others"]))
                sys.stdout.flush()
    except Exception as e:  # noqa: BLE001  (reported, then the cluster goes down)
        err = e
    finally:
        rc, out, derr = cl.down()
        print("# cluster down: exit %d %s" % (rc, (out + derr).strip().replace("\n", " | ")))
        shutil.rmtree(work, ignore_errors=True)

    if err:
        print("bench: failed: %s" % err)
    t = [r["steps_per_s"] for r in rows if r["side"] == "trainctl"]
    h = [r["steps_per_s"] for r in rows if r["side"] == "by hand"]
    summary = {}
    if t and h:
        mt, mh = statistics.median(t), statistics.median(h)
        pairs = [(x["steps_per_s"], y["steps_per_s"]) for x in rows if x["side"] == "trainctl"
                 for y in rows if y["side"] == "by hand" and y["round"] == x["round"]]
        per_round = [x / y for x, y in pairs if y]
        ratio = mt / mh if mh else 0.0
        summary = {"trainctl_median": mt, "byhand_median": mh, "ratio": ratio,
                   "per_round_ratios": per_round, "target": a.target, "met": ratio >= a.target}
        print()
        print("trainctl: %s steps/s, median %.1f (min %.1f, max %.1f)" % (
            " ".join("%.1f" % x for x in t), mt, min(t), max(t)))
        print("by hand:  %s steps/s, median %.1f (min %.1f, max %.1f)" % (
            " ".join("%.1f" % x for x in h), mh, min(h), max(h)))
        print("ratio trainctl / by hand (medians): %.3f, target >= %.2f: %s" % (
            ratio, a.target, "met" if ratio >= a.target else "MISSED"))
        if per_round:
            print("per-round ratios: %s (median %.3f)" % (" ".join("%.3f" % x for x in per_round),
                                                         statistics.median(per_round)))
        for side in ("trainctl", "by hand"):
            cs = [r["cpu"] for r in rows if r["side"] == side]
            print("%-9s CPU-s per run, medians: ranks %.1f, overhead %.2f, others %.1f (machine busy %.1f over %.1f s)" % (
                side + ":", statistics.median(c["ranks"] for c in cs), statistics.median(c["overhead"] for c in cs),
                statistics.median(c["others"] for c in cs),
                statistics.median(c["busy"] for c in cs),
                statistics.median(r["wall_s"] for r in rows if r["side"] == side)))
        spread = (max(h) - min(h)) / mh if mh else 0
        if abs(1 - ratio) < spread:
            print("note: the by-hand runs alone spread %.1f%% (max-min over median), more than the gap of %.1f%%"
                  % (100 * spread, 100 * abs(1 - ratio)))
    print()
    print("environment differences (rank processes as seen in /proc, first run of each side):")
    diffs = env_differences(first.get("trainctl", {}), first.get("by hand", {}))
    for line in diffs:
        print("  " + line)
    print("# load average at the end: %s" % loadavg())
    for x in notes:
        print("note: " + x)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"command": cmd, "runs": rows, "summary": summary, "differences": diffs, "notes": notes,
                       "error": str(err) if err else None}, f, indent=1)
    return 1 if err else 0


if __name__ == "__main__":
    sys.exit(main())
