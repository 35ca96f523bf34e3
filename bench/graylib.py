"""Helpers of bench/gray.py: the namespace cluster with its controller,
signed requests, the processes of a run found in /proc, faults (SIGSTOP,
a CPU quota, a broken torch on one host) and the programs' own output."""
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import ftlib as fl  # noqa: E402
import smcompat as sc  # noqa: E402

PROGRAM = os.path.join(HERE, "gray_ddp.py")
TORCH_INIT = "/usr/lib/python3/dist-packages/torch/__init__.py"
STEP_RE = re.compile(r"gray-step step=(\d+) rank=(\d+) attempt=(\d+) ts=([0-9.]+)")
START_RE = re.compile(r"gray-start rank=(\d+) attempt=(\d+) resumed_from=(\d+) world=\d+ ts=([0-9.]+)")
STUCK_RE = re.compile(r"gray-stuck rank=(\d+) step=\d+ ts=([0-9.]+)")


class Cluster(fl.NsCluster):
    """fl.NsCluster plus signed POSTs and the trainctl CLI."""

    def call(self, op, body):
        return self.send("POST", "/", json.dumps(body).encode(),
                         {"X-Amz-Target": "SageMaker." + op, "Content-Type": "application/x-amz-json-1.1"})

    def send(self, method, path, body=b"", headers=None):
        host = "%s:%d" % (self.addr, self.port)
        hs = dict(headers or {})
        hs.update(sc.sigv4_sign(method, host, path, "", body, self.key, self.secret, hs))
        c = http.client.HTTPConnection(self.addr, self.port, timeout=30)
        try:
            c.request(method, path, body=body, headers=hs)
            r = c.getresponse()
            data = r.read()
        finally:
            c.close()
        if r.status != 200:
            raise RuntimeError("%s %s: HTTP %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data) if data else {}

    def describe(self, name):
        return self.call("DescribeTrainingJob", {"TrainingJobName": name})

    def undrain(self, host):
        self.send("POST", "/v1/hosts/%s/undrain" % host)

    def exec_on(self, node, *cmd, timeout=60):
        return self.sh("exec", node, "--prefix", self.prefix, "--", *cmd, timeout=timeout)

    def popen_on(self, node, argv, log_path):
        """argv inside node's namespaces; stdout+stderr to log_path."""
        out = open(log_path, "ab")
        p = subprocess.Popen(["/bin/bash", fl.CLUSTER_SH, "exec", node, "--prefix", self.prefix, "--"] + argv,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        return p


def job_lines(cl, name):
    """Every line the job's ranks wrote, from the controller's log files."""
    out = []
    d = cl.logs_dir(name)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), "rb") as fh:
            for line in fh.read().decode("utf-8", "replace").splitlines():
                parts = line.split("\t", 3)
                if len(parts) == 4:
                    out.append(parts[3])
    return out


def file_lines(paths):
    out = []
    for p in paths:
        try:
            with open(p, "rb") as f:
                out += f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            pass
    return out


def steps(lines):
    """[(step, rank, attempt, ts)] of the gray-step lines."""
    out = []
    for x in lines:
        m = STEP_RE.search(x)
        if m:
            out.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), float(m.group(4))))
    return out


def first_step_after(lines, t0, attempt=None, min_rank_count=1):
    """The first step time after t0 (of `attempt` when given), None if none."""
    ts = [s[3] for s in steps(lines) if s[3] > t0 and (attempt is None or s[2] == attempt)]
    return min(ts) if len(ts) >= min_rank_count else None


def wait_for(pred, timeout, interval=0.1, what="condition"):
    deadline = time.time() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.time() > deadline:
            raise RuntimeError("%s: not within %.0f s" % (what, timeout))
        time.sleep(interval)


def rank_procs(marker):
    """{rank: [pid]} of the program's processes whose environment holds
    GRAY_MARKER=marker (not the launchers that carry it too)."""
    want = ("GRAY_MARKER=%s" % marker).encode()
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if want not in env:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % d) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except (OSError, IndexError):
            continue
        if (b"python" not in argv[0] or not any(x.endswith(b"gray_ddp.py") for x in argv)
                or b"torch.distributed.run" in argv):
            continue
        kv = dict(e.split(b"=", 1) for e in env if b"=" in e)
        r = kv.get(b"RANK", kv.get(b"SLURM_PROCID"))
        if r is not None:
            out.setdefault(int(r), []).append(int(d))
    return out


def all_procs(marker):
    """Every process (launchers too) whose environment holds the marker."""
    want = ("GRAY_MARKER=%s" % marker).encode()
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if want in f.read().split(b"\0"):
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def kill_marker(marker):
    for sig in (signal.SIGCONT, signal.SIGKILL):
        fl.kill_pids(all_procs(marker), sig)


def host_of_pid(cl, pid):
    """nodeK whose network namespace holds pid."""
    for k in range(1, cl.n_hosts + 1):
        if cl.netns_pids("node%d" % k, [pid]):
            return "node%d" % k
    return None


class Throttle:
    """A cgroup v1 CPU quota (quota of a 100 ms period) for some processes."""

    def __init__(self, tag, quota):
        self.path = "/sys/fs/cgroup/cpu/trainctl-bench-gray-%d-%s" % (os.getpid(), tag)
        os.mkdir(self.path)
        for k, v in (("cpu.cfs_period_us", 100000), ("cpu.cfs_quota_us", int(100000 * quota))):
            with open(os.path.join(self.path, k), "w") as f:
                f.write(str(v))

    def add(self, pids):
        for pid in pids:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def remove(self):
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = f.read().split()
        except OSError:
            left = []
        for pid in left:
            try:
                with open("/sys/fs/cgroup/cpu/cgroup.procs", "w") as f:
                    f.write(pid)
            except OSError:
                pass
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.05)


def break_torch(cl, node, tmp):
    """A host whose every job fails at start: its torch install is broken
    (a file bound over torch/__init__.py in its own mount namespace)."""
    bad = os.path.join(tmp, "broken_torch_init.py")
    with open(bad, "w") as f:
        f.write('raise ImportError("libtorch_cpu.so: cannot open shared object file: '
                'Input/output error")\n')
    rc, out, err = cl.exec_on(node, "mount", "--bind", bad, TORCH_INIT)
    if rc:
        raise RuntimeError("mount over torch on %s: %s%s" % (node, out, err))


def mend_torch(cl, node):
    cl.exec_on(node, "umount", TORCH_INIT)


def stats(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": xs[0], "max": xs[-1]}


def fmt(s, unit="s"):
    if not s:
        return "-"
    if s["n"] == 1:
        return "%.1f %s" % (s["median"], unit)
    return "%.1f (%.1f-%.1f)" % (s["median"], s["min"], s["max"])
