#!/usr/bin/python3
"""Bad hosts quarantined: a host whose every job fails at start.

trainctld --local-hosts 3 --max-retries 2 --quarantine-failures 2
--quarantine-window 60. The disk of local-1 is full: a tmpfs of 256 KiB is
mounted over its jobs folder (<state>/hosts/local-1/jobs), so a job's
program there fails as it writes its 1 MiB model (No space left on
device), as a host with a full work disk fails every job put on it.
Jobs are created one at a time (the first free host, local-1, takes
each while it is in service); a failure is held against a host once its
job completed on another:

  (a) each job whose attempt failed on local-1 restarts on another host,
      not on local-1 again, and Completes
  (b) after the failures of 2 different jobs local-1 is drained; its
      reason starts "quarantined:" and names both jobs and their failures
      (GET /v1/hosts, `trainctl list-hosts`); /metrics counts it in
      trainctl_hosts_quarantined_total
  (c) afterwards no attempt is placed on local-1: three jobs at once all
      Complete on the two other hosts, none of them on local-1
  (d) the fault removed (tmpfs unmounted) and `trainctl undrain-host
      local-1`: the host is ready again, its old failures forgotten, and
      a job runs there and Completes

TAP on stdout. Run as root (mount) from the top of the tree with Debian's
interpreter: /usr/bin/python3 tests/integration/test_quarantine.py
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

BAD = "local-1"
RUN = os.getpid()
# Writes a 1 MiB model; a partial one is removed, as a careful program does.
PROGRAM = ('f="$SM_MODEL_DIR/weights"; '
           'if ! head -c 1048576 /dev/zero > "$f"; then rm -f "$f"; exit 1; fi; sleep %s')


def request(name, seconds=0.3):
    req = fl.job_request(name, 1, checkpoint=False, max_runtime=60)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["ContainerArguments"] = ["-c", PROGRAM % seconds]
    return req


def trainctl(cl, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
    p = subprocess.run([fl.TRAINCTL, "--endpoint", cl.endpoint] + list(args), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    return p.returncode, p.stdout.decode()


def host(cl, name):
    for h in cl.hosts():
        if h.get("name") == name:
            return h
    raise sc.Fail("no host %s in GET /v1/hosts" % name)


def run_jobs(cl, sm, names, seconds=0.3, timeout=30):
    """Creates the jobs at once and waits for their ends; ({name: describe},
    {name: set of hosts seen running it})."""
    for n in names:
        sm.create_training_job(**request(n, seconds))
    seen = {n: set() for n in names}
    done = {}
    deadline = time.time() + timeout
    while len(done) < len(names):
        for h in cl.hosts():
            if h.get("job") in seen:
                seen[h["job"]].add(h["name"])
        for n in names:
            if n not in done:
                d = sm.describe_training_job(TrainingJobName=n)
                if fl.terminal(d):
                    done[n] = d
        if time.time() > deadline:
            raise sc.Fail("jobs not ended after %d s: %s\n%s" % (
                timeout, sorted(set(names) - set(done)), cl.log_tail(15)))
        time.sleep(0.05)
    return done, seen


def failed_on(d):
    """Hosts named by the 'Attempt N failed' messages of a job."""
    out = []
    for status, msg in fl.transitions(d):
        m = re.match(r"Attempt (\d+) failed: .*?\(host ([\w.-]+)\)", msg or "")
        if status == "Restarting" and m:
            out.append(m.group(2))
    return out


def attempt_dirs(cl, name):
    """{host: [attempt numbers]} from the hosts' work folders."""
    out = {}
    root = os.path.join(cl.state, "hosts")
    for h in sorted(os.listdir(root)):
        jobs = os.path.join(root, h, "jobs")
        for j in os.listdir(jobs) if os.path.isdir(jobs) else []:
            if j.split(".")[0] == name:
                out.setdefault(h, []).extend(sorted(int(a) for a in os.listdir(os.path.join(jobs, j))
                                                    if a.isdigit()))
    return out


def case_quarantine(tap, cl, sm):
    """(a) and (b): jobs one at a time until local-1 is drained."""
    failed = []  # jobs whose attempt failed on local-1

    def fail_and_move():
        for i in range(6):
            name = "quar-%d-%d" % (RUN, i)
            done, seen = run_jobs(cl, sm, [name])
            d = done[name]
            expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r; %s" % (
                name, d["TrainingJobStatus"], d.get("FailureReason"), fl.transitions(d)))
            bad = failed_on(d)
            expect(bad in ([], [BAD]), "%s failed on %s" % (name, bad))
            if bad:
                failed.append(name)
                # The failed attempt's folder is gone; the one that
                # completed keeps its own.
                dirs = attempt_dirs(cl, name)
                others = [h for h in dirs if h != BAD]
                expect(2 not in dirs.get(BAD, []), "%s: attempts by host %s" % (name, dirs))
                expect(len(others) == 1 and dirs[others[0]] == [2],
                       "%s: attempt 2 not on one other host: %s" % (name, dirs))
                expect(BAD not in seen[name] or len(seen[name]) == 2, "hosts seen: %s" % seen[name])
            if len(failed) == 2:
                # Held against the host once the job completed elsewhere.
                cl.wait_hosts(lambda hs: any(h.get("name") == BAD and h.get("drained") for h in hs), 5,
                              "%s drained" % BAD)
            if host(cl, BAD).get("drained"):
                break
        expect(len(failed) == 2, "jobs that failed on %s: %s" % (BAD, failed))
        return "%s failed on %s, each Completed on another host" % (", ".join(failed), BAD)
    if not tap.case("(a) a job whose attempt failed on %s restarts on another host and Completes" % BAD,
                    fail_and_move):
        return None

    def drained():
        h = host(cl, BAD)
        reason = h.get("drain_reason") or ""
        expect(h.get("drained") and h.get("state") == "drained", "%s: %s" % (BAD, h))
        expect(reason.startswith("quarantined: 2 jobs failed on this host within 60 s: "),
               "reason: %r" % reason)
        for n in failed:
            expect("%s (AlgorithmError: algo-1 (host %s) RANK 0 exited with code 1" % (n, BAD) in reason,
                   "reason does not name %s's failure: %r" % (n, reason))
        return reason[:160]
    tap.case("(b) %s drained, the reason names it quarantined and the failed jobs" % BAD, drained)

    def cli():
        rc, out = trainctl(cl, "list-hosts")
        expect(rc == 0, "trainctl list-hosts: exit %d %s" % (rc, out))
        expect("drained: quarantined: 2 jobs failed" in out and all(n in out for n in failed),
               "trainctl list-hosts:\n%s" % out)
    tap.case("(b) `trainctl list-hosts` shows the quarantine's reason", cli)

    def metric():
        r = sc.http_request(cl.port, "GET", "/metrics")
        text = r.body.decode()
        expect(r.status == 200 and "\ntrainctl_hosts_quarantined_total 1\n" in text,
               "GET /metrics: %s %s" % (r.status, [ln for ln in text.splitlines() if "quarantin" in ln]))
    tap.case("(b) /metrics: trainctl_hosts_quarantined_total 1", metric)
    return failed


def case_kept_off(tap, cl, sm):
    names = ["quar-after-%d-%d" % (RUN, i) for i in range(3)]

    def kept_off():
        done, seen = run_jobs(cl, sm, names, seconds=0.5)
        for n in names:
            d = done[n]
            expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r" % (
                n, d["TrainingJobStatus"], d.get("FailureReason")))
            dirs = attempt_dirs(cl, n)
            expect(BAD not in dirs and BAD not in seen[n], "%s placed on %s: %s %s" % (n, BAD, dirs, seen[n]))
            expect(not failed_on(d), "%s restarted: %s" % (n, fl.transitions(d)))
    tap.case("(c) three jobs afterwards all Complete, none placed on %s" % BAD, kept_off)


def case_undrain(tap, cl, sm, jobs_dir):
    def back():
        subprocess.run(["umount", jobs_dir], check=True)
        rc, out = trainctl(cl, "undrain-host", BAD)
        expect(rc == 0, "trainctl undrain-host: exit %d %s" % (rc, out))
        h = host(cl, BAD)
        expect(not h.get("drained") and h.get("state") == "ready", "%s: %s" % (BAD, h))
        names = ["quar-back-%d-%d" % (RUN, i) for i in range(3)]
        # Long enough that the three run at once, one on each host.
        done, seen = run_jobs(cl, sm, names, seconds=3)
        on_bad = [n for n in names if BAD in attempt_dirs(cl, n)]
        for n in names:
            d = done[n]
            expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r" % (
                n, d["TrainingJobStatus"], d.get("FailureReason")))
        expect(len(on_bad) == 1, "jobs on %s: %s" % (BAD, on_bad))
        h = host(cl, BAD)
        expect(not h.get("drained"), "%s drained again: %s" % (BAD, h))
        return "%s ran on %s" % (on_bad[0], BAD)
    tap.case("(d) fault removed, `trainctl undrain-host`: %s is ready and a job Completes there" % BAD, back)


def main():
    tap = sc.Tap()
    if os.geteuid() != 0:
        tap.skip("a host with a full disk", "needs root to mount a tmpfs over a host's work folder")
        sys.exit(tap.finish())
    cl = fl.LocalCluster(n_hosts=3, prefix="trainctl-quar-",
                         extra=["--heartbeat-ms", "200", "--max-retries", "2",
                                "--quarantine-failures", "2", "--quarantine-window", "60"])
    err = cl.start()
    if not tap.ok(err is None, "trainctld --local-hosts 3 starts", err):
        sys.exit(tap.finish())
    jobs_dir = os.path.join(cl.state, "hosts", BAD, "jobs")
    mounted = False
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", jobs_dir], check=True)
        mounted = True
        sm = cl.client()
        if case_quarantine(tap, cl, sm) is not None:
            case_kept_off(tap, cl, sm)
            case_undrain(tap, cl, sm, jobs_dir)
            mounted = False
    finally:
        if mounted or os.path.ismount(jobs_dir):
            subprocess.run(["umount", "-l", jobs_dir])
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
