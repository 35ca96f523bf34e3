#!/usr/bin/python3
"""Container images on the namespace cluster, pulled from a registry.

`scripts/cluster.sh up --hosts 2` makes two hosts (network namespaces with
their own sshd, hostname and /var/lib/trainagent) and a trainctld that
provisions them over SSH, started with --registry-auth (credentials for two
registries) and --insecure-registry. The test then starts Debian's
docker-registry on the bridge address with htpasswd auth (the cluster's
"ECR"), builds its images offline (tests/integration/imagelib.py: FROM
scratch, busybox-static or a Python/torch rootfs taken from this machine)
and pushes them. Cases:

  a  a 1-host job of a pushed image Completes: model.tar.gz holds what the
     image wrote, its log lines and metrics arrive, its secondary status
     says it downloads the image; a 2-host job pulls on both hosts, and a
     second 2-host job of the same image pulls nothing (the registry sees no
     blob GET, each host says "already on this host");
  b  torch_distributed with gloo across the 2 hosts, each rank a container:
     the collectives' result equals the same program's run as processes;
  c  a failing container: Failed with the reason it wrote to
     /opt/ml/output/failure;
  d  Stop: Stopped, and then no container (podman ps -a), no container
     process and no conmon left on any host;
  e  a rank killed inside its container: the attempt restarts and resumes
     from its checkpoint;
  f  kill -9 of the agent mid-run: its watchdog starts it again and the new
     agent adopts the running container (no restart); a frozen agent
     (SIGSTOP past its lease): the watchdog fences the host, the keeper
     kills and removes the container, the job restarts from its checkpoint;
  g  a TLS registry named --insecure-registry is pulled from; nonexistent
     image, wrong tag, registry down, bad credentials, a TLS certificate
     that is not trusted: each a ClientError naming the image and the
     registry's answer within seconds, no host reserved;
  h  trainctl list-images shows the host's images, prune-images empties it;
  i  a user key's job (trainctl_user): the container runs as that Unix user,
     and writes its model;
  j  --image-map: a SageMaker framework image name runs the mapped image;
     `cluster.sh up --registry` (the cluster's own registry, named
     insecure for trainctld): push there, train from there;
and at the end: no registry password, in clear or base64, in any log of
the controller or the agents.

TAP on stdout; skips when not root, without sshd or podman. Run from the top
of the tree: /usr/bin/python3 tests/integration/test_containers.py
(CASES=abc runs some cases only; TRAINCTL_TEST_KEEP=1 keeps the cluster's
state dir).
"""
import base64
import glob
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import imagelib  # noqa: E402

sc = fl.sc
Fail, expect, short = sc.Fail, sc.expect, sc.short

# This run's own prefix, /24 and ports: overlapping runs never share them.
PREFIX, NET, PORT = sc.run_names("ct")
BRIDGE = NET + ".1"
REG_PORT, REG2_PORT, DOWN_PORT, TLS_OK_PORT, TLS_BAD_PORT = sc.free_ports(5)
CLUSTER_REG_PORT = sc.free_port()  # cluster.sh up --registry: the cluster's own
DLC = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:1.13.1-cpu-py39"
REG = "%s:%d" % (BRIDGE, REG_PORT)
REG2 = "%s:%d" % (BRIDGE, REG2_PORT)
DOWN = "%s:%d" % (BRIDGE, DOWN_PORT)
# Both serve TLS with a self-signed certificate; only the first is named
# with --insecure-registry.
TLS_OK = "%s:%d" % (BRIDGE, TLS_OK_PORT)
TLS_BAD = "%s:%d" % (BRIDGE, TLS_BAD_PORT)
USER, PASSWORD, PASSWORD2 = "trainer", "s3cret-pull", "other-pass"
ITYPE = "ml.c5.xlarge"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
BUCKET = "trainctl-ct"
OUT = "s3://%s/out" % BUCKET
T0 = time.time()


def log(text):
    sys.stderr.write("[%6.1fs] %s\n" % (time.time() - T0, text))
    sys.stderr.flush()


def wanted(c):
    return c in os.environ.get("CASES", "abcdefghij")


UNIX_USER = PREFIX + "-user"  # this run's own: another run never removes it
USER_KEY, USER_SECRET = "AKIDTCCTUSER0000001", "tcct-user-secret-0001"


def make_user():
    """The Unix user of case (i): (made now, why not)."""
    if subprocess.run(["id", UNIX_USER], capture_output=True).returncode == 0:
        return False, None
    if not shutil.which("useradd"):
        return False, "no useradd"
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell",
                        "/usr/sbin/nologin", UNIX_USER], capture_output=True)
    return r.returncode == 0, (r.stderr.decode() if r.returncode else None)


# The busybox trainer: resumes from its checkpoint, counts STEPS steps of
# SLEEP seconds (checkpoint after each), prints metrics, writes its model.
# MODE=fail writes a failure reason and exits 2.
TRAIN_SH = r'''#!/bin/sh
set -e
ck=/opt/ml/checkpoints/step
step=0
[ -f "$ck" ] && step=$(cat "$ck")
echo "resumed from step $step on $SM_CURRENT_HOST as $(id -u) args: $*"
if [ "$MODE" = fail ]; then
    echo "bad input: the train channel is empty" > /opt/ml/output/failure
    exit 2
fi
while [ "$step" -lt "${STEPS:-3}" ]; do
    step=$((step + 1))
    echo "$step" > "$ck.tmp" && mv "$ck.tmp" "$ck"
    echo "step=$step loss=0.$((100 - step))"
    sleep "${SLEEP:-0}"
done
mkdir -p /opt/ml/model
echo "$SM_CURRENT_HOST $step" > "/opt/ml/model/$SM_CURRENT_HOST.txt"
echo "trained"
'''

# The collectives program, the same for the container and the process run.
DIST_PY = r'''
import json, os, sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
r, w = dist.get_rank(), dist.get_world_size()
t = torch.arange(6, dtype=torch.float64) * (r + 1) + 0.25
dist.all_reduce(t)
g = [torch.zeros(2, dtype=torch.float64) for _ in range(w)]
dist.all_gather(g, torch.tensor([float(r), float(r) ** 2], dtype=torch.float64))
b = torch.tensor([7.5 if r == 0 else 0.0], dtype=torch.float64)
dist.broadcast(b, 0)
res = {"world": w, "sum": t.tolist(), "gather": [x.tolist() for x in g], "bcast": b.item(),
       "torch": torch.__version__}
print("result=" + json.dumps(res, sort_keys=True))
if r == 0:
    os.makedirs("/opt/ml/model", exist_ok=True)
    with open(os.environ.get("SM_MODEL_DIR", "/opt/ml/model") + "/result.json", "w") as f:
        json.dump(res, f, sort_keys=True)
dist.destroy_process_group()
'''


def skip_reason():
    r = fl.ns_skip_reason()
    if r:
        return r
    for t in ("podman", "skopeo", "htpasswd"):
        if not shutil.which(t):
            return "'%s' not found (scripts/deps.sh)" % t
    if not os.access("/usr/bin/docker-registry", os.X_OK):
        return "no /usr/bin/docker-registry (scripts/deps.sh)"
    return None


def request(name, image, count=1, env=None, hps=None, retries=None, ckpt=False, max_runtime=600):
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File",
                                   "MetricDefinitions": [{"Name": "loss", "Regex": r"loss=([0-9.]+)"}]},
        "RoleArn": ROLE,
        "HyperParameters": hps or {},
        "OutputDataConfig": {"S3OutputPath": OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
        "Environment": env or {},
    }
    if ckpt:
        req["CheckpointConfig"] = {"S3Uri": "s3://%s/ckpt/%s" % (BUCKET, name)}
    if retries is not None:
        req["RetryStrategy"] = {"MaximumRetryAttempts": retries}
    return req


def ended(d):
    return d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped")


def model_files(ns, name):
    path = ns.s3_path("%s/%s/output/model.tar.gz" % (OUT, name))
    out = {}
    with tarfile.open(path, "r:gz") as tf:
        for m in tf.getmembers():
            if m.isfile():
                out[m.name.lstrip("./")] = tf.extractfile(m).read().decode("utf-8", "replace")
    return out


def job_log(ns, name):
    text = []
    for p in sorted(glob.glob(os.path.join(ns.logs_dir(name), "*"))):
        with open(p, "rb") as f:
            for line in f.read().decode("utf-8", "replace").splitlines():
                parts = line.split("\t", 3)
                text.append(parts[3] if len(parts) == 4 else line)
    return "\n".join(text)


def podman_ps(ns, node):
    """The containers of node's own store (podman ps -a), as names."""
    w = "/var/lib/trainagent/containers"
    rc, out, err = ns.sh("exec", node, "--prefix", PREFIX, "--", "podman", "--root", w + "/storage", "--runroot",
                         w + "/run", "--tmpdir", w + "/tmp", "--cgroup-manager", "cgroupfs", "--events-backend",
                         "file", "ps", "-a", "--format", "{{.Names}}", timeout=60)
    if rc != 0 and "no such file" in (out + err).lower():
        return []
    expect(rc == 0, "podman ps -a on %s: exit %d %s%s" % (node, rc, out, err))
    return [x for x in out.split() if x]


def container_procs(name):
    """Processes of a job's containers: conmon (its argv names the
    container) and whatever runs under a podman-init of the job."""
    left = []
    for pid, argv in fl.proc_argvs():
        line = " ".join(argv)
        if ("conmon" in line or "podman" in line) and ("tc-%s-" % name) in line:
            left.append((pid, line[:160]))
    return left


def hosts_with(ns, name):
    return [h["name"] for h in ns.hosts() if h.get("job") == name]


def wait_log(ns, name, text, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if text in job_log(ns, name):
            return True
        time.sleep(0.2)
    return False


def cpid_of(ns, name, node, attempt):
    pat = os.path.join(ns.state, "hosts", node, "work", "jobs", name + "*", str(attempt), "algo-1", ".trainagent",
                       "rank0.cpid")
    for p in glob.glob(pat):
        with open(p) as f:
            return int(f.read().strip() or 0)
    return 0


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(p))
        except (OSError, ValueError):
            pass
    return out


# ---------------------------------------------------------------- cases

def case_a(tap, ns, sm, images, reg):
    name = "ct-one"
    sm.create_training_job(**request(name, images["bb"], env={"STEPS": "3"}))
    d, seen = fl.wait_job(sm, name, ended, 120)
    tap.ok(d["TrainingJobStatus"] == "Completed", "(a) a 1-host job of a pushed image Completes",
           "%s %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), ns.log_tail(15)))
    files = model_files(ns, name)
    host_files = [v for k, v in files.items() if k.endswith(".txt")]
    tap.ok(host_files == ["algo-1 3\n"], "(a) model.tar.gz holds what the container wrote under /opt/ml/model",
           short(files))
    text = job_log(ns, name)
    tap.ok("resumed from step 0 on algo-1 as 0 args: " in text and "trained" in text,
           "(a) the container's output is in the job's log", text[-1500:])
    tap.ok("pulled in" in text, "(a) the log says the host pulled the image", text[-1500:])
    mets = {m["MetricName"]: m["Value"] for m in d.get("FinalMetricDataList") or []}
    tap.ok(abs(mets.get("loss", -1) - 0.97) < 1e-9, "(a) MetricDefinitions parsed from the container's output",
           short(d.get("FinalMetricDataList")))
    tr = fl.transitions(d)
    tap.ok(("Downloading", "Downloading the training image") in tr and
           ("Training", "Training image download completed. Training in progress.") in tr,
           "(a) secondary status: Downloading the training image, then Training", short(tr))
    # Both hosts: the first 2-host job pulls where the image is missing,
    # the second pulls nothing anywhere.
    name2, name3 = "ct-two", "ct-again"
    sm.create_training_job(**request(name2, images["bb"], count=2))
    d2, _ = fl.wait_job(sm, name2, ended, 120)
    before = reg.blob_gets()
    sm.create_training_job(**request(name3, images["bb"], count=2))
    d3, _ = fl.wait_job(sm, name3, ended, 120)
    after = reg.blob_gets()
    text3 = job_log(ns, name3)
    tap.ok(d2["TrainingJobStatus"] == "Completed" and d3["TrainingJobStatus"] == "Completed",
           "(a) two 2-host jobs of the image Complete", "%s %s / %s %s" % (
               d2["TrainingJobStatus"], d2.get("FailureReason"), d3["TrainingJobStatus"], d3.get("FailureReason")))
    tap.ok(after == before and text3.count("already on this host") == 2 and "pulled in" not in text3,
           "(a) the second 2-host job pulled nothing: no blob GET, both hosts had the image",
           "blob GETs %d -> %d\n%s" % (before, after, text3[-1500:]))


def dist_result(ns, name):
    with open(ns.s3_path("%s/%s/output/model.tar.gz" % (OUT, name)), "rb") as f:
        with tarfile.open(fileobj=io.BytesIO(f.read()), mode="r:gz") as tf:
            for m in tf.getmembers():
                if m.name.endswith("result.json"):
                    return json.loads(tf.extractfile(m).read())
    return None


def case_b(tap, ns, sm, images, reg):
    hps = {"sagemaker_torch_distributed_enabled": "true"}
    name = "ct-ddp"
    sm.create_training_job(**request(name, images["torch"], count=2, hps=hps))
    # The same program as processes: script mode with the host's Python.
    code_uri = "s3://%s/code/dist.tar.gz" % BUCKET
    path = ns.s3_path(code_uri)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        data = DIST_PY.encode()
        ti = tarfile.TarInfo("dist.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    d, _ = fl.wait_job(sm, name, ended, 420)
    ok = tap.ok(d["TrainingJobStatus"] == "Completed", "(b) torch_distributed (gloo) in containers on 2 hosts "
                "Completes", "%s %s\n%s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"),
                                                job_log(ns, name)[-2500:], ns.log_tail(15)))
    name2 = "ct-ddp-procs"
    hps2 = dict(hps, sagemaker_program="dist.py", sagemaker_submit_directory=code_uri)
    sm.create_training_job(**request(name2, "trainctl/python", count=2, hps=hps2))
    d2, _ = fl.wait_job(sm, name2, ended, 300)
    tap.ok(d2["TrainingJobStatus"] == "Completed", "(b) the same program as processes Completes",
           "%s %s" % (d2["TrainingJobStatus"], d2.get("FailureReason")))
    if ok:
        a, b = dist_result(ns, name), dist_result(ns, name2)
        tap.ok(a and b and a.get("world") == 2 and a == b,
               "(b) allreduce, allgather and broadcast give the same result in containers as in processes",
               "containers %s\nprocesses %s" % (a, b))


def case_c(tap, ns, sm, images, reg):
    name = "ct-fail"
    sm.create_training_job(**request(name, images["bb"], env={"MODE": "fail"}))
    d, _ = fl.wait_job(sm, name, ended, 120)
    tap.ok(d["TrainingJobStatus"] == "Failed" and
           "bad input: the train channel is empty" in (d.get("FailureReason") or ""),
           "(c) a failing container: Failed with the reason from /opt/ml/output/failure",
           "%s %r" % (d["TrainingJobStatus"], d.get("FailureReason")))


def overlay_mounts(ns, node):
    """The container root file systems mounted in node's mount namespace."""
    rc, out, err = ns.sh("exec", node, "--prefix", PREFIX, "--", "cat", "/proc/self/mounts", timeout=30)
    expect(rc == 0, "cat /proc/self/mounts in %s: %s" % (node, err))
    return [ln.split()[1] for ln in out.splitlines() if "/containers/storage/overlay/" in ln and
            ln.split()[1].endswith("/merged")]


def no_leftovers(ns, name):
    left = {n: [c for c in podman_ps(ns, n) if c.startswith("tc-%s-" % name)] for n in ("node1", "node2")}
    mounts = {n: overlay_mounts(ns, n) for n in ("node1", "node2")}
    left.update({n + " mounts": m for n, m in mounts.items()})
    left = {k: v for k, v in left.items() if v}
    procs = container_procs(name)
    return left, procs


def wait_clean(ns, name, timeout=30):
    deadline = time.time() + timeout
    while True:
        left, procs = no_leftovers(ns, name)
        if (not left and not procs) or time.time() > deadline:
            return left, procs
        time.sleep(0.5)


def case_d(tap, ns, sm, images, reg):
    name = "ct-stop"
    sm.create_training_job(**request(name, images["bb"], count=2, env={"STEPS": "1000", "SLEEP": "1"}))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 120)
    expect(wait_log(ns, name, "step=2 ", 60), "the job never reached step 2:\n" + job_log(ns, name)[-800:])
    running = {n: podman_ps(ns, n) for n in ("node1", "node2")}
    sm.stop_training_job(TrainingJobName=name)
    d, _ = fl.wait_job(sm, name, ended, 120)
    left, procs = no_leftovers(ns, name)
    tap.ok(d["TrainingJobStatus"] == "Stopped", "(d) Stop: the container job is Stopped",
           "%s %s" % (d["TrainingJobStatus"], d.get("FailureReason")))
    tap.ok(all(any(c.startswith("tc-%s-" % name) for c in v) for v in running.values()),
           "(d) while it ran, each host had the job's container", short(running))
    tap.ok(not left and not procs, "(d) after Stop: podman ps -a shows none of its containers, no container "
           "root file system is mounted, no conmon or container process is left",
           "containers %s\nprocesses %s" % (left, procs))


def wait_mirrored(ns, name, timeout=30):
    """Until the agent's checkpoint mirror has put a file of the job's
    checkpoints in the store (it copies every 2 s, later under load)."""
    root = ns.s3_path("s3://%s/ckpt/%s" % (BUCKET, name))
    deadline = time.time() + timeout
    while time.time() < deadline:
        for _, _, files in os.walk(root):
            if any(not f.startswith(".") for f in files):
                return
        time.sleep(0.1)
    raise Fail("no checkpoint of %s in the store after %d s" % (name, timeout))


def case_e(tap, ns, sm, images, reg):
    name = "ct-rank"
    sm.create_training_job(**request(name, images["bb"], env={"STEPS": "8", "SLEEP": "1"}, retries=2, ckpt=True))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 120)
    expect(wait_log(ns, name, "step=3 ", 60), "never reached step 3:\n" + job_log(ns, name)[-800:])
    wait_mirrored(ns, name)
    node = hosts_with(ns, name)[0]
    init = cpid_of(ns, name, node, 1)
    kids = children(init) if init else []
    expect(kids, "no process under the container's init %d on %s" % (init, node))
    for k in kids:
        os.kill(k, signal.SIGKILL)
    d, _ = fl.wait_job(sm, name, ended, 180)
    text = job_log(ns, name)
    resumed = [ln for ln in text.splitlines() if ln.startswith("resumed from step ")]
    tap.ok(d["TrainingJobStatus"] == "Completed", "(e) a rank killed inside its container: the job Completes",
           "%s %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), text[-1500:]))
    starts = [m for s, m in fl.transitions(d) if s == "Starting"]
    tap.ok(any("attempt 2" in m for m in starts), "(e) ... through a second attempt", short(fl.transitions(d)))
    tap.ok(len(resumed) >= 2 and not resumed[-1].startswith("resumed from step 0 "),
           "(e) ... that resumed from the checkpoint", "\n".join(resumed))


def agent_of(ns, node):
    cands = [p for p, argv in fl.proc_argvs()
             if argv and os.path.basename(argv[0]) == "trainagent" and "--controller" in argv and
             argv[1:2] != ["watchdog"]]  # a watchdog that respawns agents carries their command line
    mine = ns.netns_pids(node, cands)
    return min(mine) if mine else None  # its forked workers share the command line


def case_f(tap, ns, sm, images, reg):
    # kill -9: the watchdog starts the agent again, which adopts the
    # running container: the job goes on without a restart.
    name = "ct-agent"
    sm.create_training_job(**request(name, images["bb"], env={"STEPS": "12", "SLEEP": "1"}, retries=2,
                                     ckpt=True))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 120)
    expect(wait_log(ns, name, "step=3 ", 60), "never reached step 3:\n" + job_log(ns, name)[-800:])
    node = hosts_with(ns, name)[0]
    init, agent = cpid_of(ns, name, node, 1), agent_of(ns, node)
    expect(init and agent, "no agent (%s) or container init (%s) found on %s" % (agent, init, node))
    os.kill(agent, signal.SIGKILL)
    d, _ = fl.wait_job(sm, name, ended, 180)
    again = agent_of(ns, node)
    text = job_log(ns, name)
    resumed = [ln for ln in text.splitlines() if ln.startswith("resumed from step ")]
    tap.ok(d["TrainingJobStatus"] == "Completed" and len(resumed) == 1 and "trained" in text and
           again and again != agent,
           "(f) kill -9 of the agent: a new agent adopts the running container, the job Completes in "
           "attempt 1", "%s %s; agent %s -> %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), agent,
                                                      again, text[-1200:]))
    left, procs = wait_clean(ns, name)
    tap.ok(not left and not procs, "(f) ... and leaves no container", "containers %s\nprocesses %s" % (
        left, procs))
    # Frozen: the lease runs out, the watchdog fences the host (podman
    # killed, the keeper kills the container), the job restarts elsewhere
    # from its checkpoint.
    name = "ct-frozen"
    sm.create_training_job(**request(name, images["bb"], env={"STEPS": "14", "SLEEP": "1"}, retries=2,
                                     ckpt=True))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 120)
    expect(wait_log(ns, name, "step=3 ", 60), "never reached step 3:\n" + job_log(ns, name)[-800:])
    wait_mirrored(ns, name)
    node = hosts_with(ns, name)[0]
    init, agent = cpid_of(ns, name, node, 1), agent_of(ns, node)
    expect(init and agent, "no agent (%s) or container init (%s) found on %s" % (agent, init, node))
    t_stop = time.time()
    os.kill(agent, signal.SIGSTOP)
    gone = None
    try:
        while time.time() - t_stop < 30:
            if not os.path.exists("/proc/%d" % init):
                gone = time.time() - t_stop
                break
            time.sleep(0.05)
        fl.wait_job(sm, name, lambda d: any("attempt 2" in m for s, m in fl.transitions(d)), 60)
    finally:
        os.kill(agent, signal.SIGCONT)
    d, _ = fl.wait_job(sm, name, ended, 240)
    text = job_log(ns, name)
    resumed = [ln for ln in text.splitlines() if ln.startswith("resumed from step ")]
    tap.ok(gone is not None and gone < 10, "(f) a frozen agent (SIGSTOP): the watchdog fenced the host, its "
           "container's processes gone %.1f s later" % (gone or -1), "init %d still there after 30 s" % init)
    tap.ok(d["TrainingJobStatus"] == "Completed" and len(resumed) >= 2 and
           not resumed[-1].startswith("resumed from step 0 "),
           "(f) ... and the job restarts (attempt 2) from its checkpoint and Completes",
           "%s %s\n%s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), "\n".join(resumed),
                               short(fl.transitions(d))))
    ready = lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts
    ns.wait_hosts(ready, 90, "all hosts ready after SIGCONT")
    left, procs = wait_clean(ns, name)
    tap.ok(not left and not procs, "(f) ... no container of the job left on any host",
           "containers %s\nprocesses %s" % (left, procs))


def case_g(tap, ns, sm, images, reg):
    # A TLS registry named --insecure-registry: its certificate is not
    # checked, and the job runs.
    name = "ct-tls-insecure"
    sm.create_training_job(**request(name, "%s/team/bb:1" % TLS_OK))
    d, _ = fl.wait_job(sm, name, ended, 120)
    tap.ok(d["TrainingJobStatus"] == "Completed",
           "(g) a TLS registry named by --insecure-registry: pulled without checking its certificate",
           "%s %r" % (d["TrainingJobStatus"], d.get("FailureReason")))
    cases = [
        ("ct-noimage", "%s/team/nosuch:1" % REG, "manifest unknown", "a nonexistent image"),
        ("ct-notag", "%s/team/bb:nope" % REG, "manifest unknown", "a wrong tag"),
        ("ct-down", "%s/team/bb:1" % DOWN, "connection refused", "a registry that is down"),
        ("ct-creds", "%s/team/bb:1" % REG2, "unauthorized", "bad credentials"),
        ("ct-tls", "%s/team/bb:1" % TLS_BAD, "certificate", "a TLS certificate nobody vouches for"),
    ]
    for name, image, answer, what in cases:
        t = time.time()
        sm.create_training_job(**request(name, image))
        d, seen = fl.wait_job(sm, name, ended, 60)
        took = time.time() - t
        reason = d.get("FailureReason") or ""
        tap.ok(d["TrainingJobStatus"] == "Failed" and reason.startswith("ClientError: ") and image in reason and
               answer in reason.lower() and took < 30,
               "(g) %s: ClientError naming the image and the registry's answer in %.1f s" % (what, took),
               "%s %r" % (d["TrainingJobStatus"], reason))
        tap.ok(not any("Training" in s or "Downloading" in s for _, s in seen) and not hosts_with(ns, name),
               "(g) ... no host was reserved for it", "seen %s; hosts %s" % (seen, hosts_with(ns, name)))


def trainctl(ns, *args):
    env = dict(os.environ)
    env.update(ns.env)
    p = subprocess.run([fl.TRAINCTL] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=180)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def case_h(tap, ns, sm, images, reg):
    digest = None
    for n in ("node1", "node2"):
        deadline = time.time() + 30
        while True:
            rc, out = trainctl(ns, "list-images", n)
            if rc == 0 and "%s/team/bb@sha256:" % REG in out:
                break
            if time.time() > deadline:
                break
            time.sleep(0.5)
        tap.ok(rc == 0 and "%s/team/bb@sha256:" % REG in out, "(h) trainctl list-images %s shows the pulled image" % n,
               out)
        digest = digest or out
    rc, out = trainctl(ns, "prune-images", "node1")
    tap.ok(rc == 0 and "team/bb@" not in out, "(h) trainctl prune-images node1 removes the unused images", out)
    rc, out = trainctl(ns, "list-images", "node2")
    tap.ok(rc == 0 and "team/bb@" in out, "(h) ... node2 keeps its own", out)


def case_i(tap, ns, sm, images, reg):
    uid = int(subprocess.run(["id", "-u", UNIX_USER], capture_output=True, text=True).stdout.strip())
    um = sc.make_client(ns.endpoint, key=USER_KEY, secret=USER_SECRET)
    name = "ct-user"
    req = request(name, images["bb"])
    um.create_training_job(**req)
    d, _ = fl.wait_job(um, name, ended, 120)
    text = job_log(ns, name)
    tap.ok(d["TrainingJobStatus"] == "Completed" and ("on algo-1 as %d args" % uid) in text,
           "(i) a user key's job: its container runs as Unix user %s (uid %d)" % (UNIX_USER, uid),
           "%s %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), text[-800:]))
    files = model_files(ns, name)
    tap.ok(files.get("algo-1.txt") == "algo-1 3\n", "(i) ... which may write its /opt/ml/model (model.tar.gz)",
           short(files))


def case_j(tap, ns, sm, images, reg):
    name = "ct-mapped"
    sm.create_training_job(**request(name, DLC))
    d, _ = fl.wait_job(sm, name, ended, 120)
    text = job_log(ns, name)
    tap.ok(d["TrainingJobStatus"] == "Completed" and "resumed from step 0" in text and
           "%s/team/bb@sha256:" % REG in text,
           "(j) --image-map: a SageMaker framework image name runs the image it is mapped to",
           "%s %s\n%s" % (d["TrainingJobStatus"], d.get("FailureReason"), text[-800:]))
    creg = ns.env.get("TRAINCTL_REGISTRY")
    expect(creg == "%s:%d" % (BRIDGE, CLUSTER_REG_PORT), "cluster.sh up --registry exported %r" % creg)
    imagelib.push(images["bb_key"], creg, "team/bb:2")
    name = "ct-cluster-reg"
    sm.create_training_job(**request(name, "%s/team/bb:2" % creg))
    d, _ = fl.wait_job(sm, name, ended, 120)
    tap.ok(d["TrainingJobStatus"] == "Completed",
           "(j) cluster.sh up --registry: an image pushed to the cluster's registry trains",
           "%s %s" % (d["TrainingJobStatus"], d.get("FailureReason")))


def secrets_in_logs(ns):
    """Log files under the cluster's state dir that hold a registry
    password, in clear or in an auth.json's base64."""
    needles = [PASSWORD, base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()]
    found = []
    for root, dirs, files in os.walk(ns.state):
        for f in files:
            if not (f.endswith(".log") or f == "log"):
                continue
            p = os.path.join(root, f)
            try:
                with open(p, "rb") as fh:
                    data = fh.read().decode("utf-8", "replace")
            except OSError:
                continue
            if any(n in data for n in needles):
                found.append(p)
    return found


# ---------------------------------------------------------------- main

def auth_file(path):
    def entry(pw):
        return {"auth": base64.b64encode(("%s:%s" % (USER, pw)).encode()).decode()}
    with open(path, "w") as f:
        json.dump({"auths": {REG: entry(PASSWORD), REG2: entry(PASSWORD)}}, f)
    os.chmod(path, 0o600)


def main():
    tap = sc.Tap()
    reason = skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    work = "/tmp/trainctl-ct-%d" % os.getpid()
    os.makedirs(work, exist_ok=True)
    auth = os.path.join(work, "auth.json")
    auth_file(auth)
    imap = os.path.join(work, "image-map")
    with open(imap, "w") as f:
        f.write("# SageMaker's PyTorch images run our own\n*.dkr.ecr.*.amazonaws.com/pytorch-training:*  "
                "%s/team/bb:1\n" % REG)
    extra = ["--registry-auth", auth, "--insecure-registry", REG, "--insecure-registry", REG2,
             "--insecure-registry", DOWN, "--insecure-registry", TLS_OK, "--image-map", imap]
    images = {}
    t = time.time()
    try:
        images["bb_key"] = imagelib.busybox_image(TRAIN_SH)
        if wanted("b"):
            images["torch_key"] = imagelib.torch_image({"/usr/bin/train": "#!/usr/bin/python3\n" + DIST_PY})
    except Exception as e:
        tap.ok(False, "the test images build offline", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
        return tap.finish()
    log("images built in %.1f s" % (time.time() - t))
    made, why = make_user() if wanted("i") else (False, None)
    creds = os.path.join(work, "users.ini")
    with open(creds, "w") as f:
        f.write("[ctuser]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = %s\n"
                "trainctl_s3_prefixes = %s/\n" % (USER_KEY, USER_SECRET, UNIX_USER, BUCKET))
    ns = fl.NsCluster(PREFIX, NET, PORT, n_hosts=2, itype=ITYPE, extra=extra,
                      up_args=["--add-credentials", creds, "--registry", str(CLUSTER_REG_PORT)])
    reg = reg2 = tls_ok = tls_bad = None
    try:
        t = time.time()
        err = ns.up()
        if not tap.ok(err is None, "cluster.sh up --hosts 2 with --registry-auth and --insecure-registry (%.1f s)" %
                      (time.time() - t), err):
            return tap.finish()
        reg = imagelib.Registry(addr=BRIDGE, port=REG_PORT, user=USER, password=PASSWORD, workdir=work + "/r1")
        reg.start()
        reg2 = imagelib.Registry(addr=BRIDGE, port=REG2_PORT, user=USER, password=PASSWORD2, workdir=work + "/r2")
        reg2.start()
        tls_ok = imagelib.Registry(addr=BRIDGE, port=TLS_OK_PORT, tls=True, workdir=work + "/r3").start()
        tls_bad = imagelib.Registry(addr=BRIDGE, port=TLS_BAD_PORT, tls=True, workdir=work + "/r4").start()
        t = time.time()
        imagelib.push(images["bb_key"], reg, "team/bb:1")
        imagelib.push(images["bb_key"], reg2, "team/bb:1")
        imagelib.push(images["bb_key"], tls_ok, "team/bb:1")
        imagelib.push(images["bb_key"], tls_bad, "team/bb:1")
        images["bb"] = "%s/team/bb:1" % REG
        if "torch_key" in images:
            imagelib.push(images["torch_key"], reg, "team/torch:1")
            images["torch"] = "%s/team/torch:1" % REG
        log("images pushed in %.1f s" % (time.time() - t))
        sm = ns.client()
        for c in "abcdefghij":
            if not wanted(c):
                continue
            if c == "i" and why:
                tap.skip("(i) a user key's container runs as its Unix user", why)
                continue
            t = time.time()
            tap.case("(%s) ran to its end" % c, globals()["case_" + c], tap, ns, sm, images, reg)
            log("(%s) took %.1f s" % (c, time.time() - t))
        leaked = secrets_in_logs(ns)
        tap.ok(not leaked, "no registry password (clear or base64) in any controller or agent log", leaked)
    except Exception as e:
        tap.ok(False, "the container cases ran to their end", "%s: %s\n%s\n%s" % (
            type(e).__name__, e, traceback.format_exc(), ns.log_tail(20)))
    finally:
        for r in (reg, reg2, tls_ok, tls_bad):
            if r:
                r.stop()
        rc, out, err = ns.down()
        left = [p for p, argv in fl.proc_argvs() if any(ns.state in a for a in argv)]
        tap.ok(rc == 0 and not left, "cluster.sh down --prefix %s: nothing left" % PREFIX,
               "exit %d %s%s; left %s" % (rc, out, err, left))
        shutil.rmtree(work, ignore_errors=True)
        if made:
            subprocess.run(["userdel", UNIX_USER], capture_output=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
