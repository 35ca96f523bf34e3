#!/usr/bin/python3
"""Jobs on a real cluster of hosts on this machine, provisioned over SSH.

`scripts/cluster.sh up --hosts 3` (what `trainctl cluster up` runs) makes
three hosts (network namespaces on a bridge, each with its own address,
hostname, sshd and private /root and /var/lib/trainagent) and a trainctld
in the root namespace with --inventory, listening on the bridge address
with generated credentials. The controller copies trainagent to every host
over SSH (libssh2) and starts it there. Then:

  jobs    a 3-instance job (script mode: a rendezvous program, then
          examples/probe/probe.py) runs one process per host: SM_HOSTS,
          SM_CURRENT_HOST, a hostname per host, MASTER_ADDR = algo-1's own
          address (it binds there) reachable from the other hosts, and
          GET /v1/hosts shows the hosts busy with the job; two 1-instance
          jobs run side by side on different hosts; a job asking for more
          hosts than exist is refused with ResourceLimitExceeded; one
          asking for more than are free waits (InProgress/Starting, a
          message naming what it waits for) and runs when they free up.
  faults  the agent binary removed on a host and the agent killed: copied
          again and restarted; a host's sshd stopped (and its agent killed):
          reported unreachable, the others unaffected, back once sshd is;
          a wrong host key in known_hosts: the host is refused and the
          error names the mismatch, the others unaffected.
  down    `cluster.sh down` leaves no process, namespace, link or
          /etc/netns entry behind.

TAP on stdout; skips (1..0 # SKIP) when not root, without sshd, or when
trainctld has no --inventory. Run from the top of the tree:
    /usr/bin/python3 tests/integration/test_cluster_jobs.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the cluster's state dir (logs) after tear-down.
"""
import datetime
import glob
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import traceback

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
PROBE = os.path.join(REPO, "examples", "probe", "probe.py")
# This run's own prefix, /24 and port: overlapping runs never share them.
PREFIX, NET, PORT = sc.run_names("it")
STATE = "/tmp/trainctl-cluster-%s" % PREFIX
# A fresh path per run (the state dir is new), so that bring-up copies the
# agent to every host; all hosts share /tmp, as hosts with a shared file
# system do.
AGENT_PATH = STATE + "/trainagent"
N_HOSTS = 3
ITYPE = "ml.c5.xlarge"
BUCKET = "trainctl-cit"
OUT = "s3://%s/out" % BUCKET
CODE_URI = "s3://%s/code/cluster-probe.tar.gz" % BUCKET
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
# Not tighter: on a loaded 2-core machine a heartbeat answer can wait over
# a second for the disk, and agents then fence themselves.
HEARTBEAT_MS = 500
DEADLINE_MS = 4000

Fail, expect, short = sc.Fail, sc.expect, sc.short

# The training program of the 3-host job: a TCP rendezvous on MASTER_ADDR:
# MASTER_PORT (algo-1 binds there, so it must be its own address; the others
# connect, so it must be reachable from them), then the probe.
RDV_PY = r'''
import json, os, runpy, socket, sys, time
host = os.environ.get("SM_CURRENT_HOST")
hosts = json.loads(os.environ.get("SM_HOSTS", "[]"))
addr = os.environ.get("MASTER_ADDR")
port = int(os.environ.get("MASTER_PORT") or 0)
model = os.environ.get("SM_MODEL_DIR", "/opt/ml/model")
rec = {"host": host, "hostname": socket.gethostname(), "master_addr": addr, "master_port": port}
try:
    if hosts and host == hosts[0]:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(16)
        s.settimeout(30)
        peers = {}
        while len(peers) < len(hosts) - 1:
            c, a = s.accept()
            msg = json.loads(c.recv(4096).decode())
            peers[msg["host"]] = {"hostname": msg["hostname"], "from": a[0]}
            c.sendall(socket.gethostname().encode())
            c.close()
        rec["peers"] = peers
    else:
        deadline = time.time() + 30
        while True:
            try:
                c = socket.create_connection((addr, port), timeout=5)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        rec["local_addr"] = c.getsockname()[0]
        c.sendall(json.dumps({"host": host, "hostname": socket.gethostname()}).encode())
        rec["master_hostname"] = c.recv(4096).decode()
        c.close()
except Exception as e:
    rec["error"] = "%s: %s" % (type(e).__name__, e)
os.makedirs(model, exist_ok=True)
with open(os.path.join(model, "rdv-%s.json" % host), "w") as f:
    json.dump(rec, f)
print("rdv %s: %s" % (host, json.dumps(rec)), flush=True)
sys.argv[0] = "probe.py"
runpy.run_path("probe.py", run_name="__main__")
'''


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
        rc, out, err = self.sh("up", "--hosts", str(N_HOSTS), "--prefix", PREFIX, "--net", NET, "--port", str(PORT),
                               "--instance-type", ITYPE, "--timeout", "60", "--trainctld", TRAINCTLD,
                               "--agent-path", AGENT_PATH, "--",
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

    def wait_hosts(self, pred, timeout, what):
        deadline = time.time() + timeout
        last = None
        while True:
            try:
                last = self.host_list()
                if pred(last):
                    return last
            except (OSError, Fail) as e:
                last = str(e)
            if time.time() > deadline:
                raise Fail("%s: not after %.0f s; GET /v1/hosts: %s\n%s" % (what, timeout, short(last, 1500),
                                                                            self.log_tail(15)))
            time.sleep(0.1)

    def client(self):
        return sc.make_client(self.endpoint, key=self.key, secret=self.secret)

    def s3_path(self, uri):
        return os.path.join(self.ctrl_state, "s3", uri[5:])

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

    # -- processes inside the hosts, found through /proc

    def ns_inode(self, node):
        try:
            return os.stat("/run/netns/%s-%s" % (PREFIX, node)).st_ino
        except OSError:
            return None

    def agent_pids(self, node, watchdogs=False):
        """PIDs of trainagent processes on node: command line with
        --host <node>, network namespace the host's (with watchdogs: its
        watchdog too, first)."""
        ino = self.ns_inode(node)
        found = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    argv = f.read().split(b"\0")
                if b"--host" not in argv or argv[argv.index(b"--host") + 1].decode() != node:
                    continue
                if not os.path.basename(argv[0].decode()).startswith("trainagent"):
                    continue
                if argv[1:2] == [b"watchdog"] and not watchdogs:
                    continue  # the agent's watchdog names it in its argv
                if os.readlink("/proc/%s/ns/net" % d) != "net:[%d]" % ino:
                    continue
                with open("/proc/%s/stat" % d) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        continue
                found.append((int(d), argv[0].decode(), argv[1:2] == [b"watchdog"]))
            except (OSError, IndexError, ValueError):
                continue
        found.sort(key=lambda x: not x[2])
        return [(p, a) for p, a, _ in found]

    def kill_agent(self, node):
        """kill -9 of the host's agent and its watchdog (which would start
        the agent again): nothing of trainctl runs there then."""
        pids = self.agent_pids(node, watchdogs=True)
        expect(pids, "no trainagent process of %s found in /proc" % node)
        for pid, _ in pids:
            os.kill(pid, 9)
        return pids

    def procs_in_state(self):
        """Processes whose command line names the cluster's state dir or
        that live in one of its namespaces (after down: none)."""
        left = []
        inos = set()
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
        return left + sorted(inos)


# ---------------------------------------------------------------- jobs

def place_code(cluster):
    path = cluster.s3_path(CODE_URI)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        tf.add(PROBE, arcname="probe.py")
        data = RDV_PY.encode()
        ti = tarfile.TarInfo("rdv.py")
        ti.size = len(data)
        ti.mode = 0o644
        ti.mtime = int(time.time())
        tf.addfile(ti, io.BytesIO(data))


def job_request(name, count, program="probe.py", sleep=1.0, hps=None):
    raw = {"marker": json.dumps(name), "sleep": json.dumps(sleep),
           "sagemaker_program": json.dumps(program), "sagemaker_submit_directory": json.dumps(CODE_URI)}
    raw.update(hps or {})
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": raw,
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        "Environment": {"PROBE_MARKER": name},
    }


def terminal(d):
    return d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")


def wait_job(sm, name, pred, timeout, what="", interval=0.1):
    deadline = time.time() + timeout
    seen = []
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        st = "%s/%s" % (d["TrainingJobStatus"], d.get("SecondaryStatus"))
        if not seen or seen[-1] != st:
            seen.append(st)
        if pred(d):
            return d, seen
        if time.time() > deadline:
            raise Fail("%s: %s after %.0f s (seen %s)%s; FailureReason %r" % (
                name, st, timeout, " -> ".join(seen), (" waiting for " + what) if what else "",
                d.get("FailureReason")))
        time.sleep(interval)


def status_messages(d):
    msgs = [t.get("StatusMessage") or "" for t in d.get("SecondaryStatusTransitions") or []]
    for k in ("StatusMessage", "SecondaryStatusMessage"):
        if d.get(k):
            msgs.append(d[k])
    return [m for m in msgs if m]


def model_files(cluster, name):
    path = cluster.s3_path("%s/%s/output/model.tar.gz" % (OUT, name))
    try:
        with tarfile.open(path, "r:*") as tf:
            return {os.path.normpath(m.name).lstrip("/"): tf.extractfile(m).read()
                    for m in tf.getmembers() if m.isfile()}
    except FileNotFoundError:
        raise Fail("%s does not exist" % path)


def records(cluster, name, prefix="probe"):
    out = {}
    for member, data in model_files(cluster, name).items():
        m = re.match(r"^%s-(algo-\d+)\.json$" % prefix, member)
        if m:
            out[m.group(1)] = json.loads(data.decode())
    return out


def check_completed(sm, cluster, name, timeout=90):
    d, seen = wait_job(sm, name, terminal, timeout)
    expect(d["TrainingJobStatus"] == "Completed",
           "%s ended %s/%s (seen %s); FailureReason %r\n%s" % (
               name, d["TrainingJobStatus"], d.get("SecondaryStatus"), " -> ".join(seen),
               d.get("FailureReason"), cluster.log_tail(15, grep=name)))
    return d


# ---------------------------------------------------------------- main

def skip_reason():
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) for network namespaces"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "no /usr/sbin/sshd (apt-get install openssh-server)"
    try:
        import botocore  # noqa: F401
    except ImportError:
        return "no botocore (run with /usr/bin/python3)"
    return None


def main():
    reason = skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    tap = sc.Tap()
    cluster = Cluster()
    t_start = time.time()
    try:
        run(tap, cluster)
    except Exception as e:
        tap.ok(False, "the test ran to its end", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    finally:
        if os.environ.get("TRAINCTL_TEST_KEEP") == "1" and os.path.isdir(STATE):
            log("keeping %s" % STATE)
        t = time.time()
        rc, out, err = cluster.down()
        took = time.time() - t
        problems = []
        if rc != 0:
            problems.append("cluster.sh down: exit %d: %s%s" % (rc, out, err))
        names = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE).stdout.decode()
        ours = [x.split()[0] for x in names.splitlines() if x.startswith(PREFIX + "-")]
        if ours:
            problems.append("namespaces left: %s" % ours)
        links = subprocess.run(["ip", "-o", "link", "show"], stdout=subprocess.PIPE).stdout.decode()
        left_links = [x.split(":")[1].strip() for x in links.splitlines()
                      if re.match(r"^\d+: %s-" % PREFIX, x)]
        if left_links:
            problems.append("links left: %s" % left_links)
        etc = glob.glob("/etc/netns/%s-*" % PREFIX)
        if etc:
            problems.append("/etc/netns entries left: %s" % etc)
        procs = cluster.procs_in_state()
        if procs:
            problems.append("processes left:\n" + "\n".join(procs))
        tap.ok(not problems, "cluster.sh down: no process, namespace, link or /etc/netns entry left (%.2f s)"
               % took, "\n".join(problems))
        log("whole run %.1f s" % (time.time() - t_start))
    return tap.finish()


def run(tap, cluster):
    err = cluster.up()
    if not tap.ok(err is None, "cluster.sh up --hosts %d: hosts, trainctld --inventory, every host ready"
                  % N_HOSTS, err):
        return
    tap.note(cluster.up_out.strip())
    hosts0 = tap.case("GET /v1/hosts: %d hosts ready, at their inventory addresses, no error" % N_HOSTS,
                      check_ready, cluster)
    tap.case("every host runs its own trainagent (copied over SSH) inside its namespace",
             check_agents, cluster)
    tap.case("bring-up: the agent copied and started on every host at the first try",
             check_first_try, cluster)
    tap.case("trainctl with the printed exports (SigV4 over the bridge address) answers",
             check_cli, cluster)
    if not hosts0:
        return
    place_code(cluster)
    sm = cluster.client()
    run_id = "%x" % (int(time.time() * 1000) % 0xfffffff)

    # -- a 3-host job
    name3 = "cl3-%s" % run_id
    busy = {}

    def three():
        sm.create_training_job(**job_request(name3, 3, program="rdv.py", sleep=1.5))
        wait_job(sm, name3, lambda d: d.get("SecondaryStatus") == "Training" or terminal(d), 60)
        try:
            busy["hosts"] = cluster.wait_hosts(
                lambda hs: sum(1 for h in hs.values() if h.get("job") == name3) == 3, 10, "3 hosts busy")
        except Fail as e:
            busy["error"] = str(e)
        return check_completed(sm, cluster, name3)
    d3 = tap.case("3-instance job (rdv.py + probe.py, script mode) Completed", three)
    if d3:
        tap.case("one process per host: SM_HOSTS, SM_CURRENT_HOST, a hostname of its own per host",
                 check_three_env, cluster, name3)
        tap.case("MASTER_ADDR is algo-1's own address (it binds there) and the others reach it from "
                 "their own addresses", check_rendezvous, cluster, name3)
        tap.case("GET /v1/hosts showed the 3 hosts busy with the job, algo-N on the host that ran it",
                 check_busy, cluster, name3, busy)
        tap.case("trainctl logs (SigV4, the printed exports) shows every host's lines", check_logs, cluster, name3)

    # -- two 1-host jobs side by side; a 2-host job waits for them
    a, b, w = "cl1a-%s" % run_id, "cl1b-%s" % run_id, "clw2-%s" % run_id
    side = {}
    # Long enough that both are still running when the checks below look,
    # however loaded the machine.
    SIDE_S = 12

    def side_by_side():
        sm.create_training_job(**job_request(a, 1, sleep=SIDE_S))
        sm.create_training_job(**job_request(b, 1, sleep=SIDE_S))
        for n in (a, b):
            wait_job(sm, n, lambda d: d.get("SecondaryStatus") == "Training" or terminal(d), 60)
        both = cluster.wait_hosts(lambda hs: {h.get("job") for h in hs.values()} >= {a, b}, 10,
                                  "both 1-host jobs on hosts")
        side["hosts_of"] = {h["job"]: n for n, h in both.items() if h.get("job") in (a, b)}
        expect(side["hosts_of"][a] != side["hosts_of"][b], "both on %s" % side["hosts_of"][a])
        # Now only one host is free: a 2-host job must wait.
        sm.create_training_job(**job_request(w, 2, sleep=0.5))
        time.sleep(1.0)
        d = sm.describe_training_job(TrainingJobName=w)
        side["waiting"] = d
        for n in (a, b):
            da = sm.describe_training_job(TrainingJobName=n)
            expect(da["TrainingJobStatus"] == "InProgress" and da.get("SecondaryStatus") == "Training",
                   "%s is %s/%s while %s should wait" % (n, da["TrainingJobStatus"], da.get("SecondaryStatus"),
                                                         w))
        for n in (a, b):
            check_completed(sm, cluster, n)
        ra, rb = records(cluster, a), records(cluster, b)
        ha, hb = ra["algo-1"]["hostname"], rb["algo-1"]["hostname"]
        expect(ha != hb, "both probes report hostname %s" % ha)
        sa, sb = ra["algo-1"]["started"], rb["algo-1"]["started"]
        # Side by side: each started before the other's SIDE_S of sleep ended.
        expect(abs(sa - sb) < SIDE_S - 1, "the probes started %.1f s apart: one after the other, "
               "not side by side" % abs(sa - sb))
        expect(ha == side["hosts_of"][a] and hb == side["hosts_of"][b],
               "probe hostnames %s/%s, GET /v1/hosts said %s" % (ha, hb, side["hosts_of"]))
        return True
    tap.case("two 1-instance jobs run side by side on different hosts", side_by_side)

    def waited():
        d = side.get("waiting")
        expect(d is not None, "the 2-host job was not created")
        st = (d["TrainingJobStatus"], d.get("SecondaryStatus"))
        msgs = status_messages(d)
        expect(st == ("InProgress", "Starting"),
               "while 1 host was free the 2-host job was %s/%s (expected InProgress/Starting)" % st)
        expect(any(re.search(r"wait", m, re.I) and re.search(r"\b2\b", m) for m in msgs),
               "no status message saying it waits for 2 hosts: %s" % msgs)
        log("waiting job's message: %s" % msgs)
        d = check_completed(sm, cluster, w)
        recs = records(cluster, w)
        expect(sorted(recs) == ["algo-1", "algo-2"], "probe records of %s" % sorted(recs))
        return True
    tap.case("a 2-instance job with 1 host free waits (InProgress/Starting, a message naming what it "
             "waits for), then runs", waited)

    def too_many():
        def create():
            sm.create_training_job(**job_request("cl4-%s" % run_id, N_HOSTS + 1))
        sc.expect_error(create, ("ResourceLimitExceeded",), contains=None,
                        what="%d instances on %d hosts: " % (N_HOSTS + 1, N_HOSTS))
    tap.case("a job asking for %d hosts of %d: ResourceLimitExceeded" % (N_HOSTS + 1, N_HOSTS), too_many)

    # -- faults
    tap.case("agent binary removed on node2 and its agent killed: copied again, restarted, ready",
             fault_binary, cluster)
    tap.case("node1's sshd stopped and its agent killed: reported unreachable, node2/node3 unaffected",
             fault_sshd, cluster, sm, run_id)
    tap.case("node3's key wrong in known_hosts and its agent killed: refused, error names the host key "
             "mismatch, node1/node2 unaffected", fault_hostkey, cluster, sm, run_id)
    tap.case("after the faults are repaired every host is ready and a 3-instance job completes",
             recovered, cluster, sm, run_id)


def check_ready(cluster):
    hs = cluster.host_list()
    expect(sorted(hs) == sorted(cluster.hosts), "hosts %s, inventory %s" % (sorted(hs), sorted(cluster.hosts)))
    problems = []
    for n, h in sorted(hs.items()):
        if h.get("state") != "ready":
            problems.append("%s is %s" % (n, h.get("state")))
        if h.get("address") != cluster.hosts[n]:
            problems.append("%s: address %r, inventory %r" % (n, h.get("address"), cluster.hosts[n]))
        if h.get("error"):
            problems.append("%s: error %r" % (n, h.get("error")))
        if h.get("instance_type") != ITYPE:
            problems.append("%s: instance_type %r" % (n, h.get("instance_type")))
    expect(not problems, "; ".join(problems) + "\n" + short(hs, 1500))
    return hs


def check_agents(cluster):
    problems = []
    paths = set()
    for n in sorted(cluster.hosts):
        pids = cluster.agent_pids(n)
        if len(pids) != 1:
            problems.append("%s: %d trainagent processes in its namespace: %s" % (n, len(pids), pids))
            continue
        paths.add(pids[0][1])
    with open(TRAINAGENT, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    for p in paths:
        try:
            with open(p, "rb") as f:
                got = hashlib.sha256(f.read()).hexdigest()
        except OSError as e:
            problems.append("%s: %s" % (p, e))
            continue
        if got != want:
            problems.append("%s is not build/bin/trainagent (sha256 %s, want %s)" % (p, got[:12], want[:12]))
        if os.path.realpath(p) == os.path.realpath(TRAINAGENT):
            problems.append("the agents run build/bin/trainagent itself, not a copy")
    expect(not problems, "\n".join(problems))
    log("agents run %s" % sorted(paths))


def check_first_try(cluster):
    with open(os.path.join(STATE, "controller", "trainctld.log"), "rb") as f:
        lines = f.read().decode("utf-8", "replace").splitlines()
    failed = [x for x in lines if "provisioning failed" in x]
    copied = [x for x in lines if "copying the agent" in x]
    started = [x for x in lines if "agent started over SSH" in x]
    log("bring-up: " + "; ".join(re.sub(r"^\S+ \w+ prov: ", "", x) for x in started))
    expect(len(copied) >= N_HOSTS, "the agent was copied %d times (expected once per host):\n%s" % (
        len(copied), "\n".join(copied)))
    expect(not failed, "provisioning failed %d times during bring-up:\n%s" % (len(failed), "\n".join(failed)))


def check_cli(cluster):
    env = dict(os.environ)
    env.update(cluster.env)
    r = subprocess.run([TRAINCTL, "list-training-jobs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=30)
    expect(r.returncode == 0, "trainctl list-training-jobs: exit %d: %s" % (r.returncode, r.stderr.decode()[-500:]))
    env2 = dict(env, AWS_SECRET_ACCESS_KEY="wrong" + cluster.secret)
    r2 = subprocess.run([TRAINCTL, "list-training-jobs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env2,
                        timeout=30)
    expect(r2.returncode == 1, "with a wrong secret: exit %d (expected 1, the API's error): %s" % (
        r2.returncode, r2.stderr.decode()[-300:]))


def check_logs(cluster, name):
    env = dict(os.environ)
    env.update(cluster.env)
    r = subprocess.run([TRAINCTL, "logs", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=30)
    out = r.stdout.decode("utf-8", "replace")
    expect(r.returncode == 0, "trainctl logs %s: exit %d: %s" % (name, r.returncode, r.stderr.decode()[-500:]))
    missing = [a for a in ("algo-1", "algo-2", "algo-3") if "rdv %s: " % a not in out]
    expect(not missing, "trainctl logs lacks the lines of %s:\n%s" % (missing, out[-1500:]))


def check_three_env(cluster, name):
    recs = records(cluster, name)
    expect(sorted(recs) == ["algo-1", "algo-2", "algo-3"], "probe records: %s" % sorted(recs))
    problems = []
    names = {}
    for algo, r in sorted(recs.items()):
        env = r["environ"]
        if env.get("SM_HOSTS") != '["algo-1","algo-2","algo-3"]':
            problems.append("%s: SM_HOSTS %r" % (algo, env.get("SM_HOSTS")))
        if env.get("SM_CURRENT_HOST") != algo:
            problems.append("%s: SM_CURRENT_HOST %r" % (algo, env.get("SM_CURRENT_HOST")))
        if env.get("SM_NETWORK_INTERFACE_NAME") not in r.get("net_interfaces", []):
            problems.append("%s: SM_NETWORK_INTERFACE_NAME %r not among %s" % (
                algo, env.get("SM_NETWORK_INTERFACE_NAME"), r.get("net_interfaces")))
        if "eth0" not in r.get("net_interfaces", []):
            problems.append("%s: interfaces %s (not in a cluster host's namespace?)" % (algo, r.get("net_interfaces")))
        names[algo] = r.get("hostname")
        if r.get("executable") != "/usr/bin/python3":
            problems.append("%s: interpreter %r" % (algo, r.get("executable")))
    if len(set(names.values())) != 3 or not set(names.values()) <= set(cluster.hosts):
        problems.append("hostnames %s: expected node1..node3, one each" % names)
    expect(not problems, "\n".join(problems))
    log("%s ran on %s" % (name, names))


def check_rendezvous(cluster, name):
    rdv = records(cluster, name, prefix="rdv")
    recs = records(cluster, name)
    expect(sorted(rdv) == ["algo-1", "algo-2", "algo-3"], "rendezvous records: %s" % sorted(rdv))
    problems = [("%s: %s" % (a, r["error"])) for a, r in sorted(rdv.items()) if r.get("error")]
    expect(not problems, "\n".join(problems))
    host_of = {a: r["hostname"] for a, r in recs.items()}
    master = rdv["algo-1"]["master_addr"]
    expect(master == cluster.hosts.get(host_of["algo-1"]),
           "MASTER_ADDR %s, but algo-1 ran on %s (%s)" % (master, host_of["algo-1"],
                                                        cluster.hosts.get(host_of["algo-1"])))
    for a in ("algo-2", "algo-3"):
        r = rdv[a]
        if r.get("master_addr") != master:
            problems.append("%s: MASTER_ADDR %r, algo-1 says %r" % (a, r.get("master_addr"), master))
        if r.get("master_hostname") != host_of["algo-1"]:
            problems.append("%s reached %r at MASTER_ADDR, not algo-1's host %r" % (
                a, r.get("master_hostname"), host_of["algo-1"]))
        own = cluster.hosts.get(host_of[a])
        if r.get("local_addr") != own:
            problems.append("%s connected from %r, not its host's address %r" % (a, r.get("local_addr"), own))
        seen = rdv["algo-1"].get("peers", {}).get(a, {})
        if seen.get("from") != own:
            problems.append("algo-1 saw %s come from %r, not %r" % (a, seen.get("from"), own))
    expect(not problems, "\n".join(problems))


def check_busy(cluster, name, busy):
    expect("hosts" in busy, busy.get("error", "GET /v1/hosts never showed the job"))
    recs = records(cluster, name)
    problems = []
    for n, h in sorted(busy["hosts"].items()):
        if h.get("state") != "busy":
            problems.append("%s: state %r while running %s" % (n, h.get("state"), name))
        algo = h.get("algo")
        if algo not in recs:
            problems.append("%s: algo %r" % (n, algo))
        elif recs[algo].get("hostname") != n:
            problems.append("GET /v1/hosts puts %s on %s, its probe ran on %s" % (algo, n, recs[algo].get("hostname")))
    expect(not problems, "\n".join(problems) + "\n" + short(busy["hosts"], 1200))


def fault_binary(cluster):
    node = "node2"
    old = cluster.agent_pids(node)
    expect(len(old) == 1, "%s: agents %s" % (node, old))
    path = old[0][1]
    other = {n: cluster.agent_pids(n) for n in cluster.hosts if n != node}
    os.unlink(path)
    t = time.time()
    cluster.kill_agent(node)
    hs = cluster.wait_hosts(lambda hs: hs[node]["state"] == "ready" and cluster.agent_pids(node)
                            and cluster.agent_pids(node)[0][0] != old[0][0], 45,
                            "%s ready again with a new agent" % node)
    took = time.time() - t
    expect(os.path.exists(path), "%s was not copied again" % path)
    with open(path, "rb") as f, open(TRAINAGENT, "rb") as g:
        expect(hashlib.sha256(f.read()).digest() == hashlib.sha256(g.read()).digest(),
               "%s differs from build/bin/trainagent" % path)
    logs = cluster.log_tail(400, grep="'%s'" % node)
    expect(re.search(r"copying the agent \(missing\)", logs[logs.rfind("lost"):] if "lost" in logs else logs),
           "trainctld's log does not say the agent was copied again:\n%s" % logs[-2000:])
    for n, pids in other.items():
        expect(cluster.agent_pids(n) == pids, "%s's agent changed: %s -> %s" % (n, pids, cluster.agent_pids(n)))
        expect(hs[n]["state"] == "ready" and not hs[n].get("error"), "%s: %s" % (n, short(hs[n])))
    log("node2 back with a new agent %.1f s after the kill" % took)


def others_unaffected(cluster, sm, bad, run_id, tag):
    hs = cluster.host_list()
    problems = []
    for n, h in sorted(hs.items()):
        if n == bad:
            continue
        if h.get("state") != "ready" or h.get("error"):
            problems.append("%s: %s" % (n, short(h)))
    expect(not problems, "other hosts affected: %s" % problems)
    name = "cl2%s-%s" % (tag, run_id)
    sm.create_training_job(**job_request(name, 2, sleep=0.3))
    check_completed(sm, cluster, name, timeout=60)
    used = {r["hostname"] for r in records(cluster, name).values()}
    expect(bad not in used, "%s ran on %s although it is down" % (name, sorted(used)))


def fault_sshd(cluster, sm, run_id):
    node = "node1"
    rc, out, err = cluster.sh("sshd-stop", node, "--prefix", PREFIX)
    expect(rc == 0, "sshd-stop: %s %s" % (out, err))
    try:
        cluster.kill_agent(node)
        hs = cluster.wait_hosts(lambda hs: hs[node]["state"] != "ready" and hs[node].get("error"), 90,
                                "%s reported with an error" % node)
        e = hs[node]["error"]
        expect(re.search(r"connect|refused|unreachable", e, re.I),
               "%s's error does not say it cannot be reached: %r" % (node, e))
        log("%s: %s: %s" % (node, hs[node]["state"], e))
        others_unaffected(cluster, sm, node, run_id, "s")
    finally:
        rc, out, err = cluster.sh("sshd-start", node, "--prefix", PREFIX)
        expect(rc == 0, "sshd-start: %s %s" % (out, err))
    t = time.time()
    cluster.wait_hosts(lambda hs: hs[node]["state"] == "ready", 60, "%s ready once sshd is back" % node)
    log("%s ready %.1f s after sshd came back" % (node, time.time() - t))


def fault_hostkey(cluster, sm, run_id):
    node = "node3"
    kh = os.path.join(STATE, "known_hosts")
    with open(kh) as f:
        good = f.read()
    # Another host's key under node3's names and address.
    keys = {line.split()[0]: line.split(None, 1)[1] for line in good.splitlines() if line.strip()}
    mine = [k for k in keys if k.split(",")[0] == node][0]
    other = [k for k in keys if k.split(",")[0] == "node1"][0]
    bad = good.replace("%s %s" % (mine, keys[mine]), "%s %s" % (mine, keys[other]))
    expect(bad != good, "could not rewrite known_hosts")
    with open(kh + ".tmp", "w") as f:
        f.write(bad)
    os.rename(kh + ".tmp", kh)
    try:
        cluster.kill_agent(node)
        hs = cluster.wait_hosts(lambda hs: hs[node]["state"] != "ready" and hs[node].get("error"), 90,
                                "%s refused with an error" % node)
        e = hs[node]["error"]
        expect(re.search(r"host key mismatch", e, re.I), "%s's error does not name the host key mismatch: %r"
               % (node, e))
        log("%s: %s: %s" % (node, hs[node]["state"], e))
        expect(not cluster.agent_pids(node), "an agent runs on %s although its key did not match" % node)
        others_unaffected(cluster, sm, node, run_id, "k")
    finally:
        with open(kh + ".tmp", "w") as f:
            f.write(good)
        os.rename(kh + ".tmp", kh)


def recovered(cluster, sm, run_id):
    t = time.time()
    cluster.wait_hosts(lambda hs: all(h["state"] == "ready" and not h.get("error") for h in hs.values()), 60,
                       "every host ready without error")
    log("all ready %.1f s after the repair" % (time.time() - t))
    name = "cl3r-%s" % run_id
    sm.create_training_job(**job_request(name, 3, sleep=0.3))
    check_completed(sm, cluster, name, timeout=60)
    used = {r["hostname"] for r in records(cluster, name).values()}
    expect(used == set(cluster.hosts), "%s ran on %s" % (name, sorted(used)))


if __name__ == "__main__":
    sys.exit(main())
