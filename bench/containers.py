#!/usr/bin/python3
"""Container launch and pull benchmark on the namespace cluster.

    /usr/bin/python3 bench/containers.py      (from the repository root, as
                                               root, after make)

A 3-host cluster (scripts/cluster.sh, network namespaces, agents over SSH)
with a registry on its bridge address (Debian's docker-registry), images
built offline (tests/integration/imagelib.py).

1. Warm launch, image cached on the host: from CreateTrainingJob to the
   rank's first instruction (it reads /proc/uptime, the same clock the
   client reads before it sends the request), median of RUNS, for
   (a) the job of a busybox image as a container,
   (b) the same program as a plain process (file://, busybox sh),
   (c) `podman run --rm --network host IMAGE train` of that image by hand
       inside the host (same store, same runtime and limits as the agent),
       from just before podman starts.
   The container's overhead is (a) - (b); the goal is at most 1.2 x (c).
2. Pull of a ~100 MB image (incompressible, 4 layers): the 3-host job's
   pulls (each host's "pulled in" time; the slowest is the job's) against
   `podman pull` by hand into one fresh store on one host, and on the three
   hosts one after another. Each run starts from empty stores
   (trainctl prune-images). Goal: 3 hosts in parallel <= 1.1 x one host.
   A pull is mostly CPU (digests, gunzip, untar), so on C cores three take
   at least max(one, 3 x its CPU seconds / C): the table shows that bound.

env: RUNS (launch runs, 10), PULL_RUNS (3), PULL_MB (100),
     TRAINCTL_BENCH_KEEP=1 keeps the cluster's state dir.
Prints one markdown table per part (docs/benchmarks.md "Containers").
"""
import os
import re
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import ftlib as fl  # noqa: E402
import imagelib  # noqa: E402

PREFIX, NET, PORT = fl.sc.run_names("bc")  # this run's own
BRIDGE = NET + ".1"
REG = "%s:%d" % (BRIDGE, fl.sc.free_port())
ITYPE = "ml.c5.xlarge"
ROLE = "arn:aws:iam::123456789012:role/r"
RUNS = int(os.environ.get("RUNS", "10"))
PULL_RUNS = int(os.environ.get("PULL_RUNS", "3"))
PULL_MB = int(os.environ.get("PULL_MB", "100"))
WORK = "/tmp/trainctl-bench-containers-%d" % os.getpid()

TRAIN_SH = """#!/bin/sh
read up idle < /proc/uptime
echo "exec_at=$up"
"""
W = "/var/lib/trainagent/containers"
PODMAN = ["podman", "--root", W + "/storage", "--runroot", W + "/run", "--tmpdir", W + "/tmp",
          "--cgroup-manager", "cgroupfs", "--events-backend", "file"]


def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def job(sm, name, image, count=1, entrypoint=None):
    algo = {"TrainingImage": image, "TrainingInputMode": "File"}
    if entrypoint:
        algo["ContainerEntrypoint"] = entrypoint
    sm.create_training_job(
        TrainingJobName=name, RoleArn=ROLE,
        AlgorithmSpecification=algo,
        OutputDataConfig={"S3OutputPath": "s3://bench/out"},
        ResourceConfig={"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 600})


def log_text(ns, name):
    d = ns.logs_dir(name)
    out = []
    for p in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, p), "rb") as f:
            out.append(f.read().decode("utf-8", "replace"))
    return "\n".join(out)


def exec_times(ns, name, n, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = [float(x) for x in re.findall(r"exec_at=([0-9.]+)", log_text(ns, name))]
        if len(found) >= n:
            return found
        time.sleep(0.02)
    raise RuntimeError("%s: no exec_at line after %d s\n%s" % (name, timeout, ns.log_tail(10)))


def wait_end(sm, name, timeout=300):
    d, _ = fl.wait_job(sm, name, lambda d: d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"),
                       timeout, interval=0.1)
    if d["TrainingJobStatus"] != "Completed":
        raise RuntimeError("%s: %s %s" % (name, d["TrainingJobStatus"], d.get("FailureReason")))


def launch(ns, sm, name, image):
    t0 = uptime()
    job(sm, name, image)
    t = exec_times(ns, name, 1)[0] - t0
    wait_end(sm, name)
    return t


def by_hand(ns, node, image):
    """podman run of the image inside node, from just before podman."""
    limits = ["--ulimit", "nofile=%d:%d" % resource.getrlimit(resource.RLIMIT_NOFILE),
              "--ulimit", "nproc=32768:32768"]
    cmd = ("read t0 x < /proc/uptime; echo t0=$t0; exec " +
           " ".join(PODMAN + ["--runtime", "runc", "run", "--rm", "--network", "host", "--pull", "never"] +
                    limits + [image, "train"]))
    rc, out, err = ns.sh("exec", node, "--prefix", PREFIX, "--", "sh", "-c", cmd, timeout=120)
    m0, m1 = re.search(r"t0=([0-9.]+)", out), re.search(r"exec_at=([0-9.]+)", out)
    if rc or not (m0 and m1):
        raise RuntimeError("podman run by hand on %s: exit %d %s%s" % (node, rc, out, err))
    return float(m1.group(1)) - float(m0.group(1))


def pull_by_hand(ns, node, image):
    root = "/var/lib/trainagent/bench-pull"
    cmd = ("rm -rf %s; read t0 x < /proc/uptime; /usr/bin/time -f cpu=%%U,%%S podman --root %s/s --runroot %s/r "
           "--tmpdir %s/t --cgroup-manager cgroupfs --events-backend file pull -q --tls-verify=false %s >/dev/null; "
           "read t1 x < /proc/uptime; echo took=$t0,$t1; rm -rf %s" % (root, root, root, root, image, root))
    rc, out, err = ns.sh("exec", node, "--prefix", PREFIX, "--", "sh", "-c", cmd, timeout=600)
    m = re.search(r"took=([0-9.]+),([0-9.]+)", out)
    c = re.search(r"cpu=([0-9.]+),([0-9.]+)", err)
    if rc or not m or not c:
        raise RuntimeError("podman pull on %s: exit %d %s%s" % (node, rc, out, err))
    CPU.append(float(c.group(1)) + float(c.group(2)))
    return float(m.group(2)) - float(m.group(1))


CPU = []  # CPU seconds (user + system) of each pull by hand


def trainctl(ns, *args):
    env = dict(os.environ)
    env.update(ns.env)
    p = subprocess.run([fl.TRAINCTL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                       timeout=300)
    if p.returncode:
        raise RuntimeError("trainctl %s: %s" % (" ".join(args), p.stdout.decode()))
    return p.stdout.decode()


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    if os.geteuid() != 0:
        print("bench/containers.py: needs root (network namespaces)")
        return 77
    os.makedirs(WORK, exist_ok=True)
    host_sh = os.path.join(WORK, "train.sh")
    with open(host_sh, "w") as f:
        f.write(TRAIN_SH.replace("#!/bin/sh", "#!/bin/busybox sh"))
    os.chmod(host_sh, 0o755)
    t = time.time()
    bb = imagelib.busybox_image(TRAIN_SH)
    big = imagelib.sized_image(PULL_MB)
    print("images built in %.1f s" % (time.time() - t), file=sys.stderr)
    ns = fl.NsCluster(PREFIX, NET, PORT, n_hosts=3, itype=ITYPE, extra=["--insecure-registry", REG])
    reg = None
    try:
        err = ns.up()
        if err:
            print(err)
            return 1
        reg = imagelib.Registry(addr=BRIDGE, port=18598, workdir=WORK + "/reg")
        reg.start()
        imagelib.push(bb, reg, "bench/bb:1")
        imagelib.push(big, reg, "bench/big:1")
        sm = ns.client()
        image = "%s/bench/bb:1" % REG
        # Warm-up: the image on every host, a first job of each kind.
        job(sm, "warm", image, count=3)
        wait_end(sm, "warm")
        launch(ns, sm, "warm-p", "file://" + host_sh)
        node = next(h["name"] for h in ns.hosts())
        digest = re.search(r"(%s/bench/bb@sha256:[0-9a-f]{64})" % re.escape(REG),
                           trainctl(ns, "list-images", node)).group(1)
        cont, proc, hand = [], [], []
        for i in range(RUNS):
            cont.append(launch(ns, sm, "lc-%d" % i, image))
            proc.append(launch(ns, sm, "lp-%d" % i, "file://" + host_sh))
            hand.append(by_hand(ns, node, digest))
        a, b, c = med(cont), med(proc), med(hand)
        print("\n### Warm launch: CreateTrainingJob to the rank's first instruction (median of %d)\n" % RUNS)
        print("| | seconds | min | max |\n|---|---:|---:|---:|")
        print("| (a) trainctl, container image (cached) | %.3f | %.3f | %.3f |" % (a, min(cont), max(cont)))
        print("| (b) trainctl, the same program as a process | %.3f | %.3f | %.3f |" % (b, min(proc), max(proc)))
        print("| (c) `podman run` by hand on the host | %.3f | %.3f | %.3f |" % (c, min(hand), max(hand)))
        print("| container overhead (a) - (b) | %.3f | | |" % (a - b))
        print("| overhead / bare podman run, goal <= 1.2 | **%.2f x** | | |" % ((a - b) / c))
        # Pulls.
        big_image = "%s/bench/big:1" % REG
        par, one, seq = [], [], []
        nodes = [h["name"] for h in ns.hosts()]
        for i in range(PULL_RUNS):
            for n in nodes:
                trainctl(ns, "prune-images", n)
            name = "pull-%d" % i
            t0 = time.time()
            job(sm, name, big_image, count=3, entrypoint=["/bin/true"])
            wait_end(sm, name, 900)
            wall = time.time() - t0
            times = [float(x) for x in re.findall(r"pulled in ([0-9.]+) s", log_text(ns, name))]
            if len(times) != 3:
                raise RuntimeError("%s: pulls %s\n%s" % (name, times, log_text(ns, name)[-2000:]))
            par.append((max(times), wall))
            one.append(pull_by_hand(ns, nodes[0], big_image))
            seq.append(sum(pull_by_hand(ns, n, big_image) for n in nodes))
        p, o, s = med([x[0] for x in par]), med(one), med(seq)
        print("\n### Pull of a %d MB image (median of %d, stores emptied before each)\n" % (PULL_MB, PULL_RUNS))
        print("| | seconds |\n|---|---:|")
        print("| trainctl 3-host job: slowest host's pull | %.2f |" % p)
        print("| trainctl 3-host job: create to Completed | %.2f |" % med([x[1] for x in par]))
        print("| `podman pull` by hand, one host | %.2f |" % o)
        print("| `podman pull` by hand, 3 hosts one after another | %.2f |" % s)
        cores = os.cpu_count() or 1
        bound = max(o, 3 * med(CPU) / cores)
        print("| CPU seconds of one pull by hand (podman: digests, gunzip, untar) | %.2f |" % med(CPU))
        print("| least 3 pulls can take on %d cores: max(one, 3 x CPU / %d) | %.2f |" % (cores, cores, bound))
        print("| 3 hosts in parallel / one host, goal <= 1.1 | **%.2f x** |" % (p / o))
        print("| 3 hosts in parallel / the least they can take | %.2f x |" % (p / bound))
    finally:
        if reg:
            reg.stop()
        if os.environ.get("TRAINCTL_BENCH_KEEP") != "1":
            ns.down()
        subprocess.run(["rm", "-rf", WORK])
    return 0


if __name__ == "__main__":
    sys.exit(main())
