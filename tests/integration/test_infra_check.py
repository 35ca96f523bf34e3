#!/usr/bin/python3
"""Infrastructure checks before an attempt (docs/distributed.md,
"Infrastructure checks"): InfraCheckConfig.EnableInfraCheck, or
trainctld --infra-check on for every job.

Embedded local cluster of 3 hosts (trainctld --local-hosts 3 with low
thresholds: --infra-check-min-disk 8 --infra-check-min-shm 1). local-2's
work folder (<state>/hosts/local-2/jobs) is a 4 MiB tmpfs, so its free
space is below the threshold, as on a host whose disk filled up:
  (a) a 2-host job with EnableInfraCheck true: local-2's check fails
      before the program starts anywhere; the job's transitions name
      algo-2, local-2 and the reason, and local-3 replaces it (no retry
      spent: the job has none); local-2 is drained with the reason; the
      job Completes on local-1 and local-3, its transitions say the
      checks passed on 2 hosts, within the 10 s budget
  (b) a job without the flag (and --infra-check off, the default) runs
      no check: no such transition
  (c) local-2 undrained, a 3-host job with the flag: no host is free to
      replace local-2, so the job Fails (no retries) with the reason
  (d) trainctld restarted with --infra-check on: a job without the flag
      is checked too, and local-3 replaces local-2

Needs root (it mounts a tmpfs); TAP on stdout. Run from the top of the
tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_infra_check.py
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import expect, short  # noqa: E402

fl.sc.hermetic_env()

LOCAL_ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0",
              "--grace-period", "2", "--infra-check-min-disk", "8", "--infra-check-min-shm", "1", "-v"]
RUN = "%x" % (os.getpid() & 0xffff)
FAILED_RE = re.compile(r"^Infrastructure check failed on algo-2 \(host local-2\): "
                       r"the work folder has (\d+) MiB free, needs 8 MiB; replaced by local-3$")
PASSED_RE = re.compile(r"^Infrastructure checks passed on 2 hosts in (\d+\.\d) s\. ")

PROGRAM = """#!/usr/bin/python3
import json, os
hosts = json.load(open("/opt/ml/input/config/resourceconfig.json"))
print("ran on", os.environ.get("SM_CURRENT_HOST"), flush=True)
"""


def request(name, prog, check, count=2):
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file://" + prog, "TrainingInputMode": "File"},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 120},
    }
    if check:
        req["InfraCheckConfig"] = {"EnableInfraCheck": True}
    return req


def run_job(cl, sm, name, prog, check, count=2):
    # Straight to the wire: Debian's botocore predates InfraCheckConfig.
    r = fl.sc.amz_json(cl.port, "CreateTrainingJob", request(name, prog, check, count))
    expect(r.status == 200, "CreateTrainingJob %s: HTTP %s %s" % (name, r.status, short(r.json)))
    d, _ = fl.wait_job(sm, name, fl.terminal, 60)
    return d


def messages(d):
    return [m for _, m in fl.transitions(d)]


def case_replaced(cl, sm, prog):
    name = "infra-a-" + RUN
    d = run_job(cl, sm, name, prog, True)
    msgs = messages(d)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%r); transitions %s\n%s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), short(msgs, 1500), cl.log_tail(15)))
    failed = [m for m in msgs if FAILED_RE.match(m)]
    expect(len(failed) == 1, "no transition names algo-2, local-2 and its free space: %s" % short(msgs, 1500))
    passed = [PASSED_RE.match(m) for m in msgs if PASSED_RE.match(m)]
    expect(len(passed) == 1, "no transition says the checks passed on 2 hosts: %s" % short(msgs, 1500))
    secs = float(passed[0].group(1))
    expect(secs <= 10.0, "the checks took %.1f s, over the 10 s budget" % secs)
    fl.sc.Tap.note(None, "checks: %s | %s" % (failed[0], passed[0].group(0)))
    return name


def check_hosts(cl, name):
    """The program started only in attempt 2, on local-1 and local-3 (the
    agents hold it until every host passed); local-2 is drained."""
    started = set()
    pat = re.compile(r"%s/(\d+)/algo-\d: rank \d+ started" % re.escape(name))
    for host in ("local-1", "local-2", "local-3"):
        try:
            with open(os.path.join(cl.state, "hosts", host, "agent.log"), errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        started |= {(host, int(m.group(1))) for m in pat.finditer(text)}
    expect(started == {("local-1", 2), ("local-3", 2)},
           "the program started on (host, attempt) %s, not local-1 and local-3 in attempt 2" % sorted(started))
    hs = {h["name"]: h for h in cl.hosts()}
    h2 = hs.get("local-2") or {}
    expect(h2.get("state") == "drained" and "work folder" in (h2.get("drain_reason") or ""),
           "local-2 is not drained with the reason: %s" % short(h2))


def case_no_flag(cl, sm, prog):
    name = "infra-b-" + RUN
    d = run_job(cl, sm, name, prog, False)
    msgs = messages(d)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%r)" % (name, d["TrainingJobStatus"],
                                                                 d.get("FailureReason")))
    expect(not [m for m in msgs if "Infrastructure" in m], "a job without the flag ran checks: %s" % short(msgs))


def case_no_spare(cl, sm, prog):
    r = fl.sc.http_request(cl.port, "POST", "/v1/hosts/local-2/undrain")
    expect(r.status == 200, "undrain local-2: HTTP %s" % r.status)
    name = "infra-c-" + RUN
    d = run_job(cl, sm, name, prog, True, 3)
    why = d.get("FailureReason") or ""
    expect(d["TrainingJobStatus"] == "Failed" and why.startswith(
        "InternalServerError: Infrastructure check failed on algo-2 (host local-2): the work folder has "),
        "%s: %s (%r)" % (name, d["TrainingJobStatus"], why))


def case_operator_on(cl, prog):
    rc, killed = cl.stop()
    expect(rc == 0 and not killed, "trainctld stop: exit %r, SIGKILL %s" % (rc, killed))
    cl.extra = cl.extra + ["--infra-check", "on"]
    err = cl.start()
    expect(err is None, "trainctld --infra-check on: %s" % err)
    name = "infra-d-" + RUN
    d = run_job(cl, cl.client(), name, prog, False)
    msgs = messages(d)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%r)" % (name, d["TrainingJobStatus"],
                                                                 d.get("FailureReason")))
    expect([m for m in msgs if FAILED_RE.match(m)] and [m for m in msgs if PASSED_RE.match(m)],
           "no check failed on local-2 and passed on 2 hosts: %s" % short(msgs, 1500))


def main():
    tap = fl.sc.Tap()
    if os.geteuid() != 0:
        print("1..0 # SKIP mounting a tmpfs needs root")
        return 0
    prog_dir = tempfile.mkdtemp(prefix="trainctl-infra-")
    prog = os.path.join(prog_dir, "train")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    os.chmod(prog, 0o755)
    cl = fl.LocalCluster(n_hosts=3, extra=LOCAL_ARGS, prefix="trainctl-infra-")
    jobs = os.path.join(cl.state, "hosts", "local-2", "jobs")
    mounted = False
    try:
        err = cl.start()
        if tap.ok(err is None, "trainctld --local-hosts 3 starts, 3 hosts ready", err):
            os.makedirs(jobs, exist_ok=True)
            rc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", jobs]).returncode
            mounted = rc == 0
            if tap.ok(mounted, "a 4 MiB tmpfs over local-2's work folder", "mount exited %d" % rc):
                sm = cl.client()
                name = tap.case("(a) EnableInfraCheck: local-2 fails its check and local-3 replaces it "
                                "before the program starts; the job Completes; checks within 10 s",
                                case_replaced, cl, sm, prog)
                if name:
                    tap.case("(a) the program started only in attempt 2, on local-1 and local-3; "
                             "local-2 is drained with the reason",
                             check_hosts, cl, name)
                tap.case("(b) a job without the flag runs no check", case_no_flag, cl, sm, prog)
                tap.case("(c) no spare host: the job Fails with the check's reason", case_no_spare, cl, sm,
                         prog)
                tap.case("(d) --infra-check on: a job without the flag is checked, local-2 replaced",
                         case_operator_on, cl, prog)
    finally:
        rc, killed = cl.stop()
        if mounted:
            subprocess.run(["umount", jobs])
        cl.check_stopped(tap, rc, killed)
        subprocess.run(["rm", "-rf", prog_dir])
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
