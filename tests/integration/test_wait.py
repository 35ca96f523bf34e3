#!/usr/bin/python3
"""Live answers: the REST long-poll of a job and `trainctl wait` on it.

Embedded local cluster (trainctld --local-hosts 1):
  (w1) `trainctl wait` of a job that sleeps 1 s returns with the job's
       end (woken by it, not at the end of a 20 s long-poll); five jobs,
       the worst counts
  (w2) GET /v1/training-jobs/NAME?wait=2&etag=E of an ended job: with E
       the answer's own tag it comes back after the 2 s, unchanged; with
       another tag at once
  (w3) the same long-poll on a running job comes back as soon as the job
       changes, long before its wait runs out
  (w4) 300 long-polls parked at once hold no thread: a plain Describe is
       answered meanwhile, and all 300 come back when the job changes
  (w6) `trainctl logs -f` of a job that prints its time, then is silent
       for 3 s: the line shows while the job is still silent, and the
       follower exits with the job's end (the end wakes it; it waited for
       its 20 s poll before)
  (w7) `trainctl create-training-job ... --wait` (one command, as srun):
       prints the ARN, returns with the job's end, exit 0; a job
       that fails: exit 3 and its FailureReason on stderr
A second controller with --credentials:
  (w5) `trainctl wait` with SigV4-signed long-polls works the same

The bounds are generous (LATE s, far under the 20-30 s a missed wake-up
costs): how fast these answers are is a benchmark's business
(bench/launch.py, trainctl against srun); the milliseconds measured here
are printed as comments.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_wait.py
BUILD names the build directory; TRAINCTL_TEST_KEEP=1 keeps the temp dir.
"""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect = sc.expect


def etag(body):
    """api_body_etag(): FNV-1a 64 of the body, 16 hex digits."""
    h = 14695981039346656037
    for b in body:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def request(name, seconds):
    req = fl.job_request(name, 1, checkpoint=False, max_runtime=120)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sleep"
    req["AlgorithmSpecification"]["ContainerArguments"] = [str(seconds)]
    return req


def get(cl, path, timeout=30):
    return sc.http_request(cl.port, "GET", path, timeout=timeout)


# What "at once" means here: well under the 20-30 s of a missed wake-up,
# whatever else runs on the machine.
LATE = 5.0


def case_w1(cl, sm):
    env = dict(os.environ, TRAINCTL_ENDPOINT=cl.endpoint)
    worst = 0.0
    for i in range(5):
        name = "wait-w1-%d" % i
        sm.create_training_job(**request(name, 1))
        r = subprocess.run([fl.TRAINCTL, "wait", name], capture_output=True, env=env, timeout=60)
        back = time.time()
        expect(r.returncode == 0, "trainctl wait %s: exit %d %s" % (name, r.returncode, r.stderr.decode()))
        end = sm.describe_training_job(TrainingJobName=name)["TrainingEndTime"].timestamp()
        worst = max(worst, back - end)
    expect(worst < LATE, "trainctl wait returned %.3f s after a job's end" % worst)
    return worst


def case_w2(cl, sm):
    name = "wait-w2"
    sm.create_training_job(**request(name, 0))
    fl.wait_job(sm, name, fl.terminal, 60)
    first = get(cl, "/v1/training-jobs/%s" % name)
    expect(first.status == 200, "describe: %r" % first)
    t0 = time.time()
    same = get(cl, "/v1/training-jobs/%s?wait=2&etag=%s" % (name, etag(first.body)))
    took = time.time() - t0
    expect(same.status == 200 and same.body == first.body and 1.9 <= took < 5,
           "unchanged long-poll: %r after %.2f s" % (same, took))
    t0 = time.time()
    other = get(cl, "/v1/training-jobs/%s?wait=2&etag=%s" % (name, "0" * 16))
    took = time.time() - t0
    expect(other.status == 200 and other.body == first.body and took < LATE,
           "long-poll with another tag: %r after %.2f s" % (other, took))


def case_w3(cl, sm):
    name = "wait-w3"
    sm.create_training_job(**request(name, 3))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 60)
    first = get(cl, "/v1/training-jobs/%s" % name)
    t0 = time.time()
    r = get(cl, "/v1/training-jobs/%s?wait=30&etag=%s" % (name, etag(first.body)))
    took = time.time() - t0
    d = json.loads(r.body)
    expect(r.status == 200 and r.body != first.body and took < 10,
           "long-poll of a running job: %s after %.2f s" % (d.get("SecondaryStatus"), took))


def case_w4(cl, sm):
    name = "wait-w4"
    sm.create_training_job(**request(name, 4))
    fl.wait_job(sm, name, lambda d: d.get("SecondaryStatus") == "Training", 60)
    first = get(cl, "/v1/training-jobs/%s" % name)
    path = "/v1/training-jobs/%s?wait=30&etag=%s" % (name, etag(first.body))
    socks = []
    for _ in range(300):
        s = socket.create_connection(("127.0.0.1", cl.port), timeout=40)
        s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path).encode())
        socks.append(s)
    time.sleep(0.5)
    t0 = time.time()
    plain = get(cl, "/v1/training-jobs/%s" % name, timeout=15)
    expect(plain.status == 200 and time.time() - t0 < LATE, "a Describe beside 300 long-polls: %r" % plain)
    answered = 0
    deadline = time.time() + 30
    for s in socks:
        s.settimeout(max(0.1, deadline - time.time()))
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        s.close()
        answered += data.startswith(b"HTTP/1.1 200") and b"TrainingJobStatus" in data
    expect(answered == 300, "%d of 300 long-polls answered when the job changed" % answered)


def case_w6(cl, sm):
    name = "wait-w6"
    req = request(name, 0)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["ContainerArguments"] = ["-c", "date +%s%N; sleep 3"]
    sm.create_training_job(**req)
    env = dict(os.environ, TRAINCTL_ENDPOINT=cl.endpoint)
    p = subprocess.Popen([fl.TRAINCTL, "logs", "-f", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    shown = []
    for line in p.stdout:
        w = line.split()
        if w and w[-1].isdigit():
            shown.append(time.time() - int(w[-1]) / 1e9)
    rc = p.wait(30)
    back = time.time()
    expect(rc == 0 and len(shown) == 1, "trainctl logs -f: exit %d, times %s %s" % (
        rc, shown, p.stderr.read().decode()))
    expect(shown[0] < LATE, "the line showed %.3f s after it was printed" % shown[0])
    end = sm.describe_training_job(TrainingJobName=name)["TrainingEndTime"].timestamp()
    expect(back - end < LATE, "trainctl logs -f exited %.3f s after the job's end" % (back - end))
    return "line after %.0f ms, exit %.0f ms after the end" % (shown[0] * 1000, (back - end) * 1000)


def case_w7(cl, sm):
    env = dict(os.environ, TRAINCTL_ENDPOINT=cl.endpoint)
    base = [fl.TRAINCTL, "create-training-job", "--image", "file:///bin/sh", "--instance-type", "ml.m5.large",
            "--instance-count", "1", "--output-path", fl.OUT, "--wait"]
    r = subprocess.run(base + ["--name", "Wait-W7", "--argument", "-c", "--argument", "sleep 1"],
                       capture_output=True, env=env, timeout=60)
    back = time.time()
    out = r.stdout.decode()
    expect(r.returncode == 0 and out.strip().endswith(":training-job/wait-w7"),
           "create --wait: exit %d, stdout %r, stderr %r" % (r.returncode, out, r.stderr.decode()))
    d = sm.describe_training_job(TrainingJobName="Wait-W7")
    expect(d["TrainingJobStatus"] == "Completed", "the job is %s" % d["TrainingJobStatus"])
    expect(back - d["TrainingEndTime"].timestamp() < LATE,
           "create --wait returned %.3f s after the end" % (back - d["TrainingEndTime"].timestamp()))
    r = subprocess.run(base + ["--name", "wait-w7-fail", "--argument", "-c", "--argument", "exit 7"],
                       capture_output=True, env=env, timeout=60)
    err = r.stderr.decode()
    expect(r.returncode == 3 and "exited with code 7" in err,
           "a failing job: exit %d, stderr %r" % (r.returncode, err))


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(1, ["--max-retries", "0"], prefix="trainctl-wait-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 1 starts", err):
        sm = cl.client()
        worst = tap.case("(w1) trainctl wait returns with the job's end", case_w1, cl, sm)
        if isinstance(worst, float):
            print("# worst: %.0f ms after TrainingEndTime" % (worst * 1000))
        tap.case("(w2) a long-poll of an unchanged job waits its time; another tag answers at once",
                 case_w2, cl, sm)
        tap.case("(w3) a long-poll of a running job returns when the job changes", case_w3, cl, sm)
        tap.case("(w4) 300 parked long-polls hold no thread and all come back", case_w4, cl, sm)
        tap.case("(w7) create-training-job --wait returns with the job's end and its outcome", case_w7, cl, sm)
        r = tap.case("(w6) trainctl logs -f shows a line at once and ends with the job", case_w6, cl, sm)
        if isinstance(r, str):
            print("# " + r)
    rc, killed = cl.stop()
    creds = fl.LocalCluster(1, ["--max-retries", "0"], prefix="trainctl-wait-auth-")
    path = os.path.join(creds.tmp, "credentials")
    with open(path, "w") as f:
        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (sc.KEY, sc.SECRET))
    creds.extra += ["--credentials", path]
    err = creds.start(wait_hosts=False)
    if tap.ok(err is None, "trainctld --credentials --local-hosts 1 starts", err):
        def w5():
            host = "127.0.0.1:%d" % creds.port
            deadline = time.time() + 30
            while time.time() < deadline:
                hs = sc.sigv4_sign("GET", host, "/v1/hosts", "", b"", sc.KEY, sc.SECRET)
                r = sc.http_request(creds.port, "GET", "/v1/hosts", headers=hs)
                if r.status == 200 and any(h.get("state") == "ready" for h in (r.json or {}).get("hosts", [])):
                    break
                time.sleep(0.05)
            sm = creds.client()
            env = dict(os.environ, TRAINCTL_ENDPOINT=creds.endpoint, AWS_ACCESS_KEY_ID=sc.KEY,
                       AWS_SECRET_ACCESS_KEY=sc.SECRET)
            sm.create_training_job(**request("wait-w5", 1))
            t0 = time.time()
            r = subprocess.run([fl.TRAINCTL, "wait", "wait-w5"], capture_output=True, env=env, timeout=60)
            expect(r.returncode == 0 and time.time() - t0 < 20,
                   "signed trainctl wait: exit %d %s" % (r.returncode, r.stderr.decode()))
            end = sm.describe_training_job(TrainingJobName="wait-w5")["TrainingEndTime"].timestamp()
            expect(time.time() - end < LATE, "signed wait returned %.3f s after the end" % (time.time() - end))
        tap.case("(w5) trainctl wait with SigV4-signed long-polls", w5)
    creds.stop()
    creds.cleanup()
    time.sleep(0.3)
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
