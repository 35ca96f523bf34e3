"""Helpers of test_distributed.py: the test cluster, job placement and
the checks each distribution mode's records must pass."""
import glob
import http.client
import json
import os
import re
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()

BUILD = os.environ.get("BUILD", "build")
BIN = os.path.join(REPO, BUILD, "bin") if not os.path.isabs(BUILD) else os.path.join(BUILD, "bin")
TRAINCTLD = os.path.join(BIN, "trainctld")
TRAINCTL = os.path.join(BIN, "trainctl")
TRAINAGENT = os.path.join(BIN, "trainagent")
CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
PROBE = os.path.join(HERE, "dist_probe.py")
DDP_DIR = os.path.join(REPO, "examples", "pytorch_ddp")
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
# This run's own prefix, /24 and port: overlapping runs never share them.
PREFIX, NET, PORT = sc.run_names("di")
STATE = "/tmp/trainctl-cluster-%s" % PREFIX
AGENT_PATH = "/root/trainagent"
N_HOSTS = 3
ITYPE = "ml.c5.xlarge"
BUCKET = "trainctl-dist"
OUT = "s3://%s/out" % BUCKET
CODE_URI = "s3://%s/code/dist-probe.tar.gz" % BUCKET
DDP_CODE = "s3://%s/code/pytorch_ddp/" % BUCKET
DATA_URI = "s3://%s/digits/" % BUCKET
# The C examples (make examples) and their data, as tests/examples/
# test_examples.sh runs them: the same small configuration, threshold and
# tolerance.
EXAMPLES = os.path.join(REPO, BUILD, "examples")
FMNIST = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
FMNIST_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                "t10k-labels-idx1-ubyte.gz"]
FMNIST_URI = "s3://%s/fashion-mnist/" % BUCKET
EX_HPS = {"epochs": 3, "train-samples": 4000, "val-samples": 1000, "batch-size": 32, "learning-rate": 0.01,
          "momentum": 0.9, "seed": 1, "debug-hash": True}
EX_PIPE_HPS = {"hidden": "128,64"}
EX_MIN_ACC = 0.75
EX_TOL = 1e-4
EX_STEPS = 375        # 3 epochs of 4000 / 32 batches
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
# No fault tests here, so a lenient deadline: on a loaded 2-core machine
# (other tests, builds) the controller may answer a heartbeat seconds late,
# and a lost host fails the job (InternalServerError).
HEARTBEAT_MS = 500
DEADLINE_MS = 10000
MPI_CUSTOM = "-x TCDI_CUSTOM=yes -mca btl_tcp_sndbuf 0"

Fail, expect, short = sc.Fail, sc.expect, sc.short


def log(text):
    print("# %s" % text)
    sys.stdout.flush()


# ---------------------------------------------------------------- the cluster

class Cluster:
    def __init__(self):
        self.env = {}
        self.endpoint = None
        self.key = self.secret = None
        self.addr = None      # the bridge (controller) address
        self.hosts = {}       # node -> address, from the inventory
        self.up_out = ""

    @property
    def ctrl_state(self):
        return os.path.join(STATE, "controller", "state")

    def sh(self, *args, timeout=120):
        p = subprocess.run(["/bin/bash", CLUSTER_SH] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def up(self):
        t = time.time()
        rc, out, err = self.sh("up", "--hosts", str(N_HOSTS), "--prefix", PREFIX, "--net", NET,
                               "--port", str(PORT), "--instance-type", ITYPE, "--timeout", "60",
                               "--trainctld", TRAINCTLD, "--agent-path", AGENT_PATH, "--",
                               "--grace-period", "2", "--heartbeat-ms", str(HEARTBEAT_MS),
                               "--host-deadline-ms", str(DEADLINE_MS), "-v")
        took = time.time() - t
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
        with open(os.path.join(STATE, "inventory.json")) as f:
            inv = json.load(f)
        self.hosts = {h["name"]: h["address"] for h in inv["hosts"]}
        log("cluster up in %.2f s: %s" % (took, err.strip().replace("\n", " | ")))
        return None

    def down(self):
        args = ["down", "--prefix", PREFIX]
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1":
            args.append("--keep")
        return self.sh(*args, timeout=60)

    def request(self, method, path, timeout=15):
        host = "%s:%d" % (self.addr, PORT)
        hs = sc.sigv4_sign(method, host, path.split("?")[0], path.partition("?")[2], b"", self.key,
                           self.secret)
        conn = http.client.HTTPConnection(self.addr, PORT, timeout=timeout)
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

    def host_list(self):
        st, js = self.request("GET", "/v1/hosts")
        expect(st == 200 and isinstance(js, dict), "GET /v1/hosts: HTTP %s %s" % (st, short(js)))
        return {h["name"]: h for h in js.get("hosts", [])}

    def client(self):
        return sc.make_client(self.endpoint, key=self.key, secret=self.secret)

    def cli(self, *args, timeout=60):
        """trainctl with the printed exports; the embedded store directly
        (TRAINCTL_STATE_DIR: with credentials the controller's blob
        endpoint wants a host or blob token)."""
        env = dict(os.environ)
        env.update(self.env)
        env["TRAINCTL_STATE_DIR"] = self.ctrl_state
        r = subprocess.run([TRAINCTL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return r.returncode, r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")

    def s3_path(self, uri):
        return os.path.join(self.ctrl_state, "s3", uri[5:])

    def agent_log(self, node):
        try:
            with open(os.path.join(STATE, "hosts", node, "work", "agent.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def log_tail(self, n=25, grep=None):
        out = []
        paths = [os.path.join(STATE, "controller", "trainctld.log")]
        paths += sorted(glob.glob(os.path.join(STATE, "hosts", "*", "work", "agent.log")))
        for p in paths:
            try:
                with open(p, "rb") as f:
                    lines = f.read().decode("utf-8", "replace").splitlines()
            except OSError:
                continue
            if grep:
                lines = [x for x in lines if grep in x]
            lines = [x for x in lines if " debug http: " not in x]
            out.append("--- %s (last %d of %d lines) ---" % (os.path.relpath(p, STATE), min(n, len(lines)),
                                                            len(lines)))
            out.extend(lines[-n:])
        return "\n".join(out)

    def ns_inodes(self):
        """nsfs inode of each host's network namespace -> node."""
        out = {}
        for n in self.hosts:
            try:
                out[os.stat("/run/netns/%s-%s" % (PREFIX, n)).st_ino] = n
            except OSError:
                pass
        return out

    def procs_in_state(self):
        """Processes whose command line names the cluster's state dir."""
        left = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
                with open("/proc/%s/stat" % d) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue
            except (OSError, IndexError):
                continue
            if STATE in cmd:
                left.append("%s %s" % (d, cmd[:200]))
        return left


# ---------------------------------------------------------------- processes

def scan_procs():
    """Every process: pid, command line, environment, state, net ns inode."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read()
            with open("/proc/%s/stat" % d) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            ns = os.readlink("/proc/%s/ns/net" % d)
        except (OSError, IndexError):
            continue
        m = re.match(r"net:\[(\d+)\]", ns)
        out.append({"pid": int(d), "cmd": cmd.replace(b"\0", b" ").decode("utf-8", "replace").strip(),
                    "env": b"\0" + env, "state": state, "ns": int(m.group(1)) if m else None})
    return out


def job_procs(cluster, name):
    """Processes of job name: TRAINCTL_JOB=name in the environment (every
    process the agents start, mpirun, orted and the ranks inherit it) or
    the job's marker on the command line."""
    inos = cluster.ns_inodes()
    tag = ("\0TRAINCTL_JOB=%s\0" % name).encode()
    found = []
    for p in scan_procs():
        if tag in p["env"] + b"\0" or re.search(r"--marker %s(\s|$)" % re.escape(name), p["cmd"]):
            found.append("pid %d (%s%s) on %s: %s" % (p["pid"], p["state"], ", zombie" if p["state"] == "Z" else "",
                                                    inos.get(p["ns"], "ns %s" % p["ns"]), p["cmd"][:160]))
    return found


def check_no_leftovers(cluster, job):
    """No process of the job anywhere once it is Completed (a few seconds'
    grace for the agents to reap what they stopped)."""
    t = time.time()
    first = left = job_procs(cluster, job.name)
    while left and time.time() - t < 5:
        time.sleep(0.1)
        left = job_procs(cluster, job.name)
    expect(not left, "%d processes of %s still there %.1f s after it ended:\n%s" % (
        len(left), job.name, time.time() - t, "\n".join(left)))
    if first:
        log("%s: %d processes were still there when the job was Completed, gone %.1f s later: %s" % (
            job.name, len(first), time.time() - t, "; ".join(first)[:400]))
    session = [r["env"].get("OMPI_MCA_orte_jobfam_session_dir") for r in job.recs
               if r["env"].get("OMPI_MCA_orte_jobfam_session_dir")]
    left_dirs = sorted({d for d in session if os.path.exists(d)})
    expect(not left_dirs, "OpenMPI session directories left: %s" % left_dirs)


def check_hosts_quiet(cluster):
    """Inside the hosts' namespaces only sshd, the agent and its watchdog
    (one each per host) run."""
    inos = cluster.ns_inodes()
    extra = []
    dogs = {}
    for p in scan_procs():
        if p["ns"] not in inos:
            continue
        argv = p["cmd"].split(" ")
        if "sshd" in argv[0] or (os.path.basename(argv[0]) == "trainagent" and "--controller" in p["cmd"]):
            continue
        if os.path.basename(argv[0]) == "trainagent" and argv[1:2] == ["watchdog"] and p["ns"] not in dogs:
            dogs[p["ns"]] = p["pid"]
            continue
        extra.append("pid %d (%s) on %s: %s" % (p["pid"], p["state"], inos[p["ns"]], p["cmd"][:200]))
    expect(not extra, "besides sshd and the agents the hosts run:\n" + "\n".join(extra))


# ---------------------------------------------------------------- jobs

def place_probe(cluster):
    path = cluster.s3_path(CODE_URI)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path + ".tmp", "w:gz") as tf:
        tf.add(PROBE, arcname="dist_probe.py")
    os.rename(path + ".tmp", path)


def probe_request(name, count, hps=None):
    raw = {"marker": json.dumps(name), "sagemaker_program": json.dumps("dist_probe.py"),
           "sagemaker_submit_directory": json.dumps(CODE_URI)}
    raw.update(hps or {})
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": raw,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 150},
    }


def terminal(d):
    return d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")


def wait_job(sm, name, timeout):
    deadline = time.time() + timeout
    seen = []
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        st = "%s/%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus"))
        if not seen or seen[-1] != st:
            seen.append(st)
        if terminal(d):
            return d, seen
        if time.time() > deadline:
            raise Fail("%s: %s after %.0f s (seen %s)" % (name, st, timeout, " -> ".join(seen)))
        time.sleep(0.1)


def tar_files(cluster, uri):
    path = cluster.s3_path(uri)
    try:
        with tarfile.open(path, "r:*") as tf:
            return {os.path.normpath(m.name).lstrip("/"): tf.extractfile(m).read()
                    for m in tf.getmembers() if m.isfile()}
    except FileNotFoundError:
        raise Fail("%s does not exist" % path)


class Job:
    """One job run: its description, probe records and what the agents
    logged about it."""

    def __init__(self, name, mode, count, hps):
        self.name, self.mode, self.count, self.hps = name, mode, count, hps
        self.desc = None
        self.recs = []
        self.algo_node = {}   # algo-N -> node that ran it
        self.pid_rank = {}    # pid -> (algo, the agent's rank index)
        self.seconds = None

    @property
    def algos(self):
        return ["algo-%d" % (i + 1) for i in range(self.count)]

    def node_of(self, algo):
        return self.algo_node.get(algo)

    def addr_of(self, cluster, algo):
        return cluster.hosts.get(self.algo_node.get(algo))


def run_job(cluster, sm, job, request, timeout=120):
    t = time.time()
    sm.create_training_job(**request)
    d, seen = wait_job(sm, job.name, timeout)
    job.seconds = time.time() - t
    job.desc = d
    for node in cluster.hosts:
        text = cluster.agent_log(node)
        for m in re.finditer(r" %s/1/(algo-\d+): new assignment" % re.escape(job.name), text):
            job.algo_node[m.group(1)] = node
        for m in re.finditer(r" %s/1/(algo-\d+): rank (\d+) started: pid (\d+)" % re.escape(job.name), text):
            job.pid_rank[int(m.group(3))] = (m.group(1), int(m.group(2)))
    expect(d["TrainingJobStatus"] == "Completed",
           "%s ended %s/%s (seen %s); FailureReason %r\n%s" % (
               job.name, d["TrainingJobStatus"], d.get("SecondaryStatus"), " -> ".join(seen),
               d.get("FailureReason"), cluster.log_tail(15, grep=job.name)))
    expect(sorted(job.algo_node) == job.algos, "the agents' logs name %s for %s" % (job.algo_node, job.algos))
    where = ", ".join("%s=%s" % kv for kv in sorted(job.algo_node.items()))
    log("%s (%s, %d hosts) Completed in %.1f s on %s" % (job.name, job.mode, job.count, job.seconds, where))
    return d


def load_records(cluster, job):
    recs = []
    for member, data in sorted(tar_files(cluster, "%s/%s/output/model.tar.gz" % (OUT, job.name)).items()):
        if re.match(r"^dp-algo-\d+-\d+\.json$", member):
            recs.append(json.loads(data.decode()))
    job.recs = recs
    return recs


def env_of(r, k):
    return r["env"].get(k)


def who(r):
    return "%s/%s(pid %s)" % (r["env"].get("SM_CURRENT_HOST"), r.get("me"), r.get("pid"))


# ---------------------------------------------------------------- common checks

def check_common(cluster, job, expect_n):
    """What every process of every mode gets."""
    recs = job.recs
    expect(len(recs) == expect_n, "%d probe records, expected %d: %s" % (len(recs), expect_n,
                                                                         [who(r) for r in recs]))
    p = []
    a1 = job.addr_of(cluster, "algo-1")
    node_algo = {n: a for a, n in job.algo_node.items()}
    tokens, ports = set(), set()
    for r in recs:
        e, w = r["env"], who(r)
        want = {"TRAINCTL_JOB": job.name, "TRAINCTL_ATTEMPT": "1", "TRAINCTL_DISTRIBUTION": job.mode,
                "TRAINCTL_RDZV_URL": "%s/v1/rendezvous/%s/1" % (cluster.endpoint, job.name),
                "GLOO_SOCKET_IFNAME": "eth0", "NCCL_SOCKET_IFNAME": "eth0", "MASTER_ADDR": a1,
                "SM_HOSTS": json.dumps(job.algos, separators=(",", ":"))}
        for k, v in want.items():
            if e.get(k) != v:
                p.append("%s: %s=%r, expected %r" % (w, k, e.get(k), v))
        if not e.get("TRAINCTL_CHECKPOINT_DIR") or not r.get("checkpoint_dir_exists"):
            p.append("%s: TRAINCTL_CHECKPOINT_DIR=%r (exists: %s)" % (w, e.get("TRAINCTL_CHECKPOINT_DIR"),
                                                                     r.get("checkpoint_dir_exists")))
        tok = e.get("TRAINCTL_RDZV_TOKEN") or ""
        if not re.match(r"^[0-9a-f]{64}$", tok):
            p.append("%s: TRAINCTL_RDZV_TOKEN %r is not 64 hex digits" % (w, tok))
        tokens.add(tok)
        ports.add(e.get("MASTER_PORT"))
        if "eth0" not in r.get("interfaces", []):
            p.append("%s: interfaces %s (not in a cluster host?)" % (w, r.get("interfaces")))
        host = e.get("SM_CURRENT_HOST")
        if r.get("hostname") not in cluster.hosts:
            p.append("%s: hostname %r is none of %s" % (w, r.get("hostname"), sorted(cluster.hosts)))
        elif node_algo.get(r["hostname"]) != host:
            p.append("%s: SM_CURRENT_HOST %r but it runs on %s, which the agents say ran %s" % (
                w, host, r["hostname"], node_algo.get(r["hostname"])))
        if r.get("own_address") != cluster.hosts.get(r.get("hostname")):
            p.append("%s: its address %r is not its host %s's %r" % (w, r.get("own_address"), r.get("hostname"),
                                                                   cluster.hosts.get(r.get("hostname"))))
        if r.get("executable") != "/usr/bin/python3":
            p.append("%s: interpreter %r" % (w, r.get("executable")))
    if len(tokens) != 1:
        p.append("TRAINCTL_RDZV_TOKEN differs between the processes of one attempt: %s" % sorted(tokens))
    if len(ports) != 1:
        p.append("MASTER_PORT differs between the processes of one job: %s" % sorted(map(str, ports)))
    else:
        port = list(ports)[0]
        if not (port and port.isdigit() and 1024 <= int(port) <= 65535):
            p.append("MASTER_PORT %r" % port)
        elif int(port) in (7777, 29500):
            p.append("MASTER_PORT %s: the fixed default, not one chosen per attempt" % port)
    expect(not p, "\n".join(p))


def check_rdzv(cluster, job, foreign=None):
    """The rendezvous store as the probes used it."""
    p = []
    leaders = [r for r in job.recs if r.get("leader")]
    expect(len(leaders) == 1, "%d leaders among %s" % (len(leaders), [who(r) for r in job.recs]))
    lead = leaders[0]
    waits = []
    for r in job.recs:
        z, w = r.get("rdzv") or {}, who(r)
        if z.get("error"):
            p.append("%s: %s" % (w, z["error"]))
            continue

        def want(key, status):
            got = (z.get(key) or [None])[0]
            if got != status:
                p.append("%s: %s -> %s, expected %s (%s)" % (w, key, got, status, short(z.get(key), 200)))
        if r is lead:
            want("put", 200)
            want("put_big", 200)
            if (z.get("put_too_big") or [None])[0] in (200, None):
                p.append("%s: PUT of 65537 bytes -> %s, expected a refusal" % (w, short(z.get("put_too_big"))))
        else:
            want("get", 200)
            try:
                v = json.loads(z["get"][1])
                if v.get("from") != lead.get("me") or v.get("job") != job.name:
                    p.append("%s: GET hello gave %r, the leader %s PUT its own" % (w, v, lead.get("me")))
            except (ValueError, TypeError, KeyError, AttributeError):
                p.append("%s: GET hello: %s" % (w, short(z.get("get"), 200)))
            waits.append(z.get("get_s") or 0)
            if z.get("get_big") != [200, 65536, True]:
                p.append("%s: GET of the 64 KiB value: %s (status, length, equal)" % (w, z.get("get_big")))
            if (z.get("get_too_big") or [None])[0] != 404:
                p.append("%s: GET of the refused value: %s, expected 404" % (w, short(z.get("get_too_big"), 200)))
        want("missing", 404)
        if (z.get("missing_s") or 0) < 0.25:
            p.append("%s: the missing key answered after %.3f s, not after wait_ms=300" % (w, z.get("missing_s") or 0))
        for k in ("wrong_token", "no_token", "wrong_token_put", "next_attempt", "next_attempt_put"):
            want(k, 401)
        if foreign:
            for k in ("foreign_token_here", "my_token_there", "my_token_there_put"):
                want(k, 401)
    if job.hps.get("put_delay"):
        delay = float(json.loads(job.hps["put_delay"]))
        if not waits or max(waits) < delay / 3:
            p.append("no GET waited for the delayed PUT (waits %s s, delay %.1f s)" % (waits, delay))
        else:
            log("%s: GETs waited %s s for the leader's PUT (delayed %.1f s)" % (job.name, waits, delay))
    expect(not p, "\n".join(p))


def check_mesh(cluster, job):
    """Every process listened where it should and reached where the others
    listen, from its own address."""
    p = []
    for r in job.recs:
        m, w = r.get("mesh") or {}, who(r)
        if m.get("error"):
            p.append("%s: %s" % (w, m["error"]))
            continue
        if m.get("bind_error"):
            p.append("%s: cannot listen: %s" % (w, m["bind_error"]))
        if m.get("barrier"):
            p.append("%s: %s" % (w, m["barrier"]))
        for peer, c in sorted((m.get("connected") or {}).items()):
            if c.get("error"):
                p.append("%s: cannot reach %s: %s" % (w, peer, c["error"]))
            elif c.get("local") != r.get("own_address"):
                p.append("%s reached %s from %r, not its own address %r" % (w, peer, c.get("local"),
                                                                          r.get("own_address")))
        if m.get("listen") and m["listen"][0] != r.get("own_address"):
            p.append("%s: listens on %s, not its own address %s" % (w, m["listen"], r.get("own_address")))
    expect(not p, "\n".join(p))


# ---------------------------------------------------------------- per mode

def check_none(cluster, job):
    p = []
    expect(sorted(env_of(r, "SM_CURRENT_HOST") for r in job.recs) == job.algos,
           "SM_CURRENT_HOST of the processes: %s" % sorted(env_of(r, "SM_CURRENT_HOST") for r in job.recs))
    for r in job.recs:
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TF_CONFIG", "TRAINCTL_ROLE", "OMPI_COMM_WORLD_RANK"):
            if k in r["env"]:
                p.append("%s: %s=%r in mode none" % (who(r), k, r["env"][k]))
    # algo-1 listened on MASTER_ADDR:MASTER_PORT; the others came from
    # their own addresses.
    lead = [r for r in job.recs if env_of(r, "SM_CURRENT_HOST") == "algo-1"][0]
    mesh = lead.get("mesh") or {}
    if mesh.get("listen") != [env_of(lead, "MASTER_ADDR"), int(env_of(lead, "MASTER_PORT"))]:
        p.append("algo-1 listened on %s, not MASTER_ADDR:MASTER_PORT" % mesh.get("listen"))
    came = sorted(a["from"] for a in mesh.get("accepted", []))
    want = sorted(job.addr_of(cluster, a) for a in job.algos[1:])
    if came != want:
        p.append("algo-1 saw connections from %s, expected the other hosts' %s" % (came, want))
    for r in job.recs:
        if r is lead:
            continue
        ans = [c.get("answer", "") for c in (r.get("mesh") or {}).get("connected", {}).values()]
        if ans != ["algo-1 %s" % job.node_of("algo-1")]:
            p.append("%s reached %r at MASTER_ADDR:MASTER_PORT, not algo-1 on %s" % (who(r), ans,
                                                                                   job.node_of("algo-1")))
    expect(not p, "\n".join(p))


def check_torch_env(cluster, job, ppn):
    p = []
    world = ppn * job.count
    ranks = sorted(int(env_of(r, "RANK") or -1) for r in job.recs)
    if ranks != list(range(world)):
        p.append("RANK values %s, expected 0..%d once each" % (ranks, world - 1))
    per_host = {}
    for r in job.recs:
        e, w = r["env"], who(r)
        host = e.get("SM_CURRENT_HOST")
        idx = job.algos.index(host) if host in job.algos else -1
        per_host.setdefault(host, []).append(e.get("LOCAL_RANK"))
        want = {"WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(ppn), "NODE_RANK": str(idx),
                "GROUP_RANK": str(idx), "ROLE_RANK": e.get("RANK"), "ROLE_WORLD_SIZE": str(world),
                "GROUP_WORLD_SIZE": str(job.count), "ROLE_NAME": "default", "TORCHELASTIC_RESTART_COUNT": "0",
                "TORCHELASTIC_RUN_ID": job.name}
        if e.get("LOCAL_RANK", "").isdigit() and e.get("RANK", "").isdigit():
            if int(e["RANK"]) != idx * ppn + int(e["LOCAL_RANK"]):
                p.append("%s: RANK %s on host %d with LOCAL_RANK %s (torchrun: node * %d + local)" % (
                    w, e["RANK"], idx, e["LOCAL_RANK"], ppn))
        for k, v in want.items():
            if e.get(k) != v:
                p.append("%s: %s=%r, expected %r" % (w, k, e.get(k), v))
        if ppn > 1 and e.get("OMP_NUM_THREADS") != "1":
            p.append("%s: OMP_NUM_THREADS=%r with %d processes per host" % (w, e.get("OMP_NUM_THREADS"), ppn))
        if ppn == 1 and "OMP_NUM_THREADS" in e:
            p.append("%s: OMP_NUM_THREADS=%r with one process per host" % (w, e.get("OMP_NUM_THREADS")))
        for k in ("TF_CONFIG", "TRAINCTL_ROLE"):
            if k in e:
                p.append("%s: %s=%r in torch_distributed" % (w, k, e[k]))
    for host in job.algos:
        got = sorted(per_host.get(host, []))
        if got != [str(i) for i in range(ppn)]:
            p.append("%s: LOCAL_RANK values %s, expected 0..%d" % (host, got, ppn - 1))
    expect(not p, "\n".join(p))


def check_torch_mesh(cluster, job):
    """RANK 0 listened on MASTER_ADDR:MASTER_PORT, the other ranks reached it."""
    check_mesh(cluster, job)
    lead = [r for r in job.recs if env_of(r, "RANK") == "0"][0]
    m = lead.get("mesh") or {}
    expect(m.get("listen") == [env_of(lead, "MASTER_ADDR"), int(env_of(lead, "MASTER_PORT"))],
           "rank 0 listened on %s" % m.get("listen"))
    who_came = sorted(a["who"] for a in m.get("accepted", []))
    want = sorted("r%d" % i for i in range(1, len(job.recs)))
    expect(who_came == want, "rank 0 was reached by %s, expected %s" % (who_came, want))


def check_allreduce(cluster, job):
    p = []
    world = len(job.recs)
    want_names = sorted([int(env_of(r, "RANK")), r["hostname"], env_of(r, "SM_CURRENT_HOST")] for r in job.recs)
    for r in job.recs:
        a, w = r.get("allreduce") or {}, who(r)
        if a.get("error"):
            p.append("%s: %s\n%s" % (w, a["error"], a.get("traceback", "")[-600:]))
            continue
        if a.get("world") != world or str(a.get("rank")) != env_of(r, "RANK"):
            p.append("%s: torch.distributed says rank %s of %s" % (w, a.get("rank"), a.get("world")))
        if a.get("sum") != world * (world + 1) / 2:
            p.append("%s: all_reduce sum %s, expected %s" % (w, a.get("sum"), world * (world + 1) / 2))
        if sorted(a.get("gathered") or []) != want_names:
            p.append("%s: all_gather gave %s, expected %s" % (w, a.get("gathered"), want_names))
    expect(not p, "\n".join(p))
    log("%s: all_reduce over %d ranks, init %s s" % (job.name, world,
                                                     [(r.get("allreduce") or {}).get("init_s") for r in job.recs]))


def mpi_cmdline_problems(argv, job, cluster, ppn, np):
    p = []
    prog = ["/usr/bin/python3", "dist_probe.py"]
    if not argv or os.path.basename(argv[0]) != "mpirun":
        return ["algo-1's ranks' parent is %r, not mpirun" % (argv[:3],)]

    def has_seq(seq, what=None):
        for i in range(len(argv) - len(seq) + 1):
            if argv[i:i + len(seq)] == seq:
                return i
        p.append("mpirun lacks %s" % (what or " ".join(seq)))
        return None
    hosts = ",".join(["%s:%d" % (job.addr_of(cluster, "algo-1"), ppn)] +
                     ["%s:%d" % (a, ppn) for a in job.algos[1:]])
    has_seq(["--host", hosts])
    has_seq(["-np", str(np)])
    for flag in ("--allow-run-as-root", "--display-map", "--tag-output"):
        has_seq([flag])
    cidr = NET + ".0/24"
    for k, v in (("plm_rsh_no_tree_spawn", "1"), ("orte_leave_session_attached", "1"),
                 ("btl_tcp_if_include", cidr), ("oob_tcp_if_include", cidr), ("pml", "ob1"),
                 ("btl", "^openib"), ("orte_abort_on_non_zero_status", "1"),
                 ("btl_vader_single_copy_mechanism", "none")):
        has_seq(["-mca", k, v])
    i = has_seq(["-mca", "plm_rsh_agent"], "-mca plm_rsh_agent")
    if i is not None:
        agent = argv[i + 2] if i + 2 < len(argv) else ""
        words = agent.split()
        if len(words) != 2 or os.path.basename(words[0]) != "trainagent" or words[1] != "rsh":
            p.append("plm_rsh_agent %r, expected '<trainagent> rsh'" % agent)
    has_seq(["-bind-to", "none"])
    has_seq(["-map-by", "slot"])
    nr = has_seq(["-x", "NCCL_MIN_NRINGS=4"])
    ci = None
    if "sagemaker_mpi_custom_mpi_options" in job.hps:
        ci = has_seq(MPI_CUSTOM.split(), "the custom options %r" % MPI_CUSTOM)
    pi = has_seq(prog, "the program %s" % prog)
    if pi is not None and argv[pi:pi + 2] == prog:
        rest = argv[pi + 2:]
        pairs = dict(zip(rest[::2], rest[1::2]))
        if len(rest) % 2 or pairs.get("--marker") != job.name:
            p.append("the program's arguments %s, expected the hyperparameters (--marker %s ...)" % (rest, job.name))
        if "-mca" in rest or "-x" in rest:
            p.append("mpirun options after the program: %s" % rest)
    if nr is not None and ci is not None and not nr < ci:
        p.append("the custom options come before -x NCCL_MIN_NRINGS=4")
    if ci is not None and pi is not None and not ci < pi:
        p.append("the custom options come after the program")
    return p


def check_mpi(cluster, job, ppn, np=None):
    p = []
    world = np or ppn * job.count
    ranks = sorted(int(env_of(r, "OMPI_COMM_WORLD_RANK") or -1) for r in job.recs)
    if ranks != list(range(world)):
        p.append("OMPI_COMM_WORLD_RANK values %s, expected 0..%d once each" % (ranks, world - 1))
    locals_ = {}
    for r in job.recs:
        e, w = r["env"], who(r)
        rank = int(e.get("OMPI_COMM_WORLD_RANK") or -1)
        host = e.get("SM_CURRENT_HOST")
        if e.get("OMPI_COMM_WORLD_SIZE") != str(world):
            p.append("%s: OMPI_COMM_WORLD_SIZE=%r" % (w, e.get("OMPI_COMM_WORLD_SIZE")))
        # -map-by slot: ranks fill algo-1's slots, then algo-2's, ...
        if host != "algo-%d" % (rank // ppn + 1):
            p.append("%s: rank %d runs on %s (map-by slot: algo-%d)" % (w, rank, host, rank // ppn + 1))
        locals_.setdefault(host, []).append(e.get("OMPI_COMM_WORLD_LOCAL_RANK"))
        if "sagemaker_mpi_custom_mpi_options" in job.hps and e.get("TCDI_CUSTOM") != "yes":
            p.append("%s: TCDI_CUSTOM=%r: the custom option -x TCDI_CUSTOM=yes did not reach it" % (
                w, e.get("TCDI_CUSTOM")))
        parent = r.get("parent_cmdline") or []
        base = os.path.basename(parent[0]) if parent else ""
        if host == "algo-1" and base != "mpirun":
            p.append("%s: parent %r, expected mpirun" % (w, parent[:4]))
        if host != "algo-1" and base != "orted":
            p.append("%s: parent %r, expected orted" % (w, parent[:4]))
        for k in ("RANK", "TF_CONFIG", "TRAINCTL_ROLE"):
            if k in e:
                p.append("%s: %s=%r under MPI" % (w, k, e[k]))
    for i, host in enumerate(job.algos):
        got = sorted(locals_.get(host, []))
        n_here = max(0, min(ppn, world - i * ppn))
        if got != [str(k) for k in range(n_here)]:
            p.append("%s: OMPI_COMM_WORLD_LOCAL_RANK values %s, expected 0..%d" % (host, got, n_here - 1))
    expect(not p, "\n".join(p))


def check_mpirun(cluster, job, ppn, np=None):
    argvs = {json.dumps(r["parent_cmdline"]) for r in job.recs if env_of(r, "SM_CURRENT_HOST") == "algo-1"}
    expect(len(argvs) == 1, "algo-1's ranks have %d different parents: %s" % (len(argvs), argvs))
    argv = json.loads(argvs.pop())
    p = mpi_cmdline_problems(argv, job, cluster, ppn, np or ppn * job.count)
    expect(not p, "\n".join(p) + "\nmpirun: %s" % " ".join(argv))
    log("mpirun: %s" % " ".join(argv))


def check_mpi_logs(cluster, job, ppn, np=None):
    rc, out, err = cluster.cli("logs", job.name)
    expect(rc == 0, "trainctl logs %s: exit %d: %s" % (job.name, rc, err[-500:]))
    p = []
    # mpirun's --tag-output may splice two ranks' long lines, so a tag is
    # looked for anywhere in algo-1's lines, not only at their start.
    algo1 = "\n".join(x for x in out.splitlines() if x.startswith("[algo-1] "))
    for rank in range(np or ppn * job.count):
        if not re.search(r"\[1,%d\]<stdout>:dist_probe mpi r%d " % (rank, rank), algo1):
            p.append("no line of rank %d tagged [1,%d]<stdout>: in algo-1's stream" % (rank, rank))
    # The probe's own lines ("dist_probe mpi r0 ..."), not the toolkit's
    # preamble that every host's log opens with (SM_MODULE_NAME=dist_probe).
    other = [x for x in out.splitlines() if "dist_probe " in x and not x.startswith("[algo-1] ")]
    if other:
        p.append("rank output outside algo-1's stream: %s" % other[:5])
    expect(not p, "\n".join(p) + "\n--- trainctl logs ---\n" + out[-2000:])
    maps = out.count("JOB MAP")
    if maps != 1:
        log("note: --display-map's JOB MAP appears %d times in algo-1's stream" % maps)


def ps_layout(job, k):
    """The process each (algo, agent rank) must be: (TF task type, index,
    TRAINCTL_ROLE, TRAINCTL_ROLE_INDEX)."""
    want = {}
    for i, algo in enumerate(job.algos):
        if i < k:
            want[(algo, 0)] = ("ps", i, "ps", i)
        wr = 1 if i < k else 0
        want[(algo, wr)] = ("master", 0, "worker", 0) if i == 0 else ("worker", i - 1, "worker", i)
    return want


def check_tf_config(cluster, job, k=None):
    p = []
    addrs = [job.addr_of(cluster, a) for a in job.algos]
    n = job.count
    tfs = []
    for r in job.recs:
        try:
            tfs.append((r, json.loads(env_of(r, "TF_CONFIG"))))
        except (TypeError, ValueError):
            p.append("%s: TF_CONFIG %r" % (who(r), env_of(r, "TF_CONFIG")))
    expect(not p, "\n".join(p))
    clusters = {json.dumps(tf["cluster"], sort_keys=True) for _, tf in tfs}
    expect(len(clusters) == 1, "TF_CONFIG's cluster differs between the processes: %s" % clusters)
    cl = tfs[0][1]["cluster"]
    if job.mode == "parameter_server":
        expect(cl.get("master") and isinstance(cl["master"], list), "no cluster.master: %s" % cl)
        base = int(cl["master"][0].rpartition(":")[2])
        want_cl = {"master": ["%s:%d" % (addrs[0], base)],
                   "ps": ["%s:%d" % (addrs[i], base + 2 * i + 1) for i in range(k)],
                   "worker": ["%s:%d" % (addrs[i], base + 2 * i) for i in range(1, n)]}
    else:
        expect(cl.get("worker") and isinstance(cl["worker"], list), "no cluster.worker: %s" % cl)
        base = int(cl["worker"][0].rpartition(":")[2])
        want_cl = {"worker": ["%s:%d" % (addrs[i], base + 2 * i) for i in range(n)]}
    if cl != want_cl:
        p.append("TF_CONFIG cluster %s\n          expected %s" % (json.dumps(cl, sort_keys=True),
                                                                 json.dumps(want_cl, sort_keys=True)))
    ports = [int(x.rpartition(":")[2]) for v in cl.values() for x in v]
    if len(set(ports)) != len(ports) or min(ports) < 1024 or max(ports) > 65535:
        p.append("TF_CONFIG ports %s" % ports)
    if str(base) != env_of(tfs[0][0], "MASTER_PORT"):
        log("%s: TF_CONFIG's first port %d, MASTER_PORT %s" % (job.name, base, env_of(tfs[0][0], "MASTER_PORT")))
    roles = {}
    if job.mode == "parameter_server":
        layout = ps_layout(job, k)
        seen = set()
        for r, tf in tfs:
            key = job.pid_rank.get(r["pid"])
            if key is None:
                p.append("%s: pid %s is not a process the agents started" % (who(r), r["pid"]))
                continue
            if key[0] != env_of(r, "SM_CURRENT_HOST"):
                p.append("%s: the agent of %s started it" % (who(r), key[0]))
            seen.add(key)
            w = layout.get(key)
            got = (tf.get("task", {}).get("type"), tf.get("task", {}).get("index"), env_of(r, "TRAINCTL_ROLE"),
                   int(env_of(r, "TRAINCTL_ROLE_INDEX") or -1))
            if got != w:
                p.append("%s (%s rank %d): task/role %s, expected %s" % (who(r), key[0], key[1], got, w))
            roles[got[2]] = roles.get(got[2], 0) + 1
        if seen != set(layout):
            p.append("processes %s, expected %s" % (sorted(seen), sorted(layout)))
        if roles != {"ps": k, "worker": n}:
            p.append("TRAINCTL_ROLE counts %s, expected ps=%d worker=%d" % (roles, k, n))
    else:
        for r, tf in tfs:
            i = job.algos.index(env_of(r, "SM_CURRENT_HOST"))
            got = (tf.get("task"), env_of(r, "TRAINCTL_ROLE"), env_of(r, "TRAINCTL_ROLE_INDEX"))
            if got != ({"type": "worker", "index": i}, "worker", str(i)):
                p.append("%s: task/role %s, expected worker %d" % (who(r), got, i))
    for r, tf in tfs:
        if sorted(tf) != ["cluster", "environment", "task"] or tf.get("environment") != "cloud" or \
                sorted(tf.get("task", {})) != ["index", "type"]:
            p.append("%s: TF_CONFIG keys %s, environment %r, task %s" % (who(r), sorted(tf), tf.get("environment"),
                                                                        tf.get("task")))
        for kk in ("RANK", "OMPI_COMM_WORLD_RANK"):
            if kk in r["env"]:
                p.append("%s: %s=%r in %s" % (who(r), kk, r["env"][kk], job.mode))
    expect(not p, "\n".join(p))


def check_tf_mesh(cluster, job):
    """Every process listened on its own TF_CONFIG address and reached all
    the others."""
    check_mesh(cluster, job)
    p = []
    n = len(job.recs)
    for r in job.recs:
        m = r.get("mesh") or {}
        tf = json.loads(env_of(r, "TF_CONFIG"))
        t = tf["task"]
        mine = tf["cluster"][t["type"]][t["index"]]
        if m.get("listen") is None or "%s:%d" % tuple(m["listen"]) != mine:
            p.append("%s listened on %s, its TF_CONFIG task says %s" % (who(r), m.get("listen"), mine))
        if len(m.get("connected", {})) != n - 1 or len(m.get("accepted", [])) != n - 1:
            p.append("%s reached %d and was reached by %d of the %d others" % (
                who(r), len(m.get("connected", {})), len(m.get("accepted", [])), n - 1))
    expect(not p, "\n".join(p))


# ---------------------------------------------------------------- refusals


def cluster_main(run, skip=None):
    """main() of a suite on this module's Cluster: skips the whole suite
    (1..0 # SKIP) where namespace clusters cannot run, or where skip()
    gives a reason; else run(tap, cluster), then the cluster goes down
    whatever happened. Returns the exit status."""
    import traceback
    import ftlib
    reason = ftlib.ns_skip_reason() or (skip() if skip else None)
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    tap = sc.Tap()
    cluster = Cluster()
    try:
        run(tap, cluster)
    except Exception as e:
        tap.ok(False, "the test ran to its end", "%s: %s\n%s" % (type(e).__name__, e,
                                                                 traceback.format_exc()))
    finally:
        rc, out, err = cluster.down()
        tap.ok(rc == 0, "cluster.sh down", "exit %d: %s%s" % (rc, out, err))
    return tap.finish()
