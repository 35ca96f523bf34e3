#!/usr/bin/python3
"""EnableNetworkIsolation on the embedded local cluster.

Starts its own `trainctld --local-hosts 2` on a free loopback port with a
temp state dir and runs script-mode jobs through boto3 whose program, on
each host, tries three connections: to the controller (its API port, by
its address and by 127.0.0.1), to a listener of this test on the
machine's own non-loopback address ("outside"), and between the job's two
hosts (algo-2 to a port algo-1 listens on). With EnableNetworkIsolation
the first two fail and the peers still talk; without, all connect. After
the isolated job, no firewall chain or cgroup of it is left.

TAP on stdout; needs root, iptables and a cgroup v2 hierarchy (skips
otherwise). Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_netiso.py
"""
import io
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()

BUILD = os.environ.get("BUILD", "build")
TRAINCTL = os.path.join(REPO, BUILD, "bin", "trainctl")
BUCKET = "trainctl-netiso"
Fail, expect = sc.Fail, sc.expect

TRAIN = r'''
import os, socket, time
host = os.environ["SM_CURRENT_HOST"]

def attempt(addr):
    h, p = addr.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=5).close()
        return "connected"
    except OSError as e:
        return "refused(%s)" % type(e).__name__

peer = "n/a"
port = int(os.environ["PEER_PORT"])
if host == "algo-1":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(1)
    s.settimeout(60)
    c, _ = s.accept()
    peer = "ok" if c.recv(4) == b"ping" else "bad"
else:
    deadline = time.time() + 60
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            c.sendall(b"ping")
            c.close()
            peer = "ok"
            break
        except OSError as e:
            if time.time() > deadline:
                peer = "failed(%s)" % e
                break
            time.sleep(0.2)
print("netiso host=%s controller=%s controller_lo=%s outside=%s peer=%s" % (
    host, attempt(os.environ["CTRL"]), attempt(os.environ["CTRL_LO"]),
    attempt(os.environ["OUTSIDE"]) if os.environ.get("OUTSIDE") else "n/a", peer), flush=True)
'''


def outside_address():
    """This machine's source address towards the world, or None."""
    try:
        r = subprocess.run(["ip", "-4", "route", "get", "1.1.1.1"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=10)
        words = r.stdout.decode().split()
        addr = words[words.index("src") + 1]
        return None if addr.startswith("127.") else addr
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def can_isolate():
    if os.geteuid() != 0:
        return "not root"
    if not any(os.access(p, os.X_OK) for p in ("/usr/sbin/iptables", "/sbin/iptables")):
        return "no iptables"
    with open("/proc/self/mountinfo") as f:
        if " - cgroup2 " not in f.read():
            return "no cgroup v2 hierarchy"
    return None


def put_code(daemon, name, train=None):
    """A sourcedir.tar.gz holding train.py (TRAIN unless given)."""
    key = "code/%s/sourcedir.tar.gz" % name
    path = os.path.join(daemon.state_dir, "s3", BUCKET, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        data = (train or TRAIN).encode()
        ti = tarfile.TarInfo("train.py")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return "s3://%s/%s" % (BUCKET, key)


def run(daemon, sm, name, isolate, env, image="trainctl/python", timeout=120):
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": image, "TrainingInputMode": "File"},
        "RoleArn": sc.ROLE,
        "HyperParameters": {"sagemaker_program": '"train.py"',
                            "sagemaker_submit_directory": '"%s"' % put_code(daemon, name)},
        "OutputDataConfig": {"S3OutputPath": "s3://%s/out" % BUCKET},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 2, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
        "Environment": env,
        "EnableNetworkIsolation": isolate,
    }
    sm.create_training_job(**req)
    deadline = time.time() + timeout
    while True:
        d = sm.describe_training_job(TrainingJobName=name)
        if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return d
        if time.time() > deadline:
            raise Fail("%s still %s after %d s\n%s" % (name, d["TrainingJobStatus"], timeout, daemon.log_tail()))
        time.sleep(0.2)


def logs(daemon, name, want, timeout=15):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
    deadline = time.time() + timeout
    while True:
        r = subprocess.run([TRAINCTL, "--endpoint", daemon.endpoint, "logs", name], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=env, timeout=30)
        out = r.stdout.decode("utf-8", "replace")
        if all(w in out for w in want) or time.time() > deadline:
            return out
        time.sleep(0.3)


def verdicts(out):
    """{host: {what: verdict}} from the program's lines."""
    got = {}
    for line in out.splitlines():
        if "netiso host=" not in line:
            continue
        words = dict(w.split("=", 1) for w in line.split("netiso ", 1)[1].split())
        got[words.pop("host")] = words
    return got


def leftovers():
    r = subprocess.run(["iptables", "-w", "-S"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    chains = [x for x in r.stdout.decode().splitlines() if "TA-" in x]
    with open("/proc/self/mountinfo") as f:
        mnt = [x.split()[4] for x in f if " - cgroup2 " in x][0]
    d = os.path.join(mnt, "trainagent")
    groups = [g for g in os.listdir(d) if os.path.isdir(os.path.join(d, g))] if os.path.isdir(d) else []
    return chains, groups


def main():
    tap = sc.Tap()
    why = can_isolate()
    if why:
        tap.skip("EnableNetworkIsolation cases", "network isolation cannot be enforced here: %s" % why)
        return tap.finish()
    outside = outside_address()
    listener = None
    if outside:
        listener = socket.socket()
        listener.bind((outside, 0))
        listener.listen(16)
        threading.Thread(target=lambda: [c.close() for c, _ in iter(listener.accept, None)], daemon=True).start()
    daemon = sc.Daemon(extra=["--local-hosts", "2", "--grace-period", "2"])
    try:
        err = daemon.start()
        if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
            return tap.finish()
        sm = sc.make_client(daemon.endpoint)
        base = {"CTRL": "127.0.0.1:%d" % daemon.port, "CTRL_LO": "127.0.0.2:%d" % daemon.port}
        if outside:
            base["OUTSIDE"] = "%s:%d" % (outside, listener.getsockname()[1])
        results = {}

        def job(name, isolate, port):
            d = run(daemon, sm, name, isolate, dict(base, PEER_PORT=str(port)))
            out = logs(daemon, name, ["netiso host=algo-1", "netiso host=algo-2"])
            results[name] = (d, verdicts(out), out)
            return results[name]

        def check_isolated():
            d, v, out = job("netiso-on", True, sc.free_port())
            expect(d["TrainingJobStatus"] == "Completed", "isolated job ended %s: %r\n%s" % (
                d["TrainingJobStatus"], d.get("FailureReason"), out[-2000:]))
            p = []
            for h in ("algo-1", "algo-2"):
                w = v.get(h)
                if not w:
                    p.append("%s printed nothing" % h)
                    continue
                for what in ("controller", "controller_lo") + (("outside",) if outside else ()):
                    if not w[what].startswith("refused"):
                        p.append("%s reached the %s: %s" % (h, what, w[what]))
                if w["peer"] != "ok":
                    p.append("%s could not talk to the other host: %s" % (h, w["peer"]))
            expect(not p, "\n".join(p) + "\n" + out[-2000:])
        tap.case("isolated: the controller and an outside address are refused, the job's hosts talk",
                 check_isolated)
        if not outside:
            tap.skip("isolated: an outside address is refused", "this machine has no non-loopback address")

        def check_clean():
            deadline = time.time() + 20
            while True:
                chains, groups = leftovers()
                if (not chains and not groups) or time.time() > deadline:
                    break
                time.sleep(0.3)
            expect(not chains and not groups, "left after the job: chains %r, cgroups %r" % (chains, groups))
        tap.case("after the isolated job no firewall chain or cgroup of it is left", check_clean)

        def check_open():
            d, v, out = job("netiso-off", False, sc.free_port())
            expect(d["TrainingJobStatus"] == "Completed", "job ended %s: %r" % (
                d["TrainingJobStatus"], d.get("FailureReason")))
            p = ["%s: %s %s" % (h, what, v.get(h, {}).get(what))
                 for h in ("algo-1", "algo-2") for what in ("controller", "outside" if outside else "peer")
                 if v.get(h, {}).get(what) not in ("connected", "ok")]
            expect(not p, "without isolation: " + "; ".join(p) + "\n" + out[-2000:])
        tap.case("without isolation the same program reaches the controller and the outside address",
                 check_open)

        def check_container():
            d = run(daemon, sm, "netiso-container", True, dict(base, PEER_PORT="1"),
                    image="127.0.0.1:1/never/pulled:1")
            reason = d.get("FailureReason") or ""
            expect(d["TrainingJobStatus"] == "Failed" and "EnableNetworkIsolation" in reason
                   and reason.startswith("ClientError"),
                   "a 2-host isolated container job: %s %r" % (d["TrainingJobStatus"], reason))
        tap.case("an isolated container image on two hosts fails as it starts, saying why", check_container)
    finally:
        daemon.stop()
        if listener:
            listener.close()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
