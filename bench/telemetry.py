#!/usr/bin/python3
"""CPU cost of the agent's telemetry sampling.

Starts trainctld --local-hosts 3 on a free loopback port with a temp state
dir; its --agent-binary is a wrapper that starts each host's trainagent
with another --telemetry-ms: local-1 0 (off), local-2 1000, local-3 5000.
The three idle agents run side by side over the same interval; for each,
the agent process's utime + stime (/proc/<pid>/stat) is read at the start
and the end of --seconds (60) and printed as milliseconds of CPU and as a
percentage of one core. The cost of sampling is an agent's figure less
the figure of the agent that does not sample (heartbeats, the work
long-poll and the lease are the same for all three).

    /usr/bin/python3 bench/telemetry.py [--seconds 60] [--with-job]

--with-job also runs one job per host that sleeps through the interval, so
that every sample reads the /proc/<pid>/stat of the processes on the host
to find the job's (the per-assignment figures).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, os.environ.get("BUILD", "build"), "bin")
INTERVALS = {"local-1": 0, "local-2": 1000, "local-3": 5000}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime


def agents(ctld_pid):
    """host name -> pid of the agents trainctld started."""
    out = {}
    for task in os.listdir("/proc/%d/task" % ctld_pid):
        try:
            with open("/proc/%d/task/%s/children" % (ctld_pid, task)) as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        for pid in kids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"--host" in argv and b"watchdog" not in argv:
                out[argv[argv.index(b"--host") + 1].decode()] = pid
    return out


def create_job(port, name, seconds):
    body = json.dumps({
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python",
                                   "TrainingInputMode": "File",
                                   "ContainerEntrypoint": ["/bin/sleep", str(seconds)]},
        "RoleArn": "arn:aws:iam::123456789012:role/bench",
        "OutputDataConfig": {"S3OutputPath": "s3://bench/out"},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1,
                           "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": seconds + 120}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/" % port, data=body, headers={
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": "SageMaker.CreateTrainingJob"})
    urllib.request.urlopen(req, timeout=10).read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--with-job", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trainctl-bench-tm-")
    wrapper = os.path.join(tmp, "trainagent")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n# --telemetry-ms by host name\nms=5000\nprev=\n"
                "for a in \"$@\"; do\n  [ \"$prev\" = --host ] && case \"$a\" in\n"
                + "".join("    %s) ms=%d ;;\n" % (h, v) for h, v in INTERVALS.items())
                + "  esac\n  prev=$a\ndone\n"
                "exec %s \"$@\" --telemetry-ms \"$ms\"\n" % os.path.join(BIN, "trainagent"))
    os.chmod(wrapper, 0o755)
    port = free_port()
    log = open(os.path.join(tmp, "trainctld.log"), "wb")
    ctld = subprocess.Popen([os.path.join(BIN, "trainctld"), "--listen", "127.0.0.1:%d" % port,
                             "--state-dir", os.path.join(tmp, "state"), "--local-hosts", "3",
                             "--agent-binary", wrapper], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        pids = {}
        while len(pids) < 3:
            if time.time() > deadline or ctld.poll() is not None:
                sys.exit("the three agents did not start (see %s)" % tmp)
            time.sleep(0.5)
            pids = agents(ctld.pid)
        if a.with_job:
            for i in range(3):
                create_job(port, "bench-tm-%d" % i, int(a.seconds) + 30)
        time.sleep(5)  # registration, staging and the first samples
        hz = os.sysconf("SC_CLK_TCK")
        t0 = {h: cpu_ticks(p) for h, p in pids.items()}
        w0 = time.monotonic()
        time.sleep(a.seconds)
        t1 = {h: cpu_ticks(p) for h, p in pids.items()}
        wall = time.monotonic() - w0
        base = (t1["local-1"] - t0["local-1"]) * 1000.0 / hz
        print("agent CPU over %.0f s (%s):" % (wall, "a sleeping job per host" if a.with_job
                                                else "idle"))
        print("| --telemetry-ms | CPU ms | % of one core | sampling's share |")
        print("| --- | --- | --- | --- |")
        for h in sorted(pids):
            ms = (t1[h] - t0[h]) * 1000.0 / hz
            print("| %s | %.0f | %.3f %% | %.3f %% |" % (
                INTERVALS[h] or "0 (off)", ms, ms / wall / 10.0,
                max(0.0, ms - base) / wall / 10.0))
    finally:
        ctld.send_signal(signal.SIGTERM)
        try:
            ctld.wait(30)
        except subprocess.TimeoutExpired:
            ctld.kill()
        log.close()
        if not os.environ.get("TRAINCTL_BENCH_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
