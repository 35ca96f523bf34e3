"""Shared pieces of the fault-tolerance test (test_faults.py) and the
restart benchmark (bench/restart.py); not a test itself.

  LocalCluster  a trainctld with its embedded local cluster on a free
                loopback port and a temp state dir: start, kill -9, restart
                with the same arguments, stop; the agents it started.
  NsCluster     scripts/cluster.sh up/down/link-down/link-up/exec for a
                cluster of network namespaces (root only).
  job_request   a CreateTrainingJob request running ft_trainer.py.
  wait_job, procs_with, store_problems, results, attempt_logs, reference.

Standard library plus boto3/botocore (Debian's /usr/bin/python3).
"""
import glob
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(BUILD, "bin") if os.path.isabs(BUILD) else os.path.join(REPO, BUILD, "bin")
TRAINCTLD = os.path.join(BIN, "trainctld")
TRAINCTL = os.path.join(BIN, "trainctl")
TRAINAGENT = os.path.join(BIN, "trainagent")
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
TRAINER = os.path.join(HERE, "ft_trainer.py")
TRAINER_SH = os.path.join(HERE, "ft_trainer.sh")
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
BUCKET = "trainctl-ft"
OUT = "s3://%s/out" % BUCKET
CKPT_RE = re.compile(r"^step-(\d{10})\.rank-(0|[1-9]\d*)$")

Fail, expect, short = sc.Fail, sc.expect, sc.short


def terminal(d):
    return d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")


def running(d):
    return d.get("SecondaryStatus") == "Training" or terminal(d)


# ---------------------------------------------------------------- clusters

class LocalCluster:
    """trainctld --local-hosts N on 127.0.0.1:<free port>."""

    def __init__(self, n_hosts=3, extra=(), prefix="trainctl-ft-"):
        self.n_hosts = n_hosts
        self.extra = list(extra)
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.state = os.path.join(self.tmp, "state")
        self.log_path = os.path.join(self.tmp, "trainctld.log")
        self.port = sc.free_port()
        self.proc = None
        self.starts = 0

    @property
    def endpoint(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def args(self):
        return [TRAINCTLD, "--listen", "127.0.0.1:%d" % self.port, "--state-dir", self.state,
                "--local-hosts", str(self.n_hosts)] + self.extra

    def client(self):
        return sc.make_client(self.endpoint)

    def s3_path(self, uri):
        assert uri.startswith("s3://")
        return os.path.join(self.state, "s3", uri[5:])

    def logs_dir(self, job):
        return os.path.join(self.state, "logs", job)

    def start(self, timeout=30.0, wait_hosts=True):
        """Starts trainctld (again, with the same arguments); None or why not."""
        if not os.access(TRAINCTLD, os.X_OK):
            return "%s not built" % TRAINCTLD
        os.makedirs(self.state, exist_ok=True)
        log = open(self.log_path, "ab")
        log.write(("\n==== start %d: %s\n" % (self.starts + 1, " ".join(self.args))).encode())
        log.flush()
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        self.starts += 1
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return "exited with status %s\n%s" % (self.proc.returncode, self.log_tail())
            try:
                r = sc.http_request(self.port, "GET", "/healthz", timeout=2)
                if r.status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        else:
            return "not answering /healthz after %.0f s\n%s" % (timeout, self.log_tail())
        if wait_hosts:
            try:
                self.wait_hosts(lambda hs: sum(h.get("state") in ("ready", "busy") for h in hs) >= self.n_hosts,
                                max(1.0, deadline - time.time()), "%d hosts ready" % self.n_hosts)
            except Fail as e:
                return str(e)
        return None

    def kill9(self):
        """kill -9 of trainctld (its agents stay)."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def stop(self, timeout=20.0):
        """SIGTERM; (exit status, whether SIGKILL was needed)."""
        if not self.proc:
            return None, False
        killed = False
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                killed = True
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc, killed

    def get_json(self, path, timeout=10):
        r = sc.http_request(self.port, "GET", path, timeout=timeout)
        return r.status, r.json

    def hosts(self):
        st, js = self.get_json("/v1/hosts")
        expect(st == 200 and isinstance(js, dict), "GET /v1/hosts: HTTP %s %s" % (st, short(js)))
        return js.get("hosts") or []

    def wait_hosts(self, pred, timeout, what):
        deadline = time.time() + timeout
        last = None
        while True:
            try:
                last = self.hosts()
                if pred(last):
                    return last
            except (OSError, Fail) as e:
                last = str(e)
            if time.time() > deadline:
                raise Fail("%s: not after %.0f s; hosts %s; GET /v1/hosts: %s\n%s" % (
                    what, timeout, host_states(last), short(last, 1200), self.log_tail(10)))
            time.sleep(0.05)

    def host_of(self, job, algo):
        for h in self.hosts():
            if h.get("job") == job and h.get("algo") == algo:
                return h["name"]
        return None

    def agent_pids(self):
        """{host name: pid} of the live trainagent processes of this state
        dir (not their forked workers, which have the same command line)."""
        found = {}
        for pid, argv in proc_argvs():
            if not argv or not os.path.basename(argv[0]).startswith("trainagent"):
                continue
            if "--work-dir" not in argv or not argv[argv.index("--work-dir") + 1].startswith(self.state + "/"):
                continue
            if "--host" in argv:
                found[pid] = argv[argv.index("--host") + 1]
        out = {}
        for pid, host in found.items():
            if found.get(ppid_of(pid)) != host:
                out[host] = pid
        return out

    def own_pids(self):
        """Processes whose command line names this state dir."""
        return [pid for pid, argv in proc_argvs() if any(self.state in a for a in argv)]

    def check_stopped(self, tap, rc, killed):
        """A suite's last check, after stop() gave rc and killed: trainctld
        exited 0 on SIGTERM alone and no process of this state dir (agent,
        watchdog, rank) is left. Kills what is left and cleans up."""
        left = self.own_pids()
        tap.ok(rc == 0 and not killed and not left, "trainctld exits 0 on SIGTERM; no agent left",
               "exit %r, SIGKILL needed %s, left %s" % (rc, killed, left))
        kill_pids(left)
        self.cleanup()

    def log_tail(self, n=25, grep=None):
        out = []
        for path in [self.log_path] + sorted(glob.glob(os.path.join(self.state, "hosts", "*", "agent.log"))):
            try:
                with open(path, "rb") as f:
                    lines = f.read().decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            if grep:
                lines = [x for x in lines if grep in x]
            lines = [x for x in lines if " debug " not in x]
            out.append("--- %s (last %d of %d lines) ---" % (os.path.relpath(path, self.tmp), min(n, len(lines)),
                                                            len(lines)))
            out.extend(lines[-n:])
        return "\n".join(out)

    def cleanup(self):
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
            print("# kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


class NsCluster:
    """scripts/cluster.sh: hosts node1..N in network namespaces, trainctld
    in the root namespace on NET.1:PORT with generated credentials."""

    def __init__(self, prefix, net, port, n_hosts=3, itype="ml.c5.xlarge", extra=(), up_args=()):
        self.prefix, self.net, self.port, self.n_hosts, self.itype = prefix, net, port, n_hosts, itype
        self.extra = list(extra)
        self.up_args = list(up_args)  # cluster.sh up options (--tls, ...)
        self.state = "/tmp/trainctl-cluster-%s" % prefix
        self.env = {}
        self.endpoint = self.key = self.secret = self.addr = None
        self.up_out = ""

    @property
    def ctrl_state(self):
        return os.path.join(self.state, "controller", "state")

    def sh(self, *args, timeout=120):
        p = subprocess.run(["/bin/bash", CLUSTER_SH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def up(self):
        rc, out, err = self.sh("up", "--hosts", str(self.n_hosts), "--prefix", self.prefix, "--net", self.net,
                               "--port", str(self.port), "--instance-type", self.itype, "--timeout", "60",
                               "--trainctld", TRAINCTLD, "--agent-path", self.state + "/trainagent",
                               *self.up_args, "--", *self.extra)
        self.up_out = out + err
        if rc != 0:
            return "cluster.sh up: exit %d\n%s%s\n%s" % (rc, out, err, self.log_tail())
        for line in out.splitlines():
            m = re.match(r"^export (\w+)=(.*)$", line)
            if m:
                self.env[m.group(1)] = m.group(2)
        self.endpoint = self.env.get("TRAINCTL_ENDPOINT")
        self.key = self.env.get("AWS_ACCESS_KEY_ID")
        self.secret = self.env.get("AWS_SECRET_ACCESS_KEY")
        if not (self.endpoint and self.key and self.secret):
            return "cluster.sh up printed no TRAINCTL_ENDPOINT / AWS_* exports:\n%s" % out
        self.addr = self.endpoint.split("//")[1].split(":")[0]
        return None

    def down(self):
        args = ["down", "--prefix", self.prefix]
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
            args.append("--keep")
        return self.sh(*args, timeout=60)

    def link(self, node, up):
        rc, out, err = self.sh("link-up" if up else "link-down", node, "--prefix", self.prefix, timeout=30)
        expect(rc == 0, "cluster.sh link-%s %s: exit %d %s%s" % ("up" if up else "down", node, rc, out, err))

    def exec_ps(self, node):
        """`cluster.sh exec NODE -- ps -eo pid,args`: [(pid, args)]."""
        rc, out, err = self.sh("exec", node, "--prefix", self.prefix, "--", "ps", "-eo", "pid,args", timeout=30)
        expect(rc == 0, "cluster.sh exec %s -- ps: exit %d %s" % (node, rc, err))
        rows = []
        for line in out.splitlines()[1:]:
            parts = line.strip().split(None, 1)
            if parts and parts[0].isdigit():
                rows.append((int(parts[0]), parts[1] if len(parts) > 1 else ""))
        return rows

    def netns_pids(self, node, pids):
        """Those of pids that live in node's network namespace."""
        try:
            ino = os.stat("/run/netns/%s-%s" % (self.prefix, node)).st_ino
        except OSError:
            return []
        out = []
        for pid in pids:
            try:
                if os.readlink("/proc/%d/ns/net" % pid) == "net:[%d]" % ino:
                    out.append(pid)
            except OSError:
                pass
        return out

    def request(self, method, path, timeout=10):
        host = "%s:%d" % (self.addr, self.port)
        hs = sc.sigv4_sign(method, host, path.split("?")[0], path.partition("?")[2], b"", self.key, self.secret)
        conn = http.client.HTTPConnection(self.addr, self.port, timeout=timeout)
        try:
            conn.request(method, path, headers=hs)
            r = conn.getresponse()
            body = r.read()
        finally:
            conn.close()
        try:
            js = json.loads(body.decode())
        except ValueError:
            js = body.decode("utf-8", "replace")
        return r.status, js

    def hosts(self):
        st, js = self.request("GET", "/v1/hosts")
        expect(st == 200 and isinstance(js, dict), "GET /v1/hosts: HTTP %s %s" % (st, short(js)))
        return js.get("hosts") or []

    def wait_hosts(self, pred, timeout, what):
        deadline = time.time() + timeout
        last = None
        while True:
            try:
                last = self.hosts()
                if pred(last):
                    return last
            except (OSError, Fail) as e:
                last = str(e)
            if time.time() > deadline:
                raise Fail("%s: not after %.0f s; hosts %s; GET /v1/hosts: %s\n%s" % (
                    what, timeout, host_states(last), short(last, 1200), self.log_tail(10)))
            time.sleep(0.05)

    def host_of(self, job, algo):
        for h in self.hosts():
            if h.get("job") == job and h.get("algo") == algo:
                return h["name"]
        return None

    def client(self):
        return sc.make_client(self.endpoint, key=self.key, secret=self.secret)

    def s3_path(self, uri):
        return os.path.join(self.ctrl_state, "s3", uri[5:])

    def logs_dir(self, job):
        return os.path.join(self.ctrl_state, "logs", job)

    def log_tail(self, n=25, grep=None):
        out = []
        paths = [os.path.join(self.state, "controller", "trainctld.log")]
        paths += sorted(glob.glob(os.path.join(self.state, "hosts", "*", "work", "agent.log")))
        for p in paths:
            try:
                with open(p, "rb") as f:
                    lines = f.read().decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            if grep:
                lines = [x for x in lines if grep in x]
            lines = [x for x in lines if " debug " not in x]
            out.append("--- %s (last %d of %d lines) ---" % (p, min(n, len(lines)), len(lines)))
            out.extend(lines[-n:])
        return "\n".join(out)


def start_signed(cl, write_credentials, key, extra=()):
    """Starts cl with --credentials (written by write_credentials(path))
    and waits for its hosts through the signed API; None or why not."""
    os.makedirs(cl.tmp, exist_ok=True)
    path = os.path.join(cl.tmp, "credentials")
    write_credentials(path)
    cl.extra += ["--credentials", path] + list(extra)
    return cl.start(wait_hosts=False) or wait_hosts_signed(cl, key, cl.n_hosts)


def wait_hosts_signed(cl, key, n=2, timeout=60):
    """None once n hosts of cl are ready, asked with key (id, secret) where
    the API needs a signature; else why not."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        h = sc.sigv4_sign("GET", "127.0.0.1:%d" % cl.port, "/v1/hosts", "", b"", key[0], key[1], {})
        r = sc.http_request(cl.port, "GET", "/v1/hosts", b"", h)
        hosts = (r.json or {}).get("hosts", []) if r.status == 200 else []
        if sum(x.get("state") == "ready" for x in hosts) >= n:
            return None
        time.sleep(0.1)
    return "%d hosts not ready after %d s\n%s" % (n, timeout, cl.log_tail(10))


def host_states(hosts):
    """name:state[:job][:error] of each host of a GET /v1/hosts answer."""
    if isinstance(hosts, dict):
        hosts = list(hosts.values())
    if not isinstance(hosts, list):
        return str(hosts)[:200]
    return " ".join(":".join(str(x) for x in (h.get("name"), h.get("state"), h.get("job"), h.get("error")) if x)
                    for h in hosts if isinstance(h, dict))


def tuning_request(name, image, output, jobs=1, epochs="1"):
    """CreateHyperParameterTuningJob: Random search of x in [-1, 1] over
    `jobs` training jobs of image (a file:// program printing loss=V;)
    writing to output, minimizing loss."""
    return {"HyperParameterTuningJobName": name,
            "HyperParameterTuningJobConfig": {
                "Strategy": "Random",
                "HyperParameterTuningJobObjective": {"Type": "Minimize", "MetricName": "loss"},
                "ResourceLimits": {"MaxNumberOfTrainingJobs": jobs, "MaxParallelTrainingJobs": 1},
                "ParameterRanges": {"ContinuousParameterRanges": [
                    {"Name": "x", "MinValue": "-1", "MaxValue": "1"}]}},
            "TrainingJobDefinition": {
                "StaticHyperParameters": {"epochs": epochs},
                "AlgorithmSpecification": {
                    "TrainingImage": image, "TrainingInputMode": "File",
                    "MetricDefinitions": [{"Name": "loss", "Regex": "loss=(.*?);"}]},
                "RoleArn": ROLE,
                "OutputDataConfig": {"S3OutputPath": output},
                "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                                   "VolumeSizeInGB": 1},
                "StoppingCondition": {"MaxRuntimeInSeconds": 60}}}


def ns_skip_reason():
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) for network namespaces"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "no /usr/sbin/sshd (apt-get install openssh-server)"
    for t in ("ip", "nsenter", "unshare", "curl"):
        if not shutil.which(t):
            return "'%s' not found" % t
    return None


# ---------------------------------------------------------------- jobs

def job_request(name, count, hps=None, retries=None, itype="ml.m5.large", checkpoint=True, max_runtime=300,
                image=None):
    """CreateTrainingJob for ft_trainer.py (file:// image: `ft_trainer.py train`)."""
    raw = {"marker": name}
    raw.update({k: (v if isinstance(v, str) else json.dumps(v)) for k, v in (hps or {}).items()})
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file://" + (image or TRAINER), "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": raw,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": itype, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
        "Environment": {"FT_MARKER": name},
    }
    if checkpoint:
        req["CheckpointConfig"] = {"S3Uri": ckpt_uri(name)}
    if retries is not None:
        req["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    return req


def ckpt_uri(name):
    return "s3://%s/ckpt/%s/" % (BUCKET, name)


def model_uri(name):
    return "%s/%s/output/model.tar.gz" % (OUT, name)


def wait_job(sm, name, pred, timeout, interval=0.05, seen=None):
    """Polls Describe until pred; (describe, [(t, status/secondary)])."""
    deadline = time.time() + timeout
    seen = [] if seen is None else seen
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        st = "%s/%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus"))
        if not seen or seen[-1][1] != st:
            seen.append((time.time(), st))
        if pred(d):
            return d, seen
        if time.time() > deadline:
            raise Fail("%s: %s after %.0f s (seen %s); FailureReason %r" % (
                name, st, timeout, " -> ".join(s for _, s in seen), d.get("FailureReason")))
        time.sleep(interval)


def transitions(d):
    return [(t.get("Status"), t.get("StatusMessage") or "") for t in d.get("SecondaryStatusTransitions") or []]


def read_trace(path):
    """{attempt: [(t, host, step)]} from an FT_TRACE file (ft_trainer.py)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 4:
                    out.setdefault(int(p[1]), []).append((float(p[0]), p[2], int(p[3])))
    except OSError:
        pass
    return out


def overlaps(trace):
    """What shows two attempts of a trace running at the same time."""
    bad = []
    atts = sorted(trace)
    for a, b in zip(atts, atts[1:]):
        last_a = max(t for t, _, _ in trace[a])
        first_b = min(t for t, _, _ in trace[b])
        if last_a >= first_b:
            bad.append("attempt %d traced a step %.0f ms after attempt %d began" % (a, (last_a - first_b) * 1000,
                                                                                   b))
    return bad


# ---------------------------------------------------------------- processes

def proc_argvs():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
            with open("/proc/%s/stat" % d) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except (OSError, IndexError):
            continue
        out.append((int(d), argv))
    return out


def ppid_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def procs_with(marker):
    """[(pid, SM_CURRENT_HOST, TRAINCTL_ATTEMPT, cmdline)] of live processes
    whose environment holds FT_MARKER=marker."""
    want = ("FT_MARKER=%s" % marker).encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
            if want not in env:
                continue
            with open("/proc/%s/stat" % d) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except (OSError, IndexError):
            continue
        host = attempt = None
        for e in env:
            if e.startswith(b"SM_CURRENT_HOST="):
                host = e.split(b"=", 1)[1].decode()
            elif e.startswith(b"TRAINCTL_ATTEMPT="):
                attempt = int(e.split(b"=", 1)[1] or b"0")
        found.append((int(d), host, attempt, cmd))
    return found


def wait_no_procs(marker, timeout=5.0):
    """[] once no process of the job is left, else what is still there."""
    deadline = time.time() + timeout
    while True:
        left = procs_with(marker)
        if not left or time.time() > deadline:
            return left
        time.sleep(0.05)


def kill_pids(pids, sig=signal.SIGKILL):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


# ---------------------------------------------------------------- artifacts

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def store_problems(root):
    """Torn checkpoints under a checkpoint prefix of the embedded store:
    every step-* folder must hold a valid MANIFEST.json whose files exist
    with the listed sizes and SHA-256; no .tmp-* is ever uploaded.
    Returns (problems, [step folder names])."""
    problems, names = [], []
    if not os.path.isdir(root):
        return ["%s does not exist" % root], names
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in dirnames + filenames:
            if n.startswith(".tmp-"):
                problems.append("uploaded: %s" % os.path.join(rel, n))
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if not name.startswith("step-") or not os.path.isdir(path):
            continue
        names.append(name)
        m = CKPT_RE.match(name)
        if not m:
            problems.append("%s: not a checkpoint folder name" % name)
            continue
        try:
            with open(os.path.join(path, "MANIFEST.json")) as f:
                man = json.load(f)
        except (OSError, ValueError) as e:
            problems.append("%s: no valid MANIFEST.json (%s); holds %s" % (name, e, sorted(os.listdir(path))))
            continue
        if man.get("format") != "trainctl-checkpoint-1" or man.get("step") != int(m.group(1)) \
                or man.get("rank") != int(m.group(2)):
            problems.append("%s: manifest says %s" % (name, short(man, 200)))
            continue
        for fe in man.get("files") or []:
            fp = os.path.join(path, fe.get("name", "?"))
            if not os.path.isfile(fp):
                problems.append("%s: %s missing" % (name, fe.get("name")))
            elif os.path.getsize(fp) != fe.get("size"):
                problems.append("%s: %s has %d bytes, manifest %s" % (name, fe["name"], os.path.getsize(fp),
                                                                       fe.get("size")))
            elif sha256_file(fp) != fe.get("sha256"):
                problems.append("%s: %s SHA-256 differs from the manifest" % (name, fe["name"]))
    return problems, names


def results(path):
    """{host: ft-result record} from a model.tar.gz."""
    out = {}
    try:
        with tarfile.open(path, "r:*") as tf:
            for mem in tf.getmembers():
                m = re.match(r"^(?:\./)?ft-result-(algo-\d+)\.json$", mem.name)
                if m and mem.isfile():
                    out[m.group(1)] = json.loads(tf.extractfile(mem).read().decode())
    except FileNotFoundError:
        raise Fail("%s does not exist" % path)
    return out


def attempt_logs(logs_dir):
    """{attempt: {algo: [(ts_ms, stream, rank, text)]}} from the controller's
    log files <logs_dir>/<algo>-<epoch>.log (lines "<ts_ms>\t<O|E>\t<rank>\t<text>").
    The program's `ft-start ... attempt=N` line (or ft_trainer.sh's
    `ft-exec ...`) starts attempt N; each attempt has files of its own (an
    attempt that starts within the same second as the one before takes the
    next second in its stream name). What a file holds before the
    program's first line (the controller's attempt separator, the agent's
    script-mode preamble) belongs to that line's attempt."""
    out = {}
    for path in sorted(glob.glob(os.path.join(logs_dir, "*.log"))):
        m = re.match(r"^(algo-\d+)-\d+\.log$", os.path.basename(path))
        if not m:
            continue
        attempt = None
        before = []
        with open(path, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                parts = line.split("\t", 3)
                if len(parts) != 4 or not parts[0].isdigit():
                    continue
                a = re.match(r"^ft-(?:exec|start) ts=\S+ attempt=(\d+)", parts[3])
                if a:
                    attempt = int(a.group(1))
                ev = (int(parts[0]), parts[1], parts[2], parts[3])
                if attempt is None:
                    before.append(ev)
                    continue
                lines = out.setdefault(attempt, {}).setdefault(m.group(1), [])
                lines += before
                before = []
                lines.append(ev)
        if before:
            out.setdefault(0, {}).setdefault(m.group(1), []).extend(before)
    return out


def log_files(logs_dir):
    """{algo: [file names]}: one file (stream) per attempt per host."""
    out = {}
    for path in sorted(glob.glob(os.path.join(logs_dir, "*.log"))):
        m = re.match(r"^(algo-\d+)-\d+\.log$", os.path.basename(path))
        if m:
            out.setdefault(m.group(1), []).append(os.path.basename(path))
    return out


def last_step(rows):
    n = 0
    for r in rows:
        m = re.match(r"^step=(\d+) ", r[3])
        if m:
            n = max(n, int(m.group(1)))
    return n


def field(rows, prefix, key):
    """Values of key=... in lines starting with prefix."""
    vals = []
    for r in rows:
        if r[3].startswith(prefix):
            m = re.search(r"\b%s=(\S+)" % re.escape(key), r[3])
            if m:
                vals.append(m.group(1))
    return vals


_refs = {}
TRAIN_KEYS = ("steps", "lr", "batch", "hidden", "seed")


def reference(hps):
    """ft-result of a run of ft_trainer.py here, without trainctl and without
    faults, with the same training hyperparameters (cached)."""
    keep = {k: hps[k] for k in TRAIN_KEYS if k in hps}
    key = json.dumps(keep, sort_keys=True)
    if key not in _refs:
        tmp = tempfile.mkdtemp(prefix="ft-ref-")
        try:
            env = dict(os.environ, SM_HPS=json.dumps(dict(keep, ckpt_every=0)), SM_MODEL_DIR=tmp + "/model",
                       SM_OUTPUT_DIR=tmp + "/output", TRAINCTL_CHECKPOINT_DIR=tmp + "/ckpt",
                       SM_CURRENT_HOST="algo-1", SM_HOSTS='["algo-1"]')
            env.pop("TRAINCTL_ATTEMPT", None)
            p = subprocess.run([sys.executable, TRAINER, "train"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=120)
            if p.returncode != 0:
                raise RuntimeError("reference run failed: %s" % p.stdout.decode()[-2000:])
            with open(tmp + "/model/ft-result-algo-1.json") as f:
                _refs[key] = json.load(f)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return _refs[key]
